use super::*;

#[test]
fn requests_read_and_print_as_sge_does() {
    let table = [
        ("linear:2", "set linear:2"),
        ("set linear:2", "set linear:2"),
        ("env linear:1:0,1", "env linear:1:0,1"),
        ("striding:2:2", "set striding:2:2"),
        ("pe striding:2:1:1,0", "pe striding:2:1:1,0"),
        ("explicit:0,0:1,1", "set explicit:0,0:1,1"),
    ];
    for (text, printed) in table {
        let b = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(print(&b), printed, "{text}");
        assert_eq!(parse(&print(&b)), Ok(b), "{text} reads back");
    }
    let refused = [
        ("linear", "couldn't parse amount (linear)"),
        ("linear:x", "couldn't parse amount (linear)"),
        ("linear:0", "couldn't parse amount (linear)"),
        ("linear:2:a,b", "couldn't parse socket number (linear)"),
        ("striding:2", "couldn't parse stepsize (striding)"),
        ("striding:2:0", "couldn't parse stepsize (striding)"),
        ("explicit:", "explicit: expected socket,core pairs"),
        (
            "explicit:0,0:0,0",
            "explicit: a socket,core pair is given twice",
        ),
        (
            "round:2",
            "couldn't parse binding parameter (no strategy found)",
        ),
        (
            "all linear:2",
            "couldn't parse binding parameter (no strategy found)",
        ),
    ];
    for (text, reason) in refused {
        assert_eq!(
            parse(text),
            Err(format!("ERROR! -binding option contains errors: {reason}")),
            "{text}"
        );
    }
}

/// Two sockets of two cores, each core two threads (CPU ids as Linux numbers them on
/// many machines: the second threads after all first ones).
fn host() -> Topology {
    Topology {
        sockets: vec![vec![vec![0, 4], vec![1, 5]], vec![vec![2, 6], vec![3, 7]]],
    }
}

#[test]
fn cores_are_chosen_free_and_in_order() {
    let t = host();
    let none = BTreeSet::new();
    let lin = |amount, start| Strategy::Linear { amount, start };
    assert_eq!(choose(&t, &none, &lin(2, None)), Some(vec![(0, 0), (0, 1)]));
    assert_eq!(t.processors(&[(0, 0), (0, 1)]), vec![0, 1, 4, 5]);
    let used: BTreeSet<(u32, u32)> = [(0, 0)].into();
    // The first run of two free cores crosses into the next socket.
    assert_eq!(choose(&t, &used, &lin(2, None)), Some(vec![(0, 1), (1, 0)]));
    assert_eq!(choose(&t, &used, &lin(1, Some((0, 0)))), None, "taken");
    assert_eq!(choose(&t, &none, &lin(5, None)), None, "the host has four");
    let stride = Strategy::Striding {
        amount: 2,
        step: 2,
        start: None,
    };
    assert_eq!(choose(&t, &used, &stride), Some(vec![(0, 1), (1, 1)]));
    assert_eq!(
        choose(&t, &used, &Strategy::Explicit(vec![(1, 1), (0, 1)])),
        Some(vec![(1, 1), (0, 1)])
    );
    assert_eq!(choose(&t, &none, &Strategy::Explicit(vec![(2, 0)])), None);
    assert_eq!(t.text(&used), "ScttCTTSCTTCTT");
    let flat = Topology {
        sockets: vec![vec![vec![0], vec![1]]],
    };
    assert_eq!(flat.text(&BTreeSet::new()), "SCC");
}

/// A JSV sees a request as SGE's parameters and may set them one by one; sent back
/// in SGE's order, they make the same request.
#[test]
fn jsv_parameters_round_trip_and_edit() {
    for text in [
        "set linear:2",
        "env linear:1:0,1",
        "set striding:2:2",
        "pe striding:2:1:1,0",
        "set explicit:0,0:1,1",
    ] {
        let b = parse(text).unwrap();
        let params = jsv_parameters(&b);
        let mut rebuilt = None;
        for (k, v) in &params {
            rebuilt = set_jsv_parameter(rebuilt, k, Some(v)).unwrap_or_else(|e| panic!("{k}: {e}"));
        }
        assert_eq!(
            rebuilt.as_ref().map(print).as_deref(),
            Some(text),
            "{params:?}"
        );
    }
    let params = jsv_parameters(&parse("env striding:4:2:1,0").unwrap());
    let names: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "binding_strategy",
            "binding_type",
            "binding_amount",
            "binding_socket",
            "binding_core",
            "binding_step"
        ]
    );
    // (start, parameter, value, result)
    let edits = [
        (None, "binding_amount", Some("3"), Some("set linear:3")),
        (
            Some("set linear:2"),
            "binding_strategy",
            Some("striding"),
            Some("set striding:2:1"),
        ),
        (
            Some("set linear:2"),
            "binding_type",
            Some("pe"),
            Some("pe linear:2"),
        ),
        (
            Some("set linear:2"),
            "binding_core",
            Some("3"),
            Some("set linear:2:0,3"),
        ),
        (Some("set linear:2"), "binding_strategy", None, None),
        (
            Some("set explicit:0,0"),
            "binding_exp_n",
            Some("2"),
            Some("set explicit:0,0:0,0"),
        ),
        (
            Some("set explicit:0,0"),
            "binding_exp_core1",
            Some("2"),
            Some("set explicit:0,0:0,2"),
        ),
    ];
    for (start, name, value, want) in edits {
        let got = set_jsv_parameter(start.map(|s| parse(s).unwrap()), name, value).unwrap();
        assert_eq!(got.as_ref().map(print).as_deref(), want, "{start:?} {name}");
    }
    for (start, name, value) in [
        (Some("set linear:2"), "binding_amount", Some("0")),
        (Some("set linear:2"), "binding_amount", Some("x")),
        (Some("set linear:2"), "binding_step", Some("2")),
        (Some("set linear:2"), "binding_type", Some("bind")),
        (Some("set linear:2"), "binding_exp_n", Some("2")),
        (Some("set linear:2"), "binding_strategy", Some("random")),
        (Some("set explicit:0,0"), "binding_exp_n", Some("0")),
    ] {
        assert!(
            set_jsv_parameter(start.map(|s| parse(s).unwrap()), name, value).is_err(),
            "{start:?} {name} {value:?}"
        );
    }
}
