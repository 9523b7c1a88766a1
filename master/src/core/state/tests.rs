use super::*;
use crate::core::door::Door;
use gantry_proto::ToMaster;

fn fresh() -> ClusterState {
    let mut s = ClusterState {
        master_host: "head".into(),
        ..ClusterState::default()
    };
    for o in initial_objects(&["root".into(), "admin".into()]) {
        s.apply(&Op::Put(o));
    }
    s
}

#[test]
fn manager_commands_come_only_from_administrative_hosts() {
    let mut s = fresh();
    let on = |host: &str| Caller {
        user: "root".into(),
        uid: 0,
        gid: 0,
        host: host.into(),
    };
    let add_manager = ToMaster::AddManagers {
        users: vec!["user9".into()],
    };
    let err = s
        .handle(&on("node1"), &add_manager, gantry_sched::Time::from_secs(0))
        .unwrap_err();
    assert_eq!(
        (err.kind, err.message.as_str()),
        (
            RefusalKind::Denied,
            "denied: host \"node1\" is no admin host"
        )
    );
    assert!(!s.acts_as_manager(&on("node1")));
    // Reading stays open to every host.
    assert!(s
        .handle(
            &on("node1"),
            &ToMaster::ShowManagers,
            gantry_sched::Time::from_secs(0)
        )
        .is_ok());
    // Only the master's host at first; a manager there adds node1.
    let list = |s: &ClusterState| match s
        .handle(
            &on("node1"),
            &ToMaster::ShowObjectList {
                kind: gantry_proto::ObjectKind::AdminHost,
            },
            gantry_sched::Time::from_secs(0),
        )
        .unwrap()
    {
        Reply::Answer(FromMaster::Names(n)) => n,
        other => panic!("{other:?}"),
    };
    assert_eq!(list(&s), vec!["head".to_string()]);
    let add = |h: &str| ToMaster::AddObject {
        kind: gantry_proto::ObjectKind::AdminHost,
        text: h.into(),
    };
    assert!(s
        .handle(
            &on("node1"),
            &add("node1"),
            gantry_sched::Time::from_secs(0)
        )
        .is_err());
    assert_eq!(
        run(&mut s, &on("head"), add("node1")),
        vec!["node1 added to administrative host list"]
    );
    assert_eq!(list(&s), vec!["head".to_string(), "node1".to_string()]);
    assert_eq!(
        s.handle(&on("head"), &add("node1"), gantry_sched::Time::from_secs(0))
            .unwrap_err()
            .message,
        "adminhost \"node1\" already exists"
    );
    assert!(s.acts_as_manager(&on("node1")));
    assert_eq!(
        run(&mut s, &on("node1"), add_manager),
        vec!["root@node1 added \"user9\" to manager list"]
    );
    let del = |h: &str| ToMaster::DeleteObjects {
        kind: gantry_proto::ObjectKind::AdminHost,
        names: vec![h.into()],
    };
    assert_eq!(
        s.handle(&on("head"), &del("head"), gantry_sched::Time::from_secs(0))
            .unwrap_err()
            .message,
        "denied: can't delete master host \"head\" from admin host list"
    );
    assert_eq!(
        s.handle(&on("head"), &del("node7"), gantry_sched::Time::from_secs(0))
            .unwrap_err()
            .message,
        "denied: administrative host \"node7\" does not exist"
    );
    assert_eq!(
        run(&mut s, &on("head"), del("node1")),
        vec!["root@head removed \"node1\" from administrative host list"]
    );
    assert!(!s.is_admin_host("node1"));
    let err = |s: &ClusterState, req: &ToMaster| {
        s.handle(&on("head"), req, gantry_sched::Time::from_secs(0))
            .unwrap_err()
    };
    assert_eq!(err(&s, &add(" , ")).message, "no host given");
    assert_eq!(
        err(
            &s,
            &ToMaster::DeleteObjects {
                kind: gantry_proto::ObjectKind::AdminHost,
                names: vec![],
            }
        )
        .message,
        "no host given"
    );
    // A list is added whole or not at all.
    assert_eq!(
        err(&s, &add("node2,head,node3")).message,
        "adminhost \"head\" already exists"
    );
    assert_eq!(list(&s), vec!["head".to_string()]);
    assert_eq!(
        run(&mut s, &on("head"), add("node3 alpha")),
        vec![
            "node3 added to administrative host list",
            "alpha added to administrative host list"
        ]
    );
    // -sh lists them sorted by name, as SGE does.
    assert_eq!(list(&s), vec!["alpha", "head", "node3"]);
}

