//! The global configuration (`qconf -sconf`, `-mconf`, `-Mconf`): SGE's attributes with
//! their defaults, validation of each value by its kind, and SGE's printed form.

use crate::conf::{parse_entries, write_wrapped, FileError};
use crate::value::{parse_bool, parse_time};
use gantry_proto::Config;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Any single word or list (paths, commands, user lists): taken verbatim.
    Text,
    Time,
    /// A time of at least one second (how often hosts report, how long they may be
    /// silent: zero would report without pause, or mark every host unreachable).
    Interval,
    Uint,
    /// A user or group id: 0 to 4294967295.
    Id,
    Bool,
    /// One of a fixed set of words.
    OneOf(&'static [&'static str]),
    /// `low-high`
    Range,
    /// `none`, or an IP address and port to listen on (`127.0.0.1:8443`, `[::]:8443`).
    Listen,
}

const LOGLEVELS: &[&str] = &[
    "log_crit",
    "log_err",
    "log_warning",
    "log_notice",
    "log_info",
    "log_debug",
];
const ENFORCE_USER: &[&str] = &["true", "false", "auto"];
const SHELL_START_MODES: &[&str] = &["posix_compliant", "unix_behavior", "script_from_stdin"];

/// Every attribute of the global configuration, in SGE's order, with its default.
const ATTRIBUTES: &[(&str, &str, Kind)] = &[
    ("execd_spool_dir", "/var/spool/gantry/execd", Kind::Text),
    ("mailer", "/usr/bin/mail", Kind::Text),
    ("xterm", "/usr/bin/xterm", Kind::Text),
    ("load_sensor", "none", Kind::Text),
    ("prolog", "none", Kind::Text),
    ("epilog", "none", Kind::Text),
    ("shell_start_mode", "posix_compliant", Kind::OneOf(SHELL_START_MODES)),
    ("login_shells", "bash,sh,ksh,csh,tcsh", Kind::Text),
    ("min_uid", "1000", Kind::Id),
    ("min_gid", "1000", Kind::Id),
    ("user_lists", "none", Kind::Text),
    ("xuser_lists", "none", Kind::Text),
    ("projects", "none", Kind::Text),
    ("xprojects", "none", Kind::Text),
    ("enforce_project", "false", Kind::Bool),
    ("enforce_user", "auto", Kind::OneOf(ENFORCE_USER)),
    ("load_report_time", "00:00:40", Kind::Interval),
    ("max_unheard", "00:05:00", Kind::Interval),
    ("reschedule_unknown", "00:00:00", Kind::Time),
    ("loglevel", "log_warning", Kind::OneOf(LOGLEVELS)),
    ("administrator_mail", "root", Kind::Text),
    ("set_token_cmd", "none", Kind::Text),
    ("pag_cmd", "none", Kind::Text),
    ("token_extend_time", "none", Kind::Text),
    ("shepherd_cmd", "none", Kind::Text),
    ("qmaster_params", "none", Kind::Text),
    ("execd_params", "none", Kind::Text),
    (
        "reporting_params",
        "accounting=true reporting=false flush_time=00:00:15 joblog=false sharelog=00:00:00 accounting_flush_time=00:00:00",
        Kind::Text,
    ),
    ("finished_jobs", "100", Kind::Uint),
    ("gid_range", "65400-65500", Kind::Range),
    ("qlogin_command", "builtin", Kind::Text),
    ("qlogin_daemon", "builtin", Kind::Text),
    ("rlogin_command", "builtin", Kind::Text),
    ("rlogin_daemon", "builtin", Kind::Text),
    ("rsh_command", "builtin", Kind::Text),
    ("rsh_daemon", "builtin", Kind::Text),
    ("max_aj_instances", "2000", Kind::Uint),
    ("max_aj_tasks", "75000", Kind::Uint),
    ("max_u_jobs", "0", Kind::Uint),
    ("max_jobs", "0", Kind::Uint),
    ("auto_user_oticket", "0", Kind::Uint),
    ("auto_user_fshare", "0", Kind::Uint),
    ("auto_user_default_project", "none", Kind::Text),
    ("auto_user_delete_time", "86400", Kind::Uint),
    ("delegated_file_staging", "false", Kind::Bool),
    ("reprioritize", "0", Kind::Uint),
    ("jsv_url", "none", Kind::Text),
    ("jsv_allowed_mod", "ac,h,i,e,o,j,M,N,p,w", Kind::Text),
    ("max_advance_reservations", "50", Kind::Uint),
    // Gantry's own: the master's HTTP listener (metrics, status page, REST API), off
    // by default, and whether a loopback listener serves /metrics and the status page
    // without a certificate.
    ("http_listen", "none", Kind::Listen),
    ("http_anonymous", "false", Kind::Bool),
];

