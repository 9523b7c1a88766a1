use super::*;

#[test]
fn the_script_size_limit_comes_from_qmaster_params() {
    let table = [
        ("none", DEFAULT_MAX_SCRIPT_SIZE),
        ("MAX_SCRIPT_SIZE=4M", 4 << 20),
        ("MONITOR_TIME=0:0:10,max_script_size=1K", 1024),
        ("MONITOR_TIME=0:0:10 MAX_SCRIPT_SIZE=100", 100),
        ("MAX_USER_SCRIPTS_SIZE=1K", DEFAULT_MAX_SCRIPT_SIZE),
        ("MAX_SCRIPT_SIZE=lots", DEFAULT_MAX_SCRIPT_SIZE),
    ];
    for (params, want) in table {
        assert_eq!(max_script_size(params), want, "{params}");
    }
}

#[test]
fn requests_are_checked_named_in_full_and_merged() {
    let s = crate::synthetic::cluster(&[]);
    let pairs = |l: &[(&str, &str)]| -> Vec<(String, String)> {
        l.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    type Requests<'a> = &'a [(&'a str, &'a str)];
    let table: &[(Requests, Result<Requests, &str>)] = &[
        (
            &[("mf", "4G"), ("h_rt", "1:0:0"), ("mem_free", "2G")],
            Ok(&[("h_rt", "3600"), ("mem_free", "2G")]),
        ),
        (
            &[("a", "lx*"), ("mf", "1G"), ("arch", "sol*"), ("a", "x*")],
            Ok(&[("mem_free", "1G"), ("arch", "x*")]),
        ),
        (
            &[("s", "4")],
            Err("\"job\" denied: use parallel environments instead of requesting slots explicitly"),
        ),
        (&[("a", "lx*"), ("arch", "sol*")], Ok(&[("arch", "sol*")])),
        (
            &[("arch", "lx*|")],
            Err("Parse error on position 4 of the expression \"lx*|\"."),
        ),
        (&[("nosuch", "1")], Err("unknown resource \"nosuch\"")),
        (
            &[("h_rt", "soon")],
            Err("attribute \"h_rt\" is not a time value"),
        ),
    ];
    for (given, want) in table {
        let mut list = pairs(given);
        let got = check_resources(&s, &mut list)
            .map(|_| list)
            .map_err(|r| r.message);
        assert_eq!(got, want.map(pairs).map_err(str::to_string), "{given:?}");
    }
}

#[test]
fn a_host_named_outright_must_resolve_or_be_the_cells() {
    let s = crate::synthetic::cluster(&[]);
    let resolves = |h: &str| h == "localhost";
    // (request, refused with)
    let table: &[((&str, &str), Option<&str>)] = &[
        (("h", "localhost"), None),
        (
            ("hostname", "LOCALHOST"),
            Some("can't resolve hostname \"LOCALHOST\""),
        ),
        (
            ("h", "nosuchhost.example"),
            Some("can't resolve hostname \"nosuchhost.example\""),
        ),
        (("h", "head"), None),
        (("h", "node*"), None),
        (("h", "a|b"), None),
        (("arch", "nosuchhost"), None),
    ];
    for ((name, value), want) in table {
        let list = vec![(name.to_string(), value.to_string())];
        let got = check_hosts_resolve(&s, &[&list], &resolves).map_err(|r| r.message);
        assert_eq!(
            got,
            want.map_or(Ok(()), |m| Err(m.to_string())),
            "{name}={value}"
        );
    }
}

#[test]
fn array_dependencies_need_arrays_of_the_same_range() {
    let mut s = crate::synthetic::cluster(&[]);
    crate::synthetic::add_host(&mut s, "n1", "", &[]);
    let caller = Caller {
        user: "u1".into(),
        uid: 5000,
        gid: 5000,
        host: "head".into(),
    };
    let range = |last| gantry_proto::TaskRange {
        first: 1,
        last,
        step: 1,
    };
    let mut pred = crate::synthetic::job(1, "u1", &[], &[]);
    pred.spec.name = "pre".into();
    pred.spec.array = Some(range(4));
    crate::synthetic::submit(&mut s, pred);
    let try_with = |array: Option<u32>, refs: &[&str]| {
        let mut j = crate::synthetic::job(2, "u1", &[], &[]);
        j.spec.array = array.map(range);
        j.spec.hold_jids_ad = refs.iter().map(|r| r.to_string()).collect();
        validate_submission(&s, &caller, &[], &j.spec, JobId(2), 0)
            .map(|_| ())
            .map_err(|r| r.message)
    };
    let not_array =
        "Can only specify \"-hold_jid_ad\" option with an array job (using \"-t\" option)";
    let other_range = "This array job must have the same range of sub-tasks as the dependent array job specified with -hold_jid_ad";
    assert_eq!(try_with(None, &["1"]), Err(not_array.into()));
    assert_eq!(try_with(Some(3), &["pre"]), Err(other_range.into()));
    assert_eq!(try_with(Some(4), &["1"]), Ok(()));
    assert_eq!(try_with(Some(3), &["nosuchjob"]), Ok(()));
    assert_eq!(try_with(None, &[]), Ok(()));
}

#[test]
fn a_user_no_queue_instance_admits_is_refused_as_sge_refuses_them() {
    use crate::core::state::{Object, Op};
    let mut s = crate::synthetic::cluster(&[]);
    let caller = Caller {
        user: "u3".into(),
        uid: 5003,
        gid: 5003,
        host: "head".into(),
    };
    let submit = |s: &ClusterState| {
        let j = crate::synthetic::job(1, "u3", &[], &[]);
        validate_submission(s, &caller, &[], &j.spec, JobId(1), 0)
            .map(|_| ())
            .map_err(|r| r.message)
    };
    let refused = Err("warning: u3's job is not allowed to run in any queue".to_string());
    // No queue instance yet (all.q on an empty @allhosts): the job waits for a host.
    assert_eq!(submit(&s), Ok(()));
    crate::synthetic::add_host(&mut s, "n1", "", &[]);
    assert_eq!(submit(&s), Ok(()));
    let blocked = gantry_proto::UserSet {
        name: "blocked".into(),
        types: vec!["ACL".into()],
        fshare: 0,
        oticket: 0,
        entries: vec!["u3".into()],
    };
    s.apply(&Op::Put(Object::UserSet(blocked)));
    let mut exclude = |value: &str| {
        let mut q = s.input.queues["all.q"].clone();
        if let Some(a) = q.attr_mut("xuser_lists") {
            *a = gantry_common::queue::parse_attr(value).expect("a queue attribute");
        }
        s.apply(&Op::Put(Object::Queue(q)));
        submit(&s)
    };
    assert_eq!(exclude("blocked"), refused);
    // An override for the host lets u3 in there.
    assert_eq!(exclude("blocked,[n1=NONE]"), Ok(()));
}

/// `qselect -U`: every user named must pass the instance's, its host's, the global
/// host's and the configuration's access lists (tests/sge/recorded/94_qselect_users.txt).
#[test]
fn instances_admitting_every_user_named() {
    use crate::core::state::{Object, Op};
    let mut s = crate::synthetic::cluster(&[]);
    crate::synthetic::add_host(&mut s, "n1", "", &[]);
    crate::synthetic::add_host(&mut s, "n2", "", &[]);
    let set = |name: &str, entries: &[&str]| gantry_proto::UserSet {
        name: name.into(),
        types: vec!["ACL".into()],
        fshare: 0,
        oticket: 0,
        entries: entries.iter().map(|e| e.to_string()).collect(),
    };
    s.apply(&Op::Put(Object::UserSet(set("blocked", &["u3", "@staff"]))));
    let admitting = |s: &ClusterState, users: &[&str]| {
        let users: Vec<String> = users.iter().map(|u| u.to_string()).collect();
        s.instances_admitting(&users)
    };
    let both = vec!["all.q@n1".to_string(), "all.q@n2".to_string()];
    assert_eq!(admitting(&s, &["u1"]), both);
    let mut q = s.input.queues["all.q"].clone();
    if let Some(a) = q.attr_mut("xuser_lists") {
        *a = gantry_common::queue::parse_attr("blocked,[n2=NONE]").expect("an attribute");
    }
    s.apply(&Op::Put(Object::Queue(q)));
    assert_eq!(admitting(&s, &["u1"]), both);
    assert_eq!(admitting(&s, &["u3"]), vec!["all.q@n2".to_string()]);
    assert_eq!(admitting(&s, &["u1", "u3"]), vec!["all.q@n2".to_string()]);
    assert_eq!(admitting(&s, &["@staff"]), vec!["all.q@n2".to_string()]);
    // The exec host's own lists count too.
    let mut h = s.input.exechosts["n2"].clone();
    h.xuser_lists = vec!["blocked".into()];
    s.apply(&Op::Put(Object::ExecHost(h)));
    assert!(admitting(&s, &["u3"]).is_empty());
    assert_eq!(admitting(&s, &["u1"]), both);
}

#[test]
fn ranges_and_refs() {
    assert_eq!(task_ranges(&[2, 3, 4, 5].map(TaskId), 1), "2-5:1");
    assert_eq!(task_ranges(&[1, 3, 5, 9].map(TaskId), 2), "1-5:2,9");
    assert_eq!(task_ranges(&[TaskId(7)], 1), "7");
    assert_eq!(parse_job_ref("12"), Some((JobId(12), None)));
    assert_eq!(
        parse_job_ref("12.3"),
        Some((JobId(12), Some((TaskId(3), TaskId(3)))))
    );
    assert_eq!(
        parse_job_ref("12.3-5"),
        Some((JobId(12), Some((TaskId(3), TaskId(5)))))
    );
    assert_eq!(parse_job_ref("x"), None);
}

#[test]
fn projects_and_pes_are_checked_at_submission() {
    let mut s = crate::synthetic::cluster(&[]);
    crate::synthetic::add_host(&mut s, "n1", "", &[]);
    let caller = Caller {
        user: "u1".into(),
        uid: 5000,
        gid: 5000,
        host: "head".into(),
    };
    let mut chem = gantry_common::project::Project::new("chem");
    chem.acl = vec!["arusers".into()];
    s.apply(&crate::core::state::Op::Put(
        crate::core::state::Object::Project(chem),
    ));
    let submit = |s: &ClusterState, project: Option<&str>, pe: Option<(&str, &str)>| {
        let mut j = crate::synthetic::job(1, "u1", &[], &[]);
        j.spec.project = project.map(str::to_string);
        j.spec.pe = pe.map(|(a, b)| (a.to_string(), b.to_string()));
        validate_submission(s, &caller, &[], &j.spec, JobId(1), 0)
            .map(|_| ())
            .map_err(|r| r.message)
    };
    assert_eq!(
        submit(&s, Some("bio"), None),
        Err("job rejected: the requested project \"bio\" does not exist".into())
    );
    assert_eq!(
        submit(&s, Some("chem"), None),
        Err("job rejected: user \"u1\" has no access to project \"chem\"".into())
    );
    if let Some(u) = std::sync::Arc::make_mut(&mut s.input.usersets).get_mut("arusers") {
        u.entries.push("u1".into());
    }
    assert_eq!(submit(&s, Some("chem"), None), Ok(()));
    assert_eq!(submit(&s, None, Some(("mp*", "2-4"))), Ok(()));
    assert_eq!(
        submit(&s, None, Some(("nosuch", "2"))),
        Err("job rejected: the requested parallel environment \"nosuch\" does not exist".into())
    );
    assert_eq!(
        submit(&s, None, Some(("mpi", "4-2"))),
        Err("job rejected: invalid slot range \"4-2\" for parallel environment \"mpi\"".into())
    );
}

#[test]
fn wildcards() {
    assert!(wildcard("all.q", "all.q"));
    assert!(wildcard("*.q", "all.q"));
    assert!(wildcard("a?l.q", "all.q"));
    assert!(!wildcard("b*", "all.q"));
}
