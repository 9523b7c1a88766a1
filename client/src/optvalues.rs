//! The values of submit options (`qsub`, `qalter`) as SGE 8.1.9's parser reads them, and
//! its errors: the text it prints and the exit status it leaves (the status of its
//! answer: `STATUS_ESEMANTIC` 2 for a missing or meaningless argument, `STATUS_ESYNTAX` 7
//! for a malformed one, `STATUS_ENOIMP` 5 for an option the command does not take).
//! Where SGE's own parser accepts something by accident (`-t 1-` drops every later
//! option, `-p abc` is priority 0), Gantry refuses it, in SGE's words where it has them.

use gantry_proto::TaskRange;

/// SGE's answer statuses, which its submit clients exit with (in the one table).
pub use crate::exit::{ENOIMP, ESEMANTIC, ESYNTAX};

/// A refused option: SGE's text and exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    pub text: String,
    pub status: u8,
}

impl OptionError {
    pub fn semantic(text: impl Into<String>) -> Self {
        OptionError {
            text: text.into(),
            status: ESEMANTIC,
        }
    }

    pub fn syntax(text: impl Into<String>) -> Self {
        OptionError {
            text: text.into(),
            status: ESYNTAX,
        }
    }

    /// An option this command does not take (SGE finds it left over once the job is
    /// built).
    pub fn not_taken(option: &str, arg: Option<&str>) -> Self {
        OptionError {
            text: match arg {
                Some(a) => format!("Unknown option {option} {a}"),
                None => format!("Unknown option {option}"),
            },
            status: ENOIMP,
        }
    }
}

impl From<crate::opts::OptError> for OptionError {
    fn from(e: crate::opts::OptError) -> Self {
        use crate::opts::OptError;
        match e {
            OptError::Unknown(word) => {
                OptionError::semantic(format!("ERROR! invalid option argument \"{word}\""))
            }
            OptError::MissingArgument(option) => OptionError::semantic(missing_argument(&option)),
            OptError::MissingSecondArgument(option) if option == "-pe" => {
                OptionError::semantic("ERROR! -pe option must have range as 2nd argument")
            }
            OptError::MissingSecondArgument(option) => {
                OptionError::semantic(missing_argument(&option))
            }
            // SGE keeps the stray word as an option without a name, and reports it as
            // left over.
            OptError::UnexpectedOperand(word) => OptionError::not_taken(&word, None),
        }
    }
}

/// What SGE says when an option's argument is missing.
pub fn missing_argument(option: &str) -> String {
    match option {
        "-t" => "ERROR! -t option must have a list of task id ranges".to_string(),
        "-v" => "ERROR! -v option must have variable list argument".to_string(),
        "-S" => "ERROR! -S option must have path_name argument".to_string(),
        "-pe" => "ERROR! -pe option must have pe_name argument".to_string(),
        "-ac" => "ERROR! -ac option must have a context_list list argument".to_string(),
        "-dc" => "ERROR! -dc option must have a simple_context_list list argument".to_string(),
        "-sc" => "ERROR! -sc option must have context list argument".to_string(),
        "-u" => "ERROR! -u option must have a list usernames".to_string(),
        "-@" => "ERROR! -@ option must have file argument".to_string(),
        "-q" | "-masterq" => format!("ERROR! {option} option must have queue list argument"),
        _ => format!("ERROR! {option} option must have argument"),
    }
}

/// `y[es]|n[o]`, any case, as SGE's `set_yn_option`.
pub fn yes_no(option: &str, value: &str) -> Result<bool, OptionError> {
    match value.to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(true),
        "n" | "no" => Ok(false),
        _ => Err(OptionError::syntax(format!(
            "invalid option argument \"{option} {value}\""
        ))),
    }
}

fn no_decimal(rest: &str) -> OptionError {
    OptionError::syntax(format!(
        "Numerical value invalid!\nThe initial portion of string \"{rest}\" contains no decimal number"
    ))
}

fn unknown_trailer(spec: &str, trailer: &str) -> OptionError {
    OptionError::syntax(format!(
        "Range specifier \"{spec}\" has unknown trailer \"{trailer}\""
    ))
}

/// The leading decimal number of `text` (digits only) and what follows it.
fn leading_number(text: &str) -> Option<(u64, &str)> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let n = text[..end].parse().ok()?;
    Some((n, &text[end..]))
}

