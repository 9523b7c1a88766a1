//! qsub's option errors as SGE 8.1.9's qsub reports them, from each place options come
//! from: the command line (`qsub: ` before the message), a `#$` line of the script
//! (`Unable to read script file because of error: `), the cell's `sge_request` (the
//! message alone); an option qsub does not take is found once the job is built and gets
//! `qsub: ` wherever it was given. The exit status is SGE's answer status (2 a missing
//! or meaningless argument, 7 a malformed one, 5 an option not taken).
//!
//! No daemon runs here: each refusal happens before qsub would contact a master, and
//! `-verify` prints the job without contacting one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use gantry_tests::{bin, Out};

struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// qsub run in the scratch directory, with the scratch directory as the cell's
    /// client home and as HOME (so that no real defaults file is read).
    fn qsub(&self, args: &[&str]) -> Out {
        let mut cmd = Command::new(bin("qsub"));
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("GANTRY_HOME", self.dir.path())
            .env("HOME", self.dir.path());
        Out::from_output(cmd.output().expect("qsub"))
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.path().join(name), text).unwrap();
    }

    fn remove(&self, name: &str) {
        let _ = std::fs::remove_file(self.dir.path().join(name));
    }
}

/// Each refused option with SGE's message and status; the source of each message
/// (SGE's `parse_qsub.c`, `sge_range.c`, `sge_ulong.c` and its message catalogue) is
/// named in `client/src/optvalues.rs`.
const REFUSED: &[(&[&str], &str, i32)] = &[
    (&["-badopt"], "invalid option argument \"-badopt\"", 2),
    (
        &["-t", "1-$RUNS"],
        "Numerical value invalid!\nThe initial portion of string \"$RUNS\" contains no decimal number",
        7,
    ),
    (
        &["-t", "1-5x"],
        "Range specifier \"5x\" has unknown trailer \"x\"",
        7,
    ),
    (
        &["-t", "1-5:0"],
        "Negative or zero step in range is not allowed",
        7,
    ),
    (
        &["-t", "1-3,7"],
        "-t option only allows one range specification",
        7,
    ),
    (&["-j", "maybe"], "invalid option argument \"-j maybe\"", 7),
    (&["-r", "sometimes"], "invalid option argument \"-r sometimes\"", 7),
    (&["-w", "x"], "invalid option argument \"-w x\"", 7),
    (
        &["-p", "2000"],
        "invalid priority \"2000\".  Must be an integer from -1023 to 1024",
        7,
    ),
    (
        &["-tc", "-1"],
        "invalid task concurrency number -1. Must be an integer greater or equal to 0.",
        7,
    ),
    (
        &["-a", "tomorrow"],
        "Wrong date/time format \"tomorrow\" specified to -a option",
        7,
    ),
    (
        &["-dl", "soon"],
        "Wrong date/time format \"soon\" specified to -dl option",
        7,
    ),
    (
        &["-js", "-3"],
        "invalid jobshare, must be an unsigned integer",
        2,
    ),
    (
        &["-ar", "x"],
        "invalid advance reservation id, must be an unsigned integer",
        2,
    ),
    (
        &["-m", "q"],
        "Wrong mail options list format \"q\" specified to -m option",
        7,
    ),
    (
        &["-N", "a/b"],
        "argument to -N option must not contain / ",
        2,
    ),
    (&["-u", "alice"], "Unknown option -u alice", 5),
    (&["-nostdin"], "Unknown option -nostdin", 5),
    (&["-ot", "5"], "Unknown option -ot 5", 5),
    (&["-c", "q"], "-c specifier invalid", 2),
    (&["-c", "1:x"], "-c argument invalid", 2),
    (&["-pty", "maybe"], "invalid option argument \"-pty maybe\"", 7),
];

