use super::*;

fn ok(first: u32, last: u32, step: u32) -> Result<TaskRange, OptionError> {
    Ok(TaskRange { first, last, step })
}

/// `-t` as SGE's `range_parse_from_string` reads it; each message is SGE's
/// (`MSG_GDI_INITIALPORTIONSTRINGNODECIMAL_S` 64060, `MSG_GDI_RANGESPECIFIERWITHUNKNOWNTRAILER_SS`
/// 64061, `MSG_GDI_NEGATIVSTEP` 64064, `MSG_QCONF_ONLYONERANGE`,
/// `MSG_PARSE_TOPTIONMUSTHAVEALISTOFTASKIDRANGES`), with its status.
#[test]
fn task_ranges() {
    let no_decimal = |s: &str| {
        Err(OptionError::syntax(format!(
            "Numerical value invalid!\nThe initial portion of string \"{s}\" contains no decimal number"
        )))
    };
    let trailer = |s: &str, t: &str| {
        Err(OptionError::syntax(format!(
            "Range specifier \"{s}\" has unknown trailer \"{t}\""
        )))
    };
    let no_list = || {
        Err(OptionError::semantic(
            "ERROR! -t option must have a list of task id ranges",
        ))
    };
    let table: Vec<(&str, Result<TaskRange, OptionError>)> = vec![
        ("5", ok(5, 5, 1)),
        ("1-10", ok(1, 10, 1)),
        ("1-10:3", ok(1, 10, 3)),
        ("10-1", ok(1, 10, 1)),
        ("1-$RUNS", no_decimal("$RUNS")),
        ("$N", no_decimal("$N")),
        ("x-3", no_decimal("x-3")),
        ("1-5:x", no_decimal("x")),
        (
            "1-5:0",
            Err(OptionError::syntax(
                "Negative or zero step in range is not allowed",
            )),
        ),
        (
            "1-5:-2",
            Err(OptionError::syntax(
                "Negative or zero step in range is not allowed",
            )),
        ),
        ("1-5x", trailer("5x", "x")),
        ("1-5:2x", trailer("2x", "x")),
        ("1x", trailer("1x", "x")),
        ("-5", trailer("-5", "5")),
        ("1-", no_list()),
        ("-", no_list()),
        (",", no_list()),
        (
            "1-3,5",
            Err(OptionError::syntax(
                "ERROR! -t option only allows one range specification",
            )),
        ),
    ];
    for (arg, want) in table {
        assert_eq!(task_range(arg), want, "-t {arg}");
    }
    // Task id 0 is refused by the master, as SGE's qmaster refuses it.
    assert!(task_range("0-3").is_ok());
    assert!(task_range("1-99999999999").is_err());
}

#[test]
fn yes_no_takes_any_case_and_names_the_option() {
    assert_eq!(yes_no("-j", "Y"), Ok(true));
    assert_eq!(yes_no("-j", "yes"), Ok(true));
    assert_eq!(yes_no("-j", "No"), Ok(false));
    assert_eq!(
        yes_no("-j", "x"),
        Err(OptionError::syntax("invalid option argument \"-j x\""))
    );
}

#[test]
fn numbers() {
    assert_eq!(priority("-1023"), Ok(-1023));
    assert_eq!(priority("+5"), Ok(5));
    assert_eq!(
        priority("1025"),
        Err(OptionError::syntax(
            "invalid priority 1025. must be an integer from -1023 to 1024"
        ))
    );
    assert_eq!(priority("abc").unwrap_err().status, ESYNTAX);
    assert_eq!(task_concurrency("0"), Ok(0));
    assert_eq!(
        task_concurrency("-1"),
        Err(OptionError::syntax(
            "invalid task concurrency number -1. Must be an integer greater or equal to 0."
        ))
    );
    let js = "ERROR! invalid jobshare, must be an unsigned integer";
    assert_eq!(unsigned("10", js), Ok(10));
    assert_eq!(unsigned("-1", js), Err(OptionError::semantic(js)));
    assert_eq!(unsigned("1.5", js), Err(OptionError::semantic(js)));
}

#[test]
fn parse_errors_in_sges_words() {
    use crate::opts::OptError;
    let table = [
        (
            OptError::Unknown("-x".into()),
            "ERROR! invalid option argument \"-x\"",
            ESEMANTIC,
        ),
        (
            OptError::MissingArgument("-N".into()),
            "ERROR! -N option must have argument",
            ESEMANTIC,
        ),
        (
            OptError::MissingArgument("-q".into()),
            "ERROR! -q option must have queue list argument",
            ESEMANTIC,
        ),
        (
            OptError::MissingArgument("-pe".into()),
            "ERROR! -pe option must have pe_name argument",
            ESEMANTIC,
        ),
        (
            OptError::MissingSecondArgument("-pe".into()),
            "ERROR! -pe option must have range as 2nd argument",
            ESEMANTIC,
        ),
        (
            OptError::UnexpectedOperand("word".into()),
            "Unknown option word",
            ENOIMP,
        ),
    ];
    for (e, text, status) in table {
        let got = OptionError::from(e);
        assert_eq!((got.text.as_str(), got.status), (text, status));
    }
}

#[test]
fn path_lists_keep_their_elements_and_refuse_none() {
    for (option, arg, want) in [
        ("-o", "vm:/a,/b", Ok("vm:/a,/b")),
        ("-e", "/tmp/e,", Ok("/tmp/e")),
        (
            "-o",
            ",",
            Err("Wrong stdout path list format \",\" specified to -o option"),
        ),
        (
            "-e",
            ",",
            Err("Wrong path list format \",\" specified to -e option"),
        ),
        (
            "-S",
            ",",
            Err("Wrong shell list format \",\" specified to -S option"),
        ),
    ] {
        let got = path_list(option, arg).map_err(|e| e.text);
        assert_eq!(
            got.as_deref().map_err(String::as_str),
            want,
            "{option} {arg}"
        );
    }
}
