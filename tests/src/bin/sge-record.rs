//! Record the differential scenarios (`tests/sge/scenarios/*.scn`) from the real SGE
//! 8.1.9 into `tests/sge/recorded/`: for each scenario a fresh cell
//! (`RESET=1 SMOKE=0 ../shared/tools/sge/setup.sh`), the harness's base configuration,
//! then the scenario, its output normalised as the replay normalises Gantry's.
//!
//! As root, SGE installed: `cargo run -p gantry-tests --bin sge-record [NAME...]`
//! (`SGE_SETUP=PATH` for another setup script). Never run by the test suite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use gantry_tests::differential::{self, Backend, Sge, BASE};

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let setup = std::env::var_os("SGE_SETUP")
        .map(PathBuf::from)
        .unwrap_or_else(|| differential::sge_dir().join("../../../shared/tools/sge/setup.sh"));
    assert!(
        nix::unistd::geteuid().is_root(),
        "run as root: setup.sh resets the cell and the scenarios run as test users"
    );
    let out_dir = differential::sge_dir().join("recorded");
    let work = PathBuf::from("/tmp/gantry-sge-diff-work");
    let version = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", "gridengine-master"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut failed = Vec::new();
    for scenario in differential::scenarios() {
        if !only.is_empty() && !only.contains(&scenario.name) {
            continue;
        }
        eprintln!("== {}", scenario.name);
        let status = Command::new(&setup)
            .env("RESET", "1")
            .env("SMOKE", "0")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("setup.sh");
        assert!(status.success(), "{} failed", setup.display());
        differential::make_work_dir(&work);
        let mut sge = Sge { work: work.clone() };
        for c in BASE {
            let o = sge.run("root", c);
            assert_eq!(o.exit, 0, "{c}: {o:?}");
        }
        let played = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            differential::play(&scenario, &mut sge)
        }));
        let Ok(text) = played else {
            eprintln!("!! {} was not recorded", scenario.name);
            failed.push(scenario.name.clone());
            continue;
        };
        let when = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ");
        let header = format!(
            "# {}: recorded from SGE {version} (gridengine-master) on {when}\n\
             # by tests/src/bin/sge-record.rs; replayed against Gantry by tests/tests/differential.rs\n\n",
            scenario.name
        );
        std::fs::write(
            out_dir.join(format!("{}.txt", scenario.name)),
            header + &text,
        )
        .unwrap();
    }
}
