//! The differential harness against SGE 8.1.9 (`tests/sge/`): scenarios of commands as
//! root and three users, played against a backend (the real SGE when recording, a
//! Gantry cluster when replaying), their output normalised the same way on both sides
//! and written as a transcript (`=== [user] $ cmd`, `--- stdout`, `--- stderr`,
//! `--- exit N`, as the other transcripts under `tests/fixtures/sge/`).
//!
//! A scenario (`tests/sge/scenarios/NN_name.scn`) is a list of lines:
//! - `# text`: a comment, copied into the transcript;
//! - `[user] command`: run by `sh -c` as `user` (root, user1, user2, user3) in the work
//!   directory (which holds `inputs/`), with a fixed environment;
//! - `%settle`: wait until the cluster settles: `qstat -u '*'` the same twice a
//!   scheduling interval apart, no job in a transient state;
//! - `%wait-empty`: wait until `qstat -u '*'` lists no job.
//!
//! Normalised are only what must differ between two runs or two machines: dates and
//! times, the work, cell and binary directories, the machine's host name (Gantry's
//! side), user ids, and measured values (load, memory, usage): never a word, and a
//! number's format is kept (each digit becomes `#`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use regex::Regex;

use crate::transcript::Step;

/// A scenario file or the list of differences that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HarnessError {
    #[error("{file}:{line}: {reason}")]
    Line {
        file: String,
        line: usize,
        reason: String,
    },
    #[error("{0}.scn runs no command")]
    NoCommand(String),
}

/// One line of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Comment(String),
    Run { user: String, command: String },
    Settle,
    WaitEmpty,
}

#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file name without `.scn` (`05_qsub_errors`).
    pub name: String,
    pub lines: Vec<Line>,
}

pub const USERS: [&str; 4] = ["root", "user1", "user2", "user3"];

/// Parse a scenario file.
pub fn parse(name: &str, text: &str) -> Result<Scenario, HarnessError> {
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim_end();
        let bad = |reason: String| HarnessError::Line {
            file: format!("{name}.scn"),
            line: i + 1,
            reason,
        };
        if l.is_empty() {
            continue;
        }
        if let Some(c) = l.strip_prefix('#') {
            lines.push(Line::Comment(c.trim_start().to_string()));
        } else if l == "%settle" {
            lines.push(Line::Settle);
        } else if l == "%wait-empty" {
            lines.push(Line::WaitEmpty);
        } else if let Some(rest) = l.strip_prefix('[') {
            let (user, command) = rest
                .split_once("] ")
                .ok_or_else(|| bad("expected `[user] command`".into()))?;
            if !USERS.contains(&user) {
                return Err(bad(format!("unknown user {user}")));
            }
            lines.push(Line::Run {
                user: user.to_string(),
                command: command.to_string(),
            });
        } else {
            return Err(bad(format!("cannot read `{l}`")));
        }
    }
    if !lines.iter().any(|l| matches!(l, Line::Run { .. })) {
        return Err(HarnessError::NoCommand(name.to_string()));
    }
    Ok(Scenario {
        name: name.to_string(),
        lines,
    })
}

/// What one command printed.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub stdout: String,
    pub stderr: String,
    pub exit: i32,
}

/// Where the commands run: the real SGE or a Gantry cluster.
pub trait Backend {
    /// Run `command` through `sh -c` as `user` in the work directory.
    fn run(&mut self, user: &str, command: &str) -> Outcome;
    /// Exact strings this backend prints that the other prints differently for reasons
    /// of place only (its directories, its host name), and what both become.
    fn replacements(&self) -> Vec<(String, String)>;
    /// How long one scheduling interval is (the settle window).
    fn interval(&self) -> Duration;
    /// How long a wait for the cluster to settle may take.
    fn settle_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }
    /// Whether a wait that times out is an error (recording) or a difference the
    /// steps after it show (replaying).
    fn strict(&self) -> bool {
        true
    }
}

/// What both backends run as root after a fresh start and before a scenario, not
/// recorded: the load of a shared build machine must not put all.q in alarm.
pub const BASE: &[&str] = &["qconf -rattr queue load_thresholds NONE all.q"];

/// Where the scenarios' input files are (copied into the work directory as `inputs/`).
pub fn sge_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sge")
}