#[test]
/// SGE 8.1.9's qsub prints its parser's messages without the `ERROR! ` of its sources
/// (`tests/sge/recorded/25_qsub_syntax.txt`).
fn refused_options_read_as_sge_reports_them_from_every_source() {
    let s = Scratch::new();
    for (words, text, status) in REFUSED {
        let not_taken = *status == 5;
        // The command line.
        s.write("job.sh", "#!/bin/sh\ntrue\n");
        let mut args = words.to_vec();
        args.push("job.sh");
        let out = s.qsub(&args);
        assert_eq!(
            (out.code, out.stderr.as_str(), out.stdout.as_str()),
            (*status, format!("qsub: {text}\n").as_str(), ""),
            "command line {words:?}"
        );
        // A #$ line of the script.
        s.write(
            "job.sh",
            &format!("#!/bin/sh\n#$ {}\ntrue\n", words.join(" ")),
        );
        let out = s.qsub(&["job.sh"]);
        let want = if not_taken {
            format!("qsub: {text}\n")
        } else {
            format!("Unable to read script file because of error: {text}\n")
        };
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (*status, want.as_str()),
            "#$ line {words:?}"
        );
        // The cell's defaults file.
        s.write("job.sh", "#!/bin/sh\ntrue\n");
        s.write("sge_request", &format!("{}\n", words.join(" ")));
        let out = s.qsub(&["job.sh"]);
        s.remove("sge_request");
        let want = if not_taken {
            format!("qsub: {text}\n")
        } else {
            format!("{text}\n")
        };
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (*status, want.as_str()),
            "sge_request {words:?}"
        );
    }
}

#[test]
fn missing_arguments_name_the_option() {
    let s = Scratch::new();
    let table: &[(&[&str], &str)] = &[
        (&["-N"], "-N option must have argument"),
        (&["-t"], "-t option must have a list of task id ranges"),
        (&["-q"], "-q option must have queue list argument"),
        (&["-pe"], "-pe option must have pe_name argument"),
        (
            &["-pe", "smp"],
            "-pe option must have range as 2nd argument",
        ),
        (&["-binding", "set"], "-binding option must have argument"),
    ];
    for (args, text) in table {
        let out = s.qsub(args);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (2, format!("qsub: {text}\n").as_str()),
            "{args:?}"
        );
    }
    // In a script, the option's argument is missing at the end of the line.
    s.write("job.sh", "#!/bin/sh\n#$ -o\ntrue\n");
    let out = s.qsub(&["job.sh"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            2,
            "Unable to read script file because of error: -o option must have argument\n"
        )
    );
}

#[test]
fn verify_prints_the_job_as_parsed_and_submits_nothing() {
    let s = Scratch::new();
    s.write(
        "job.sh",
        "#!/bin/sh\n#$ -N verified -js 5\n#$ -dl 203001021530\necho hi\n",
    );
    // No master runs here: qsub -verify must not need one.
    let out = s.qsub(&["-verify", "-l", "h_rt=60", "job.sh", "arg1"]);
    assert_eq!(out.code, 0, "{out:?}");
    let field = |name: &str| -> Option<String> {
        out.stdout.lines().find_map(|l| {
            l.strip_prefix(&format!("{name}:"))
                .map(|v| v.trim().to_string())
        })
    };
    assert_eq!(field("job_number").as_deref(), Some("unassigned"));
    assert_eq!(field("exec_file"), None);
    assert_eq!(field("submission_time"), None);
    assert_eq!(field("job_name").as_deref(), Some("verified"));
    assert_eq!(field("jobshare").as_deref(), Some("5"));
    assert_eq!(field("verify").as_deref(), Some("-verify"));
    assert_eq!(field("hard resource_list").as_deref(), Some("h_rt=60"));
    assert_eq!(field("job_args").as_deref(), Some("arg1"));
    assert_eq!(field("script_file").as_deref(), Some("job.sh"));
    let deadline = field("deadline").expect("deadline row");
    assert!(deadline.contains("Jan  2 15:30:00 2030"), "{deadline}");
    // The rows come in SGE's order.
    let position = |name: &str| {
        out.stdout
            .lines()
            .position(|l| l.starts_with(&format!("{name}:")))
            .unwrap()
    };
    assert!(position("job_number") < position("deadline"));
    assert!(position("deadline") < position("owner"));
    assert!(position("jobshare") < position("verify"));
}