/// Who gets which refusal for a manager command, and for another user's job: the
/// user is checked before the host, as SGE's master does.
#[test]
fn refusals_name_the_user_before_the_host() {
    let s = fresh();
    let caller = |user: &str, host: &str| Caller {
        user: user.into(),
        uid: 1000,
        gid: 1000,
        host: host.into(),
    };
    let no_rights = || "no privileges".to_string();
    // (user, host, manager_check, others_job_refusal)
    let table = [
        ("admin", "head", None, "no privileges"),
        (
            "admin",
            "node1",
            Some("denied: host \"node1\" is no admin host"),
            "denied: host \"node1\" is no admin host",
        ),
        (
            "user1",
            "head",
            Some("denied: \"user1\" must be manager for this operation"),
            "no privileges",
        ),
        (
            "user1",
            "node1",
            Some("denied: \"user1\" must be manager for this operation"),
            "no privileges",
        ),
    ];
    for (user, host, check, others) in table {
        let c = caller(user, host);
        assert_eq!(
            s.manager_check(&c).err().map(|r| r.message),
            check.map(str::to_string),
            "{user}@{host}"
        );
        assert_eq!(
            s.others_job_refusal(&c, no_rights()),
            others,
            "{user}@{host}"
        );
    }
}

#[test]
fn a_join_may_not_take_a_joined_name_nor_the_masters_from_elsewhere() {
    let mut s = fresh();
    let joined = s.join("node1", "aa");
    commit(&mut s, Ok(Reply::Change(joined)));
    // (name, from the master's machine, refusal)
    let table = [
        ("node2", false, None),
        ("node1", false, Some("host \"node1\" already joined; delete it with qconf -de first")),
        ("node1", true, Some("host \"node1\" already joined; delete it with qconf -de first")),
        ("head", false, Some("host \"head\" is the master's host; an execd joins under that name only on the master's machine")),
        ("head", true, None),
    ];
    for (name, local, refusal) in table {
        assert_eq!(
            s.join_check(name, local)
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            refusal,
            "{name} local={local}"
        );
    }
    // Once deleted (its certificate revoked) the name may join again.
    run(
        &mut s,
        &caller("root"),
        ToMaster::DeleteExecHosts {
            hosts: vec!["node1".into()],
        },
    );
    assert_eq!(s.join_check("node1", false), Ok(()));
}

fn caller(user: &str) -> Caller {
    Caller {
        user: user.into(),
        uid: 1000,
        gid: 1000,
        host: "head".into(),
    }
}

fn run(s: &mut ClusterState, c: &Caller, req: ToMaster) -> Vec<String> {
    let r = s.handle(c, &req, gantry_sched::Time::from_secs(0));
    commit(s, r)
}

fn commit(s: &mut ClusterState, r: Result<Reply, Refusal>) -> Vec<String> {
    match r.unwrap() {
        Reply::Change(c) => {
            for op in &c.ops {
                s.apply(op);
            }
            c.messages
        }
        Reply::Answer(a) => panic!("expected a change, got {a:?}"),
    }
}

#[test]
fn non_manager_is_denied_every_change() {
    let s = fresh();
    let u = caller("user1");
    for req in [
        ToMaster::AddExecHost {
            text: "hostname n1\n".into(),
        },
        ToMaster::DeleteExecHosts {
            hosts: vec!["n1".into()],
        },
        ToMaster::ModifyConfig {
            name: "global".into(),
            text: "min_uid 0\n".into(),
        },
        ToMaster::AddManagers {
            users: vec!["user1".into()],
        },
        ToMaster::DeleteManagers {
            users: vec!["admin".into()],
        },
    ] {
        let err = s
            .handle(&u, &req, gantry_sched::Time::from_secs(0))
            .unwrap_err();
        assert_eq!(err.kind, RefusalKind::Denied);
        assert_eq!(
            err.message,
            "denied: \"user1\" must be manager for this operation"
        );
    }
}