/// Every scenario under `tests/sge/scenarios`, in name order.
pub fn scenarios() -> Vec<Scenario> {
    let dir = sge_dir().join("scenarios");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "scn"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            parse(&name, &std::fs::read_to_string(p).unwrap()).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

/// A fresh work directory at `work` with the scenarios' `inputs/`, writable by the
/// test users (`-cwd` jobs write their output there).
pub fn make_work_dir(work: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_dir_all(work);
    let inputs = work.join("inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    let src = sge_dir().join("inputs");
    if let Ok(entries) = std::fs::read_dir(&src) {
        for e in entries {
            let e = e.unwrap();
            let to = inputs.join(e.file_name());
            std::fs::copy(e.path(), &to).unwrap();
            let mode = std::fs::metadata(e.path()).unwrap().permissions().mode() | 0o444;
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    std::fs::set_permissions(work, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::set_permissions(&inputs, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The real SGE 8.1.9 of `../shared/tools/sge/` (its commands in /usr/bin).
pub struct Sge {
    pub work: std::path::PathBuf,
}

/// The value of `GANTRY_HOME` on the SGE side, where it means nothing: both sides
/// have the variable, so that `-V` jobs list the same environment.
pub const SGE_SIDE_CELL: &str = "/tmp/gantry-sge-diff-cell";

impl Backend for Sge {
    fn run(&mut self, user: &str, command: &str) -> Outcome {
        let mut env = base_env(user);
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
        env.push(("GANTRY_HOME".into(), SGE_SIDE_CELL.into()));
        run_as(user, &self.work, &env, command)
    }

    fn replacements(&self) -> Vec<(String, String)> {
        vec![
            (self.work.display().to_string(), "<work>".into()),
            (SGE_SIDE_CELL.into(), "<cell>".into()),
        ]
    }

    fn interval(&self) -> Duration {
        // schedule_interval 0:0:1 (setup.sh), and a margin.
        Duration::from_millis(1500)
    }
}

/// The fixed environment of every command (besides the backend's own variables).
pub fn base_env(user: &str) -> Vec<(String, String)> {
    let home = if user == "root" {
        "/root".to_string()
    } else {
        format!("/home/{user}")
    };
    [
        ("HOME", home.as_str()),
        ("USER", user),
        ("LOGNAME", user),
        ("SHELL", "/bin/sh"),
        ("LANG", "C"),
        ("SGE_ROOT", "/var/lib/gridengine"),
        ("SGE_CELL", "default"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Run `command` as `user` in `work` with exactly `env` (through `runuser` and `env -i`).
pub fn run_as(user: &str, work: &Path, env: &[(String, String)], command: &str) -> Outcome {
    let mut cmd = Command::new("runuser");
    cmd.args(["-u", user, "--", "env", "-i"]);
    for (k, v) in env {
        cmd.arg(format!("{k}={v}"));
    }
    cmd.args(["/bin/sh", "-c", command])
        .current_dir(work)
        .stdin(std::process::Stdio::null());
    let out = cmd.output().expect("runuser");
    Outcome {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        exit: out.status.code().unwrap_or(-1),
    }
}

static DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d\d/\d\d/\d{4} \d\d:\d\d:\d\d\b").unwrap());
/// An ISO 8601 time (`qstat -xml`'s `JB_submission_time`).
static ISO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?").unwrap());
static CTIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4}\b",
    )
    .unwrap()
});
/// The stamp SGE's shepherd puts before its error messages, once its time is
/// normalised: the user's and the shepherd's process ids differ between runs.
static SHEPHERD_STAMP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(MM/DD/YYYY hh:mm:ss) \[\d+:\d+\]:").unwrap());
static ID_LINE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(uid|gid):(\s+)\d+$").unwrap());
/// qacct's measured values, and `qstat -j`'s usage line.
static USAGE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(ru_\w+|cpu|mem|io|iow|ioops|maxvmem|maxrss|maxpss|wallclock|usage\s+\d+:|ru_wallclock)\s",
    )
    .unwrap()
});
/// A `qstat` job row: its `prior` column, which moves with the jobs' waiting time (the
/// urgency's waiting-time contribution) and so between two runs.
static JOB_ROW: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\s*\d+ )(\d\.\d{5})( )").unwrap());
/// A `qstat -f` queue instance line: its load column.
static QUEUE_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\S+@\S+\s+[BIPCTN]+\s+\d+/\d+/\d+\s+)(\S+)(.*)$").unwrap());
/// A measured amount once its digits are masked: its integer part, decimals and scale.
static MASKED_AMOUNT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"#+(\.#+)([KMGT]?(Bs?\b)|[KMGT])?").unwrap());
/// A count alone on a line once masked (`ru_minflt    ###`).
static MASKED_COUNT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\w+\s+)#+(\s*)$").unwrap());
/// A row of `qacct`'s summary: its seven measured columns (WALLCLOCK .. IOW) at the end.
static ACCOUNTING_ROW: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(.*?)((?: +\d+(?:\.\d+)?){7})$").unwrap());
/// One of those columns: its padding and number.
static ACCOUNTING_COLUMN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r" +\d+(\.\d+)?").unwrap());
/// A `qstat -g c` cluster queue line: its CQLOAD column.
static CLUSTER_QUEUE_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\S+\s+)(\d+\.\d\d)((\s+\d+){6} )$").unwrap());
static DIGIT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d").unwrap());
static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"=\d+(\.\d+)?").unwrap());
/// The first line of a usage text: the product and its version, which must differ.
static VERSION_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^(SGE 8\.1\.9|Gantry \d+\.\d+\.\d+)$").unwrap());
/// A user or group id in XML output (`<JB_uid>1012</JB_uid>`), as `uid:` lines.
static XML_ID: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"<(JB_uid|JB_gid)>\d+</").unwrap());
/// A queue instance's load in XML output (`<load_avg>1.00391</load_avg>`).
static XML_LOAD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<load_avg>[\d.]+</load_avg>").unwrap());
/// A time in seconds since 1970 in XML output (`<JB_submission_time>1796220219<`).
static XML_TIME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"<(\w*time\w*)>\d+</").unwrap());
/// The temporary file SGE's qconf writes an object to and reads back.
static QCONF_TMP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"/tmp/pid-\d+-[A-Za-z0-9]{6}").unwrap());

