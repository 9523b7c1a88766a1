#![allow(clippy::unwrap_used)]

use super::*;
use crate::complex::default_complexes;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/rqs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Parse and check a file as `qconf -Arqs` does.
fn take(text: &str) -> Result<Vec<QuotaSet>, String> {
    let sets = parse_sets(text).map_err(|e| e.0)?;
    for s in &sets {
        check_set(s, &default_complexes()).map_err(|e| e.0)?;
    }
    Ok(sets)
}

#[test]
fn every_refused_file_of_the_reference_gets_sges_message() {
    let cases = [
        (
            "bad_space_in_name.rqs",
            "Space (' ') not allowed in objectname",
        ),
        (
            "bad_unknown_complex.rqs",
            "\"resource_quota\" references not existing complex attribute \"nosuchcomplex\"",
        ),
        ("bad_missing_to.rqs", "unknown attribute name \"slots\""),
        ("bad_no_rules.rqs", "resource quota set has no rules"),
        (
            "bad_no_braces.rqs",
            "each value in the attribute value list in line 1 should begin with \"{\"",
        ),
        (
            "bad_unclosed_brace.rqs",
            "each value in the attribute value list in line 5 should end with \"}\"",
        ),
        ("bad_enabled_value.rqs", "error parsing value \"maybe\""),
        (
            "bad_dynamic_not_host.rqs",
            "dynamic limits are only supported for per host rules",
        ),
        (
            "bad_value_type.rqs",
            "attribute \"slots\" is not a integer value",
        ),
        (
            "bad_unknown_attribute.rqs",
            "unknown attribute name \"foo\"",
        ),
        (
            "bad_filter_keyword.rqs",
            "unknown attribute name \"groups\"",
        ),
        // Accepted by SGE 8.1.9 against its own man page; Gantry refuses them.
        (
            "bad_duplicate_rule_name.rqs",
            "rule name \"r1\" is used twice in resource quota set \"duprule\"",
        ),
        (
            "bad_load_value_limit.rqs",
            "\"load_avg\" is a load value: a resource quota can only limit fixed and consumable resources",
        ),
    ];
    for (file, want) in cases {
        assert_eq!(take(&fixture(file)), Err(want.to_string()), "{file}");
    }
}

#[test]
fn what_sge_accepts_is_accepted() {
    // `enabled yes` is taken, as SGE 8.1.9 takes it.
    for file in [
        "lenient_enabled_yes.rqs",
        "max_u_slots.rqs",
        "host_slots.rqs",
        "per_group.rqs",
        "two_sets.rqs",
    ] {
        assert!(take(&fixture(file)).is_ok(), "{file}");
    }
    assert_eq!(take(&fixture("two_sets.rqs")).unwrap().len(), 2);
    assert!(take(&fixture("lenient_enabled_yes.rqs")).unwrap()[0].enabled);
}

#[test]
fn sets_print_as_qconf_srqs_does() {
    let printed: String = ["max_u_slots.rqs", "host_slots.rqs", "per_group.rqs"]
        .iter()
        .flat_map(|f| take(&fixture(f)).unwrap())
        .map(|s| print_set(&s))
        .collect();
    assert_eq!(
        printed,
        "{\n   name         max_u_slots\n   description  \"each user at most 2 slots\"\n   enabled      TRUE\n   limit        users {*} to slots=2\n}\n\
{\n   name         host_slots\n   description  \"no more slots than cores on any host\"\n   enabled      TRUE\n   limit        hosts {*} to slots=$num_proc*1\n}\n\
{\n   name         per_group\n   description  \"named rules, ACL and host group filters\"\n   enabled      TRUE\n   limit        name testers users @testusers hosts @allhosts to slots=3\n   limit        name others users * to slots=1\n}\n"
    );
    let s = &take(&fixture("lenient_enabled_yes.rqs")).unwrap()[0];
    assert_eq!(
        print_set(s),
        "{\n   name         enabled_yes\n   description  NONE\n   enabled      TRUE\n   limit        to slots=100\n}\n"
    );
    let two = take(&fixture("two_sets.rqs")).unwrap();
    assert_eq!(
        print_rule(&two[1].rules[0]),
        "users user3 queues all.q to slots=1,h_vmem=1G"
    );
}

#[test]
fn filters_are_printed_in_canonical_order_and_lists_expand() {
    let r = parse_rule("hosts {@lx_hosts} users {user1, user2} projects !* to virtual_free=6g")
        .unwrap();
    assert_eq!(
        print_rule(&r),
        "users {user1,user2} projects !* hosts {@lx_hosts} to virtual_free=6g"
    );
    let users = r.users.unwrap();
    assert!(users.expand);
    assert_eq!(users.items.len(), 2);
    let p = r.projects.unwrap();
    assert!(!p.expand && p.items[0].negated && p.items[0].name == "*");
    let r = parse_rule("users {!@staff,roland} to slots=4").unwrap();
    assert_eq!(
        r.users.unwrap().items[0],
        FilterItem {
            negated: true,
            name: "@staff".into()
        }
    );
    // Continuation lines are joined.
    let sets =
        parse_sets("{\n name x\n enabled true\n limit users a \\\n to slots=1\n}\n").unwrap();
    assert_eq!(print_rule(&sets[0].rules[0]), "users a to slots=1");
}

