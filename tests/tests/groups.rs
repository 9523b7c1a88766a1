//! Hierarchical group quotas end to end: the group tree as a configuration object
//! (`qconf -sgq -mgq -Mgq -dgq`) against a real master, refused whole with the line and
//! reason of a broken rule, only by managers, kept across a master restart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use gantry_tests::{ensure_user, need_root, wait_until, Cluster};

const EMPTY: &str = "#name                          quota      accept_surplus autoregroup\n\
#-------------------------------------------------------------------\n\
# >#< starts a comment but comments are not saved across edits --------\n";

#[test]
fn the_group_tree_is_replaced_whole_by_managers_and_survives_a_restart() {
    if !need_root("the_group_tree_is_replaced_whole_by_managers_and_survives_a_restart") {
        return;
    }
    ensure_user("gq_u1");
    let mut c = Cluster::init(&[]);
    c.start_master();
    let write = |name: &str, text: &str| {
        let p = c.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        p.to_str().unwrap().to_string()
    };
    let show = |c: &Cluster| c.qconf(&["-sgq"]);
    assert_eq!((show(&c).stdout.as_str(), show(&c).code), (EMPTY, 0));

    let tree = write(
        "tree",
        "#name quota accept_surplus autoregroup\n\
         physics     0.7 TRUE  FALSE\n\
         physics.hep 20  TRUE  FALSE\n\
         chemistry   0.3 FALSE FALSE\n",
    );
    let out = c.qconf(&["-Mgq", &tree]);
    assert_eq!(
        (out.stdout.as_str(), out.code),
        ("root@head modified the group quota tree\n", 0),
        "{out:?}"
    );
    let shown = show(&c).stdout;
    assert_eq!(
        shown,
        "#name                          quota      accept_surplus autoregroup\n\
         #-------------------------------------------------------------------\n\
         chemistry                      0.3        FALSE          FALSE\n\
         physics                        0.7        TRUE           FALSE\n\
         physics.hep                    20         TRUE           FALSE\n\
         # >#< starts a comment but comments are not saved across edits --------\n"
    );

    // A file breaking a rule is refused whole, with its line and reason.
    for (text, reason) in [
        (
            "a 0.6 TRUE FALSE\nb 0.3 TRUE FALSE\nc 0.2 TRUE FALSE\n",
            "line 3: the proportional quotas of the children of \"<none>\" sum to 1.1, more than 1",
        ),
        (
            "physics 0.7 TRUE FALSE\nbio.x 2 TRUE FALSE\n",
            "line 2: group \"bio.x\": its parent \"bio\" is not declared",
        ),
        ("a 2.5 TRUE FALSE\n", "line 1: quota \"2.5\": a proportion of the parent's quota (with a decimal point) is at most 1"),
    ] {
        let bad = write("bad", text);
        let out = c.qconf(&["-Mgq", &bad]);
        assert_eq!(out.code, 1, "{out:?}");
        assert!(out.stderr.contains(reason), "{reason}: {out:?}");
        assert_eq!(show(&c).stdout, shown, "nothing changed");
    }
    // Only managers.
    let out = c.as_user("gq_u1", "qconf", &["-Mgq", &tree]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "denied: \"gq_u1\" must be manager for this operation\n"),
        "{out:?}"
    );
    let out = c.as_user("gq_u1", "qconf", &["-dgq"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(c.as_user("gq_u1", "qconf", &["-sgq"]).stdout, shown);

    // A master restart keeps it.
    c.stop_master(nix::sys::signal::Signal::SIGTERM);
    c.start_master();
    wait_until("the master answers", Duration::from_secs(20), || {
        show(&c).stdout == shown
    });

    let out = c.qconf(&["-dgq"]);
    assert_eq!(
        (out.stdout.as_str(), out.code),
        ("root@head removed the group quota tree\n", 0),
        "{out:?}"
    );
    assert_eq!(show(&c).stdout, EMPTY);
    let out = c.qconf(&["-dgq"]);
    assert_eq!(
        (out.stderr.as_str(), out.code),
        ("the group quota tree is empty\n", 1),
        "{out:?}"
    );
}