/// A line of measured usage (`qacct`'s `ru_maxrss    4.469KB`, `ru_minflt    908`):
/// how much was measured differs from run to run, so its digits, their number and the
/// scale of an amount of memory (`K`, `M`, `G`) go; the decimals shown, the unit and the
/// line's padding stay (a padded line keeps its width).
fn measured_usage(body: &str) -> String {
    let masked = DIGIT.replace_all(body, "#");
    let mut out = MASKED_AMOUNT
        .replace_all(&masked, |c: &regex::Captures| {
            let decimals = c.get(1).map_or("", |m| m.as_str());
            let unit = c.get(3).map_or("", |m| m.as_str());
            format!("#{decimals}{unit}")
        })
        .into_owned();
    out = MASKED_COUNT.replace(&out, "$1#$2").into_owned();
    if body.ends_with(' ') {
        while out.len() < body.len() {
            out.push(' ');
        }
    }
    out
}

/// `text` as a transcript keeps it: the same on every run and machine.
pub fn normalise(command: &str, text: &str, replacements: &[(String, String)]) -> String {
    let mut s = text.to_string();
    for (from, to) in replacements {
        if from.is_empty() {
            continue;
        }
        if from.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            // A host name: whole words only.
            let re = Regex::new(&format!(r"\b{}\b", regex::escape(from))).unwrap();
            s = re.replace_all(&s, to.as_str()).into_owned();
        } else {
            s = s.replace(from.as_str(), to);
        }
    }
    s = DATE.replace_all(&s, "MM/DD/YYYY hh:mm:ss").into_owned();
    s = SHEPHERD_STAMP
        .replace_all(&s, "$1 [<uid>:<pid>]:")
        .into_owned();
    s = CTIME
        .replace_all(&s, "Www Mmm dd hh:mm:ss yyyy")
        .into_owned();
    s = QCONF_TMP.replace_all(&s, "/tmp/pid-<pid>").into_owned();
    s = ISO.replace_all(&s, "YYYY-MM-DDThh:mm:ss").into_owned();
    s = XML_TIME.replace_all(&s, "<$1>#</").into_owned();
    s = XML_ID.replace_all(&s, "<$1><id></").into_owned();
    s = XML_LOAD
        .replace_all(&s, |c: &regex::Captures| {
            DIGIT.replace_all(&c[0], "#").into_owned()
        })
        .into_owned();
    s = VERSION_LINE.replace_all(&s, "<version>").into_owned();
    s = join_load_values(&s);
    let qhost = command.split_whitespace().any(|w| w == "qhost");
    let mut out = String::with_capacity(s.len());
    for line in s.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let body = if ID_LINE.is_match(body) {
            ID_LINE.replace(body, "$1:$2<id>").into_owned()
        } else if USAGE_LINE.is_match(body) {
            measured_usage(body)
        } else if let Some(c) = JOB_ROW
            .captures(body)
            .filter(|_| command.starts_with("qstat"))
        {
            let prior = DIGIT.replace_all(&c[2], "#");
            format!("{}{prior}{}{}", &c[1], &c[3], &body[c[0].len()..])
        } else if let Some(c) = ACCOUNTING_ROW
            .captures(body)
            .filter(|_| command.starts_with("qacct"))
        {
            // Each measured number becomes `#` (with its decimals as `#`), right-aligned
            // in the width its column had: how long a job ran differs between runs.
            let columns = ACCOUNTING_COLUMN.replace_all(&c[2], |m: &regex::Captures| {
                let masked = match m.get(1) {
                    Some(d) => format!("#.{}", "#".repeat(d.as_str().len() - 1)),
                    None => "#".to_string(),
                };
                format!("{masked:>w$}", w = m[0].len())
            });
            format!("{}{columns}", &c[1])
        } else if let Some(c) = CLUSTER_QUEUE_LINE
            .captures(body)
            .filter(|_| command.starts_with("qstat"))
        {
            format!("{}{}{}", &c[1], DIGIT.replace_all(&c[2], "#"), &c[3])
        } else if let Some(c) = QUEUE_LINE.captures(body) {
            format!("{}{}{}", &c[1], DIGIT.replace_all(&c[2], "#"), &c[3])
        } else if qhost {
            normalise_qhost_line(body)
        } else {
            body.to_string()
        };
        out.push_str(&body);
        out.push_str(nl);
    }
    out
}