#[test]
fn dynamic_limits() {
    assert_eq!(
        parse_dynamic("$num_proc*2"),
        Some(vec![(2.0, Some("num_proc".to_string()))])
    );
    assert_eq!(
        parse_dynamic("$num_proc*2+4-$mem_total*0.5"),
        Some(vec![
            (2.0, Some("num_proc".to_string())),
            (4.0, None),
            (-0.5, Some("mem_total".to_string()))
        ])
    );
    assert_eq!(parse_dynamic("$"), None);
    assert_eq!(parse_dynamic("$num_proc*x"), None);
    let ok = parse_sets("{\nname d\nlimit hosts {*} to slots=$num_proc*2\n}\n").unwrap();
    assert_eq!(check_set(&ok[0], &default_complexes()), Ok(()));
    let not_numeric = parse_sets("{\nname d\nlimit hosts {*} to slots=$arch*2\n}\n").unwrap();
    assert!(check_set(&not_numeric[0], &default_complexes()).is_err());
    let plain_hosts = parse_sets("{\nname d\nlimit hosts * to slots=$num_proc\n}\n").unwrap();
    assert_eq!(
        check_set(&plain_hosts[0], &default_complexes()),
        Err(RqsError(
            "dynamic limits are only supported for per host rules".into()
        ))
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn name() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9_]{0,6}"
    }

    fn filter() -> impl Strategy<Value = Filter> {
        (
            any::<bool>(),
            proptest::collection::vec(
                (
                    any::<bool>(),
                    prop_oneof![
                        name(),
                        Just("*".to_string()),
                        name().prop_map(|n| format!("@{n}"))
                    ],
                ),
                1..4,
            ),
        )
            .prop_map(|(expand, items)| Filter {
                expand,
                items: items
                    .into_iter()
                    .map(|(negated, name)| FilterItem { negated, name })
                    .collect(),
            })
    }

    fn rule() -> impl Strategy<Value = Rule> {
        (
            proptest::option::of(name()),
            proptest::option::of(filter()),
            proptest::option::of(filter()),
            proptest::option::of(filter()),
            proptest::option::of(filter()),
            proptest::option::of(filter()),
            proptest::collection::vec(
                (
                    prop_oneof![Just("slots"), Just("h_vmem"), Just("mem_free")],
                    1u32..1000,
                ),
                0..3,
            ),
        )
            .prop_map(|(name, users, projects, pes, queues, hosts, limits)| Rule {
                name,
                users,
                projects,
                pes,
                queues,
                hosts,
                limits: limits
                    .into_iter()
                    .map(|(r, v)| Limit {
                        resource: r.to_string(),
                        value: v.to_string(),
                    })
                    .collect(),
            })
    }

    proptest! {
        #[test]
        fn printed_sets_parse_back_to_the_same(
            names in proptest::collection::vec(name(), 1..3),
            enabled in any::<bool>(),
            rules in proptest::collection::vec(rule(), 1..4),
        ) {
            let sets: Vec<QuotaSet> = names
                .iter()
                .map(|n| QuotaSet {
                    name: n.clone(),
                    description: Some("\"some words\"".into()),
                    enabled,
                    rules: rules.clone(),
                })
                .collect();
            let text: String = sets.iter().map(print_set).collect();
            prop_assert_eq!(parse_sets(&text).unwrap(), sets);
        }

        #[test]
        fn the_parser_never_panics(text in "\\PC{0,200}") {
            let _ = parse_sets(&text);
        }
    }
}

#[test]
fn what_would_not_print_back_is_refused() {
    // Found by the fuzzer (fuzz/fuzz_targets/rqs_parse.rs): each was accepted but
    // printed as something that reads back differently.
    for (text, want) in [
        (
            "{\nname a\nlimit hosts ,{x} to slots=1\n}\n",
            "error parsing value \",{x}\"",
        ),
        (
            "{\nname a\nlimit users ,{x}y to slots=1\n}\n",
            "error parsing value \",{x}y\"",
        ),
        (
            "{\nname a\ndescription x\\ \nenabled true\nlimit to slots=1\n}\n",
            "error parsing value \"x\\\"",
        ),
        (
            "{\nname a\nlimit to slots=1\\ \n}\n",
            "error parsing value \"to slots=1\\\"",
        ),
        (
            "{\nname s\nlimit hosts {*} to s  lim    lots=$n$ALots\0\\,\n}\n",
            "error parsing value \"slimlots=$n$ALots\0\\\"",
        ),
    ] {
        assert_eq!(
            parse_sets(text).map_err(|e| e.0),
            Err(want.to_string()),
            "{text:?}"
        );
    }
    // CRLF files read as LF ones; backslash-newline still joins lines.
    let crlf = "{\r\nname a\r\nenabled true\r\nlimit users {*} \\\r\n to slots=1\r\n}\r\n";
    let sets = parse_sets(crlf).unwrap();
    assert_eq!(print_rule(&sets[0].rules[0]), "users {*} to slots=1");
}
