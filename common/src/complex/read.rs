//! Reading a complex file (`qconf -Mc`, `-mc`) as SGE 8.1.9's qconf reads it: first its
//! syntax, line by line, then every attribute's definition against the complex
//! specification's rules, every problem found reported in SGE's words and order.

use std::collections::HashMap;

use gantry_proto::{ComplexAttr, Consumable, Relop, Requestable, ValueType};

use super::{parse_consumable, parse_requestable, valid_attr_name, BUILTIN};
use crate::value::{parse_relop, parse_type, parse_value, Value};

/// What is wrong with a complex file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComplexFileError {
    /// Its syntax: SGE's qconf adds `Complex attribute file "F" is not correct`.
    #[error("{0}")]
    Syntax(String),
    /// The attributes' definitions: every problem found, in SGE's order.
    #[error("{}", .0.join("\n"))]
    Invalid(Vec<String>),
}

/// More problems than this are not listed one by one (a list of 200,000 attributes
/// with one name would otherwise print every pair).
const MAX_PROBLEMS: usize = 1000;

/// One line of the file, its last fields possibly missing.
struct Line<'a> {
    name: &'a str,
    shortcut: &'a str,
    value_type: ValueType,
    relop: Relop,
    requestable: Requestable,
    consumable: Consumable,
    default: Option<&'a str>,
    urgency: Option<&'a str>,
}

/// Read a complex list in `qconf -sc` format and check every attribute as SGE's qconf
/// does before it sends the list (names and shortcuts unique, the urgency a number,
/// relational operators, consumables and defaults by type, built-in attributes keep
/// their type). What needs the cell (a built-in attribute deleted, an attribute still
/// in use) is the master's to check.
pub fn read_complexes(text: &str) -> Result<Vec<ComplexAttr>, ComplexFileError> {
    let lines = syntax(text)?;
    let mut problems: Vec<String> = Vec::new();
    let mut names: HashMap<&str, Vec<usize>> = HashMap::with_capacity(lines.len());
    let mut shortcuts: HashMap<&str, Vec<usize>> = HashMap::with_capacity(lines.len());
    for (i, l) in lines.iter().enumerate() {
        // As SGE's qconf, each attribute against those before it: a missing urgency
        // or a bad one ends the check there.
        if i > 0 {
            if l.urgency.is_none() || lines[0].urgency.is_none() {
                problems.push("Complex urgency definition is missing".to_string());
                return Err(ComplexFileError::Invalid(problems));
            }
            let mut clashing: Vec<usize> = [
                names.get(l.name),
                names.get(l.shortcut),
                shortcuts.get(l.name),
                shortcuts.get(l.shortcut),
            ]
            .into_iter()
            .flatten()
            .flatten()
            .copied()
            .collect();
            clashing.sort_unstable();
            clashing.dedup();
            // The first attribute is compared first, the urgency checked with it.
            let first_clashes = clashing.first() == Some(&0);
            let already_exists = || {
                format!(
                    "complex with name {} or shortcut {} already exists",
                    l.name, l.shortcut
                )
            };
            if first_clashes {
                problems.push(already_exists());
            }
            if !urgency_ok(l) || !urgency_ok(&lines[0]) {
                problems.push(urgency_problem(l.name));
                return Err(ComplexFileError::Invalid(problems));
            }
            for _ in clashing.iter().filter(|&&j| j > 0) {
                if problems.len() < MAX_PROBLEMS {
                    problems.push(already_exists());
                }
            }
        }
        names.entry(l.name).or_default().push(i);
        shortcuts.entry(l.shortcut).or_default().push(i);
        if problems.len() < MAX_PROBLEMS {
            validate(l, &mut problems);
        }
    }
    if !problems.is_empty() {
        return Err(ComplexFileError::Invalid(problems));
    }
    Ok(lines
        .into_iter()
        .map(|l| ComplexAttr {
            name: l.name.to_string(),
            shortcut: l.shortcut.to_string(),
            value_type: l.value_type,
            relop: l.relop,
            requestable: l.requestable,
            consumable: l.consumable,
            default: l.default.unwrap_or("NONE").to_string(),
            urgency: l.urgency.and_then(|u| u.parse::<f64>().ok()).unwrap_or(0.0) as i64,
        })
        .collect())
}

/// The file's lines, as SGE's flat file reader takes them: eight fields at most (the
/// last ones may be missing), a type SGE knows, and the relational operator,
/// requestable and consumable among their words. The line is the file's (SGE names the
/// next one for a field too many, and one past it for a bad field after another
/// appended line: lines its file does not have).
fn syntax(text: &str) -> Result<Vec<Line<'_>>, ComplexFileError> {
    let mut lines = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let f: Vec<&str> = content.split_whitespace().collect();
        let bad_field = || {
            ComplexFileError::Syntax(format!(
                "error: each value in the attribute value list in line {} should end with \"<NEWLINE>\"",
                idx + 1
            ))
        };
        if f.len() > 8 {
            return Err(bad_field());
        }
        let field = |n: usize| f.get(n).copied();
        let value_type = match field(2) {
            Some(t) => parse_type(t).map_err(|_| {
                ComplexFileError::Syntax(format!("error: unknown complex attribute type \"{t}\""))
            })?,
            None => ValueType::String,
        };
        let relop = match field(3) {
            Some(r) => parse_relop(r).map_err(|_| bad_field())?,
            None => Relop::Eq,
        };
        let requestable = match field(4) {
            Some(r) => parse_requestable(r).ok_or_else(bad_field)?,
            None => Requestable::No,
        };
        let consumable = match field(5) {
            Some(c) => parse_consumable(c).ok_or_else(bad_field)?,
            None => Consumable::No,
        };
        lines.push(Line {
            name: f[0],
            shortcut: field(1).unwrap_or(""),
            value_type,
            relop,
            requestable,
            consumable,
            default: field(6),
            urgency: field(7),
        });
    }
    Ok(lines)
}