/// `-t n[-m[:s]]`: one range of task ids, read as SGE reads it (`m` before `n` is the
/// same range; a step must be positive).
pub fn task_range(arg: &str) -> Result<TaskRange, OptionError> {
    let parts: Vec<&str> = arg.split(',').filter(|p| !p.is_empty()).collect();
    let [part] = parts.as_slice() else {
        return Err(if parts.is_empty() {
            OptionError::semantic(missing_argument("-t"))
        } else {
            OptionError::syntax("ERROR! -t option only allows one range specification")
        });
    };
    let Some((first, after_first)) = leading_number(part) else {
        // `-5` and `-` are SGE's open ranges, which it does not allow for tasks.
        return Err(match part.strip_prefix('-') {
            Some("") => OptionError::semantic(missing_argument("-t")),
            Some(rest) if leading_number(rest).is_some() => unknown_trailer(part, rest),
            _ => no_decimal(part),
        });
    };
    let (mut first, mut last, step) = if after_first.is_empty() {
        (first, first, 1)
    } else if let Some(rest) = after_first.strip_prefix('-') {
        if rest.is_empty() {
            // `n-`: to infinity, which a job array cannot be.
            return Err(OptionError::semantic(missing_argument("-t")));
        }
        let Some((last, after_last)) = leading_number(rest) else {
            return Err(no_decimal(rest));
        };
        let step = if after_last.is_empty() {
            1
        } else if let Some(step_text) = after_last.strip_prefix(':') {
            match leading_number(step_text) {
                Some((0, "")) => {
                    return Err(OptionError::syntax(
                        "Negative or zero step in range is not allowed",
                    ))
                }
                Some((step, "")) => step,
                Some((_, trailer)) => return Err(unknown_trailer(step_text, trailer)),
                None if step_text.starts_with('-') => {
                    return Err(OptionError::syntax(
                        "Negative or zero step in range is not allowed",
                    ))
                }
                None => return Err(no_decimal(step_text)),
            }
        } else {
            return Err(unknown_trailer(rest, after_last));
        };
        (first, last, step)
    } else {
        return Err(unknown_trailer(part, after_first));
    };
    if first > last {
        std::mem::swap(&mut first, &mut last);
    }
    let id = |n: u64| u32::try_from(n).map_err(|_| no_decimal(part));
    let range = TaskRange {
        first: id(first)?,
        last: id(last)?,
        step: id(step)?,
    };
    // Task id 0 is the master's to refuse, as SGE's qmaster does (`job rejected: 0 is
    // an invalid task id`).
    Ok(range)
}

/// A path list (`-o`, `-e`, `-i`: `[[host]:]path[,...]`) or a shell list (`-S`), kept as
/// given but for empty elements (the execd takes the path meant for its host); a list of
/// none is refused in SGE's words (the master checks the rest: one path per host, every host resolving).
pub fn path_list(option: &str, arg: &str) -> Result<String, OptionError> {
    // SGE's reader skips empty elements (`/tmp/e,` is `/tmp/e`) and wants one at least.
    let elements: Vec<&str> = arg.split(',').filter(|e| !e.is_empty()).collect();
    if elements.is_empty() {
        let what = match option {
            "-o" => "stdout path list",
            "-S" => "shell list",
            _ => "path list",
        };
        return Err(OptionError::syntax(format!(
            "Wrong {what} format \"{arg}\" specified to {option} option"
        )));
    }
    Ok(elements.join(","))
}

/// A `wc_queue_list` (`-q`, `-masterq`): at least one name.
pub fn queue_list(option: &str, arg: &str) -> Result<Vec<String>, OptionError> {
    let list: Vec<String> = arg
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if list.is_empty() {
        return Err(OptionError::syntax(format!(
            "ERROR! Wrong queue list format \"{arg}\" specified to {option} option"
        )));
    }
    Ok(list)
}