#[test]
fn exec_host_lifecycle() {
    let mut s = fresh();
    let a = caller("admin");
    let msgs = run(
        &mut s,
        &a,
        ToMaster::AddExecHost {
            text: "hostname n1\n".into(),
        },
    );
    assert_eq!(msgs, vec!["admin@head added \"n1\" to exechost list"]);
    let err = s
        .handle(
            &a,
            &ToMaster::AddExecHost {
                text: "hostname n1\n".into(),
            },
            gantry_sched::Time::from_secs(0),
        )
        .unwrap_err();
    assert_eq!(err.message, "exechost \"n1\" already exists");
    let err = s
        .handle(
            &a,
            &ToMaster::DeleteExecHosts {
                hosts: vec!["n1".into(), "nope".into()],
            },
            gantry_sched::Time::from_secs(0),
        )
        .unwrap_err();
    assert_eq!(err.message, "denied: \"nope\" is not an execution host");
    assert!(
        s.input.exechosts.contains_key("n1"),
        "a refused delete changes nothing"
    );
    let msgs = run(
        &mut s,
        &a,
        ToMaster::DeleteExecHosts {
            hosts: vec!["n1".into()],
        },
    );
    assert_eq!(
        msgs,
        vec!["admin@head removed \"n1\" from execution host list"]
    );
    assert!(s.input.exechosts.is_empty());
}

#[test]
fn join_adds_host_to_allhosts_and_first_report_sets_slots() {
    let mut s = fresh();
    for op in s.join("n1", "aa").ops {
        s.apply(&op);
    }
    assert_eq!(s.host_certs.get("aa").map(String::as_str), Some("n1"));
    assert_eq!(s.input.hostgroups["@allhosts"].hostlist, vec!["n1"]);
    let values = vec![LoadValue {
        name: "num_proc".into(),
        value: "4".into(),
    }];
    for op in s.slots_for_new_host("n1", &values).unwrap().ops {
        s.apply(&op);
    }
    assert_eq!(
        queue::print_attr(s.input.queues["all.q"].attr("slots").unwrap()),
        "1,[n1=4]"
    );
    assert!(
        s.slots_for_new_host("n1", &values).is_none(),
        "set once only"
    );
    // An administrator's value replacing it stays, whatever the host reports.
    let mut q = s.input.queues["all.q"].clone();
    q.attr_mut("slots").unwrap().overrides.clear();
    s.apply(&Op::Put(Object::Queue(q)));
    assert!(s.slots_for_new_host("n1", &values).is_none());
    // A rejoin replaces the old certificate.
    for op in s.join("n1", "bb").ops {
        s.apply(&op);
    }
    assert!(!s.host_certs.contains_key("aa"));
    assert_eq!(s.input.hostgroups["@allhosts"].hostlist, vec!["n1"]);
    // Deleting the host removes it everywhere it was put by joining.
    let a = caller("admin");
    run(
        &mut s,
        &a,
        ToMaster::DeleteExecHosts {
            hosts: vec!["n1".into()],
        },
    );
    assert!(s.host_certs.is_empty());
    assert!(s.input.hostgroups["@allhosts"].hostlist.is_empty());
    assert_eq!(
        queue::print_attr(s.input.queues["all.q"].attr("slots").unwrap()),
        "1"
    );
}

#[test]
fn reachability_follows_max_unheard() {
    let mut s = fresh();
    for op in s.join("n1", "aa").ops {
        s.apply(&op);
    }
    let at = |secs: i64| gantry_sched::Time::from_secs(secs);
    assert!(!s.is_reachable("n1", at(0)), "never heard");
    s.record_load("n1", vec![], at(100));
    assert!(s.is_reachable("n1", at(100 + 300)));
    assert!(!s.is_reachable("n1", at(100 + 301)));
}

