//! Grid Engine's option syntax, shared by every command and (later) by `#$` lines in job
//! scripts and `sge_request` files: options start with one dash and are whole words
//! (`-cwd` is one option, never `-c -w -d`), each takes a fixed number of arguments, and
//! a list argument is one word (`-l a=1,b=2`).

/// How many arguments an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    None,
    One,
    /// One argument if the next word does not start with `-`.
    Optional,
    /// Two arguments (`-pe name slots`), joined by a space in [`Given::arg`].
    Two,
    /// `-binding [set|env|pe] strategy`: two arguments when the first names a binding
    /// type, one otherwise.
    Binding,
}

#[derive(Debug, Clone, Copy)]
pub struct OptSpec {
    pub name: &'static str,
    pub arity: Arity,
}

pub const fn opt(name: &'static str, arity: Arity) -> OptSpec {
    OptSpec { name, arity }
}

/// One option as given, with its argument if it took one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    pub name: &'static str,
    pub arg: Option<String>,
}

/// The parsed command line: options in order, then the first word that is not an
/// option and everything after it (a job script and its arguments).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    pub options: Vec<Given>,
    pub operands: Vec<String>,
}

impl Parsed {
    pub fn has(&self, name: &str) -> bool {
        self.options.iter().any(|g| g.name == name)
    }

