//! Resource quota sets (`sge_resource_quota(5)`): the language, parsed and printed as
//! SGE 8.1.9 does, with its error messages. Checks against the rest of the
//! configuration (complex attributes, value types) are in [`check_set`].

use serde::{Deserialize, Serialize};

use gantry_proto::{ComplexAttr, ValueType};

/// One entry of a filter list: a name (user, `@acl`, project, PE, queue, host,
/// `@hostgroup`, or `*`), possibly excluded with `!`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilterItem {
    pub negated: bool,
    pub name: String,
}

/// A rule's filter: a plain list limits its members together, an expanded list
/// (`{...}`) each member on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    pub expand: bool,
    pub items: Vec<FilterItem>,
}

/// One limit of a rule's `to` list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    pub resource: String,
    /// As written (`2`, `4G`, `$num_proc*2`).
    pub value: String,
}

impl Limit {
    /// A dynamic limit (`$complex` terms) is evaluated per host.
    pub fn is_dynamic(&self) -> bool {
        self.value.contains('$')
    }
}

/// A rule: `limit [name N] [users F] [projects F] [pes F] [queues F] [hosts F] to L`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub name: Option<String>,
    pub users: Option<Filter>,
    pub projects: Option<Filter>,
    pub pes: Option<Filter>,
    pub queues: Option<Filter>,
    pub hosts: Option<Filter>,
    pub limits: Vec<Limit>,
}

/// A resource quota set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaSet {
    pub name: String,
    /// As written after `description` (quotes kept), `None` for NONE.
    pub description: Option<String>,
    pub enabled: bool,
    pub rules: Vec<Rule>,
}

/// Why a resource quota file was refused, in SGE's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RqsError(pub String);

fn err(msg: impl Into<String>) -> RqsError {
    RqsError(msg.into())
}

fn print_filter(f: &Filter) -> String {
    let list: Vec<String> = f
        .items
        .iter()
        .map(|i| format!("{}{}", if i.negated { "!" } else { "" }, i.name))
        .collect();
    if f.expand {
        format!("{{{}}}", list.join(","))
    } else {
        list.join(",")
    }
}

/// A rule as SGE prints it after `limit`: filters in canonical order.
pub fn print_rule(r: &Rule) -> String {
    let mut parts = Vec::new();
    if let Some(n) = &r.name {
        parts.push(format!("name {n}"));
    }
    for (key, f) in [
        ("users", &r.users),
        ("projects", &r.projects),
        ("pes", &r.pes),
        ("queues", &r.queues),
        ("hosts", &r.hosts),
    ] {
        if let Some(f) = f {
            parts.push(format!("{key} {}", print_filter(f)));
        }
    }
    let limits = if r.limits.is_empty() {
        "NONE".to_string()
    } else {
        r.limits
            .iter()
            .map(|l| format!("{}={}", l.resource, l.value))
            .collect::<Vec<_>>()
            .join(",")
    };
    parts.push(format!("to {limits}"));
    parts.join(" ")
}

/// A set as `qconf -srqs` prints it.
pub fn print_set(s: &QuotaSet) -> String {
    let mut out = String::from("{\n");
    out.push_str(&format!("   {:<13}{}\n", "name", s.name));
    out.push_str(&format!(
        "   {:<13}{}\n",
        "description",
        s.description.as_deref().unwrap_or("NONE")
    ));
    out.push_str(&format!(
        "   {:<13}{}\n",
        "enabled",
        if s.enabled { "TRUE" } else { "FALSE" }
    ));
    for r in &s.rules {
        out.push_str(&format!("   {:<13}{}\n", "limit", print_rule(r)));
    }
    out.push_str("}\n");
    out
}

fn parse_bool(text: &str) -> Result<bool, RqsError> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "y" => Ok(true),
        "false" | "0" | "no" | "n" => Ok(false),
        _ => Err(err(format!("error parsing value \"{text}\""))),
    }
}

fn parse_filter(text: &str) -> Result<Filter, RqsError> {
    let (expand, body) = match text.strip_prefix('{') {
        Some(rest) => match rest.strip_suffix('}') {
            Some(body) => (true, body),
            None => return Err(err(format!("error parsing value \"{text}\""))),
        },
        None => (false, text),
    };
    let items: Vec<FilterItem> = body
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s.strip_prefix('!') {
            Some(n) => FilterItem {
                negated: true,
                name: n.to_string(),
            },
            None => FilterItem {
                negated: false,
                name: s.to_string(),
            },
        })
        .collect();
    // A brace inside a list (`hosts ,{x}`) would print as an expanded list.
    if items.is_empty()
        || items
            .iter()
            .any(|i| i.name.is_empty() || i.name.contains(['{', '}']))
    {
        return Err(err(format!("error parsing value \"{text}\"")));
    }
    Ok(Filter { expand, items })
}

