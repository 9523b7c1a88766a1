//! Upgrades: a cell made by each earlier release (`tests/fixtures/spools/schema-N.tar.gz`,
//! made by `make.sh` with the last commit that wrote spool schema N) is run by this
//! master, which upgrades its spool; everything the old release printed of its jobs,
//! accounting and configuration is still there, printed by today's commands.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use gantry_tests::Cluster;
use nix::sys::signal::Signal;

fn fixtures() -> Vec<(u32, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/spools");
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            let n = name.strip_prefix("schema-")?.strip_suffix(".tar.gz")?;
            Some((n.parse().ok()?, p))
        })
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no fixtures in {}", dir.display());
    // CI's: a cell made by the previous commit of main (`make.sh --commit`), its schema
    // in the file `schema` inside.
    if let Some(previous) = std::env::var_os("GANTRY_UPGRADE_FIXTURE") {
        let path = PathBuf::from(previous);
        let listed = Command::new("tar")
            .arg("-xzOf")
            .arg(&path)
            .arg("schema")
            .output()
            .unwrap();
        let schema = String::from_utf8_lossy(&listed.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{}: no schema in it ({listed:?})", path.display()));
        eprintln!("also upgrading {} (schema {schema})", path.display());
        found.push((schema, path));
    }
    found
}

