//! `qconf -s* -json`: what a show option prints, as one document: names for the list
//! options (`-sql`, `-sel`, ...), the complex table for `-sc`, and objects of
//! attributes for the rest, read from the same text the option prints (the form
//! `qconf -A*` reads back), so both say the same.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Request;

/// `qconf -s* -json`: one document per show option given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigShown {
    /// The option (`-sq`).
    pub option: String,
    /// A list option's names, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<Vec<String>>,
    /// `-sc`: the complex attributes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complexes: Option<Vec<ComplexEntry>>,
    /// Any other: the objects shown, each its attributes in order (a repeated one, as
    /// a rule set's `limit`, repeats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<Vec<ConfigObject>>,
}

/// A complex attribute as `qconf -sc` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ComplexEntry {
    pub name: String,
    pub shortcut: String,
    #[serde(rename = "type")]
    pub value_type: String,
    pub relop: String,
    pub requestable: String,
    pub consumable: String,
    pub default: String,
    pub urgency: String,
}

/// One object shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigObject {
    /// The name its header gives (`-sconf`'s `#global:`), else null.
    pub name: Option<String>,
    pub attributes: Vec<Request>,
}

/// The options that print a list of names.
const LISTS: &[&str] = &[
    "-sel",
    "-spl",
    "-sckptl",
    "-sprjl",
    "-suserl",
    "-srqsl",
    "-sm",
    "-so",
    "-sh",
    "-ss",
    "-sql",
    "-shgrpl",
    "-sul",
    "-sconfl",
    "-scall",
    "-sds",
    "-shgrp_resolved",
    "-shgrp_tree",
];

/// Is `option` one that `-json` turns into a document?
pub fn is_show_option(option: &str) -> bool {
    option.starts_with("-s") && option != "-sync"
}

/// The document of what show option `option` printed (`text`).
pub fn config_shown(option: &str, text: &str) -> ConfigShown {
    let mut doc = ConfigShown {
        option: option.to_string(),
        names: None,
        complexes: None,
        objects: None,
    };
    if LISTS.contains(&option) {
        // Names hold no blanks: one per line, or on one line (`-shgrp_resolved`).
        doc.names = Some(text.split_whitespace().map(str::to_string).collect());
    } else if option == "-sc" {
        doc.complexes = Some(complexes(text));
    } else if option == "-sgq" {
        doc.objects = Some(table(text));
    } else if option == "-sstree" {
        doc.objects = Some(key_value_nodes(text));
    } else if option == "-sst" {
        doc.objects = Some(drawn_tree(text));
    } else {
        doc.objects = Some(objects(text));
    }
    doc
}

fn complexes(text: &str) -> Vec<ComplexEntry> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [name, shortcut, value_type, relop, requestable, consumable, default, urgency] =
                f.as_slice()
            else {
                return None;
            };
            Some(ComplexEntry {
                name: name.to_string(),
                shortcut: shortcut.to_string(),
                value_type: value_type.to_string(),
                relop: relop.to_string(),
                requestable: requestable.to_string(),
                consumable: consumable.to_string(),
                default: default.to_string(),
                urgency: urgency.to_string(),
            })
        })
        .collect()
}

fn attribute(name: &str, value: &str) -> Request {
    Request {
        name: name.to_string(),
        value: value.to_string(),
    }
}

/// `-sgq`: a table under a `#name quota ...` header, a row an object with an attribute
/// per column (the last column takes what is left of its row).
fn table(text: &str) -> Vec<ConfigObject> {
    let mut columns: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(header) = line.strip_prefix('#') {
            if columns.is_empty() && !header.starts_with('-') {
                columns = header.split_whitespace().collect();
            }
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.is_empty() || columns.is_empty() {
            continue;
        }
        let last = columns.len() - 1;
        let attributes = columns
            .iter()
            .enumerate()
            .filter_map(|(n, c)| {
                let value = match n == last {
                    true => fields.get(n..).map(|rest| rest.join(" ")),
                    false => fields.get(n).map(|v| v.to_string()),
                }?;
                Some(attribute(c, &value))
            })
            .collect();
        out.push(ConfigObject {
            name: fields.first().map(|n| n.to_string()),
            attributes,
        });
    }
    out
}

/// `-sstree`: `key=value` lines, a node from each `id=`.
fn key_value_nodes(text: &str) -> Vec<ConfigObject> {
    let mut out: Vec<ConfigObject> = Vec::new();
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if k == "id" || out.is_empty() {
            out.push(ConfigObject {
                name: None,
                attributes: Vec::new(),
            });
        }
        if let Some(node) = out.last_mut() {
            node.attributes.push(attribute(k, v));
        }
    }
    out
}

/// `-sst`: a node per line, three spaces in per level: `name=shares`.
fn drawn_tree(text: &str) -> Vec<ConfigObject> {
    text.lines()
        .filter_map(|line| {
            let body = line.trim_start();
            let depth = (line.len() - body.len()) / 3;
            let (name, shares) = body.split_once('=')?;
            Some(ConfigObject {
                name: Some(name.to_string()),
                attributes: vec![
                    attribute("depth", &depth.to_string()),
                    attribute("shares", shares),
                ],
            })
        })
        .collect()
}