fn urgency_ok(l: &Line) -> bool {
    l.urgency.is_some_and(|u| {
        u.parse::<f64>()
            .is_ok_and(|u| u.is_finite() && u.fract() == 0.0)
    })
}

fn urgency_problem(name: &str) -> String {
    format!(
        "The following error occurred for complex \"{name}\", while parsing the urgency value: \"double value\""
    )
}

/// What SGE's parser calls a value of the type it wanted.
fn type_words(ty: ValueType) -> &'static str {
    match ty {
        ValueType::Int => "integer value",
        ValueType::Time => "time value",
        ValueType::Bool => "boolean value",
        ValueType::Double => "double value",
        _ => "memory value",
    }
}

/// The number a default stands for, 0 if it is none (`0`, `0:0:0`, `FALSE`); None if it
/// is not of the type.
fn default_number(ty: ValueType, text: &str) -> Option<f64> {
    match parse_value(ty, text) {
        Ok(Value::Num(n)) => Some(n),
        Ok(_) => Some(0.0),
        Err(_) => None,
    }
}

/// One attribute's definition against the complex specification, every problem in
/// SGE's words and order.
fn validate(l: &Line, problems: &mut Vec<String>) {
    let name = l.name;
    let mut say = |p: String| problems.push(p);
    if !valid_attr_name(name) {
        say(format!("invalid attribute name \"{name}\""));
    }
    if !valid_attr_name(l.shortcut) {
        say(format!(
            "invalid shortcut \"{}\" of attribute \"{name}\"",
            l.shortcut
        ));
    }
    let consumable = l.consumable != Consumable::No;
    let numeric = matches!(
        l.value_type,
        ValueType::Int | ValueType::Double | ValueType::Memory | ValueType::Time
    );
    let string = matches!(
        l.value_type,
        ValueType::String | ValueType::Cstring | ValueType::Restring | ValueType::Host
    );
    let invalid_relop = || format!("Complex \"{name}\" has an invalid relational operator");
    if numeric && l.relop == Relop::Excl {
        say(format!(
            "Complex \"{name}\" must be BOOL to use EXCL as relational operator"
        ));
    }
    if string {
        if !matches!(l.relop, Relop::Eq | Relop::Ne) {
            say(invalid_relop());
        }
        if consumable {
            say(format!(
                "Complex \"{name}\" of type \"{}\" cannot be a consumable",
                crate::value::type_name(l.value_type)
            ));
        }
    }
    if l.value_type == ValueType::Bool {
        if !matches!(l.relop, Relop::Eq | Relop::Excl) {
            say(invalid_relop());
        }
        if consumable && l.relop != Relop::Excl {
            say(format!(
                "Exclusive complex \"{name}\" must have EXCL as relational operator"
            ));
        }
        if l.relop == Relop::Excl && !consumable {
            say(format!("Exclusive complex \"{name}\" must be a consumable"));
        }
    }
    if name == "tmpdir" && l.requestable != Requestable::No {
        say(format!("Complex attribute \"{name}\" is not requestable"));
    }
    let default = l.default.unwrap_or("NONE");
    let not_of_type = || {
        format!(
            "Complex \"{name}\"'s default value should be of type \"{}\"",
            type_words(l.value_type)
        )
    };
    if consumable {
        if !matches!(l.relop, Relop::Excl | Relop::Le) {
            say(format!(
                "Consumable \"{name}\" can have only <= as an relational operator"
            ));
        }
        let value = default_number(l.value_type, default);
        match l.requestable {
            Requestable::No => {
                if value.is_none() {
                    say(not_of_type());
                }
                if value.unwrap_or(0.0) == 0.0 {
                    say(format!(
                        "Consumable \"{name}\" needs a default value because it is not requestable."
                    ));
                }
            }
            Requestable::Forced => {
                if value.is_none() {
                    say(not_of_type());
                }
                if value.unwrap_or(0.0) != 0.0 {
                    say(format!(
                        "Consumable \"{name}\" cannot have a (non-zero) default value because it is forced."
                    ));
                }
            }
            // SGE 8.1.9 takes any default here (`abc` for an INT); Gantry's scheduler
            // needs one of the type.
            Requestable::Yes if value.is_none() => say(not_of_type()),
            Requestable::Yes => {}
        }
    } else if string {
        if !default.eq_ignore_ascii_case("NONE") {
            say(format!(
                "Complex \"{name}\" cannot have a (non-zero) default value"
            ));
        }
    } else {
        match default_number(l.value_type, default) {
            None => say(not_of_type()),
            Some(n) if n != 0.0 => say(format!(
                "Complex \"{name}\" cannot have a (non-zero) default value"
            )),
            Some(_) => {}
        }
    }
    if l.urgency.is_some() && !urgency_ok(l) {
        say(urgency_problem(name));
    }
    // A built-in attribute keeps its type (the string types may change into each other).
    let strings = [ValueType::String, ValueType::Cstring, ValueType::Restring];
    if let Some(b) = BUILTIN.iter().find(|b| b.0 == name) {
        let builtin = parse_type(b.2).unwrap_or(ValueType::String);
        if builtin != l.value_type
            && !(strings.contains(&builtin) && strings.contains(&l.value_type))
        {
            say(format!(
                "The type of the complex \"{name}\" cannot be changed due to its built in status"
            ));
        }
    }
}