/// This tree's spool schema (`SCHEMA_VERSION`).
fn current_schema() -> u32 {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../master/src/spool/store.rs");
    let text = std::fs::read_to_string(source).unwrap();
    text.split("pub const SCHEMA_VERSION: u32 = ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|n| n.parse().ok())
        .expect("SCHEMA_VERSION in store.rs")
}

/// The command that printed each file of `shown/`.
fn command_of(file: &str) -> Option<(&'static str, Vec<String>)> {
    let qconf = |args: &[&str]| Some(("qconf", args.iter().map(|s| s.to_string()).collect()));
    match file {
        "sconf" => qconf(&["-sconf"]),
        "sq" => qconf(&["-sq", "all.q"]),
        "sp" => qconf(&["-sp", "fixpe"]),
        "sprj" => qconf(&["-sprj", "fixproj"]),
        "sckpt" => qconf(&["-sckpt", "fixckpt"]),
        "shgrp" => qconf(&["-shgrp", "@fixhosts"]),
        "srqs" => qconf(&["-srqs", "fixrqs"]),
        "su" => qconf(&["-su", "fixturelist"]),
        "sm" => qconf(&["-sm"]),
        "so" => qconf(&["-so"]),
        "sc" => qconf(&["-sc"]),
        "qstat" => Some(("qstat", vec!["-u".into(), "*".into()])),
        "qrstat" => Some(("qrstat", vec!["-u".into(), "*".into()])),
        _ => {
            if let Some(job) = file.strip_prefix("qstat-j-") {
                Some(("qstat", vec!["-j".into(), job.into()]))
            } else {
                file.strip_prefix("qacct-j-")
                    .map(|job| ("qacct", vec!["-j".into(), job.into()]))
            }
        }
    }
}

/// Lines an old release printed that today's prints otherwise, on purpose: (the file,
/// the start of the line). Everything else the old one printed must be printed again.
const CHANGED_ON_PURPOSE: &[(&str, &str)] = &[
    // The scheduler's verdict comes from the cycle after the start, not from the spool.
    ("qstat-j-", "scheduling info:"),
    ("qstat-j-", "                            "),
    // Until schema 22 qstat -j printed `hold_list`; SGE 8.1.9 prints it from a field it
    // does not keep for a held job, and Gantry stopped (client/src/qstat.rs).
    ("qstat-j-", "hold_list:"),
];

fn changed_on_purpose(file: &str, line: &str) -> bool {
    CHANGED_ON_PURPOSE
        .iter()
        .any(|(f, start)| file.starts_with(f) && line.starts_with(start))
}

/// A line as compared: its words (columns were realigned since), a pending job's row
/// of `qstat` without its priority and slots, which come from the scheduler (the cycle
/// after the start) and, for a parallel job, are its requested slots since schema 27
/// (1 before, as no SGE prints it), a checkpointing environment's `when` letters in
/// any order (SGE's order since schema 26).
fn compared(file: &str, line: &str) -> String {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if file == "qstat" && fields.len() >= 8 && fields[0].parse::<u64>().is_ok() {
        return [&fields[..1], &fields[2..7], &fields[8..]]
            .concat()
            .join(" ");
    }
    if file == "sckpt" && fields.len() == 2 && fields[0] == "when" {
        let mut letters: Vec<char> = fields[1].chars().collect();
        letters.sort_unstable();
        return format!("when {}", letters.into_iter().collect::<String>());
    }
    fields.join(" ")
}

/// The lines of `old` that `new` does not print (each line as often as `old` has it).
fn missing_lines(file: &str, old: &str, new: &str) -> Vec<String> {
    let mut left: Vec<String> = new.lines().map(|l| compared(file, l)).collect();
    let mut missing = Vec::new();
    for line in old.lines() {
        if changed_on_purpose(file, line) {
            continue;
        }
        let line = compared(file, line);
        match left.iter().position(|l| *l == line) {
            Some(i) => {
                left.remove(i);
            }
            None => missing.push(line),
        }
    }
    missing
}

/// An earlier release's cell, unpacked over a fresh one's (its own port).
fn old_cell(fixture: &Path) -> Cluster {
    let c = Cluster::init(&[]);
    let cell = c.home();
    std::fs::remove_dir_all(&cell).unwrap();
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(fixture)
        .arg("-C")
        .arg(c.dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    c.use_own_port();
    c
}

#[test]
fn a_cell_of_each_earlier_release_is_upgraded_and_shows_everything_it_held() {
    for (schema, fixture) in fixtures() {
        let mut c = old_cell(&fixture);
        c.start_master();
        let log = c.master_log();
        match schema < current_schema() {
            true => assert!(
                log.contains("upgrading") && log.contains(&format!("from schema {schema} to")),
                "schema {schema}: the log says what was upgraded:\n{log}"
            ),
            false => assert!(!log.contains("upgrading"), "schema {schema}:\n{log}"),
        }
        let shown = c.dir.path().join("shown");
        let mut compared = 0;
        let mut files: Vec<PathBuf> = std::fs::read_dir(&shown)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let mut trouble = Vec::new();
        for path in files {
            let file = path.file_name().unwrap().to_str().unwrap().to_string();
            let (program, args) = command_of(&file).unwrap_or_else(|| panic!("{file}?"));
            let old = std::fs::read_to_string(&path).unwrap();
            // What the old release could not show (a command it did not have).
            if old.starts_with("error: invalid option") {
                continue;
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let new = c.client(program, &args);
            let missing = missing_lines(&file, &old, &new.stdout);
            if !missing.is_empty() {
                trouble.push(format!(
                    "{file} ({program} {}): not printed any more:\n  {}\nprinted now:\n{}{}",
                    args.join(" "),
                    missing.join("\n  "),
                    new.stdout,
                    new.stderr
                ));
            }
            compared += 1;
        }
        assert!(compared >= 15, "schema {schema}: {compared} outputs");
        assert!(
            trouble.is_empty(),
            "schema {schema}:\n{}",
            trouble.join("\n")
        );
        // New jobs get ids above every old one and run; the upgrade happens once.
        let out = c.client("qsub", &["-h", "-terse", "-b", "y", "true"]);
        assert_eq!(out.code, 0, "{out:?}");
        let id: u64 = out.stdout.trim().parse().unwrap();
        let made = std::fs::read_to_string(c.dir.path().join("made.txt")).unwrap();
        let highest = made
            .lines()
            .filter_map(|l| {
                let rest = l
                    .strip_prefix("Your job ")
                    .or_else(|| l.strip_prefix("Your job-array "))?;
                rest.split(|ch: char| !ch.is_ascii_digit())
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .unwrap();
        assert!(
            id > highest,
            "schema {schema}: new job {id}, the old one gave {highest}"
        );
        c.stop_master(Signal::SIGTERM);
        let before = c.master_log().matches("upgrading").count();
        c.start_master();
        assert_eq!(c.master_log().matches("upgrading").count(), before);
        assert!(c.client("qstat", &["-j", "journaled"]).code == 0);
        assert!(c.client("qstat", &["-j", &id.to_string()]).code == 0);
    }
}