fn executable(s: &Scratch, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = s.dir.path().join(name);
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// Client JSVs: the command line's first, then the defaults files'; each sees the job as
/// the one before left it; a rejection stops the submission with the JSV's message,
/// before any master is asked (none runs here), and the JSVs' LOG lines are printed.
#[test]
fn client_jsvs_run_in_sges_order_and_may_reject() {
    let s = Scratch::new();
    let rename = executable(
        &s,
        "rename.sh",
        "#!/bin/sh\nwhile read cmd name value; do\n  case \"$cmd\" in\n    START) echo STARTED ;;\n    BEGIN) echo 'LOG INFO renaming'; echo 'PARAM N renamed'; echo 'RESULT STATE CORRECT' ;;\n    QUIT) exit 0 ;;\n  esac\ndone\n",
    );
    let reject = executable(
        &s,
        "reject.sh",
        "#!/bin/sh\nwhile read cmd name value; do\n  case \"$cmd\" in\n    START) echo STARTED ;;\n    PARAM) [ \"$name\" = N ] && n=$value ;;\n    BEGIN) echo \"RESULT STATE REJECT saw $n\" ;;\n    QUIT) exit 0 ;;\n  esac\ndone\n",
    );
    s.write("sge_request", &format!("-jsv {reject}\n"));
    let out = s.qsub(&["-jsv", &rename, "-N", "given", "-b", "y", "/bin/true"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            1,
            "renaming\n",
            "Unable to run job: saw renamed\nExiting.\n"
        )
    );
    s.remove("sge_request");
    let out = s.qsub(&["-jsv", "/no/such/jsv", "-b", "y", "/bin/true"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Unable to run job: JSV file \"/no/such/jsv\" does not exist\nExiting.\n"
        )
    );
}

/// qalter reads its options with qsub's parser, as SGE's qalter does: the same messages
/// and statuses after `qalter: `; qsub's options qalter does not take are found left
/// over and printed bare (`Unknown option -b y`, 5), as SGE's qalter.c prints them;
/// nothing is sent to a master (none runs here).
#[test]
fn qalter_refuses_options_as_sges_qalter() {
    let s = Scratch::new();
    let table: &[(&[&str], &str, i32)] = &[
        (
            &["-badopt", "1"],
            "qalter: invalid option argument \"-badopt\"",
            2,
        ),
        (&["-N"], "qalter: ERROR! -N option must have argument", 2),
        (
            &["-j", "maybe", "1"],
            "qalter: invalid option argument \"-j maybe\"",
            7,
        ),
        (
            &["-r", "sometimes", "1"],
            "qalter: invalid option argument \"-r sometimes\"",
            7,
        ),
        (
            &["-p", "2000", "1"],
            "qalter: invalid priority 2000. must be an integer from -1023 to 1024",
            7,
        ),
        (
            &["-a", "tomorrow", "1"],
            "qalter: ERROR! Wrong date/time format \"tomorrow\" specified to -a option",
            7,
        ),
        (
            &["-tc", "-1", "1"],
            "qalter: invalid task concurrency number -1. Must be an integer greater or equal to 0.",
            7,
        ),
        (
            &["-m", "q", "1"],
            "qalter: ERROR! Wrong mail options list format \"q\" specified to -m option",
            7,
        ),
        (&["-c", "q", "1"], "qalter: ERROR! -c specifier invalid", 2),
        (
            &["-h", "x", "1"],
            "qalter: ERROR! unknown hold list \"x\" specified to -h option",
            7,
        ),
        (&["-b", "y", "1"], "Unknown option -b y", 5),
        (&["-sync", "y", "1"], "Unknown option -sync y", 5),
        (&["-terse", "1"], "Unknown option -terse", 5),
        // `-verify` is qalter's own (SGE 8.1.9 prints the changes: scenario 98).
        (
            &["-w", "x", "1"],
            "qalter: invalid option argument \"-w x\"",
            7,
        ),
    ];
    for (args, message, status) in table {
        let mut cmd = Command::new(bin("qalter"));
        cmd.args(*args)
            .current_dir(s.dir.path())
            .env("GANTRY_HOME", s.dir.path())
            .env("HOME", s.dir.path());
        let out = Out::from_output(cmd.output().expect("qalter"));
        assert_eq!(
            (out.code, out.stderr.as_str(), out.stdout.as_str()),
            (*status, format!("{message}\n").as_str(), ""),
            "qalter {args:?}"
        );
    }
}