fn parse_limits(text: &str) -> Result<Vec<Limit>, RqsError> {
    if text.eq_ignore_ascii_case("NONE") {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|pair| match pair.split_once('=') {
            // No resource name or value has a backslash; one ending the list
            // (`slots=1\,`) would print at the end of the line and join the next.
            Some((k, v))
                if !k.trim().is_empty() && !v.trim().is_empty() && !pair.contains('\\') =>
            {
                Ok(Limit {
                    resource: k.trim().to_string(),
                    value: v.trim().to_string(),
                })
            }
            _ => Err(err(format!("error parsing value \"{pair}\""))),
        })
        .collect()
}

/// Split a rule's text into words, keeping a braced list (`{a, b}`) as one word.
fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for w in text.split_whitespace() {
        if open {
            if let Some(last) = out.last_mut() {
                last.push_str(w);
            }
        } else {
            out.push(w.to_string());
        }
        if w.contains('{') && !w.contains('}') {
            open = true;
        } else if w.contains('}') {
            open = false;
        }
    }
    out
}

/// Parse the text after `limit`.
pub fn parse_rule(text: &str) -> Result<Rule, RqsError> {
    let mut rule = Rule {
        name: None,
        users: None,
        projects: None,
        pes: None,
        queues: None,
        hosts: None,
        limits: Vec::new(),
    };
    let w = words(text);
    let mut i = 0;
    let mut saw_to = false;
    while i < w.len() {
        let key = w[i].as_str();
        let Some(value) = w.get(i + 1) else {
            let name = key.split('=').next().unwrap_or(key);
            return Err(err(format!("unknown attribute name \"{name}\"")));
        };
        match key {
            "name" => rule.name = Some(value.clone()),
            "users" => rule.users = Some(parse_filter(value)?),
            "projects" => rule.projects = Some(parse_filter(value)?),
            "pes" => rule.pes = Some(parse_filter(value)?),
            "queues" => rule.queues = Some(parse_filter(value)?),
            "hosts" => {
                // Host names as DNS compares them (host groups are names of their own).
                let mut f = parse_filter(value)?;
                for item in &mut f.items {
                    if !item.name.starts_with('@') {
                        item.name = crate::exechost::canonical_hostname(&item.name);
                    }
                }
                rule.hosts = Some(f);
            }
            "to" => {
                // Everything after `to` is the limit list.
                rule.limits = parse_limits(&w[i + 1..].join(""))?;
                saw_to = true;
                break;
            }
            other => {
                let name = other.split('=').next().unwrap_or(other);
                return Err(err(format!("unknown attribute name \"{name}\"")));
            }
        }
        i += 2;
    }
    if !saw_to {
        return Err(err("unknown attribute name \"limit\""));
    }
    Ok(rule)
}

/// Parse a resource quota file: one or more sets in braces. Backslash-newline joins
/// lines. The whole file is refused on the first error.
pub fn parse_sets(text: &str) -> Result<Vec<QuotaSet>, RqsError> {
    let joined = text.replace("\r\n", "\n").replace("\\\n", " ");
    let lines: Vec<&str> = joined.lines().collect();
    let mut sets = Vec::new();
    /// A set being read: name, description, enabled, rules.
    type Partial = (Option<String>, Option<String>, bool, Vec<Rule>);
    let mut current: Option<Partial> = None;
    for (n, raw) in lines.iter().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // A backslash not directly before the newline (`x\ `) would print as one that
        // is, and join the next line when read back.
        if line.ends_with('\\') {
            let value = line
                .split_once(char::is_whitespace)
                .map_or(line, |(_, v)| v.trim());
            return Err(err(format!("error parsing value \"{value}\"")));
        }
        match current.as_mut() {
            None => {
                if line != "{" {
                    return Err(err(format!(
                        "each value in the attribute value list in line {} should begin with \"{{\"",
                        n + 1
                    )));
                }
                current = Some((None, None, false, Vec::new()));
            }
            Some(set) => {
                if line == "}" {
                    let Some((name, description, enabled, rules)) = current.take() else {
                        continue;
                    };
                    let Some(name) = name else {
                        return Err(err("resource quota set has no name"));
                    };
                    if rules.is_empty() {
                        return Err(err("resource quota set has no rules"));
                    }
                    sets.push(QuotaSet {
                        name,
                        description,
                        enabled,
                        rules,
                    });
                    continue;
                }
                let (key, value) = match line.split_once(char::is_whitespace) {
                    Some((k, v)) => (k, v.trim()),
                    None => (line, ""),
                };
                match key {
                    "name" => {
                        if value.contains(' ') {
                            return Err(err("Space (' ') not allowed in objectname"));
                        }
                        if value.len() > crate::names::MAX_NAME_LENGTH {
                            return Err(err(format!(
                                "string is longer than {}, this is not allowed for objectnames",
                                crate::names::MAX_NAME_LENGTH
                            )));
                        }
                        if !valid_name(value) {
                            return Err(err(format!(
                                "invalid resource quota set name \"{value}\""
                            )));
                        }
                        set.0 = Some(value.to_string());
                    }
                    "description" => {
                        set.1 = (!value.is_empty() && value != "NONE").then(|| value.to_string())
                    }
                    "enabled" => set.2 = parse_bool(value)?,
                    "limit" => set.3.push(parse_rule(value)?),
                    other => return Err(err(format!("unknown attribute name \"{other}\""))),
                }
            }
        }
    }
    if current.is_some() {
        return Err(err(format!(
            "each value in the attribute value list in line {} should end with \"}}\"",
            lines.len() + 1
        )));
    }
    Ok(sets)
}

