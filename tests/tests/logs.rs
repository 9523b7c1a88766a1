//! The master's log: in rotated files of a directory, one JSON object a line, at the
//! level the global configuration's `loglevel` gives, changed while it runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use gantry_tests::{wait_until, Cluster};

/// Every line of every file in `dir`, each parsed as JSON.
fn logged(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        for line in text.lines() {
            lines.push(
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")),
            );
        }
    }
    lines
}

/// The messages logged at `level` (`INFO`, `WARN`, ...).
fn messages(dir: &std::path::Path, level: &str) -> Vec<String> {
    logged(dir)
        .iter()
        .filter(|l| l["level"] == level)
        .filter_map(|l| l["fields"]["message"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_log_goes_to_json_files_at_the_configured_loglevel() {
    let mut c = Cluster::init(&[]);
    let dir = c.dir.path().join("log");
    let dir_arg = dir.to_str().unwrap().to_string();
    c.start_master_with(&["--log-dir", &dir_arg, "--log-json"], None);
    let files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files.len() == 1 && files[0].starts_with("master."),
        "{files:?}"
    );
    // SGE's default loglevel, log_warning: a manager added is not logged.
    assert_eq!(c.qconf(&["-am", "quiet_one"]).code, 0);
    // loglevel log_info, changed while the master runs: the next one is.
    let conf = c.dir.path().join("global");
    std::fs::write(&conf, "loglevel log_info\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", conf.to_str().unwrap()]).code, 0);
    assert_eq!(c.qconf(&["-am", "loud_one"]).code, 0);
    wait_until(
        "the second manager in the log",
        Duration::from_secs(10),
        || {
            messages(&dir, "INFO")
                .iter()
                .any(|m| m.contains("added \"loud_one\" to manager list"))
        },
    );
    let info = messages(&dir, "INFO");
    assert!(
        !info.iter().any(|m| m.contains("quiet_one")),
        "logged at log_warning: {info:?}"
    );
    // Back to log_warning: quiet again.
    std::fs::write(&conf, "loglevel log_warning\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", conf.to_str().unwrap()]).code, 0);
    assert_eq!(c.qconf(&["-am", "quiet_two"]).code, 0);
    assert_eq!(c.qconf(&["-sm"]).code, 0);
    assert!(!messages(&dir, "INFO")
        .iter()
        .any(|m| m.contains("quiet_two")));
    // A directory it cannot write to: the master says so and does not start.
    let out = std::process::Command::new(gantry_tests::bin("gantry-master"))
        .args(["run", "--home"])
        .arg(c.home())
        .args(["--log-dir", "/proc/nosuch", "--log-rotation", "daily"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("gantry-master: cannot log to /proc/nosuch"),
        "{out:?}"
    );
    let out = std::process::Command::new(gantry_tests::bin("gantry-master"))
        .args(["run", "--home"])
        .arg(c.home())
        .args(["--log-rotation", "weekly"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "gantry-master: unknown log rotation \"weekly\" (minutely, hourly, daily or never)\n"
    );
}
