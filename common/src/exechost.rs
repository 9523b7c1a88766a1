//! Execution hosts (`qconf -se`, `-ae`, `-Ae`): the object file format and its checks.

use crate::complex;
use crate::conf::{
    comma_tokens, list_or_none, pairs_or_none, parse_entries, split_list, split_pairs,
    write_wrapped, FileError,
};
use crate::value::{parse_double, parse_value};
use gantry_proto::{ComplexAttr, ExecHost, ValueType};

const WIDTH: usize = 22;

/// The host as `qconf -se` prints it.
pub fn print_exechost(h: &ExecHost) -> String {
    let mut out = String::new();
    let line = |out: &mut String, k: &str, v: &str| out.push_str(&format!("{k:<WIDTH$}{v}\n"));
    line(&mut out, "hostname", &h.hostname);
    line(&mut out, "load_scaling", &pairs_or_none(&h.load_scaling));
    let cv: Vec<String> = h
        .complex_values
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if cv.is_empty() {
        line(&mut out, "complex_values", "NONE");
    } else {
        write_wrapped(&mut out, "complex_values", WIDTH, &comma_tokens(&cv), "");
    }
    let lv: Vec<String> = h
        .load_values
        .iter()
        .map(|l| format!("{}={}", l.name, l.value))
        .collect();
    if lv.is_empty() {
        line(&mut out, "load_values", "NONE");
    } else {
        write_wrapped(&mut out, "load_values", WIDTH, &comma_tokens(&lv), "");
    }
    line(&mut out, "processors", &h.processors.to_string());
    line(&mut out, "user_lists", &list_or_none(&h.user_lists));
    line(&mut out, "xuser_lists", &list_or_none(&h.xuser_lists));
    line(&mut out, "projects", &list_or_none(&h.projects));
    line(&mut out, "xprojects", &list_or_none(&h.xprojects));
    line(&mut out, "usage_scaling", &pairs_or_none(&h.usage_scaling));
    line(
        &mut out,
        "report_variables",
        &list_or_none(&h.report_variables),
    );
    out
}

/// A host name as DNS compares names: ASCII letters folded to lower case, the root's
/// trailing dot (dots) dropped (`H2NODE1` and `h2node1.` are `h2node1`). Every host name the
/// cell stores goes through it where it comes in (a join, `qconf -ae/-ah`, host groups,
/// queue host lists, resource quota filters), so that no name can stand beside another
/// that is the same host.
pub fn canonical_hostname(name: &str) -> String {
    // Every trailing dot, so that the name is canonical once and for all (`a..` is `a`,
    // not `a.` to be cut again); a name of dots alone stays what it was.
    let trimmed = name.trim_end_matches('.');
    let base = if trimmed.is_empty() { name } else { trimmed };
    base.to_ascii_lowercase()
}

/// A queue reference (`-q queue@host`) with its host as DNS compares names; a host
/// group (`queue@@group`), a queue alone and wildcards in the queue's name as they are.
pub fn canonical_queue_reference(reference: &str) -> String {
    match reference.split_once('@') {
        Some((queue, host)) if !host.starts_with('@') => {
            format!("{queue}@{}", canonical_hostname(host))
        }
        _ => reference.to_string(),
    }
}

/// Is this a name a host may have? Letters, digits, `-`, `.`, `_`; not `global` or
/// `template` (SGE's reserved names), not a `@group`.
pub fn valid_hostname(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        && !name.starts_with(['-', '.'])
        && name != "global"
        && name != "template"
}