/// An execution host's `load_values` (`qconf -se`) are the machine's, and so is where
/// their lines wrap: the continued lines joined, each number `#`, the names kept.
fn join_load_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        if !line.starts_with("load_values ") {
            out.push_str(line);
            continue;
        }
        let mut joined = line.trim_end().to_string();
        while joined.ends_with('\\') {
            joined.pop();
            joined.truncate(joined.trim_end().len());
            match lines.next() {
                Some(next) => joined.push_str(next.trim()),
                None => break,
            }
        }
        out.push_str(&NUMBER.replace_all(&joined, "=#"));
        out.push('\n');
    }
    out
}

/// A `qhost` host line: LOAD MEMTOT MEMUSE SWAPTO SWAPUS (the 7th to 11th columns) are
/// the machine's, their widths too: each becomes `#`, one space apart.
fn normalise_qhost_line(line: &str) -> String {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let measured = fields.len() == 11
        && !line.starts_with(' ')
        && fields[2..6]
            .iter()
            .all(|f| *f == "-" || f.parse::<u32>().is_ok());
    if !measured || fields[0] == "HOSTNAME" {
        return line.to_string();
    }
    // Keep the first six columns as printed (name, arch, counts), up to the LOAD column.
    let mut rest = line;
    for f in &fields[..6] {
        let at = rest.find(f).unwrap() + f.len();
        rest = &rest[at..];
    }
    let head = &line[..line.len() - rest.len()];
    let tail: Vec<String> = fields[6..]
        .iter()
        .map(|f| {
            if *f == "-" {
                "-".to_string()
            } else {
                "#".to_string()
            }
        })
        .collect();
    format!("{head} {}", tail.join(" "))
}

/// Commands that change the cluster: after one, a query waits until it settles.
const CHANGING: [&str; 9] = [
    "qsub", "qalter", "qhold", "qrls", "qdel", "qmod", "qrsub", "qrdel", "qconf",
];
/// Queries whose answer depends on the scheduler having seen every change: SGE's
/// scheduling info, say, is written by its scheduler's last run.
const QUERIES: [&str; 5] = ["qstat", "qquota", "qhost", "qrstat", "qselect"];

