//! String expressions, table-driven: each string type, the operators and their
//! precedence, wildcards, and where a malformed expression is refused.
#![allow(clippy::unwrap_used)]

use super::*;
use gantry_proto::ValueType::{Cstring, Host, Restring, String as Str};

#[test]
fn expressions_against_values() {
    let cases: &[(ValueType, &str, &str, bool)] = &[
        // No expression characters: compared whole.
        (Str, "lx-amd64", "lx-amd64", true),
        (Str, "lx-amd64", "LX-AMD64", false),
        (Cstring, "lx-amd64", "LX-AMD64", true),
        (Host, "Node1", "node1", true),
        (Restring, "lx", "lx-amd64", false),
        (Str, "a b", "a b", true),
        (Str, "", "", true),
        (Str, "", "x", false),
        // Wildcards, on every string type.
        (Str, "lx*", "lx-amd64", true),
        (Str, "lx*", "sol-amd64", false),
        (Str, "LX*", "lx-amd64", false),
        (Cstring, "LX*", "lx-amd64", true),
        (Host, "NODE0*", "node07", true),
        (Restring, "lx-*", "lx-arm64", true),
        (Str, "*", "", true),
        (Str, "lx?amd64", "lx-amd64", true),
        (Str, "lx?amd64", "lxamd64", false),
        (Str, "a.c", "abc", false),
        (Str, r"a\*c", "a*c", true),
        (Str, r"a\*c", "abc", false),
        (Str, "node[0-3]", "node2", true),
        (Str, "node[0-3]", "node4", false),
        (Str, "node[13]", "node3", true),
        (Str, "node[^13]", "node3", false),
        (Str, "node[^13]", "node2", true),
        (Str, "node[]x]", "node]", true),
        (Cstring, "NODE[a-c]", "nodeB", true),
        (Str, "node[a-c]", "nodeB", false),
        (Str, "l*x*4", "lx-amd64", true),
        (Str, "l*x*5", "lx-amd64", false),
        // A `[` without its `]` stands for itself.
        (Str, "a[*", "a[b", true),
        // Alternatives, conjunctions, negation, parentheses; `&` binds tighter.
        (Str, "*amd64|*arm64", "lx-arm64", true),
        (Str, "*amd64|*arm64", "lx-ppc64", false),
        (Str, "lx* | sol*", "sol-sparc64", true),
        (Str, "lx*&!lx-arm*", "lx-amd64", true),
        (Str, "lx*&!lx-arm*", "lx-arm64", false),
        (Str, "!lx*", "sol-amd64", true),
        (Str, "!lx*", "lx-amd64", false),
        (Str, "!!lx*", "lx-amd64", true),
        (Str, "!(lx*|sol*)", "darwin", true),
        (Str, "!(lx*|sol*)", "sol-amd64", false),
        (Str, "a|b&c", "a", true),
        (Str, "a|b&c", "b", false),
        (Str, "(a|b)&c", "a", false),
        (Str, "(a|b)&!c", "b", true),
        (Str, "((x))", "x", true),
        (Str, "x & y", "x", false),
        (Str, "!x & y", "y", true),
        (Cstring, "(LX-*|SOL-*)&!*SPARC*", "sol-amd64", true),
        (Cstring, "(LX-*|SOL-*)&!*SPARC*", "sol-sparc64", false),
        (Host, "a* | b*", "Bravo.example.org", true),
        (Host, "b* & !*.example.org", "bravo.example.org", false),
    ];
    for (ty, expr, value, want) in cases {
        assert_eq!(
            matches(*ty, expr, value),
            Ok(*want),
            "{ty:?} {expr:?} against {value:?}"
        );
    }
}

#[test]
fn malformed_expressions_are_refused_with_the_position_sge_names() {
    let cases: &[(&str, usize)] = &[
        ("a&", 2),
        ("a|", 2),
        ("a&b&", 4),
        ("a|b cd", 6),
        ("(a b", 4),
        ("(a", 2),
        ("a)&b", 2),
        ("(a)&b)|c", 6),
        ("!&", 2),
        ("|a", 1),
        ("()", 2),
        ("lx*&!sol*!&", 10),
    ];
    for (expr, position) in cases {
        let err = check(expr).unwrap_err();
        assert_eq!(err.position, *position, "{expr}");
        assert_eq!(
            err.to_string(),
            format!("Parse error on position {position} of the expression \"{expr}\".")
        );
        // A malformed request matches nothing.
        assert!(matches(Str, expr, "a").is_err());
    }
    for fine in ["lx*", "a b", "(a|b)&!c", " a | b ", "!(x)"] {
        assert_eq!(check(fine), Ok(()), "{fine}");
    }
}
