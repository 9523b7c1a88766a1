#![allow(clippy::unwrap_used)]
//! The tree's file format: every rule with the line and reason of its refusal, and
//! printing and reading back.

use super::*;
use proptest::prelude::*;

const EXAMPLE: &str = "\
#name quota accept_surplus autoregroup
physics        0.7   TRUE  FALSE  physicists,guests
physics.hep    20    TRUE  FALSE  NONE
chemistry      0.3   FALSE FALSE
";

#[test]
fn the_issues_example_reads_in_name_order_and_prints_back() {
    let list = parse_groups(EXAMPLE).unwrap();
    let names: Vec<&str> = list.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["chemistry", "physics", "physics.hep"]);
    assert_eq!(list[1].quota, GroupQuota::Proportional(0.7));
    assert_eq!(list[2].quota, GroupQuota::Static(20));
    assert!(list[2].accept_surplus && !list[0].accept_surplus);
    // user_lists is optional (NONE: everybody); a group's subtree inherits its lists.
    assert_eq!(list[1].user_lists, ["physicists", "guests"]);
    assert!(list[0].user_lists.is_empty() && list[2].user_lists.is_empty());
    assert_eq!(
        access_lists(&list, "physics.hep"),
        [&["physicists".to_string(), "guests".to_string()][..]]
    );
    assert!(access_lists(&list, "chemistry").is_empty());
    let printed = print_groups(&list);
    assert_eq!(
        printed,
        "#name                          quota      accept_surplus autoregroup user_lists\n\
         #------------------------------------------------------------------------------\n\
         chemistry                      0.3        FALSE          FALSE       NONE\n\
         physics                        0.7        TRUE           FALSE       physicists,guests\n\
         physics.hep                    20         TRUE           FALSE       NONE\n\
         # >#< starts a comment but comments are not saved across edits --------\n"
    );
    assert_eq!(parse_groups(&printed).unwrap(), list);
}

#[test]
fn a_file_breaking_a_rule_is_refused_with_its_line_and_reason() {
    let cases: &[(&str, &str)] = &[
        ("a 1 TRUE", "line 1: expected 4 to 5 fields, found 3"),
        ("a 1 TRUE FALSE x y", "line 1: expected 4 to 5 fields, found 6"),
        ("a 1 TRUE FALSE x,,y", "line 1: invalid user_lists \"x,,y\""),
        ("<none> 1 TRUE FALSE", "line 1: the root group <none> is implicit and takes no quota"),
        ("a..b 1 TRUE FALSE", "line 1: invalid group name \"a..b\""),
        ("a/b 1 TRUE FALSE", "line 1: invalid group name \"a/b\""),
        ("a 1.5 TRUE FALSE", "line 1: quota \"1.5\": a proportion of the parent's quota (with a decimal point) is at most 1"),
        ("a -3 TRUE FALSE", "line 1: invalid quota \"-3\""),
        ("a lots TRUE FALSE", "line 1: invalid quota \"lots\""),
        ("a 1 YES FALSE", "line 1: invalid accept_surplus \"YES\" (TRUE or FALSE)"),
        ("a 1 TRUE maybe", "line 1: invalid autoregroup \"maybe\" (TRUE or FALSE)"),
        ("a 1 TRUE FALSE\na 2 TRUE FALSE", "line 2: group \"a\" defined twice"),
        ("a.b 1 TRUE FALSE", "line 1: group \"a.b\": its parent \"a\" is not declared"),
        (
            "a 10 TRUE FALSE\na.x 6 TRUE FALSE\na.y 5 TRUE FALSE",
            "line 3: the static quotas of the children of \"a\" (11) exceed its own (10)",
        ),
        (
            "a 0.6 TRUE FALSE\nb 0.3 TRUE FALSE\nc 0.2 TRUE FALSE",
            "line 3: the proportional quotas of the children of \"<none>\" sum to 1.1, more than 1",
        ),
        (
            "a 0.5 TRUE FALSE\na.x 0.75 TRUE FALSE\na.y 0.5 TRUE FALSE",
            "line 3: the proportional quotas of the children of \"a\" sum to 1.25, more than 1",
        ),
    ];
    for (text, reason) in cases {
        let err = parse_groups(text).unwrap_err().to_string();
        assert_eq!(&err, reason, "{text:?}");
    }
}

#[test]
fn what_the_rules_allow() {
    for text in [
        // Static children of a proportional parent: its size is known only per cycle.
        "a 0.5 TRUE FALSE\na.x 400 TRUE FALSE\na.y 300 TRUE FALSE",
        // Static and proportional siblings together; proportions summing to exactly 1.
        "a 10 TRUE FALSE\na.x 4 TRUE FALSE\na.y 0.5 TRUE FALSE\na.z 0.5 FALSE TRUE",
        // Static children using all of a static parent's quota; a group of quota 0.
        "a 10 TRUE FALSE\na.x 10 TRUE FALSE\nb 0 FALSE FALSE",
        // Children before their parent, comments and blank lines.
        "# the tree\na.x 1 true false # a comment\n\na 1 True False\n",
        "g_0-x 0.1 TRUE FALSE\n",
        "",
    ] {
        assert!(
            parse_groups(text).is_ok(),
            "{text:?}: {:?}",
            parse_groups(text)
        );
    }
}

#[test]
fn a_job_names_its_group_by_path_or_path_and_user() {
    let list = parse_groups(EXAMPLE).unwrap();
    let named = |a: &str| group_of(&list, a).map(|g| g.name.as_str());
    assert_eq!(named("physics.hep"), Some("physics.hep"));
    assert_eq!(named("physics.hep.alice"), Some("physics.hep"));
    assert_eq!(named("physics.alice"), Some("physics"));
    assert_eq!(named("biology"), None);
    assert_eq!(named("sge"), None);
    assert_eq!(parent("physics.hep"), "physics");
    assert_eq!(parent("physics"), ROOT);
}

fn entry() -> impl Strategy<Value = GroupEntry> {
    (
        proptest::collection::vec("[a-c]", 1..4),
        prop_oneof![
            (0..1000u64).prop_map(GroupQuota::Static),
            (0..=1000u32).prop_map(|p| GroupQuota::Proportional(p as f64 / 1000.0)),
        ],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(path, quota, accept_surplus, autoregroup)| GroupEntry {
            name: path.join("."),
            quota,
            accept_surplus,
            autoregroup,
            user_lists: Vec::new(),
        })
}

proptest! {
    /// Whatever a file holds, it is refused or reads back from its own printing as the
    /// same tree; and the order of its lines changes nothing.
    #[test]
    fn printing_reads_back_and_line_order_does_not_matter(list in proptest::collection::vec(entry(), 0..8)) {
        let text = print_groups(&list);
        let Ok(tree) = parse_groups(&text) else {
            return Ok(());
        };
        prop_assert_eq!(&parse_groups(&print_groups(&tree)).unwrap(), &tree);
        let reversed: Vec<&str> = text.lines().rev().collect();
        prop_assert_eq!(&parse_groups(&reversed.join("\n")).unwrap(), &tree);
    }
}