/// Play `scenario` on `backend`: the transcript's text. A query after a change waits
/// for the cluster to settle first, as if `%settle` stood before it.
pub fn play(scenario: &Scenario, backend: &mut dyn Backend) -> String {
    let repl = backend.replacements();
    let mut out = String::new();
    let mut changed = false;
    for line in &scenario.lines {
        match line {
            Line::Comment(c) => {
                out.push_str(&format!("# {c}\n"));
            }
            Line::Settle => {
                settle(backend, false);
                changed = false;
            }
            Line::WaitEmpty => {
                settle(backend, true);
                changed = false;
            }
            Line::Run { user, command } => {
                let first = command.split_whitespace().next().unwrap_or("");
                if changed && QUERIES.contains(&first) {
                    settle(backend, false);
                    changed = false;
                }
                if CHANGING.contains(&first) {
                    changed = true;
                }
                let o = backend.run(user, command);
                out.push_str(&format!(
                    "=== [{user}] $ {command}\n--- stdout\n{}--- stderr\n{}--- exit {}\n\n",
                    with_newline(&normalise(command, &o.stdout, &repl)),
                    with_newline(&normalise(command, &o.stderr, &repl)),
                    o.exit
                ));
            }
        }
    }
    out
}

/// Output without a final newline gets one, and a note in the transcript would be
/// lost: mark it so that a missing newline is a difference too.
fn with_newline(s: &str) -> String {
    if s.is_empty() || s.ends_with('\n') {
        s.to_string()
    } else {
        format!("{s}\n--- (no newline at end)\n")
    }
}

/// Wait until `qstat -u '*'` is the same twice an interval apart and shows no job in a
/// transient state (or, with `empty`, no job at all).
fn settle(backend: &mut dyn Backend, empty: bool) {
    let deadline = Instant::now() + backend.settle_timeout();
    let mut last: Option<String> = None;
    loop {
        let o = backend.run("root", "qstat -u '*'");
        let transient = o.stdout.lines().skip(2).any(|l| {
            l.split_whitespace()
                .nth(4)
                .is_some_and(|state| state.contains('t') || state.contains('d'))
        });
        let done = if empty {
            o.stdout.trim().is_empty()
        } else {
            !transient && last.as_deref() == Some(o.stdout.as_str())
        };
        if done {
            return;
        }
        if Instant::now() >= deadline {
            let what = format!(
                "the cluster did not settle in {:?}; qstat -u '*' shows:\n{}{}",
                backend.settle_timeout(),
                o.stdout,
                o.stderr
            );
            // SGE's recording must be clean; a replay goes on, and its later steps say
            // what differs.
            assert!(!backend.strict(), "{what}");
            eprintln!("*** {what}");
            return;
        }
        last = Some(o.stdout);
        std::thread::sleep(backend.interval());
    }
}

/// A step of two transcripts that differs.
#[derive(Debug, Clone)]
pub struct Difference {
    /// Its number (from 1) in the recorded transcript.
    pub step: usize,
    /// The step and a line diff of each stream that differs.
    pub text: String,
    /// One line: the first line SGE has and Gantry not, and the other way round.
    pub summary: String,
}

/// The steps of two transcripts that differ.
pub fn differing_steps(want: &[Step], got: &[Step]) -> Vec<Difference> {
    let mut out = Vec::new();
    for (i, w) in want.iter().enumerate() {
        let Some(g) = got.get(i) else {
            out.push(Difference {
                step: i + 1,
                text: format!("step {} missing: [{}] $ {}", i + 1, w.user, w.command),
                summary: "missing".into(),
            });
            continue;
        };
        if (&w.stdout, &w.stderr, w.exit) != (&g.stdout, &g.stderr, g.exit) {
            out.push(Difference {
                step: i + 1,
                text: describe(i + 1, w, g),
                summary: summary(w, g),
            });
        }
    }
    out
}