#[test]
fn managers() {
    let mut s = fresh();
    let a = caller("admin");
    let msgs = run(
        &mut s,
        &a,
        ToMaster::AddManagers {
            users: vec!["bob".into()],
        },
    );
    assert_eq!(msgs, vec!["admin@head added \"bob\" to manager list"]);
    assert_eq!(
        s.handle(
            &a,
            &ToMaster::AddManagers {
                users: vec!["bob".into()]
            },
            gantry_sched::Time::from_secs(0)
        )
        .unwrap_err()
        .message,
        "manager \"bob\" already exists"
    );
    assert_eq!(
        s.handle(
            &a,
            &ToMaster::DeleteManagers {
                users: vec!["zed".into()]
            },
            gantry_sched::Time::from_secs(0)
        )
        .unwrap_err()
        .message,
        "denied: manager \"zed\" does not exist"
    );
    assert_eq!(
        s.handle(
            &a,
            &ToMaster::DeleteManagers {
                users: vec!["root".into()]
            },
            gantry_sched::Time::from_secs(0)
        )
        .unwrap_err()
        .kind,
        RefusalKind::Denied
    );
    run(
        &mut s,
        &a,
        ToMaster::DeleteManagers {
            users: vec!["bob".into()],
        },
    );
    assert_eq!(s.managers, vec!["root", "admin"]);
}

#[test]
fn bad_config_changes_nothing() {
    let s = fresh();
    let a = caller("admin");
    let err = s
        .handle(
            &a,
            &ToMaster::ModifyConfig {
                name: "global".into(),
                text: "load_report_time soon\n".into(),
            },
            gantry_sched::Time::from_secs(0),
        )
        .unwrap_err();
    assert_eq!(err.kind, RefusalKind::Invalid);
    assert_eq!(s.load_report_time(), 40);
}

#[test]
fn qtype_letters_as_sge() {
    assert_eq!(qtype_letters("BATCH INTERACTIVE", "make smp mpi"), "BIP");
    assert_eq!(qtype_letters("BATCH", "NONE"), "B");
}

/// `access_list(5)`: a user or group is in one department only; an access list (ACL)
/// may name anyone.
#[test]
fn a_user_is_in_one_department_only() {
    let mut s = fresh();
    let root = caller("root");
    let put = |s: &ClusterState, text: &str, adding: bool| s.put_userset(&root, text, adding);
    let dept = |name: &str, entries: &str| {
        format!("name {name}\ntype DEPT\nfshare 10\noticket 0\nentries {entries}\n")
    };
    let r = put(&s, &dept("chem", "alice,@physics"), true);
    commit(&mut s, r);
    for (text, adding) in [
        (dept("bio", "bob,alice"), true),
        (dept("bio", "@physics"), true),
    ] {
        let e = put(&s, &text, adding).unwrap_err();
        assert_eq!(e.kind, RefusalKind::Invalid, "{e:?}");
        assert!(
            e.message.contains("already in department \"chem\""),
            "{e:?}"
        );
    }
    // An ACL may name them, and chem itself may be changed.
    let acl = "name friends\ntype ACL\nfshare 0\noticket 0\nentries alice\n";
    assert!(put(&s, acl, true).is_ok());
    assert!(put(&s, &dept("chem", "alice,carol"), false).is_ok());
    let r = put(&s, &dept("bio", "bob"), true);
    commit(&mut s, r);
    let e = s
        .add_users_to_sets(&root, &["alice".into()], &["bio".into()])
        .unwrap_err();
    assert!(
        e.message.contains("already in department \"chem\""),
        "{e:?}"
    );
    assert!(s
        .add_users_to_sets(&root, &["alice".into()], &["friends".into()])
        .is_ok());
}