/// A signed decimal integer, all of it.
fn integer(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `-p priority`: -1023 to 1024.
pub fn priority(arg: &str) -> Result<i32, OptionError> {
    match integer(arg) {
        Some(p) if (-1023..=1024).contains(&p) => Ok(p as i32),
        Some(p) => Err(OptionError::syntax(format!(
            "invalid priority {p}. must be an integer from -1023 to 1024"
        ))),
        None => Err(OptionError::syntax(format!(
            "invalid priority \"{arg}\". must be an integer from -1023 to 1024"
        ))),
    }
}

/// `-tc n`: 0 (no limit) or more.
pub fn task_concurrency(arg: &str) -> Result<u32, OptionError> {
    let refuse = |shown: String| {
        OptionError::syntax(format!(
            "invalid task concurrency number {shown}. Must be an integer greater or equal to 0."
        ))
    };
    match integer(arg) {
        Some(n) if n >= 0 => u32::try_from(n).map_err(|_| refuse(n.to_string())),
        Some(n) => Err(refuse(n.to_string())),
        None => Err(refuse(format!("\"{arg}\""))),
    }
}

/// An unsigned integer option (`-js`, `-ot`, `-ar`), with the message SGE gives.
pub fn unsigned(arg: &str, message: &str) -> Result<u32, OptionError> {
    integer(arg)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| OptionError::semantic(message))
}

/// `-l list`: `name=value` pairs (a bare name is `TRUE`).
pub fn resource_list(arg: &str) -> Result<Vec<(String, String)>, OptionError> {
    let list: Vec<(String, String)> = arg
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|item| match item.split_once('=') {
            Some((k, v)) if !k.is_empty() => (k.to_string(), v.to_string()),
            _ => (item.to_string(), "TRUE".to_string()),
        })
        .collect();
    if list.is_empty() {
        return Err(OptionError::syntax(format!(
            "ERROR! Wrong resource list format \"{arg}\" specified to -l option"
        )));
    }
    Ok(list)
}

/// `-m` letters.
pub fn mail_options(arg: &str) -> Result<String, OptionError> {
    gantry_common::mail::parse_options(arg).ok_or_else(|| {
        OptionError::syntax(format!(
            "ERROR! Wrong mail options list format \"{arg}\" specified to -m option"
        ))
    })
}

/// `-M` addresses.
pub fn mail_list(arg: &str) -> Result<Vec<String>, OptionError> {
    let list = gantry_common::mail::parse_list(arg).ok_or_else(|| {
        OptionError::syntax(format!(
            "ERROR! Wrong mail list format \"{arg}\" specified to -M option"
        ))
    })?;
    gantry_common::mail::check_count(&list).map_err(OptionError::syntax)?;
    Ok(list)
}

/// `-w e|w|n|v|p`.
pub fn verify_level(arg: &str) -> Result<gantry_proto::Verify, OptionError> {
    use gantry_proto::Verify;
    match arg {
        "n" => Ok(Verify::None),
        "e" => Ok(Verify::Error),
        "w" => Ok(Verify::Warning),
        "v" => Ok(Verify::Verify),
        "p" => Ok(Verify::Poke),
        _ => Err(OptionError::syntax(format!(
            "invalid option argument \"-w {arg}\""
        ))),
    }
}

/// `-binding [type] strategy`, as SGE prints it.
pub fn binding(arg: &str) -> Result<String, OptionError> {
    let b = gantry_common::binding::parse(arg).map_err(OptionError::semantic)?;
    Ok(gantry_common::binding::print(&b))
}

/// `-c`: `when` letters (`smxr`, `n`) or an interval (SGE's parse_qsub.c and its two
/// messages).
pub fn ckpt_selector(arg: &str) -> Result<String, OptionError> {
    if gantry_common::ckpt::valid_selector(arg) {
        return Ok(arg.to_string());
    }
    Err(OptionError::semantic(
        if arg.chars().all(|c| c.is_ascii_alphabetic()) {
            "ERROR! -c specifier invalid"
        } else {
            "ERROR! -c argument invalid"
        },
    ))
}

/// `-ac`, `-dc` or `-sc` with its list, as a change; SGE's message for a bad list.
pub fn context_change(option: &str, arg: &str) -> Result<gantry_proto::ContextChange, String> {
    use gantry_common::context::{parse_names, parse_pairs};
    use gantry_proto::ContextChange;
    let change = match option {
        "-dc" => parse_names(arg).map(ContextChange::Delete),
        "-sc" => parse_pairs(arg).map(ContextChange::Set),
        _ => parse_pairs(arg).map(ContextChange::Add),
    };
    change.ok_or_else(|| format!("ERROR! Wrong context list format {option} \"{arg}\""))
}

#[cfg(test)]
mod tests;
