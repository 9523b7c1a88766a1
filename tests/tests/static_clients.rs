//! `deploy/build.sh` links the job commands statically (their start-up is most of their
//! cost), which is only safe for programs that never call the name service: glibc cannot
//! load NSS modules into a static executable. These commands (and the shepherd) must stay
//! that way.

use gantry_tests::bin;

/// The name-service functions, as `deploy/build.sh` lists them (one list for both).
fn name_service_functions() -> Vec<String> {
    let script =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/build.sh"))
            .expect("deploy/build.sh");
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("NSS='^("))
        .expect("the NSS= line in deploy/build.sh");
    let list = line.strip_suffix(")'").expect("NSS='^(a|b|...)'");
    list.split('|').map(str::to_string).collect()
}

/// The functions `command` imports from shared libraries (`nm -D --undefined-only`).
fn imports(command: &str) -> Vec<String> {
    let out = std::process::Command::new("nm")
        .args(["-D", "--undefined-only"])
        .arg(bin(command))
        .output()
        .expect("nm (binutils) runs");
    assert!(
        out.status.success(),
        "nm {command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect()
}

#[test]
fn job_commands_never_call_the_name_service() {
    let nss = name_service_functions();
    assert!(nss.iter().any(|f| f == "getpw"), "{nss:?}");
    // The shepherd too: the execd starts one per job task and hands it the owner's
    // account, so that it can be linked statically.
    let commands = [
        "qsub",
        "qstat",
        "qdel",
        "qalter",
        "qhold",
        "qrls",
        "qacct",
        "qhost",
        "qmod",
        "qquota",
        "qrsh",
        "qlogin",
        "qselect",
        "gantry-shepherd",
    ];
    for command in commands {
        let used: Vec<String> = imports(command)
            .into_iter()
            .filter(|sym| nss.iter().any(|f| sym.starts_with(f.as_str())))
            .collect();
        assert!(
            used.is_empty(),
            "{command} calls the name service: {used:?}"
        );
    }
    // The check can fail: qconf resolves host names (getaddrinfo) and stays dynamic.
    assert!(imports("qconf")
        .iter()
        .any(|s| s.starts_with("getaddrinfo")));
}