/// `NAME: [a-zA-Z][a-zA-Z0-9_-]*`
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn not_a(ty: ValueType) -> &'static str {
    match ty {
        ValueType::Int => "a integer value",
        ValueType::Double => "a double value",
        ValueType::Memory => "a memory value",
        ValueType::Time => "a time value",
        ValueType::Bool => "a boolean value",
        _ => "a string value",
    }
}

/// Parse a dynamic limit `{w|$complex[*w]}[{+|-}...]`: (weight, complex or none).
pub fn parse_dynamic(text: &str) -> Option<Vec<(f64, Option<String>)>> {
    let mut terms = Vec::new();
    for (sign, term) in crate::conf::signed_terms(text) {
        let (complex, weight) = match term.strip_prefix('$') {
            Some(t) => match t.split_once('*') {
                Some((c, w)) => (Some(c.trim().to_string()), w.trim().parse::<f64>().ok()?),
                None => (Some(t.trim().to_string()), 1.0),
            },
            None => (None, term.parse::<f64>().ok()?),
        };
        if complex.as_deref().is_some_and(|c| !valid_name(c)) || weight < 0.0 {
            return None;
        }
        terms.push((sign * weight, complex));
    }
    Some(terms)
}

/// Check a set against the complex: every limited resource exists and its value is of
/// the resource's type; dynamic limits only in rules with an expanded host filter, and
/// only over numeric attributes.
///
/// Two things SGE 8.1.9 accepts although its man page forbids them are refused: two
/// rules of one set with the same name (`set/name` would address either), and a limit
/// on a value the execd measures (`load_avg=2`: a quota limits what jobs request and
/// hold, which a load value is not).
pub fn check_set(s: &QuotaSet, complexes: &[ComplexAttr]) -> Result<(), RqsError> {
    for (n, r) in s.rules.iter().enumerate() {
        if let Some(name) = &r.name {
            if s.rules[..n].iter().any(|o| o.name.as_ref() == Some(name)) {
                return Err(err(format!(
                    "rule name \"{name}\" is used twice in resource quota set \"{}\"",
                    s.name
                )));
            }
        }
        for l in &r.limits {
            let Some(attr) = crate::complex::find(complexes, &l.resource) else {
                return Err(err(format!(
                    "\"resource_quota\" references not existing complex attribute \"{}\"",
                    l.resource
                )));
            };
            if attr.consumable == gantry_proto::Consumable::No
                && crate::load::is_changing_load_value(&attr.name)
            {
                return Err(err(format!(
                    "\"{}\" is a load value: a resource quota can only limit fixed and consumable resources",
                    attr.name
                )));
            }
            if l.is_dynamic() {
                if !r.hosts.as_ref().is_some_and(|h| h.expand) {
                    return Err(err("dynamic limits are only supported for per host rules"));
                }
                let Some(terms) = parse_dynamic(&l.value) else {
                    return Err(err(format!("error parsing value \"{}\"", l.value)));
                };
                for (_, c) in terms {
                    if let Some(c) = c {
                        let numeric = crate::complex::find(complexes, &c).is_some_and(|a| {
                            matches!(
                                a.value_type,
                                ValueType::Int
                                    | ValueType::Double
                                    | ValueType::Memory
                                    | ValueType::Time
                            )
                        });
                        if !numeric {
                            return Err(err(format!(
                                "\"resource_quota\" references not existing complex attribute \"{c}\""
                            )));
                        }
                    }
                }
            } else {
                match crate::complex::check_configured_value(attr, &l.value) {
                    Ok(()) => {}
                    Err(crate::complex::ConfiguredValueError::Negative(m)) => return Err(err(m)),
                    Err(crate::complex::ConfiguredValueError::NotOfType) => {
                        return Err(err(format!(
                            "attribute \"{}\" is not {}",
                            attr.name,
                            not_a(attr.value_type)
                        )))
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
