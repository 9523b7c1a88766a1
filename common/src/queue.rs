//! Cluster queues (`qconf -sq`): SGE's attribute list with its template defaults, and
//! values with per-host and per-hostgroup overrides (`1,[node1=4],[@big=16]`).

use crate::conf::{parse_entries, FileError};
use gantry_proto::{ClusterQueue, ComplexAttr, QueueAttr};

/// Every queue attribute in SGE's order with the template's value (`qconf -sq`).
const TEMPLATE: &[(&str, &str)] = &[
    ("qname", "template"),
    ("hostlist", "NONE"),
    ("seq_no", "0"),
    ("load_thresholds", "np_load_avg=1.75"),
    ("suspend_thresholds", "NONE"),
    ("nsuspend", "1"),
    ("suspend_interval", "00:05:00"),
    ("priority", "0"),
    ("min_cpu_interval", "00:05:00"),
    ("processors", "UNDEFINED"),
    ("qtype", "BATCH INTERACTIVE"),
    ("ckpt_list", "NONE"),
    ("pe_list", "make smp mpi"),
    ("rerun", "FALSE"),
    ("slots", "1"),
    ("tmpdir", "/tmp"),
    ("shell", "/bin/sh"),
    ("prolog", "NONE"),
    ("epilog", "NONE"),
    ("shell_start_mode", "posix_compliant"),
    ("starter_method", "NONE"),
    ("suspend_method", "NONE"),
    ("resume_method", "NONE"),
    ("terminate_method", "NONE"),
    ("notify", "00:00:60"),
    ("owner_list", "NONE"),
    ("user_lists", "NONE"),
    ("xuser_lists", "NONE"),
    ("subordinate_list", "NONE"),
    ("complex_values", "NONE"),
    ("projects", "NONE"),
    ("xprojects", "NONE"),
    ("calendar", "NONE"),
    ("initial_state", "default"),
    ("s_rt", "INFINITY"),
    ("h_rt", "INFINITY"),
    ("s_cpu", "INFINITY"),
    ("h_cpu", "INFINITY"),
    ("s_fsize", "INFINITY"),
    ("h_fsize", "INFINITY"),
    ("s_data", "INFINITY"),
    ("h_data", "INFINITY"),
    ("s_stack", "INFINITY"),
    ("h_stack", "INFINITY"),
    ("s_core", "INFINITY"),
    ("h_core", "INFINITY"),
    ("s_rss", "INFINITY"),
    ("h_rss", "INFINITY"),
    ("s_vmem", "INFINITY"),
    ("h_vmem", "INFINITY"),
];

/// A queue named `name` on `hostlist` with every other attribute from SGE's template.
pub fn new_queue(name: &str, hostlist: &str) -> ClusterQueue {
    ClusterQueue {
        name: name.to_string(),
        attrs: TEMPLATE
            .iter()
            .map(|(k, v)| {
                let v = match *k {
                    "qname" => name,
                    "hostlist" => hostlist,
                    _ => v,
                };
                (
                    k.to_string(),
                    QueueAttr {
                        default: v.to_string(),
                        overrides: Vec::new(),
                    },
                )
            })
            .collect(),
    }
}

/// `default,[host=value],...` as SGE prints an attribute with overrides.
pub fn print_attr(a: &QueueAttr) -> String {
    let mut s = a.default.clone();
    for (host, v) in &a.overrides {
        s.push_str(&format!(",[{host}={v}]"));
    }
    s
}

/// Read `default,[host=value],...`.
pub fn parse_attr(text: &str) -> Result<QueueAttr, String> {
    let text = text.trim();
    let (default, rest) = match text.find(",[") {
        Some(i) => (&text[..i], &text[i + 1..]),
        None if text.starts_with('[') => return Err(format!("\"{text}\" has no default value")),
        None => (text, ""),
    };
    let mut overrides = Vec::new();
    let mut rest = rest.trim();
    while !rest.is_empty() {
        let Some(body) = rest.strip_prefix('[') else {
            return Err(format!("malformed override list \"{rest}\""));
        };
        let Some(end) = body.find(']') else {
            return Err(format!("unclosed \"[\" in \"{text}\""));
        };
        let Some((host, value)) = body[..end].split_once('=') else {
            return Err(format!(
                "override \"[{}]\" is not of the form [host=value]",
                &body[..end]
            ));
        };
        if host.trim().is_empty() || value.trim().is_empty() {
            return Err(format!(
                "override \"[{}]\" is not of the form [host=value]",
                &body[..end]
            ));
        }
        // A host as DNS compares names; a host group is a name of its own.
        let host = host.trim();
        let host = match host.starts_with('@') {
            true => host.to_string(),
            false => crate::exechost::canonical_hostname(host),
        };
        overrides.push((host, value.trim().to_string()));
        rest = body[end + 1..].trim_start_matches([',', ' ']).trim();
    }
    Ok(QueueAttr {
        default: default.trim().to_string(),
        overrides,
    })
}

