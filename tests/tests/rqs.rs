//! Resource quota sets through `qconf`, replayed against SGE 8.1.9's own transcripts
//! (`../shared/reference/sge/03_rqs_scenario.txt` and `04_rqs_errors.txt`, copied to
//! `tests/fixtures/sge/`): every `qconf` command of them runs against a real master and
//! must print what SGE printed, on the same stream, with the same exit status.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use gantry_tests::{bin_dir, ensure_user, is_root, skip_loudly, Cluster};

struct Step {
    user: String,
    command: String,
    stdout: String,
    stderr: String,
    exit: i32,
}

/// The transcript's steps: `=== [user] $ cmd`, `--- stdout`, `--- stderr`, `--- exit N`.
fn steps(text: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("=== [") else {
            continue;
        };
        let (user, command) = rest.split_once("] $ ").unwrap();
        let mut section = "";
        let (mut stdout, mut stderr, mut exit) = (String::new(), String::new(), 0);
        while let Some(l) = lines.peek() {
            if l.starts_with("=== [") {
                break;
            }
            let l = lines.next().unwrap();
            match l {
                "--- stdout" => section = "out",
                "--- stderr" => section = "err",
                _ if l.starts_with("--- exit ") => {
                    exit = l["--- exit ".len()..].parse().unwrap();
                    section = "";
                }
                _ if section == "out" => stdout.push_str(&format!("{l}\n")),
                _ if section == "err" => stderr.push_str(&format!("{l}\n")),
                _ => {}
            }
        }
        out.push(Step {
            user: user.to_string(),
            command: command.to_string(),
            stdout,
            stderr,
            exit,
        });
    }
    out
}

/// Where Gantry answers differently from SGE 8.1.9 on purpose (the reference's
/// "defects to fix"): duplicate rule names and limits on load values are refused.
fn deliberate_difference(command: &str) -> Option<(&'static str, &'static str, i32)> {
    match command {
        "qconf -Arqs inputs/bad_duplicate_rule_name.rqs" => Some((
            "",
            "rule name \"r1\" is used twice in resource quota set \"duprule\"\n",
            1,
        )),
        "qconf -Arqs inputs/bad_load_value_limit.rqs" => Some((
            "",
            "\"load_avg\" is a load value: a resource quota can only limit fixed and consumable resources\n",
            1,
        )),
        _ => None,
    }
}

/// SGE's output without the two sets Gantry refused (listed by `-srqsl`, removed by
/// `-Mrqs`).
fn without_refused_sets(text: &str) -> String {
    text.lines()
        .filter(|l| {
            !["duprule", "loadlimit"]
                .iter()
                .any(|n| *l == *n || l.contains(&format!("\"{n}\"")))
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

fn replay(transcript: &str) {
    if !is_root() {
        skip_loudly(
            "rqs replay",
            "needs root to run the user1 steps as a test user",
        );
        return;
    }
    ensure_user("gtuser1");
    let mut c = Cluster::init(&[]);
    c.start_master();
    // The transcripts' relative paths (`inputs/max_u_slots.rqs`) from a work directory.
    let work = c.home().parent().unwrap().join("work");
    let inputs = work.join("inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../common/tests/fixtures/rqs");
    for e in std::fs::read_dir(&fixtures).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), inputs.join(e.file_name())).unwrap();
    }
    for dir in [&work, &inputs] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:/usr/bin:/bin", bin_dir().display());
    let mut ran = 0;
    for step in steps(transcript) {
        if !step.command.starts_with("qconf ") {
            continue; // qsub, qstat, qquota: the scheduling part of the RQS issue
        }
        let user = if step.user == "root" {
            "root"
        } else {
            "gtuser1"
        };
        let out = Command::new("runuser")
            .args(["-u", user, "--", "env"])
            .arg(format!("PATH={path}"))
            .arg(format!("GANTRY_HOME={}", c.home().display()))
            .args(["sh", "-c", &step.command])
            .current_dir(&work)
            .output()
            .unwrap();
        let got_out = String::from_utf8_lossy(&out.stdout).into_owned();
        let got_err = String::from_utf8_lossy(&out.stderr).into_owned();
        let code = out.status.code().unwrap_or(-1);
        // SGE's host is `vm`, ours `head`; its user1 is our gtuser1.
        let fix = |s: &str| {
            let s = s.replace("root@vm ", "root@head ");
            if user == "root" {
                s
            } else {
                s.replace("\"user1\"", "\"gtuser1\"")
            }
        };
        let (want_out, mut want_err, want_exit) = match deliberate_difference(&step.command) {
            Some((out, err, exit)) => (out.to_string(), err.to_string(), exit),
            None => (
                without_refused_sets(&fix(&step.stdout)),
                without_refused_sets(&fix(&step.stderr)),
                step.exit,
            ),
        };
        let mut got_err_cmp = got_err.clone();
        // Lines Gantry cannot print the same: SGE's temporary file names, and its full
        // usage text after a missing argument (the first line is compared).
        if let Some(i) = want_err.find("error reading file: \"/tmp/") {
            want_err.truncate(i);
        }
        if want_err.contains("\nSGE 8.1.9\nusage: qconf") {
            want_err = want_err.lines().next().unwrap().to_string() + "\n";
            got_err_cmp = got_err.lines().next().unwrap_or("").to_string() + "\n";
        }
        assert_eq!(
            (got_out.as_str(), got_err_cmp.as_str(), code),
            (want_out.as_str(), want_err.as_str(), want_exit),
            "[{}] $ {}",
            step.user,
            step.command
        );
        ran += 1;
    }
    assert!(ran > 10, "only {ran} steps ran");
}

#[test]
fn rqs_errors_transcript_replays_exactly() {
    replay(include_str!("../fixtures/sge/04_rqs_errors.txt"));
}

#[test]
fn rqs_scenario_qconf_steps_replay_exactly() {
    replay(include_str!("../fixtures/sge/03_rqs_scenario.txt"));
}