/// `qselect`/`qstat`'s queue selection, as SGE's: `-q` by queue, instance and host
/// group, `-qs` by state, `-pe` by pe_list, `-l` against the instance empty (a full
/// queue still offers its slots, a fixed value compares by its operator), and with
/// `fitting_jobs` the pending jobs a selected instance would take.
#[test]
fn queue_selection_selects_as_sge() {
    use crate::synthetic::{add_host, job, set_queue, start, submit};
    use gantry_proto::{JobId, QueueSelection};
    let mut s = crate::synthetic::cluster(&[]);
    add_host(&mut s, "n1", "", &[("arch", "lx-amd64"), ("num_proc", "2")]);
    add_host(&mut s, "n2", "", &[("arch", "lx-arm64"), ("num_proc", "4")]);
    set_queue(&mut s, "all.q", "slots", "1,[n2=4]");
    set_queue(&mut s, "all.q", "pe_list", "make,[n2=smp]");
    submit(&mut s, job(1, "alice", &[], &[]));
    start(&mut s, 1, 1, "all.q", "n1");
    submit(&mut s, job(2, "bob", &[("arch", "lx-amd64")], &[]));
    submit(&mut s, job(3, "bob", &[("num_proc", "8")], &[]));
    s.input.disabled = std::sync::Arc::new(
        [("all.q".to_string(), "n2".to_string())]
            .into_iter()
            .collect(),
    );
    let now = gantry_sched::Time::from_secs(0);
    let select = |sel: QueueSelection| s.select_queues(&sel, now);
    let names = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let l = |r: &[(&str, &str)]| {
        r.iter()
            .map(|(k, v)| (k.to_string(), Some(v.to_string())))
            .collect::<Vec<_>>()
    };
    let table: Vec<(QueueSelection, Vec<String>, Option<&str>)> = vec![
        (
            QueueSelection::default(),
            names(&["all.q@n1", "all.q@n2"]),
            None,
        ),
        (
            QueueSelection {
                queues: names(&["all.q@@allhosts"]),
                ..Default::default()
            },
            names(&["all.q@n1", "all.q@n2"]),
            None,
        ),
        (
            QueueSelection {
                queues: names(&["*@n2"]),
                ..Default::default()
            },
            names(&["all.q@n2"]),
            None,
        ),
        (
            QueueSelection {
                queues: names(&["nosuch.q"]),
                ..Default::default()
            },
            vec![],
            Some("-q"),
        ),
        (
            QueueSelection {
                states: Some("d".into()),
                ..Default::default()
            },
            names(&["all.q@n2"]),
            None,
        ),
        (
            QueueSelection {
                pes: names(&["smp"]),
                ..Default::default()
            },
            names(&["all.q@n2"]),
            None,
        ),
        (
            QueueSelection {
                pes: names(&["mpi"]),
                ..Default::default()
            },
            vec![],
            Some("-pe"),
        ),
        // n1's one slot is taken, and still offered (the instance as if empty).
        (
            QueueSelection {
                resources: l(&[("slots", "1")]),
                ..Default::default()
            },
            names(&["all.q@n1", "all.q@n2"]),
            None,
        ),
        (
            QueueSelection {
                resources: l(&[("slots", "2")]),
                ..Default::default()
            },
            names(&["all.q@n2"]),
            None,
        ),
        (
            QueueSelection {
                resources: l(&[("arch", "lx-amd64")]),
                ..Default::default()
            },
            names(&["all.q@n1"]),
            None,
        ),
        (
            QueueSelection {
                resources: l(&[("num_proc", "4")]),
                ..Default::default()
            },
            names(&["all.q@n2"]),
            None,
        ),
    ];
    for (sel, want, emptied) in table {
        let got = select(sel.clone()).expect("a selection");
        assert_eq!(got.instances, want, "{sel:?}");
        assert_eq!(got.emptied_by.as_deref(), emptied, "{sel:?}");
    }
    // The pending jobs a selected instance would take: job 3 (num_proc=8) none.
    let got = select(QueueSelection {
        queues: names(&["all.q"]),
        fitting_jobs: true,
        ..Default::default()
    })
    .expect("a selection");
    assert_eq!(got.fitting_jobs, vec![JobId(2)]);
    let got = select(QueueSelection {
        resources: l(&[("arch", "lx-arm64")]),
        fitting_jobs: true,
        ..Default::default()
    })
    .expect("a selection");
    assert!(got.fitting_jobs.is_empty(), "{got:?}");
    // Refused: an unknown PE, resource or queue state.
    for (sel, message) in [
        (
            QueueSelection {
                pes: names(&["nosuch"]),
                ..Default::default()
            },
            "error: no such parallel environment",
        ),
        (
            QueueSelection {
                resources: l(&[("nosuch", "1")]),
                ..Default::default()
            },
            "unknown resource \"nosuch\"",
        ),
        (
            QueueSelection {
                states: Some("dx".into()),
                ..Default::default()
            },
            "error: unknown queue state: x found in string: dx\nunknown queue state: x found in string: dx",
        ),
    ] {
        assert_eq!(select(sel).unwrap_err().message, message);
    }
}