/// The value an attribute has on `host` (an override for the host itself wins over one
/// for a group it is in, which wins over the default).
pub fn value_on_host<'a>(a: &'a QueueAttr, host: &str, groups_of_host: &[&str]) -> &'a str {
    if let Some((_, v)) = a.overrides.iter().find(|(h, _)| h == host) {
        return v;
    }
    if let Some((_, v)) = a
        .overrides
        .iter()
        .find(|(h, _)| groups_of_host.contains(&h.as_str()))
    {
        return v;
    }
    &a.default
}

/// The queue as `qconf -sq` prints it.
/// Does a list attribute of a queue (`pe_list`, `ckpt_list`, `projects`, ...) name
/// `name`, in its default or in any host's override? (Whether an object is still
/// referenced.)
pub fn list_names(q: &ClusterQueue, key: &str, name: &str) -> bool {
    q.attr(key).is_some_and(|a| {
        std::iter::once(&a.default)
            .chain(a.overrides.iter().map(|(_, v)| v))
            .any(|v| crate::conf::split_list(v).iter().any(|x| x == name))
    })
}

pub fn print_queue(q: &ClusterQueue) -> String {
    let mut out = String::new();
    for (k, a) in &q.attrs {
        out.push_str(&format!("{k:<22}{}\n", print_attr(a)));
    }
    out
}

/// Read a queue file as `-Aq`/`-Mq`/`-mq` take it: every key must be a queue attribute,
/// `qname` is required, attributes left out take the template's value. Values are
/// checked by [`check_queue`] against the rest of the configuration.
pub fn parse_queue(text: &str) -> Result<ClusterQueue, FileError> {
    let entries = parse_entries(text)?;
    let Some(name) = entries.iter().find(|e| e.key == "qname") else {
        return Err(FileError::Object(
            "the queue file has no \"qname\" attribute".to_string(),
        ));
    };
    if !valid_queue_name(&name.value) {
        return Err(FileError::at(
            name.line,
            format!("invalid queue name \"{}\"", name.value),
        ));
    }
    let mut q = new_queue(&name.value, "NONE");
    for e in &entries {
        let Some(slot) = q.attr_mut(&e.key) else {
            return Err(FileError::at(
                e.line,
                format!("unknown attribute \"{}\" in cluster queue", e.key),
            ));
        };
        *slot = parse_attr(&e.value).map_err(|r| FileError::at(e.line, r))?;
        if e.key == "hostlist" {
            // Hosts as DNS compares names; host groups are names of their own.
            slot.default = canonical_hosts_in(&slot.default);
        }
    }
    Ok(q)
}

