//! A job's context (`qsub`/`qalter -ac -dc -sc`): named values a job carries for its
//! owner's tools, shown by `qstat -j`.

use gantry_proto::ContextChange;

/// `name[=value],...` (`-ac`, `-sc`): a name without `=` has an empty value. `None` for
/// an empty name, or a name or value with a blank or a control character.
pub fn parse_pairs(text: &str) -> Option<Vec<(String, String)>> {
    text.split(',')
        .map(|item| {
            let (name, value) = item.split_once('=').unwrap_or((item, ""));
            (!name.is_empty() && clean(name) && clean(value))
                .then(|| (name.to_string(), value.to_string()))
        })
        .collect()
}

/// `name,...` (`-dc`).
pub fn parse_names(text: &str) -> Option<Vec<String>> {
    text.split(',')
        .map(|n| (!n.is_empty() && !n.contains('=') && clean(n)).then(|| n.to_string()))
        .collect()
}

fn clean(s: &str) -> bool {
    !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Apply a change to a context.
pub fn apply(context: &mut Vec<(String, String)>, change: &ContextChange) {
    match change {
        ContextChange::Add(pairs) => {
            for (name, value) in pairs {
                match context.iter_mut().find(|(n, _)| n == name) {
                    Some(entry) => entry.1 = value.clone(),
                    None => context.push((name.clone(), value.clone())),
                }
            }
        }
        ContextChange::Delete(names) => context.retain(|(n, _)| !names.contains(n)),
        ContextChange::Set(pairs) => {
            context.clear();
            apply(context, &ContextChange::Add(pairs.clone()));
        }
    }
}

/// Is a context as `-ac`/`-sc` can make it? The master checks what a client sends.
pub fn check(context: &[(String, String)]) -> Result<(), String> {
    match context
        .iter()
        .find(|(n, v)| n.is_empty() || n.contains('=') || !clean(n) || !clean(v))
    {
        Some((n, v)) => Err(format!(
            "ERROR! Wrong context list format -ac \"{}={}\"",
            crate::names::quoted(n),
            crate::names::quoted(v)
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(l: &[(&str, &str)]) -> Vec<(String, String)> {
        l.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn changes_apply_in_order() {
        let mut ctx = Vec::new();
        let steps: &[(ContextChange, &[(&str, &str)])] = &[
            (
                ContextChange::Add(pairs(&[("A", "1"), ("B", "")])),
                &[("A", "1"), ("B", "")],
            ),
            (
                ContextChange::Add(pairs(&[("A", "2"), ("C", "x")])),
                &[("A", "2"), ("B", ""), ("C", "x")],
            ),
            (
                ContextChange::Delete(vec!["B".into(), "Z".into()]),
                &[("A", "2"), ("C", "x")],
            ),
            (ContextChange::Set(pairs(&[("D", "4")])), &[("D", "4")]),
        ];
        for (change, want) in steps {
            apply(&mut ctx, change);
            assert_eq!(ctx, pairs(want), "{change:?}");
        }
    }

    #[test]
    fn lists_parse_or_are_refused() {
        assert_eq!(
            parse_pairs("A=1,B,C=x=y"),
            Some(pairs(&[("A", "1"), ("B", ""), ("C", "x=y")]))
        );
        for bad in ["", "A=1,,B", "=1", "A=a b", "A\u{1b}=1"] {
            assert_eq!(parse_pairs(bad), None, "{bad:?}");
        }
        assert_eq!(parse_names("A,B"), Some(vec!["A".into(), "B".into()]));
        assert_eq!(parse_names("A=1"), None);
        assert!(check(&pairs(&[("A", "1")])).is_ok());
        assert!(check(&pairs(&[("A", "a\nb")])).is_err());
    }
}