fn summary(w: &Step, g: &Step) -> String {
    let mut parts = Vec::new();
    for (what, a, b) in [
        ("stdout", &w.stdout, &g.stdout),
        ("stderr", &w.stderr, &g.stderr),
    ] {
        if a == b {
            continue;
        }
        let diff = line_diff(a, b);
        let first = |mark: &str| {
            diff.iter()
                .find(|l| l.starts_with(mark))
                .map(|l| l[2..].trim().chars().take(70).collect::<String>())
        };
        let mut p = what.to_string();
        if let Some(l) = first("- ") {
            p.push_str(&format!(" SGE `{l}`"));
        }
        if let Some(l) = first("+ ") {
            p.push_str(&format!(" Gantry `{l}`"));
        }
        parts.push(p);
    }
    if w.exit != g.exit {
        parts.push(format!("exit SGE {} Gantry {}", w.exit, g.exit));
    }
    parts.join("; ")
}

fn describe(n: usize, w: &Step, g: &Step) -> String {
    let mut s = format!("step {n}: [{}] $ {}\n", w.user, w.command);
    for (what, a, b) in [
        ("stdout", &w.stdout, &g.stdout),
        ("stderr", &w.stderr, &g.stderr),
    ] {
        if a != b {
            s.push_str(&format!("  {what} (- sge, + gantry):\n"));
            for l in line_diff(a, b) {
                s.push_str(&format!("    {l}\n"));
            }
        }
    }
    if w.exit != g.exit {
        s.push_str(&format!("  exit: sge {}, gantry {}\n", w.exit, g.exit));
    }
    s
}

/// A line diff of `a` to `b` (longest common subsequence): `  same`, `- a`, `+ b`.
pub fn line_diff(a: &str, b: &str) -> Vec<String> {
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push(format!("  {}", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(format!("+ {}", b[j]));
            j += 1;
        } else {
            out.push(format!("- {}", a[i]));
            i += 1;
        }
    }
    out
}

