//! Complex attribute values: parsing and printing of every type (INT, DOUBLE, MEMORY,
//! TIME, BOOL, STRING, CSTRING, RESTRING, HOST), relational operators, and SGE's several
//! ways of printing numbers and memory sizes.

use gantry_proto::{Relop, ValueType};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("invalid {ty} value \"{text}\"")]
    Invalid { ty: &'static str, text: String },
    #[error("unknown type \"{0}\"")]
    UnknownType(String),
    #[error("unknown relational operator \"{0}\"")]
    UnknownRelop(String),
}

fn invalid(ty: &'static str, text: &str) -> ValueError {
    ValueError::Invalid {
        ty,
        text: text.to_string(),
    }
}

/// A parsed value: numeric types compare as numbers (memory in bytes, time in seconds,
/// booleans as 0/1), string types as text.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Num(f64),
    Text(String),
}

pub fn type_name(ty: ValueType) -> &'static str {
    match ty {
        ValueType::Int => "INT",
        ValueType::Double => "DOUBLE",
        ValueType::Memory => "MEMORY",
        ValueType::Time => "TIME",
        ValueType::Bool => "BOOL",
        ValueType::String => "STRING",
        ValueType::Cstring => "CSTRING",
        ValueType::Restring => "RESTRING",
        ValueType::Host => "HOST",
    }
}

pub fn parse_type(s: &str) -> Result<ValueType, ValueError> {
    Ok(match s.to_ascii_uppercase().as_str() {
        "INT" => ValueType::Int,
        "DOUBLE" => ValueType::Double,
        "MEMORY" => ValueType::Memory,
        "TIME" => ValueType::Time,
        "BOOL" => ValueType::Bool,
        "STRING" => ValueType::String,
        "CSTRING" => ValueType::Cstring,
        "RESTRING" => ValueType::Restring,
        "HOST" => ValueType::Host,
        _ => return Err(ValueError::UnknownType(s.to_string())),
    })
}

pub fn is_numeric(ty: ValueType) -> bool {
    matches!(
        ty,
        ValueType::Int | ValueType::Double | ValueType::Memory | ValueType::Time | ValueType::Bool
    )
}

pub fn relop_str(r: Relop) -> &'static str {
    match r {
        Relop::Eq => "==",
        Relop::Ne => "!=",
        Relop::Lt => "<",
        Relop::Le => "<=",
        Relop::Gt => ">",
        Relop::Ge => ">=",
        Relop::Excl => "EXCL",
    }
}

pub fn parse_relop(s: &str) -> Result<Relop, ValueError> {
    Ok(match s {
        "==" => Relop::Eq,
        "!=" => Relop::Ne,
        "<" => Relop::Lt,
        "<=" => Relop::Le,
        ">" => Relop::Gt,
        ">=" => Relop::Ge,
        "EXCL" => Relop::Excl,
        _ => return Err(ValueError::UnknownRelop(s.to_string())),
    })
}

fn is_infinity(s: &str) -> bool {
    s.eq_ignore_ascii_case("infinity")
}

/// Split a number from its one-letter multiplier suffix.
fn split_multiplier(s: &str) -> (&str, f64) {
    let Some(last) = s.chars().last() else {
        return (s, 1.0);
    };
    let mult = match last {
        'k' => 1e3,
        'K' => 1024.0,
        'm' => 1e6,
        'M' => 1024.0 * 1024.0,
        'g' => 1e9,
        'G' => 1024.0 * 1024.0 * 1024.0,
        't' => 1e12,
        'T' => 1024.0_f64.powi(4),
        _ => return (s, 1.0),
    };
    (&s[..s.len() - 1], mult)
}