/// Read an exec host file (`qconf -Ae`). `load_values` and `processors` are reported by
/// the execd and ignored here, as SGE does.
pub fn parse_exechost(text: &str) -> Result<ExecHost, FileError> {
    let entries = parse_entries(text)?;
    let Some(first) = entries.iter().find(|e| e.key == "hostname") else {
        return Err(FileError::Object(
            "the exec host file has no \"hostname\" attribute".to_string(),
        ));
    };
    if !valid_hostname(&first.value) {
        return Err(FileError::at(
            first.line,
            format!("invalid host name \"{}\"", first.value),
        ));
    }
    let mut h = ExecHost::new(&canonical_hostname(&first.value));
    for e in &entries {
        match e.key.as_str() {
            "hostname" | "load_values" | "processors" => {}
            "load_scaling" => h.load_scaling = split_pairs(&e.value, e.line, &e.key)?,
            "complex_values" => h.complex_values = split_pairs(&e.value, e.line, &e.key)?,
            "usage_scaling" => h.usage_scaling = split_pairs(&e.value, e.line, &e.key)?,
            "user_lists" => h.user_lists = split_list(&e.value),
            "xuser_lists" => h.xuser_lists = split_list(&e.value),
            "projects" => h.projects = split_list(&e.value),
            "xprojects" => h.xprojects = split_list(&e.value),
            "report_variables" => h.report_variables = split_list(&e.value),
            other => {
                return Err(FileError::at(
                    e.line,
                    format!("unknown attribute \"{other}\" in exec host"),
                ))
            }
        }
    }
    Ok(h)
}