/// The attributes Gantry adds to SGE's.
pub const OWN_ATTRIBUTES: &[&str] = &["http_listen", "http_anonymous"];

/// The global configuration of a fresh cell.
pub fn default_global() -> Config {
    Config {
        name: "global".to_string(),
        entries: ATTRIBUTES
            .iter()
            .map(|(k, v, _)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn check(kind: Kind, key: &str, value: &str) -> Result<(), String> {
    let ok = match kind {
        Kind::Text => true,
        Kind::Time => parse_time(value).map(f64::is_finite).unwrap_or(false),
        Kind::Interval => parse_time(value).is_ok_and(|t| t.is_finite() && t >= 1.0),
        Kind::Uint => value.parse::<u64>().is_ok(),
        Kind::Id => value.parse::<u32>().is_ok(),
        Kind::Bool => parse_bool(value).is_ok(),
        Kind::OneOf(words) => words.iter().any(|w| w.eq_ignore_ascii_case(value)),
        Kind::Range => value
            .split_once('-')
            .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
            .is_some_and(|(a, b)| a <= b),
        Kind::Listen => listen_address(value).is_ok(),
    };
    if ok {
        return Ok(());
    }
    let expected = match kind {
        Kind::Text => "a value".to_string(),
        Kind::Time => "a time (h:m:s or seconds)".to_string(),
        Kind::Interval => "a time of at least one second (h:m:s or seconds)".to_string(),
        Kind::Uint => "a non-negative integer".to_string(),
        Kind::Id => "an id from 0 to 4294967295".to_string(),
        Kind::Bool => "true or false".to_string(),
        Kind::OneOf(words) => format!("one of {}", words.join(", ")),
        Kind::Range => "a range low-high".to_string(),
        Kind::Listen => "none or an address and port (127.0.0.1:8443, [::]:8443)".to_string(),
    };
    Err(format!(
        "value \"{value}\" for attribute \"{key}\" is invalid: expected {expected}"
    ))
}

/// Read a configuration file as `-Mconf` and `-mconf` take it. Every attribute is
/// validated; unknown attributes are refused; attributes the file leaves out take their
/// default. The whole file is refused on the first error.
/// A configuration file's attributes, each known and its value checked; an empty file
/// is refused (it would read as every attribute at its default).
fn checked_entries(name: &str, text: &str) -> Result<Vec<crate::conf::Entry>, FileError> {
    let entries = parse_entries(text)?;
    if entries.is_empty() {
        return Err(FileError::Object(format!(
            "error reading configuration of \"{name}\": the file holds no attribute"
        )));
    }
    for e in &entries {
        let Some((_, _, kind)) = ATTRIBUTES.iter().find(|(k, _, _)| *k == e.key) else {
            return Err(FileError::at(
                e.line,
                format!("unknown attribute \"{}\" in configuration", e.key),
            ));
        };
        check(*kind, &e.key, &e.value).map_err(|r| FileError::at(e.line, r))?;
    }
    Ok(entries)
}

pub fn parse_config(name: &str, text: &str) -> Result<Config, FileError> {
    let entries = checked_entries(name, text)?;
    // Hosts are marked unreachable after max_unheard without a report: shorter than
    // the time between reports, every connected host would be.
    let seconds = |key: &str| {
        entries
            .iter()
            .find(|e| e.key == key)
            .map(|e| (e.line, parse_time(&e.value).unwrap_or(0.0)))
    };
    let default_seconds = |key: &str| {
        ATTRIBUTES
            .iter()
            .find(|(k, _, _)| *k == key)
            .and_then(|(_, d, _)| parse_time(d).ok())
            .unwrap_or(0.0)
    };
    let report = seconds("load_report_time");
    let unheard = seconds("max_unheard");
    if report.is_some() || unheard.is_some() {
        let (report_line, report_s) = report.unwrap_or((0, default_seconds("load_report_time")));
        let (unheard_line, unheard_s) = unheard.unwrap_or((0, default_seconds("max_unheard")));
        if unheard_s < report_s {
            return Err(FileError::at(
                unheard_line.max(report_line),
                format!(
                    "max_unheard ({unheard_s} s) is shorter than load_report_time ({report_s} s): every host would be marked unreachable"
                ),
            ));
        }
    }
    Ok(Config {
        name: name.to_string(),
        entries: ATTRIBUTES
            .iter()
            .map(|(k, default, _)| {
                let v = entries
                    .iter()
                    .find(|e| e.key == *k)
                    .map_or(*default, |e| e.value.as_str());
                (k.to_string(), v.to_string())
            })
            .collect(),
    })
}

/// A host-local configuration (`qconf -Aconf/-Mconf HOST`): only the attributes the
/// file gives, each checked as the global configuration's; the host's configuration
/// overrides the global one with them (`sge_conf(5)`).
pub fn parse_host_config(name: &str, text: &str) -> Result<Config, FileError> {
    let entries = checked_entries(name, text)?;
    Ok(Config {
        name: name.to_string(),
        entries: entries.into_iter().map(|e| (e.key, e.value)).collect(),
    })
}

/// The configuration as `qconf -sconf` prints it.
pub fn print_config(conf: &Config) -> String {
    let mut out = format!("#{}:\n", conf.name);
    for (k, v) in &conf.entries {
        let tokens: Vec<String> = v.split_whitespace().map(str::to_string).collect();
        write_wrapped(&mut out, k, 29, &tokens, " ");
    }
    out.push('\n');
    out
}

/// `http_listen`'s value: None for `none`.
pub fn listen_address(value: &str) -> Result<Option<std::net::SocketAddr>, String> {
    if value.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    value
        .parse::<std::net::SocketAddr>()
        .map(Some)
        .map_err(|_| format!("\"{value}\" is no address and port"))
}

/// The master's HTTP listener as the global configuration sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpSettings {
    /// Where to listen (None: no HTTP listener).
    pub listen: Option<std::net::SocketAddr>,
    /// Serve /metrics and the status page without a certificate (loopback only).
    pub anonymous: bool,
}

impl HttpSettings {
    pub fn of(global: &Config) -> HttpSettings {
        HttpSettings {
            listen: global
                .get("http_listen")
                .and_then(|v| listen_address(v).ok().flatten()),
            anonymous: global
                .get("http_anonymous")
                .is_some_and(|v| parse_bool(v).unwrap_or(false)),
        }
    }

    /// Whether a request without a certificate may read /metrics and the status page.
    pub fn anonymous_allowed(&self) -> bool {
        self.anonymous && self.listen.is_some_and(|a| a.ip().is_loopback())
    }
}

/// A TIME attribute of the configuration in seconds, or its default if unset.
pub fn time_seconds(conf: &Config, key: &str) -> u64 {
    let default = ATTRIBUTES
        .iter()
        .find(|(k, _, _)| *k == key)
        .map_or("0", |(_, d, _)| *d);
    let text = conf.get(key).unwrap_or(default);
    parse_time(text)
        .or_else(|_| parse_time(default))
        .map_or(0, |v| v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_print_as_sge_does_but_for_the_spool_dir() {
        let want = include_str!("../tests/fixtures/qconf-sconf.txt")
            .replace("/var/spool/gridengine/execd", "/var/spool/gantry/execd")
            .replace(
                "max_advance_reservations     50\n",
                "max_advance_reservations     50\nhttp_listen                  none\nhttp_anonymous               false\n",
            );
        assert_eq!(print_config(&default_global()), want);
    }

    #[test]
    fn a_host_configuration_keeps_only_what_it_gives_each_value_checked() {
        let c =
            parse_host_config("node1", "mailer /bin/mail\nreschedule_unknown 0:0:10\n").unwrap();
        assert_eq!(c.name, "node1");
        assert_eq!(
            c.entries,
            vec![
                ("mailer".to_string(), "/bin/mail".to_string()),
                ("reschedule_unknown".to_string(), "0:0:10".to_string())
            ]
        );
        for (text, want) in [
            ("bogus 1\n", "unknown attribute \"bogus\" in configuration"),
            ("reschedule_unknown soon\n", "reschedule_unknown"),
            ("", "holds no attribute"),
            ("# only a comment\n", "holds no attribute"),
        ] {
            let err = parse_host_config("node1", text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn http_settings_read_the_listen_address_and_anonymous_only_on_loopback() {
        let conf = |listen: &str, anonymous: &str| {
            let text = format!("http_listen {listen}\nhttp_anonymous {anonymous}\n");
            parse_config("global", &text).map(|c| HttpSettings::of(&c))
        };
        let off = conf("none", "true").unwrap();
        assert_eq!(off.listen, None);
        assert!(!off.anonymous_allowed());
        let local = conf("127.0.0.1:8443", "true").unwrap();
        assert_eq!(local.listen, Some("127.0.0.1:8443".parse().unwrap()));
        assert!(local.anonymous_allowed());
        assert!(!conf("0.0.0.0:8443", "true").unwrap().anonymous_allowed());
        assert!(!conf("[::1]:8443", "false").unwrap().anonymous_allowed());
        for bad in ["8443", "localhost:8443", "127.0.0.1", "1.2.3.4:99999"] {
            let e = conf(bad, "false").unwrap_err().to_string();
            assert!(
                e.contains("for attribute \"http_listen\" is invalid"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn printed_config_parses_back() {
        let c = default_global();
        assert_eq!(parse_config("global", &print_config(&c)).unwrap(), c);
    }

    #[test]
    fn values_are_kept_verbatim_and_missing_ones_default() {
        let c = parse_config("global", "load_report_time 0:0:1\nmax_unheard 0:0:5\n").unwrap();
        assert_eq!(c.get("load_report_time"), Some("0:0:1"));
        assert_eq!(c.get("min_uid"), Some("1000"));
        assert_eq!(time_seconds(&c, "load_report_time"), 1);
        assert_eq!(time_seconds(&c, "max_unheard"), 5);
        assert_eq!(time_seconds(&default_global(), "load_report_time"), 40);
    }

    #[test]
    fn invalid_files_are_refused_with_line_and_reason() {
        let cases = [
            (
                "load_report_time abc\n",
                "line 1: value \"abc\" for attribute \"load_report_time\" is invalid: expected a time of at least one second (h:m:s or seconds)",
            ),
            (
                "min_uid 0\nbogus_attr 1\n",
                "line 2: unknown attribute \"bogus_attr\" in configuration",
            ),
            (
                "max_unheard INFINITY\n",
                "line 1: value \"INFINITY\" for attribute \"max_unheard\" is invalid: expected a time of at least one second (h:m:s or seconds)",
            ),
            (
                "enforce_project maybe\n",
                "line 1: value \"maybe\" for attribute \"enforce_project\" is invalid: expected true or false",
            ),
            (
                "loglevel loud\n",
                "line 1: value \"loud\" for attribute \"loglevel\" is invalid: expected one of log_crit, log_err, log_warning, log_notice, log_info, log_debug",
            ),
            (
                "gid_range 10-5\n",
                "line 1: value \"10-5\" for attribute \"gid_range\" is invalid: expected a range low-high",
            ),
            ("min_uid -1\n", "line 1: value \"-1\" for attribute \"min_uid\" is invalid: expected an id from 0 to 4294967295"),
            ("min_uid\n", "line 1: attribute \"min_uid\" has no value"),
            // What a careless administrator wrote (issue 34): each accepted by SGE 8.1.9,
            // each leaving the cluster broken.
            ("min_uid 4294967296\n", "line 1: value \"4294967296\" for attribute \"min_uid\" is invalid: expected an id from 0 to 4294967295"),
            ("max_unheard 0\n", "line 1: value \"0\" for attribute \"max_unheard\" is invalid: expected a time of at least one second (h:m:s or seconds)"),
            ("load_report_time 00:00:00\n", "line 1: value \"00:00:00\" for attribute \"load_report_time\" is invalid: expected a time of at least one second (h:m:s or seconds)"),
            ("administrator_mail root\0x\n", "line 1: the line holds a control character (U+0000)"),
            ("min_uid 0\nmailer /bin/mail\u{7}\n", "line 2: the line holds a control character (U+0007)"),
            ("load_report_time 0:1:0\nmax_unheard 0:0:30\n", "line 2: max_unheard (30 s) is shorter than load_report_time (60 s): every host would be marked unreachable"),
            ("max_unheard 0:0:30\n", "line 1: max_unheard (30 s) is shorter than load_report_time (40 s): every host would be marked unreachable"),
            ("", "error reading configuration of \"global\": the file holds no attribute"),
            ("# only a comment\n\n", "error reading configuration of \"global\": the file holds no attribute"),
        ];
        for (text, want) in cases {
            assert_eq!(parse_config("global", text).unwrap_err().to_string(), want);
        }
    }
}
