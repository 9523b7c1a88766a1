//! Hierarchical group quotas end to end: the group tree as a configuration object
//! (`qconf -sgq -mgq -Mgq -dgq`) against a real master, refused whole with the line and
//! reason of a broken rule, only by managers, kept across a master restart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use gantry_tests::{ensure_user, need_root, wait_until, Cluster};

const EMPTY: &str =
    "#name                          quota      accept_surplus autoregroup user_lists\n\
#------------------------------------------------------------------------------\n\
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
    // On stderr, as SGE's qconf reports an object modified from a file.
    let out = c.qconf(&["-Mgq", &tree]);
    assert_eq!(
        (out.stderr.as_str(), out.code),
        ("root@head modified the group quota tree\n", 0),
        "{out:?}"
    );
    let shown = show(&c).stdout;
    assert_eq!(
        shown,
        "#name                          quota      accept_surplus autoregroup user_lists\n\
         #------------------------------------------------------------------------------\n\
         chemistry                      0.3        FALSE          FALSE       NONE\n\
         physics                        0.7        TRUE           FALSE       NONE\n\
         physics.hep                    20         TRUE           FALSE       NONE\n\
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

/// Running jobs per name (`qstat -u '*'`, state `r`).
fn running_named(c: &Cluster, name: &str) -> usize {
    c.client("qstat", &["-u", "*"])
        .stdout
        .lines()
        .filter(|l| l.contains(" r ") && l.split_whitespace().nth(2) == Some(name))
        .count()
}

#[test]
fn two_groups_share_ten_slots_seven_to_three_and_lend_what_they_leave() {
    if !need_root("two_groups_share_ten_slots_seven_to_three_and_lend_what_they_leave") {
        return;
    }
    ensure_user("gq_u1");
    let c = Cluster::one_host();
    assert_eq!(
        c.qconf(&["-rattr", "queue", "slots", "10", "all.q"]).code,
        0
    );
    assert_eq!(
        c.qconf(&["-rattr", "queue", "load_thresholds", "NONE", "all.q"])
            .code,
        0
    );
    let file = c.dir.path().join("tree");
    std::fs::write(&file, "physics 0.7 TRUE FALSE\nchemistry 0.3 TRUE FALSE\n").unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    assert_eq!(c.qconf(&["-Mgq", file.to_str().unwrap()]).code, 0);
    let submit = |group: &str, name: &str, secs: &str, n: usize, hold: bool| -> Vec<String> {
        (0..n)
            .map(|_| {
                let mut args = vec!["-A", group, "-N", name, "-o", "/dev/null", "-j", "y"];
                if hold {
                    args.push("-h");
                }
                args.extend(["-b", "y", "sleep", secs]);
                c.submit("gq_u1", &args)
            })
            .collect()
    };
    // Both groups' jobs released at once, chemistry's first: the allocation, not the
    // order of submission, decides.
    let chem = submit("chemistry", "chem", "600", 12, true);
    let phys = submit("physics.gq_u1", "phys", "15", 30, true);
    let all: Vec<&str> = chem.iter().chain(&phys).map(String::as_str).collect();
    let out = c.as_user("gq_u1", "qrls", &[&all.join(",")]);
    assert_eq!(out.code, 0, "{out:?}");
    wait_until(
        "seven physics and three chemistry jobs run",
        Duration::from_secs(30),
        || running_named(&c, "phys") == 7 && running_named(&c, "chem") == 3,
    );
    // qquota -g: each group's configured and effective quota, surplus, demand (running
    // and pending), running slots and allocation.
    wait_until(
        "qquota -g shows the allocation",
        Duration::from_secs(10),
        || {
            let table = c.as_user("gq_u1", "qquota", &["-g"]).stdout;
            table.contains(
            "\nchemistry                      0.3                 3          0         12          3          3\n",
        ) && table.contains(
            "\nphysics                        0.7                 7          0         30          7          7\n",
        )
        },
    );
    let json = c.as_user("gq_u1", "qquota", &["-g", "-json"]).stdout;
    assert!(
        json.starts_with("{\"groups\":[{\"name\":\"<none>\""),
        "{json}"
    );
    let pending = c.client("qstat", &["-j", &chem[11]]).stdout;
    assert!(
        pending.contains("cannot run because group \"chemistry\" is at its allocation of 3 slots"),
        "{pending}"
    );
    // Chemistry stops: physics, accepting surplus, takes its three slots at once.
    assert_eq!(c.client("qdel", &[&chem.join(",")]).code, 0);
    wait_until("physics takes all ten", Duration::from_secs(30), || {
        running_named(&c, "phys") == 10
    });
    // Chemistry asks again: it has its three back within one physics job's length
    // (15 s), as physics jobs end, physics not starting beyond its seven meanwhile.
    submit("chemistry", "chem", "600", 5, false);
    wait_until("seven and three again", Duration::from_secs(25), || {
        running_named(&c, "chem") == 3 && running_named(&c, "phys") == 7
    });
}

/// The account line of `qstat -j`.
fn account_of(c: &Cluster, job: &str) -> String {
    c.client("qstat", &["-j", job])
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("account:"))
        .map(|a| a.trim().to_string())
        .unwrap_or_default()
}