/// Attribute lines (`name   value`, a value continued on the next line after ` \`):
/// objects separated by `{`/`}` (rule sets), a `#name:` header (`-sconf`), or the
/// first attribute coming again (several queues, user sets).
fn objects(text: &str) -> Vec<ConfigObject> {
    // Join continued lines first.
    let mut lines: Vec<String> = Vec::new();
    let mut continued = false;
    for raw in text.lines() {
        let (body, more) = match raw.trim_end().strip_suffix('\\') {
            Some(b) => (b.trim_end(), true),
            None => (raw.trim_end(), false),
        };
        match (continued, lines.last_mut()) {
            (true, Some(last)) => {
                if !last.ends_with(',') {
                    last.push(' ');
                }
                last.push_str(body.trim_start());
            }
            _ => lines.push(body.to_string()),
        }
        continued = more;
    }
    let mut out: Vec<ConfigObject> = Vec::new();
    let mut open = false;
    for line in &lines {
        let t = line.trim();
        if t.is_empty() || t.starts_with("#-") {
            continue;
        }
        if t == "{" {
            out.push(ConfigObject {
                name: None,
                attributes: Vec::new(),
            });
            open = true;
            continue;
        }
        if t == "}" {
            open = false;
            continue;
        }
        if let Some(name) = t.strip_prefix('#').and_then(|h| h.strip_suffix(':')) {
            out.push(ConfigObject {
                name: Some(name.to_string()),
                attributes: Vec::new(),
            });
            continue;
        }
        let (k, v) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
        // A header's object ends at the next header only.
        let again = !open
            && out.last().is_some_and(|o| {
                o.name.is_none() && o.attributes.first().is_some_and(|first| first.name == k)
            });
        if out.is_empty() || again {
            out.push(ConfigObject {
                name: None,
                attributes: Vec::new(),
            });
        }
        if let Some(o) = out.last_mut() {
            o.attributes.push(attribute(k, v.trim_start()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(o: &ConfigObject) -> Vec<(&str, &str)> {
        o.attributes
            .iter()
            .map(|a| (a.name.as_str(), a.value.as_str()))
            .collect()
    }

    #[test]
    fn lists_complexes_and_objects() {
        let names = config_shown("-sql", "all.q\nbig.q\n");
        assert_eq!(names.names, Some(vec!["all.q".into(), "big.q".into()]));
        let c = config_shown(
            "-sc",
            "#name shortcut type relop requestable consumable default urgency \n#----\n\
             slots s INT <= YES YES 1 1000\n",
        );
        let c = c.complexes.unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(
            (c[0].name.as_str(), c[0].value_type.as_str()),
            ("slots", "INT")
        );
        // Continued values join; a second queue starts at its first attribute again.
        let q = config_shown(
            "-sq",
            "qname                 a.q\nhostlist              n1 n2 \\\n                      n3\n\
             load_values           x=1, \\\n                      y=2\nqname                 b.q\n",
        );
        let objects = q.objects.unwrap();
        assert_eq!(objects.len(), 2);
        assert_eq!(
            attrs(&objects[0]),
            vec![
                ("qname", "a.q"),
                ("hostlist", "n1 n2 n3"),
                ("load_values", "x=1,y=2")
            ]
        );
        // Rule sets: braces, a repeated limit.
        let r = config_shown(
            "-srqs",
            "{\n   name         a\n   limit        users {*} to slots=2\n   limit        \
             hosts {*} to slots=1\n}\n{\n   name         b\n}\n",
        );
        let sets = r.objects.unwrap();
        assert_eq!(sets.len(), 2);
        assert_eq!(
            attrs(&sets[0]),
            vec![
                ("name", "a"),
                ("limit", "users {*} to slots=2"),
                ("limit", "hosts {*} to slots=1")
            ]
        );
        // -sconf: headers name the objects.
        let conf = config_shown(
            "-sconf",
            "#global:\nmailer /usr/bin/mail\nxterm /usr/bin/xterm\n",
        );
        let conf = conf.objects.unwrap();
        assert_eq!(conf[0].name.as_deref(), Some("global"));
        assert_eq!(conf[0].attributes.len(), 2);
        let groups = config_shown(
            "-sgq",
            "#name quota accept_surplus autoregroup acl\nphysics 0.5 TRUE FALSE a b\n",
        );
        let groups = groups.objects.unwrap();
        assert_eq!(groups[0].name.as_deref(), Some("physics"));
        assert_eq!(attrs(&groups[0])[4], ("acl", "a b"));
        let tree = config_shown("-sstree", "id=0\nname=Root\nid=1\nname=a\n");
        assert_eq!(tree.objects.unwrap().len(), 2);
        let drawn = config_shown("-sst", "Root=1\n   a=10\n");
        let drawn = drawn.objects.unwrap();
        assert_eq!(attrs(&drawn[1]), vec![("depth", "1"), ("shares", "10")]);
    }
}