/// A plain decimal number as SGE writes them: digits, an optional fraction and exponent,
/// no hexadecimal, no "inf"/"nan" spellings.
fn parse_plain_number(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty()
        || !body
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        || !body.starts_with(|c: char| c.is_ascii_digit() || c == '.')
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// MEMORY: a number with an optional multiplier (k=1000, K=1024, m, M, g, G, t, T), or
/// INFINITY. Returns bytes.
pub fn parse_memory(s: &str) -> Result<f64, ValueError> {
    let s = s.trim();
    if is_infinity(s) {
        return Ok(f64::INFINITY);
    }
    let (num, mult) = split_multiplier(s);
    match parse_plain_number(num) {
        Some(v) if v >= 0.0 => Ok(v * mult),
        _ => Err(invalid("MEMORY", s)),
    }
}

/// TIME: `[[h:]m:]s` (fields may be empty, meaning 0) or a number of seconds, or
/// INFINITY. Returns seconds.
pub fn parse_time(s: &str) -> Result<f64, ValueError> {
    let t = s.trim();
    if is_infinity(t) {
        return Ok(f64::INFINITY);
    }
    if t.contains(':') {
        let parts: Vec<&str> = t.split(':').collect();
        if parts.len() > 3 {
            return Err(invalid("TIME", s));
        }
        let mut total = 0.0;
        for p in parts {
            let v = if p.is_empty() {
                0.0
            } else if p.chars().all(|c| c.is_ascii_digit()) {
                p.parse::<f64>().map_err(|_| invalid("TIME", s))?
            } else {
                return Err(invalid("TIME", s));
            };
            total = total * 60.0 + v;
        }
        return Ok(total);
    }
    match parse_plain_number(t) {
        Some(v) if v >= 0.0 => Ok(v),
        _ => Err(invalid("TIME", s)),
    }
}

/// INT: an integer, optionally with a multiplier suffix (`1k`), or INFINITY.
pub fn parse_int(s: &str) -> Result<f64, ValueError> {
    let t = s.trim();
    if is_infinity(t) {
        return Ok(f64::INFINITY);
    }
    let (num, mult) = split_multiplier(t);
    let body = num.strip_prefix(['+', '-']).unwrap_or(num);
    if body.is_empty() || !body.chars().all(|c| c.is_ascii_digit()) {
        return Err(invalid("INT", s));
    }
    num.parse::<i64>()
        .map(|v| v as f64 * mult)
        .map_err(|_| invalid("INT", s))
}

/// DOUBLE: a decimal number, optionally with a multiplier suffix, or INFINITY.
pub fn parse_double(s: &str) -> Result<f64, ValueError> {
    let t = s.trim();
    if is_infinity(t) {
        return Ok(f64::INFINITY);
    }
    let (num, mult) = split_multiplier(t);
    parse_plain_number(num)
        .map(|v| v * mult)
        .ok_or_else(|| invalid("DOUBLE", s))
}

/// BOOL: TRUE/FALSE (any case), 1/0.
pub fn parse_bool(s: &str) -> Result<bool, ValueError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(invalid("BOOL", s)),
    }
}

/// Parse a value of the given type.
pub fn parse_value(ty: ValueType, s: &str) -> Result<Value, ValueError> {
    Ok(match ty {
        ValueType::Int => Value::Num(parse_int(s)?),
        ValueType::Double => Value::Num(parse_double(s)?),
        ValueType::Memory => Value::Num(parse_memory(s)?),
        ValueType::Time => Value::Num(parse_time(s)?),
        ValueType::Bool => Value::Num(if parse_bool(s)? { 1.0 } else { 0.0 }),
        ValueType::String | ValueType::Cstring | ValueType::Restring | ValueType::Host => {
            if s.is_empty() || s.chars().any(char::is_whitespace) {
                return Err(invalid(type_name(ty), s));
            }
            Value::Text(s.to_string())
        }
    })
}