#[test]
fn access_lists_restrict_who_submits_to_a_group_and_qalter_a_moves_pending_jobs() {
    if !need_root("access_lists_restrict_who_submits_to_a_group_and_qalter_a_moves_pending_jobs") {
        return;
    }
    ensure_user("gq_u1");
    ensure_user("gq_u2");
    let c = Cluster::one_host();
    assert_eq!(c.qconf(&["-au", "gq_u1", "physicists"]).code, 0);
    let write = |text: &str| {
        let p = c.dir.path().join("tree");
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        p.to_str().unwrap().to_string()
    };
    // An access list the cell does not have is refused, and nothing changes.
    let out = c.qconf(&[
        "-Mgq",
        &write("physics 0.5 TRUE FALSE physicists,nolist\nchemistry 0.5 TRUE FALSE\n"),
    ]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "userset \"nolist\" in user_lists of group \"physics\" does not exist\n"
        ),
        "{out:?}"
    );
    assert_eq!(c.qconf(&["-sgq"]).stdout, EMPTY);
    let tree = write(
        "physics 0.5 TRUE FALSE physicists\nphysics.hep 0.5 TRUE FALSE\nchemistry 0.5 TRUE FALSE\n",
    );
    assert_eq!(c.qconf(&["-Mgq", &tree]).code, 0);
    assert!(c.qconf(&["-sgq"]).stdout.contains(
        "\nphysics                        0.5        TRUE           FALSE       physicists\n"
    ));
    // Only the list's members submit to physics and its subtree.
    for account in ["physics", "physics.hep", "physics.hep.gq_u2"] {
        let out = c.as_user(
            "gq_u2",
            "qsub",
            &["-A", account, "-h", "-b", "y", "/bin/true"],
        );
        let group = if account == "physics" {
            "physics"
        } else {
            "physics.hep"
        };
        assert_eq!(
            (out.code, out.stderr.trim()),
            (
                1,
                format!("Unable to run job: job rejected: user \"gq_u2\" has no access to group \"{group}\"\nExiting.").as_str()
            ),
            "{out:?}"
        );
    }
    let mine = c.submit(
        "gq_u1",
        &["-A", "physics.hep", "-h", "-b", "y", "/bin/true"],
    );
    assert!(!mine.is_empty());
    // qalter -A: not into a group the owner may not submit to; a pending job moves.
    let theirs = c.submit("gq_u2", &["-A", "chemistry", "-h", "-b", "y", "/bin/true"]);
    let out = c.as_user("gq_u2", "qalter", &["-A", "physics", &theirs]);
    assert_eq!(
        (out.code, out.stdout.trim()),
        (
            1,
            "job rejected: user \"gq_u2\" has no access to group \"physics\""
        ),
        "{out:?}"
    );
    assert_eq!(account_of(&c, &theirs), "chemistry");
    let out = c.as_user("gq_u1", "qalter", &["-A", "chemistry", &mine]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(account_of(&c, &mine), "chemistry");
    // A job with a running task stays in its group (its slots are the group's usage);
    // its account may change within the group. One slot: task 2 of 2 waits.
    assert_eq!(c.qconf(&["-rattr", "queue", "slots", "1", "all.q"]).code, 0);
    let running = c.submit(
        "gq_u1",
        &["-A", "physics", "-t", "1-2", "-b", "y", "sleep", "600"],
    );
    wait_until("the job runs", Duration::from_secs(20), || {
        c.client("qstat", &["-u", "*"])
            .stdout
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{running} ")) && l.contains(" r "))
    });
    let out = c.as_user("gq_u1", "qalter", &["-A", "chemistry", &running]);
    assert_eq!(
        (out.code, out.stdout.trim()),
        (
            1,
            format!("job {running} can't modify running jobs").as_str()
        ),
        "{out:?}"
    );
    assert_eq!(account_of(&c, &running), "physics");
    let out = c.as_user("gq_u1", "qalter", &["-A", "physics.gq_u1", &running]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(account_of(&c, &running), "physics.gq_u1");
    // The list cannot go while the tree names it.
    let out = c.qconf(&["-dul", "physicists"]);
    assert_eq!(
        (out.code, out.stderr.trim()),
        (
            1,
            "denied: userset \"physicists\" is still referenced in group \"physics\" of the group quota tree"
        ),
        "{out:?}"
    );
    // The scheduler configuration carries the group quota settings, checked.
    let conf = c.qconf(&["-ssconf"]).stdout;
    for line in [
        "group_quota_rounds                3",
        "group_sort                        usage/quota",
        "group_slot_weight                 slots",
    ] {
        assert!(conf.contains(&format!("\n{line}\n")), "{line}: {conf}");
    }
    let changed = conf.replace("usage/quota", "usage/quotas");
    let file = c.dir.path().join("sconf");
    std::fs::write(&file, changed).unwrap();
    let out = c.qconf(&["-Msconf", file.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("value \"usage/quotas\" for attribute \"group_sort\" of the scheduler configuration is invalid"),
        "{out:?}"
    );
    assert_eq!(c.qconf(&["-ssconf"]).stdout, conf);
    // A slot weighs two: the pool of the one slot weighs 2, physics.hep's quota (a
    // quarter of it) goes from 0.25 to 0.5 in the next cycle's allocation.
    let hep = |c: &Cluster| {
        let json = c.as_user("gq_u1", "qquota", &["-g", "-json"]).stdout;
        json.contains("{\"name\":\"physics.hep\",\"configured_quota\":\"0.5\",\"accept_surplus\":true,\"autoregroup\":false,\"effective_quota\":0.25,")
    };
    wait_until(
        "qquota -g: physics.hep's quota 0.25",
        Duration::from_secs(10),
        || hep(&c),
    );
    std::fs::write(
        &file,
        conf.replace(
            "group_slot_weight                 slots",
            "group_slot_weight                 slots*2",
        ),
    )
    .unwrap();
    let out = c.qconf(&["-Msconf", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
    wait_until(
        "qquota -g: physics.hep's quota 0.5",
        Duration::from_secs(10),
        || {
            c.as_user("gq_u1", "qquota", &["-g", "-json"])
            .stdout
            .contains("{\"name\":\"physics.hep\",\"configured_quota\":\"0.5\",\"accept_surplus\":true,\"autoregroup\":false,\"effective_quota\":0.5,")
        },
    );
}