    /// The operands as one list: each may itself be a comma-separated list
    /// (`qdel 1,2 3`), empty items dropped.
    pub fn operand_list(&self) -> Vec<String> {
        self.operands
            .iter()
            .flat_map(|o| o.split(','))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The argument of the last occurrence of an option.
    pub fn arg(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|g| g.name == name)
            .and_then(|g| g.arg.as_deref())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptError {
    #[error("error: invalid option argument \"{0}\"")]
    Unknown(String),
    #[error("error: no option argument provided to \"{0}\"")]
    MissingArgument(String),
    /// A two-argument option (`-pe name slots`) given one.
    #[error("error: no option argument provided to \"{0}\"")]
    MissingSecondArgument(String),
    #[error("error: unexpected argument \"{0}\"")]
    UnexpectedOperand(String),
}

/// Parse `args` (without the program name) against `specs`. When `operands_allowed` is
/// false, a word that is not an option is an error.
pub fn parse(
    args: &[String],
    specs: &[OptSpec],
    operands_allowed: bool,
) -> Result<Parsed, OptError> {
    let mut parsed = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let word = &args[i];
        if !word.starts_with('-') || word == "-" {
            if !operands_allowed {
                return Err(OptError::UnexpectedOperand(word.clone()));
            }
            parsed.operands = args[i..].to_vec();
            break;
        }
        let Some(spec) = specs.iter().find(|s| s.name == word) else {
            return Err(OptError::Unknown(word.clone()));
        };
        let arg = match spec.arity {
            Arity::None => None,
            Arity::One => {
                i += 1;
                match args.get(i) {
                    Some(a) => Some(a.clone()),
                    None => return Err(OptError::MissingArgument(spec.name.to_string())),
                }
            }
            Arity::Two => match (args.get(i + 1), args.get(i + 2)) {
                (Some(a), Some(b)) => {
                    i += 2;
                    Some(format!("{a} {b}"))
                }
                (Some(_), None) => {
                    return Err(OptError::MissingSecondArgument(spec.name.to_string()))
                }
                _ => return Err(OptError::MissingArgument(spec.name.to_string())),
            },
            Arity::Binding => match (args.get(i + 1), args.get(i + 2)) {
                (Some(t), Some(b)) if matches!(t.as_str(), "set" | "env" | "pe") => {
                    i += 2;
                    Some(format!("{t} {b}"))
                }
                (Some(t), None) if matches!(t.as_str(), "set" | "env" | "pe") => {
                    return Err(OptError::MissingArgument(spec.name.to_string()))
                }
                (Some(a), _) => {
                    i += 1;
                    Some(a.clone())
                }
                (None, _) => return Err(OptError::MissingArgument(spec.name.to_string())),
            },
            Arity::Optional => match args.get(i + 1) {
                Some(a) if !a.starts_with('-') => {
                    i += 1;
                    Some(a.clone())
                }
                _ => None,
            },
        };
        parsed.options.push(Given {
            name: spec.name,
            arg,
        });
        i += 1;
    }
    Ok(parsed)
}

/// Split one line of options (an `sge_request` line, or what follows `#$` in a job
/// script) into words: whitespace separates, single and double quotes group, a `#`
/// outside quotes starts a comment.
pub fn split_line(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                // Outside quotes a `#` starts a comment, also glued to a value (`-j y#`
                // is `-j y`), as SGE reads `#$` lines and defaults files.
                '#' => break,
                c if c.is_whitespace() => {
                    if in_word {
                        words.push(std::mem::take(&mut cur));
                        in_word = false;
                    }
                }
                c => {
                    cur.push(c);
                    in_word = true;
                }
            },
        }
    }
    if let Some(q) = quote {
        return Err(format!("unmatched {q} in \"{line}\""));
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[OptSpec] = &[
        opt("-cwd", Arity::None),
        opt("-hold_jid", Arity::One),
        opt("-l", Arity::One),
        opt("-F", Arity::Optional),
        opt("-c", Arity::None),
    ];

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn whole_word_options_with_arguments() {
        let p = parse(
            &words("-cwd -hold_jid 12 -l a=1,b=2 script.sh x -cwd"),
            SPECS,
            true,
        )
        .unwrap();
        assert_eq!(
            p.options,
            vec![
                Given {
                    name: "-cwd",
                    arg: None
                },
                Given {
                    name: "-hold_jid",
                    arg: Some("12".into())
                },
                Given {
                    name: "-l",
                    arg: Some("a=1,b=2".into())
                },
            ]
        );
        assert_eq!(p.operands, vec!["script.sh", "x", "-cwd"]);
        assert_eq!(p.arg("-l"), Some("a=1,b=2"));
        assert!(p.has("-cwd"));
    }

    #[test]
    fn optional_arguments() {
        let p = parse(&words("-F"), SPECS, false).unwrap();
        assert_eq!(p.arg("-F"), None);
        assert!(p.has("-F"));
        let p = parse(&words("-F mem_free,arch -cwd"), SPECS, false).unwrap();
        assert_eq!(p.arg("-F"), Some("mem_free,arch"));
        let p = parse(&words("-F -cwd"), SPECS, false).unwrap();
        assert_eq!(p.arg("-F"), None);
    }

    #[test]
    fn errors() {
        assert_eq!(
            parse(&words("-cw"), SPECS, true).unwrap_err().to_string(),
            "error: invalid option argument \"-cw\""
        );
        assert_eq!(
            parse(&words("-l"), SPECS, true).unwrap_err().to_string(),
            "error: no option argument provided to \"-l\""
        );
        assert_eq!(
            parse(&words("-cwd x"), SPECS, false).unwrap_err(),
            OptError::UnexpectedOperand("x".into())
        );
        // Single-letter options never combine: "-cw" is not "-c -w".
        assert!(parse(&words("-cc"), SPECS, true).is_err());
    }

    #[test]
    fn line_splitting() {
        assert_eq!(
            split_line("-N job -l h_rt=1:0:0").unwrap(),
            vec!["-N", "job", "-l", "h_rt=1:0:0"]
        );
        assert_eq!(
            split_line("-N 'my job' -v A=\"x y\"").unwrap(),
            vec!["-N", "my job", "-v", "A=x y"]
        );
        assert_eq!(split_line("-cwd # a comment").unwrap(), vec!["-cwd"]);
        assert_eq!(split_line("-j y# merged").unwrap(), vec!["-j", "y"]);
        assert_eq!(split_line("-N 'a#b'").unwrap(), vec!["-N", "a#b"]);
        assert_eq!(split_line("   ").unwrap(), Vec::<String>::new());
        assert!(split_line("-N 'open").is_err());
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(args in proptest::collection::vec("\\PC{0,8}", 0..6)) {
            let _ = parse(&args, SPECS, true);
        }

        #[test]
        fn simple_words_split_back(ws in proptest::collection::vec("[a-z0-9=,_-]{1,8}", 0..6)) {
            proptest::prop_assert_eq!(split_line(&ws.join(" ")).unwrap(), ws);
        }
    }
}