/// Does an offered value satisfy a request under `relop`? (`offered relop requested`, as
/// SGE evaluates `-l name=requested` against what a host or queue offers.)
pub fn satisfies(ty: ValueType, relop: Relop, offered: &Value, requested: &Value) -> bool {
    match (offered, requested) {
        (Value::Num(o), Value::Num(r)) => match relop {
            Relop::Eq => o == r,
            Relop::Ne => o != r,
            Relop::Lt => r < o,
            Relop::Le => r <= o,
            Relop::Gt => r > o,
            Relop::Ge => r >= o,
            Relop::Excl => o == r,
        },
        (Value::Text(o), Value::Text(r)) => {
            // Every string type's request is an expression (`lx*&!lx-arm*`), caseless
            // for CSTRING and HOST; a malformed one (refused at submission) matches
            // nothing.
            let equal = crate::strexpr::matches(ty, r, o).unwrap_or(false);
            match relop {
                Relop::Ne => !equal,
                _ => equal,
            }
        }
        _ => false,
    }
}

/// `HH:MM:SS` with at least two digits per field (`00:05:00`), as SGE prints times in
/// queue and host configurations.
pub fn format_time_hms(seconds: f64) -> String {
    if seconds.is_infinite() {
        return "INFINITY".to_string();
    }
    let s = seconds.max(0.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

const KIB: f64 = 1024.0;
const MIB: f64 = KIB * 1024.0;
const GIB: f64 = MIB * 1024.0;

/// A memory size with three decimals and the largest fitting binary unit (`23.357G`,
/// `187.832M`, `0.000`): how `qhost -F` and `qstat -F` print MEMORY values.
pub fn format_memory_3(bytes: f64) -> String {
    scaled(bytes, 3)
}

/// A memory size with one decimal (`23.5G`, `187.8M`, `0.0`): the `qhost` columns.
pub fn format_memory_1(bytes: f64) -> String {
    scaled(bytes, 1)
}

fn scaled(bytes: f64, decimals: usize) -> String {
    if bytes.is_infinite() {
        return "infinity".to_string();
    }
    let abs = bytes.abs();
    let (v, unit) = if abs >= GIB {
        (bytes / GIB, "G")
    } else if abs >= MIB {
        (bytes / MIB, "M")
    } else if abs >= KIB {
        (bytes / KIB, "K")
    } else {
        (bytes, "")
    };
    format!("{v:.decimals$}{unit}")
}

/// A memory size in megabytes with six decimals (`23917.718750M`): how an execd writes
/// its memory load values.
pub fn format_memory_report(bytes: f64) -> String {
    format!("{:.6}M", bytes / MIB)
}

/// A number as `%f` prints it (`2.000000`).
pub fn format_f6(v: f64) -> String {
    format!("{v:.6}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restring_examples_of_section_5() {
        let cases: &[(&str, &str, bool)] = &[
            ("linux|solaris", "linux", true),
            ("linux|solaris", "solaris", true),
            ("linux|solaris", "hpux", false),
            // `|` splits even inside brackets.
            ("[linux|solaris]", "[linux", true),
            ("[linux|solaris]", "solaris]", true),
            ("[linux|solaris]", "linux", false),
            ("lx-*", "lx-amd64", true),
            ("lx-*", "lx-", true),
            ("lx-*", "sol-amd64", false),
            ("*", "", true),
            ("lx?amd64", "lx-amd64", true),
            // `?` is exactly one character, never none.
            ("lx?amd64", "lxamd64", false),
            // `.` is only a dot.
            ("a.c", "abc", false),
            ("a.c", "a.c", true),
            (r"a\*c", "a*c", true),
            (r"a\*c", "abc", false),
            (r"a\?c", "a?c", true),
            (r"a\?c", "abc", false),
            // Without a wildcard the request is compared whole: `\` is only itself.
            (r"a\\c", r"a\c", false),
            (r"a\\c*", r"a\c", true),
            ("node[0-3]", "node2", true),
            ("node[0-3]", "node4", false),
            ("node[13]", "node3", true),
            ("node[13]", "node2", false),
            ("*amd64|*arm64", "lx-arm64", true),
            ("l*x*4", "lx-amd64", true),
            ("l*x*5", "lx-amd64", false),
            ("", "", true),
            ("", "x", false),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(
                crate::strexpr::matches(ValueType::Restring, pattern, text),
                Ok(*want),
                "{pattern} ~ {text}"
            );
        }
    }

    #[test]
    fn memory_parsing_table() {
        let cases: &[(&str, f64)] = &[
            ("0", 0.0),
            ("1024", 1024.0),
            ("1k", 1000.0),
            ("1K", 1024.0),
            ("2m", 2e6),
            ("2M", 2.0 * MIB),
            ("1.5g", 1.5e9),
            ("4G", 4.0 * GIB),
            ("1t", 1e12),
            ("1T", KIB * GIB),
            ("23917.718750M", 23917.71875 * MIB),
        ];
        for (text, want) in cases {
            assert_eq!(parse_memory(text).unwrap(), *want, "{text}");
        }
        assert!(parse_memory("INFINITY").unwrap().is_infinite());
        assert!(parse_memory("infinity").unwrap().is_infinite());
        for bad in [
            "", "abc", "1x", "G", "-1G", "1GG", "0x10", "inf", "nan", " 1 2",
        ] {
            assert!(parse_memory(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn time_parsing_table() {
        let cases: &[(&str, f64)] = &[
            ("0", 0.0),
            ("40", 40.0),
            ("0:0:1", 1.0),
            ("00:05:00", 300.0),
            ("1:0:0", 3600.0),
            ("1:30", 90.0),
            ("::30", 30.0),
            ("100:00:00", 360000.0),
        ];
        for (text, want) in cases {
            assert_eq!(parse_time(text).unwrap(), *want, "{text}");
        }
        assert!(parse_time("INFINITY").unwrap().is_infinite());
        for bad in ["abc", "1:2:3:4", "1:x:0", "-5", "1h", ""] {
            assert!(parse_time(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn int_double_bool_table() {
        assert_eq!(parse_int("42").unwrap(), 42.0);
        assert_eq!(parse_int("-3").unwrap(), -3.0);
        assert_eq!(parse_int("2k").unwrap(), 2000.0);
        for bad in ["4.5", "x", "", "1e3", "--1"] {
            assert!(parse_int(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_double("1.75").unwrap(), 1.75);
        assert_eq!(parse_double("-0.5").unwrap(), -0.5);
        assert_eq!(parse_double("1e3").unwrap(), 1000.0);
        for bad in ["x", "", "1.2.3", "nan", "inf"] {
            assert!(parse_double(bad).is_err(), "{bad:?}");
        }
        for (t, want) in [
            ("TRUE", true),
            ("true", true),
            ("1", true),
            ("FALSE", false),
            ("false", false),
            ("0", false),
        ] {
            assert_eq!(parse_bool(t).unwrap(), want, "{t}");
        }
        assert!(parse_bool("yes please").is_err());
    }

    #[test]
    fn every_type_name_and_relop_round_trips() {
        for ty in [
            ValueType::Int,
            ValueType::Double,
            ValueType::Memory,
            ValueType::Time,
            ValueType::Bool,
            ValueType::String,
            ValueType::Cstring,
            ValueType::Restring,
            ValueType::Host,
        ] {
            assert_eq!(parse_type(type_name(ty)).unwrap(), ty);
        }
        for r in [
            Relop::Eq,
            Relop::Ne,
            Relop::Lt,
            Relop::Le,
            Relop::Gt,
            Relop::Ge,
            Relop::Excl,
        ] {
            assert_eq!(parse_relop(relop_str(r)).unwrap(), r);
        }
        assert!(parse_type("FLOAT").is_err());
        assert!(parse_relop("=>").is_err());
    }

    #[test]
    fn relops_on_numbers_and_strings() {
        let n = |v: f64| Value::Num(v);
        let t = |s: &str| Value::Text(s.to_string());
        // offered <= relop: a request up to the offered value fits.
        assert!(satisfies(ValueType::Memory, Relop::Le, &n(4.0), &n(4.0)));
        assert!(satisfies(ValueType::Memory, Relop::Le, &n(4.0), &n(3.0)));
        assert!(!satisfies(ValueType::Memory, Relop::Le, &n(4.0), &n(5.0)));
        assert!(satisfies(ValueType::Int, Relop::Lt, &n(4.0), &n(3.0)));
        assert!(!satisfies(ValueType::Int, Relop::Lt, &n(4.0), &n(4.0)));
        assert!(satisfies(ValueType::Double, Relop::Ge, &n(1.0), &n(2.0)));
        assert!(!satisfies(ValueType::Double, Relop::Ge, &n(1.0), &n(0.5)));
        assert!(satisfies(ValueType::Double, Relop::Gt, &n(1.0), &n(2.0)));
        assert!(!satisfies(ValueType::Double, Relop::Gt, &n(1.0), &n(1.0)));
        assert!(satisfies(ValueType::Int, Relop::Eq, &n(2.0), &n(2.0)));
        assert!(satisfies(ValueType::Int, Relop::Ne, &n(2.0), &n(3.0)));
        assert!(satisfies(
            ValueType::String,
            Relop::Eq,
            &t("lx-amd64"),
            &t("lx-amd64")
        ));
        assert!(!satisfies(
            ValueType::String,
            Relop::Eq,
            &t("LX-AMD64"),
            &t("lx-amd64")
        ));
        assert!(satisfies(
            ValueType::Cstring,
            Relop::Eq,
            &t("LX-AMD64"),
            &t("lx-amd64")
        ));
        assert!(satisfies(ValueType::String, Relop::Ne, &t("a"), &t("b")));
        assert!(satisfies(
            ValueType::Host,
            Relop::Eq,
            &t("Node1"),
            &t("node1")
        ));
        assert!(!satisfies(ValueType::Int, Relop::Eq, &t("x"), &n(1.0)));
    }

    #[test]
    fn sge_number_printing() {
        assert_eq!(format_memory_3(23.357 * GIB), "23.357G");
        assert_eq!(format_memory_3(187.832031 * MIB), "187.832M");
        assert_eq!(format_memory_3(0.0), "0.000");
        assert_eq!(format_memory_3(2048.0), "2.000K");
        assert_eq!(format_memory_1(24105.550781 * MIB), "23.5G");
        assert_eq!(format_memory_1(187.832031 * MIB), "187.8M");
        assert_eq!(format_memory_1(0.0), "0.0");
        assert_eq!(format_memory_report(23917.71875 * MIB), "23917.718750M");
        assert_eq!(format_memory_report(0.0), "0.000000M");
        assert_eq!(format_time_hms(40.0), "00:00:40");
        assert_eq!(format_time_hms(300.0), "00:05:00");
        assert_eq!(format_time_hms(f64::INFINITY), "INFINITY");
        assert_eq!(format_f6(2.0), "2.000000");
    }

    proptest::proptest! {
        #[test]
        fn memory_report_format_parses_back(mb in 0u64..10_000_000u64) {
            let bytes = mb as f64 * MIB;
            let text = format_memory_report(bytes);
            let back = parse_memory(&text).unwrap();
            proptest::prop_assert!((back - bytes).abs() < 1.0);
        }

        #[test]
        fn hms_parses_back(secs in 0u64..10_000_000u64) {
            let text = format_time_hms(secs as f64);
            proptest::prop_assert_eq!(parse_time(&text).unwrap(), secs as f64);
        }

        #[test]
        fn parsers_never_panic(s in "\\PC*") {
            let _ = parse_memory(&s);
            let _ = parse_time(&s);
            let _ = parse_int(&s);
            let _ = parse_double(&s);
            let _ = parse_bool(&s);
        }
    }
}