/// The differences listed in `tests/sge/differences.txt`: `SCENARIO STEP: reason`,
/// one per line (`#` comments).
pub fn listed_differences(text: &str) -> Result<Vec<(String, usize, String)>, HarnessError> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let bad = || HarnessError::Line {
            file: "differences.txt".into(),
            line: i + 1,
            reason: "expected `SCENARIO STEP: reason`".into(),
        };
        let (head, reason) = l.split_once(": ").ok_or_else(bad)?;
        let (name, step) = head.split_once(' ').ok_or_else(bad)?;
        let step = step.trim().parse().map_err(|_| bad())?;
        if reason.trim().is_empty() {
            return Err(bad());
        }
        out.push((name.to_string(), step, reason.trim().to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_parse_and_refuse_what_they_cannot_read() {
        let s = parse(
            "x",
            "# title\n[user1] qsub -b y true\n%settle\n[root] qstat\n",
        )
        .unwrap();
        assert_eq!(s.lines.len(), 4);
        assert_eq!(s.lines[2], Line::Settle);
        assert!(parse("x", "[nobody] qstat\n").is_err());
        assert!(parse("x", "qstat\n").is_err());
        assert!(parse("x", "# only a comment\n").is_err());
    }

    #[test]
    fn normalising_keeps_words_and_number_formats() {
        let r = vec![
            ("/tmp/w1".to_string(), "<work>".to_string()),
            ("node7".to_string(), "vm".to_string()),
        ];
        let cases = [
            ("qstat", "submission_time:            Wed Dec  2 13:24:42 2026\n", "submission_time:            Www Mmm dd hh:mm:ss yyyy\n"),
            ("qstat", "      1 0.00000 sleep      user1        qw    12/02/2026 13:24:42                                    1        \n", "      1 #.##### sleep      user1        qw    MM/DD/YYYY hh:mm:ss                                    1        \n"),
            ("qstat", "uid:                        1012\n", "uid:                        <id>\n"),
            ("qstat", "      3 0.75000 sleep      user1        r     \n", "      3 #.##### sleep      user1        r     \n"),
            ("qstat", "sge_o_workdir:              /tmp/w1\n", "sge_o_workdir:              <work>\n"),
            ("qstat", "all.q@vm                       BIP   0/0/2          0.41     lx-amd64      \n", "all.q@vm                       BIP   0/0/2          #.##     lx-amd64      \n"),
            ("qstat", "mail_list:                  user1@node7\n", "mail_list:                  user1@vm\n"),
            ("qacct -j 1", "ru_wallclock 1.002s\n", "ru_wallclock #.###s\n"),
            (
                "qacct -o",
                "user1 sge                28         0.007         0.015         0.022              0.000              0.000              0.000\n",
                "user1 sge                 #         #.###         #.###         #.###              #.###              #.###              #.###\n",
            ),
            (
                "qacct",
                "           28         0.007         0.015         0.022              0.000              0.000              0.000\n",
                "            #         #.###         #.###         #.###              #.###              #.###              #.###\n",
            ),
            ("qstat -g c", "all.q                             0.31      1      0      1      2      0      0 \n", "all.q                             #.##      1      0      1      2      0      0 \n"),
            ("qacct -j 1", "ru_maxrss    4.469KB\n", "ru_maxrss    #.###B\n"),
            ("qacct -j 1", "mem          56.623KBs\n", "mem          #.###Bs\n"),
            ("qacct -j 1", "io           0.000B\n", "io           #.###B\n"),
            ("qacct -j 1", "ru_minflt    908                 \n", "ru_minflt    #                   \n"),
            ("qstat -j 1", "usage    1:                 cpu=00:00:01, mem=0.00012 GB s, io=0.00000 GB, vmem=19.641M, maxvmem=N/A\n", "usage    #:                 cpu=##:##:##, mem=#.##### GB s, io=#.##### GB, vmem=#.###, maxvmem=N/A\n"),
            ("qstat", "hard resource_list:         h_rt=3600\n", "hard resource_list:         h_rt=3600\n"),
            ("qstat", "node7x node7\n", "node7x vm\n"),
            ("qconf", "load_values           load_avg=0.44,arch=lx-amd64, \\\n                      num_proc=2,mem_free=23416.683594M\nprocessors            2\n", "load_values           load_avg=#,arch=lx-amd64,num_proc=#,mem_free=#M\nprocessors            2\n"),
            ("qconf", "error reading file: \"/tmp/pid-17088-UF59Xa\"\n", "error reading file: \"/tmp/pid-<pid>\"\n"),
            ("qstat", "<JB_submission_time>1796220219</JB_submission_time>\n", "<JB_submission_time>#</JB_submission_time>\n"),
            ("qdel", "SGE 8.1.9\nusage: qdel\n", "<version>\nusage: qdel\n"),
            ("qstat", "<JB_submission_time>2026-12-02T14:20:44</JB_submission_time>\n", "<JB_submission_time>YYYY-MM-DDThh:mm:ss</JB_submission_time>\n"),
            ("qdel", "Gantry 0.1.0\nusage: qdel\n", "<version>\nusage: qdel\n"),
            ("qstat -f -xml", "      <load_avg>1.00391</load_avg>\n", "      <load_avg>#.#####</load_avg>\n"),
            ("qstat -j 1 -xml", "      <JB_uid>1012</JB_uid>\n", "      <JB_uid><id></JB_uid>\n"),
            ("qstat -j 1", "error reason          1:      12/03/2026 09:43:35 [1002:24843]: error: can't chdir\n", "error reason          1:      MM/DD/YYYY hh:mm:ss [<uid>:<pid>]: error: can't chdir\n"),
        ];
        for (cmd, text, want) in cases {
            assert_eq!(normalise(cmd, text, &r), want, "{text}");
        }
        let qhost = "vm                      lx-amd64        2    1    2    2  0.41   23.5G    1.2G     0.0     0.0\n";
        assert_eq!(
            normalise("qhost", qhost, &r),
            "vm                      lx-amd64        2    1    2    2 # # # # #\n"
        );
    }

    #[test]
    fn line_diff_marks_what_each_side_has_alone() {
        assert_eq!(
            line_diff("a\nb\nc\n", "a\nx\nc\n"),
            ["  a", "+ x", "- b", "  c"]
        );
        assert_eq!(line_diff("", "a\n"), ["+ a"]);
    }

    #[test]
    fn differences_list_reads_and_refuses_lines_without_a_reason() {
        let l = listed_differences("# c\n05_x 3: SGE crashes here\n").unwrap();
        assert_eq!(
            l,
            vec![("05_x".to_string(), 3, "SGE crashes here".to_string())]
        );
        assert!(listed_differences("05_x 3:\n").is_err());
        assert!(listed_differences("05_x: why\n").is_err());
    }
}