/// A host list with each host as DNS compares names (host groups and `NONE` as they
/// are), its separators kept.
fn canonical_hosts_in(list: &str) -> String {
    let mut out = String::with_capacity(list.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.starts_with('@') || word.eq_ignore_ascii_case("NONE") {
            out.push_str(word);
        } else {
            out.push_str(&crate::exechost::canonical_hostname(word));
        }
        word.clear();
    };
    for c in list.chars() {
        if c == ',' || c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// A cluster queue name: letters, digits and `._-`, not starting with `@` or `-`.
pub fn valid_queue_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= crate::names::MAX_NAME_LENGTH
        && name != "template"
        && !name.starts_with(['-', '.'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// How a queue attribute's values are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Uint,
    Int,
    Time,
    Memory,
    Bool,
    /// `name=value,...` of complex attributes (`load_thresholds`, `complex_values`).
    Complexes,
    QType,
}

fn kind_of(attr: &str) -> Kind {
    match attr {
        "seq_no" | "priority" => Kind::Int,
        "nsuspend" | "slots" => Kind::Uint,
        "suspend_interval" | "min_cpu_interval" | "notify" | "s_rt" | "h_rt" | "s_cpu"
        | "h_cpu" => Kind::Time,
        "s_fsize" | "h_fsize" | "s_data" | "h_data" | "s_stack" | "h_stack" | "s_core"
        | "h_core" | "s_rss" | "h_rss" | "s_vmem" | "h_vmem" => Kind::Memory,
        "rerun" => Kind::Bool,
        "load_thresholds" | "suspend_thresholds" | "complex_values" => Kind::Complexes,
        "qtype" => Kind::QType,
        _ => Kind::Text,
    }
}

/// The queue attributes whose value is a list (SGE's `-mattr` refuses NONE for them).
pub const LIST_ATTRIBUTES: &[&str] = &[
    "load_thresholds",
    "suspend_thresholds",
    "ckpt_list",
    "pe_list",
    "owner_list",
    "user_lists",
    "xuser_lists",
    "subordinate_list",
    "complex_values",
    "projects",
    "xprojects",
];

/// A `qtype` value: BATCH, INTERACTIVE and NONE, any of them, any case.
fn is_queue_type(v: &str) -> bool {
    v.split_whitespace().all(|w| {
        ["BATCH", "INTERACTIVE", "NONE"]
            .iter()
            .any(|k| k.eq_ignore_ascii_case(w))
    })
}

/// What SGE 8.1.9's qconf prints, line by line, for a value of a queue attribute its
/// parser does not take (`qconf -mattr queue slots abc all.q`): the parser's own words,
/// then `Error during parsing of attribute value "abc"`. None if the value parses.
/// (SGE's qconf then names the temporary file it parsed the value from, which Gantry's
/// does not write.)
pub fn sge_value_error(key: &str, value: &str) -> Option<Vec<String>> {
    let a = parse_attr(value).ok()?;
    let values =
        std::iter::once(a.default.as_str()).chain(a.overrides.iter().map(|(_, v)| v.as_str()));
    for v in values {
        let infinite = v.eq_ignore_ascii_case("INFINITY");
        let first = match kind_of(key) {
            Kind::Uint if v.parse::<u32>().is_err() => {
                // SGE reads the number as a double: a negative or fractional one is
                // "not an u_long32", anything else not a number at all.
                if v.parse::<f64>().is_ok_and(|d| d.is_finite()) {
                    vec![format!("\"{v}\" is not an u_long32 value")]
                } else {
                    vec![format!(
                        "error parsing unsigned long value from string \"{v}\""
                    )]
                }
            }
            Kind::Time if !infinite && crate::value::parse_time(v).is_err() => {
                vec![format!("error parsing value \"{v}\"")]
            }
            Kind::Memory if !infinite && crate::value::parse_memory(v).is_err() => {
                vec![format!("error parsing value \"{v}\"")]
            }
            Kind::Bool if crate::value::parse_bool(v).is_err() => {
                vec![format!("error parsing value \"{v}\"")]
            }
            Kind::QType if !is_queue_type(v) => {
                // The bit field's parser has a complaint of its own, which SGE's qconf
                // words as a bad attribute.
                vec![
                    format!("The attribute name (\"{key}\") and/or value (\"{v}\") is invalid"),
                    format!("error parsing queue type from string \"{v}\""),
                ]
            }
            _ => continue,
        };
        let mut lines = first;
        lines.push(format!("Error during parsing of attribute value \"{v}\""));
        return Some(lines);
    }
    None
}

/// Check every value of a queue (the default and each override) by the attribute's
/// kind, complex attributes against the complex; the first problem, worded for the
/// administrator.
pub fn check_queue(q: &ClusterQueue, complexes: &[ComplexAttr]) -> Result<(), String> {
    for (key, a) in &q.attrs {
        let values = std::iter::once(("", a.default.as_str()))
            .chain(a.overrides.iter().map(|(h, v)| (h.as_str(), v.as_str())));
        for (host, v) in values {
            let at = if host.is_empty() {
                String::new()
            } else {
                format!(" for \"{host}\"")
            };
            let bad = |what: &str| {
                Err(format!(
                    "value \"{v}\" of attribute \"{key}\"{at} in cluster queue \"{}\" is not {what}",
                    q.name
                ))
            };
            let infinite = v.eq_ignore_ascii_case("INFINITY");
            match kind_of(key) {
                Kind::Text => {}
                Kind::Uint if v.parse::<u32>().is_err() => return bad("a non-negative integer"),
                Kind::Int if v.parse::<i64>().is_err() => return bad("an integer"),
                Kind::Time if !infinite && crate::value::parse_time(v).is_err() => {
                    return bad("a time value")
                }
                Kind::Memory if !infinite && crate::value::parse_memory(v).is_err() => {
                    return bad("a memory value")
                }
                Kind::Bool if crate::value::parse_bool(v).is_err() => return bad("TRUE or FALSE"),
                Kind::QType if !is_queue_type(v) => {
                    return bad("a queue type (BATCH, INTERACTIVE, NONE)")
                }
                Kind::Complexes if !v.eq_ignore_ascii_case("NONE") => {
                    let pairs = crate::conf::split_pairs(v, 0, key).map_err(|e| match e {
                        FileError::Line { reason, .. } => reason,
                        other => other.to_string(),
                    })?;
                    for (name, value) in pairs {
                        let Some(attr) = crate::complex::find(complexes, &name) else {
                            return Err(format!(
                                "unknown resource \"{name}\" in {key} of cluster queue \"{}\"",
                                q.name
                            ));
                        };
                        if crate::value::parse_value(attr.value_type, &value).is_err() {
                            return Err(format!(
                                "value \"{value}\" of resource \"{name}\" in {key} of cluster queue \"{}\" is not a valid {} value",
                                q.name,
                                crate::value::type_name(attr.value_type)
                            ));
                        }
                        // Only capacities are consumed; thresholds may be anything.
                        if key == "complex_values" {
                            if let Err(crate::complex::ConfiguredValueError::Negative(m)) =
                                crate::complex::check_configured_value(attr, &value)
                            {
                                return Err(m);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_q_prints_as_sge_does() {
        let mut q = new_queue("all.q", "@allhosts");
        if let Some(slots) = q.attr_mut("slots") {
            slots.overrides.push(("vm".into(), "2".into()));
        }
        assert_eq!(
            print_queue(&q),
            include_str!("../tests/fixtures/qconf-sq-all.q.txt")
        );
    }

    #[test]
    fn values_sge_does_not_parse_get_its_words() {
        let table: &[(&str, &str, Option<&[&str]>)] = &[
            ("slots", "4", None),
            ("slots", "4,[vm=2]", None),
            (
                "slots",
                "abc",
                Some(&[
                    "error parsing unsigned long value from string \"abc\"",
                    "Error during parsing of attribute value \"abc\"",
                ]),
            ),
            (
                "slots",
                "1,[vm=-1]",
                Some(&[
                    "\"-1\" is not an u_long32 value",
                    "Error during parsing of attribute value \"-1\"",
                ]),
            ),
            (
                "h_rt",
                "forever",
                Some(&[
                    "error parsing value \"forever\"",
                    "Error during parsing of attribute value \"forever\"",
                ]),
            ),
            ("h_rt", "INFINITY", None),
            ("h_vmem", "2G", None),
            ("qtype", "BATCH", None),
            (
                "qtype",
                "NOTATYPE",
                Some(&[
                    "The attribute name (\"qtype\") and/or value (\"NOTATYPE\") is invalid",
                    "error parsing queue type from string \"NOTATYPE\"",
                    "Error during parsing of attribute value \"NOTATYPE\"",
                ]),
            ),
            ("shell", "/bin/bash", None),
        ];
        for (key, value, want) in table {
            let want = want.map(|w| w.iter().map(|l| l.to_string()).collect::<Vec<_>>());
            assert_eq!(sge_value_error(key, value), want, "{key} {value}");
        }
    }

    #[test]
    fn override_values() {
        let a = parse_attr("1,[node1=4],[@big=16]").unwrap();
        assert_eq!(a.default, "1");
        assert_eq!(
            a.overrides,
            vec![("node1".into(), "4".into()), ("@big".into(), "16".into())]
        );
        assert_eq!(print_attr(&a), "1,[node1=4],[@big=16]");
        assert_eq!(value_on_host(&a, "node1", &["@big"]), "4");
        assert_eq!(value_on_host(&a, "node2", &["@big"]), "16");
        assert_eq!(value_on_host(&a, "node3", &[]), "1");
        assert_eq!(
            parse_attr("np_load_avg=1.75").unwrap().default,
            "np_load_avg=1.75"
        );
        assert_eq!(
            parse_attr("BATCH INTERACTIVE").unwrap().default,
            "BATCH INTERACTIVE"
        );
        assert!(parse_attr("1,[node1]").is_err());
        assert!(parse_attr("1,[node1=4").is_err());
        assert!(parse_attr("[node1=4]").is_err());
    }
}