/// Check an exec host against the complex list: every `complex_values` entry names a
/// known attribute and has a value of its type; `load_scaling` factors are numbers.
pub fn check_exechost(h: &ExecHost, complexes: &[ComplexAttr]) -> Result<(), String> {
    for (name, value) in &h.complex_values {
        // SGE's words (`qconf -mattr exechost complex_values ...`), its "a integer"
        // included.
        let Some(attr) = complex::find(complexes, name) else {
            return Err(format!(
                "denied: attribute \"{name}\" is not a complex attribute"
            ));
        };
        parse_value(attr.value_type, value).map_err(|_| {
            let what = match attr.value_type {
                ValueType::Int => "integer",
                ValueType::Double => "double",
                ValueType::Memory => "memory",
                ValueType::Time => "time",
                ValueType::Bool => "boolean",
                _ => "valid",
            };
            format!("attribute \"{name}\" is not a {what} value")
        })?;
        if let Err(complex::ConfiguredValueError::Negative(m)) =
            complex::check_configured_value(attr, value)
        {
            return Err(m);
        }
    }
    for (name, factor) in &h.load_scaling {
        if complex::find(complexes, name).is_none() {
            return Err(format!(
                "unknown load value \"{name}\" in load_scaling of host \"{}\"",
                h.hostname
            ));
        }
        if parse_double(factor).is_err() {
            return Err(format!(
                "invalid scaling factor \"{factor}\" for \"{name}\" in load_scaling of host \"{}\"",
                h.hostname
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::LoadValue;

    fn reference_host() -> ExecHost {
        let mut h = ExecHost::new("vm");
        let lv = "load_avg=0.326172,load_short=0.498535,load_medium=0.326172,load_long=0.144531,arch=lx-amd64,num_proc=2,mem_free=23917.718750M,swap_free=0.000000M,virtual_free=23917.718750M,mem_total=24105.550781M,swap_total=0.000000M,virtual_total=24105.550781M,mem_used=187.832031M,swap_used=0.000000M,virtual_used=187.832031M,cpu=0.000000,m_topology=SCC,m_topology_inuse=SCC,m_socket=1,m_core=2,m_thread=2,np_load_avg=0.163086,np_load_short=0.249268,np_load_medium=0.163086,np_load_long=0.072265";
        h.load_values = lv
            .split(',')
            .map(|p| {
                let (n, v) = p.split_once('=').unwrap();
                LoadValue {
                    name: n.into(),
                    value: v.into(),
                }
            })
            .collect();
        h.processors = 2;
        h
    }

    #[test]
    fn prints_as_sge_does() {
        assert_eq!(
            print_exechost(&reference_host()),
            include_str!("../tests/fixtures/qconf-se-vm.txt")
        );
    }

    #[test]
    fn printed_host_parses_back_without_reported_values() {
        let mut h = reference_host();
        h.complex_values = vec![
            ("slots".into(), "4".into()),
            ("mem_total".into(), "4G".into()),
        ];
        h.user_lists = vec!["staff".into()];
        let back = parse_exechost(&print_exechost(&h)).unwrap();
        let mut want = h.clone();
        want.load_values.clear();
        want.processors = 0;
        assert_eq!(back, want);
    }

    #[test]
    fn bad_files_are_refused() {
        assert_eq!(
            parse_exechost("load_scaling NONE\n")
                .unwrap_err()
                .to_string(),
            "the exec host file has no \"hostname\" attribute"
        );
        assert_eq!(
            parse_exechost("hostname bad/name\n")
                .unwrap_err()
                .to_string(),
            "line 1: invalid host name \"bad/name\""
        );
        assert_eq!(
            parse_exechost("hostname h1\ncolour blue\n")
                .unwrap_err()
                .to_string(),
            "line 2: unknown attribute \"colour\" in exec host"
        );
        assert_eq!(
            parse_exechost("hostname h1\ncomplex_values slots\n")
                .unwrap_err()
                .to_string(),
            "line 2: \"slots\" in complex_values is not of the form name=value"
        );
    }

    #[test]
    fn complex_values_are_checked_against_the_complex() {
        let cx = complex::default_complexes();
        let mut h = ExecHost::new("h1");
        h.complex_values = vec![("slots".into(), "8".into())];
        assert!(check_exechost(&h, &cx).is_ok());
        h.complex_values = vec![("gpu".into(), "1".into())];
        assert_eq!(
            check_exechost(&h, &cx).unwrap_err(),
            "denied: attribute \"gpu\" is not a complex attribute"
        );
        h.complex_values = vec![("h_vmem".into(), "lots".into())];
        assert_eq!(
            check_exechost(&h, &cx).unwrap_err(),
            "attribute \"h_vmem\" is not a memory value"
        );
    }

    #[test]
    fn names_compare_as_dns_compares_them() {
        for (given, canonical) in [
            ("node1", "node1"),
            ("NODE1", "node1"),
            ("node1.", "node1"),
            ("N1.Example.ORG.", "n1.example.org"),
            ("a_b", "a_b"),
            // Never empty: a lone dot stays what it was (and is refused where a host
            // name must be one).
            (".", "."),
            ("..", ".."),
            ("Node1..", "node1"),
        ] {
            assert_eq!(canonical_hostname(given), canonical, "{given}");
            // Canonical once and for all.
            assert_eq!(canonical_hostname(canonical), canonical, "{given}");
        }
        let h = parse_exechost("hostname NODE7.\n").unwrap();
        assert_eq!(h.hostname, "node7");
        let g = crate::hostgroup::parse_hostgroup("group_name @G\nhostlist A. @Sub b\n").unwrap();
        assert_eq!(g.hostlist, ["a", "@Sub", "b"]);
        let q = crate::queue::parse_queue(
            "qname q\nhostlist NODE1,@All NODE2.\nslots 1,[NODE1.=4],[@All=2]\n",
        )
        .unwrap();
        let attr = |k: &str| {
            q.attrs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, a)| a.clone())
                .unwrap()
        };
        assert_eq!(attr("hostlist").default, "node1,@All node2");
        assert_eq!(
            attr("slots").overrides,
            [
                ("node1".to_string(), "4".to_string()),
                ("@All".to_string(), "2".to_string())
            ]
        );
        let sets =
            crate::rqs::parse_sets("{\nname r\nlimit hosts {NODE1., !Node2, @Grp} to slots=1\n}\n")
                .unwrap();
        let names: Vec<&str> = sets[0].rules[0]
            .hosts
            .as_ref()
            .unwrap()
            .items
            .iter()
            .map(|i| i.name.as_str())
            .collect();
        assert_eq!(names, ["node1", "node2", "@Grp"]);
        for (given, canonical) in [
            ("all.q@NODE1.", "all.q@node1"),
            ("All.Q@node*", "All.Q@node*"),
            ("all.q@@Group", "all.q@@Group"),
            ("all.q", "all.q"),
            ("@NODE2", "@node2"),
        ] {
            assert_eq!(canonical_queue_reference(given), canonical, "{given}");
        }
    }

    #[test]
    fn host_names() {
        for ok in ["vm", "node-1", "n1.example.org", "a_b"] {
            assert!(valid_hostname(ok), "{ok}");
        }
        for bad in ["", "global", "template", "@allhosts", "a b", "-x", "a/b"] {
            assert!(!valid_hostname(bad), "{bad}");
        }
    }
}
