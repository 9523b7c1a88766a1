//! The man pages and the bash completion as a user meets them: `deploy/man.sh` makes a
//! page for every command and daemon (each from docs/man with the command's own usage
//! text), `man -l` renders each; the completion offers a command's options and, on a
//! running cluster, its job ids.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use gantry_tests::{bin_dir, is_root, Cluster};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every command and daemon the build makes (the binaries' sources).
fn commands() -> Vec<(String, u8)> {
    let mut out = Vec::new();
    for dir in ["client/src/bin", "interactive/src/bin"] {
        for e in std::fs::read_dir(repo().join(dir)).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().replace(".rs", "");
            out.push((name, 1));
        }
    }
    out.push(("gantry-master".to_string(), 8));
    out.push(("gantry-execd".to_string(), 8));
    out.sort();
    out
}

#[test]
fn every_command_has_a_man_page_with_its_own_usage() {
    if Command::new("go-md2man").arg("--help").output().is_err() {
        assert!(
            !is_root(),
            "go-md2man is missing (Debian's go-md2man package; .ci/run installs it)"
        );
        eprintln!("NOT RUN: every_command_has_a_man_page_with_its_own_usage needs go-md2man");
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let made = Command::new(repo().join("deploy/man.sh"))
        .arg(bin_dir())
        .arg(out_dir.path())
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    for (name, section) in commands() {
        let page = out_dir
            .path()
            .join(format!("man{section}/{name}.{section}"));
        let roff = std::fs::read_to_string(&page)
            .unwrap_or_else(|_| panic!("no man page for {name}: add docs/man/{name}.{section}.md"));
        assert!(
            roff.contains(&format!(".TH {} {section} ", name.to_uppercase())),
            "{name}: {roff}"
        );
        let rendered = Command::new("man")
            .arg("-l")
            .arg(&page)
            .env("MANWIDTH", "100")
            .output()
            .expect("man (man-db)");
        let text = String::from_utf8_lossy(&rendered.stdout);
        assert!(rendered.status.success(), "{name}: {rendered:?}");
        assert!(
            text.contains("NAME") && text.contains(&format!("{name} - ")),
            "{name}: {text}"
        );
        // The usage is the command's own: its first line past the version.
        let help = Command::new(bin_dir().join(&name))
            .arg(if section == 1 { "-help" } else { "--help" })
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&help.stdout).into_owned()
            + &String::from_utf8_lossy(&help.stderr);
        let line = help
            .lines()
            .find(|l| !l.trim().is_empty() && !l.starts_with("Gantry "))
            .unwrap_or_else(|| panic!("{name} -help printed nothing"))
            .trim();
        let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let want: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(&want),
            "{name}'s page lacks its usage ({want}): {text}"
        );
    }
}

#[test]
fn bash_completion_offers_options_and_job_ids() {
    if !gantry_tests::need_root("bash_completion_offers_options_and_job_ids") {
        return;
    }
    let c = Cluster::one_host();
    gantry_tests::ensure_user("gtuser1");
    let job = c.submit("gtuser1", &["-h", "-b", "y", "true"]);
    let complete = |words: &str| -> String {
        let script = format!(
            ". {}/deploy/completion/gantry.bash; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _gantry_complete; echo \"${{COMPREPLY[*]}}\"",
            repo().display()
        );
        let out = Command::new("bash")
            .args(["-c", &script])
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir().display()))
            .env("GANTRY_HOME", c.home())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(complete("qdel -"), "-f -help -u");
    assert_eq!(complete("qstat -ex"), "-explain -ext");
    assert_eq!(complete("qdel ''"), job);
    assert_eq!(complete("qsub -q ''"), "all.q");
    assert!(complete("qsub -l h_").split(' ').any(|w| w == "h_rt="));
}
