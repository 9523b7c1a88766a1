//! `qquota`: how much of each resource quota rule is in use, as Grid Engine prints it.
//!
//! Options come from three layers, lowest precedence first: the cluster-wide
//! `sge_qquota` file in the cell directory, `$HOME/.sge_qquota`, then the command line.
//! An option given in a layer replaces what lower layers said about it; repeated inside
//! one layer, list options add up (`-u a -u b` is `-u a,b`). The output format is the
//! last of `-xml`/`-json` given (text when neither is).
//!
//! Besides Grid Engine's text and `-xml` output, `-json` prints one JSON document:
//!
//! ```json
//! {"quota_rules":[
//!   {"rule":"per_group/testers",
//!    "filters":{"hosts":["@allhosts"],"users":["@testusers"],"xusers":["user3"]},
//!    "limits":[{"resource":"slots","limit":"3","used":"2"},
//!              {"resource":"arch","limit":"lx-amd64","used":null}]}
//! ]}
//! ```
//!
//! - `quota_rules`: one entry per rule and consumer, in the master's order (an empty
//!   array when nothing is in use);
//! - `rule`: `set/name` or `set/N`;
//! - `filters`: filter type (`users`, `projects`, `pes`, `queues`, `hosts`) to the names
//!   in it, in order; excluded names (`!user3`) are listed without the `!` under the type
//!   prefixed with `x` (`xusers`), as in the XML schema; types without names are absent;
//! - `limits`: `resource` and `limit` always strings, `used` a string, or `null` for a
//!   fixed, non-consumable limit such as `arch=lx-amd64`.

use gantry_common::output::filter_names;
use gantry_proto::{FromMaster, QuotaLimit, QuotaQuery, QuotaRow, ToMaster};

use crate::opts::{opt, parse, split_line, Arity, OptSpec, Parsed};
use crate::xml::Xml;
use crate::{exit, Output};

const SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-h", Arity::One),
    opt("-l", Arity::One),
    opt("-u", Arity::One),
    opt("-pe", Arity::One),
    opt("-P", Arity::One),
    opt("-q", Arity::One),
    opt("-xml", Arity::None),
    opt("-json", Arity::None),
    opt("-g", Arity::None),
];

mod groups;

/// SGE 8.1.9's usage, with Gantry's `-g` (the group quota tree) and `-json`.
pub fn usage() -> String {
    format!(
        "Gantry {}\nusage: qquota [options]\n  [-help]                              print this help\n  [-g]                                 display the group quota tree's allocation\n  [-h wc_host_list|wc_hostgroup_list]  display only selected hosts\n  [-json]                              print the quotas as one JSON document\n  [-l resource_attributes]             request the given resources\n  [-u user_list]                       display only selected users\n  [-pe wc_pe_list]                     display only selected parallel environments\n  [-P wc_project_list]                 display only selected projects\n  [-q wc_cqueue_list]                  display only selected queues\n  [-xml]                               display the information in XML format\n\nresource_attributes     resource_name,resource_name,...\nwc_cqueue               wildcard expression matching a cluster queue\nwc_cqueue_list          wc_cqueue[,wc_cqueue,...]\nwc_host                 wildcard expression matching a host\nwc_host_list            wc_host[,wc_host,...]\nwc_hostgroup            wildcard expression matching a hostgroup\nwc_hostgroup_list       wc_hostgroup[,wc_hostgroup,...]\nwc_pe                   wildcard expression matching a parallel environment\nwc_pe_list              wc_pe[,wc_pe,...]\nwc_project              wildcard expression matching a project\nwc_project_list         wc_project[,wc_project,...]\nuser_list               user[,user,...]\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// How the rows are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Xml,
    Json,
}

/// What `qquota` was asked, after the defaults files and the command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Settings {
    pub query: QuotaQuery,
    pub format: Format,
}

/// The options of one defaults file's contents. `source` names the file in messages.
pub fn layer_from_text(text: &str, source: &str) -> Result<Parsed, Output> {
    let mut words = Vec::new();
    for line in text.lines() {
        match split_line(line) {
            Ok(w) => words.extend(w),
            Err(e) => return Err(Output::fail(format!("error: {source}: {e}"), exit::FAILURE)),
        }
    }
    parse(&words, SPECS, false)
        .map_err(|e| Output::usage_error(&format!("{e} (in {source})"), &usage()))
}

/// The settings from option layers, lowest precedence first (cell file, home file,
/// command line).
pub fn resolve(layers: &[Parsed]) -> Settings {
    let list = |name: &str| -> Vec<String> {
        layers
            .iter()
            .rev()
            .find(|l| l.has(name))
            .map(|l| {
                l.options
                    .iter()
                    .filter(|g| g.name == name)
                    .filter_map(|g| g.arg.as_deref())
                    .flat_map(|a| a.split(','))
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let format = layers
        .iter()
        .flat_map(|l| l.options.iter())
        .filter_map(|g| match g.name {
            "-xml" => Some(Format::Xml),
            "-json" => Some(Format::Json),
            _ => None,
        })
        .next_back()
        .unwrap_or_default();
    Settings {
        query: QuotaQuery {
            users: list("-u"),
            hosts: list("-h"),
            queues: list("-q"),
            projects: list("-P"),
            pes: list("-pe"),
            resources: list("-l"),
        },
        format,
    }
}

/// The settings from the defaults files' contents (lowest precedence first; `None` for
/// a file that does not exist) and the command line.
pub fn settings_from(files: &[(&str, Option<&str>)], cmdline: Parsed) -> Result<Settings, Output> {
    let mut layers = Vec::new();
    for (source, text) in files {
        if let Some(text) = text {
            layers.push(layer_from_text(text, source)?);
        }
    }
    layers.push(cmdline);
    Ok(resolve(&layers))
}

/// A defaults file's contents, `None` when it does not exist.
fn read_defaults(path: &std::path::Path) -> Result<Option<String>, Output> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Output::fail(
            format!("error: can't read {}: {e}", path.display()),
            exit::FAILURE,
        )),
    }
}

pub fn run(args: &[String]) -> Output {
    let cmdline = match crate::parse_args_as(
        args,
        SPECS,
        false,
        usage,
        crate::UnknownOption::UsageThen("error: "),
    ) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let paths = [
        Some(gantry_common::cell::client_home().join("sge_qquota")),
        crate::account::home_dir().map(|h| h.join(".sge_qquota")),
    ];
    let mut files = Vec::new();
    for path in paths.into_iter().flatten() {
        match read_defaults(&path) {
            Ok(text) => files.push((path.display().to_string(), text)),
            Err(out) => return out,
        }
    }
    let files: Vec<(&str, Option<&str>)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_deref()))
        .collect();
    let cmdline_groups = cmdline.has("-g");
    let settings = match settings_from(&files, cmdline) {
        Ok(s) => s,
        Err(out) => return out,
    };
    if cmdline_groups {
        let rows = match crate::ask(&ToMaster::ShowGroups) {
            Ok(FromMaster::Groups(rows)) => rows,
            Ok(other) => return crate::unexpected(&other),
            Err(out) => return out,
        };
        return match settings.format {
            Format::Text => Output::ok(groups::render_text(&rows)),
            Format::Xml => Output::ok(groups::render_xml(&rows)),
            Format::Json => Output::ok(groups::render_json(&rows)),
        };
    }
    let rows = match crate::ask(&ToMaster::ShowQuotas(settings.query)) {
        Ok(FromMaster::Quotas(rows)) => rows,
        Ok(other) => return crate::unexpected(&other),
        Err(out) => return out,
    };
    match settings.format {
        Format::Text => Output::ok(render_text(&rows)),
        Format::Xml => Output::ok(render_xml(&rows)),
        Format::Json => Output::ok(render_json(&rows)),
    }
}

/// `slots=2/3`, or `arch=lx-amd64` for a limit without usage.
fn limit_text(l: &QuotaLimit) -> String {
    match &l.used {
        Some(used) => format!("{}={used}/{}", l.resource, l.limit),
        None => format!("{}={}", l.resource, l.limit),
    }
}

/// Grid Engine's table: one line per row and limit; nothing at all without lines.
pub fn render_text(rows: &[QuotaRow]) -> String {
    let mut body = String::new();
    for row in rows {
        // SGE's sge_qquota.c: `%-18s %-20.20s %s`, and `-` for a rule without filters
        // (SGE also cuts a limit at 20 characters, which Gantry does not: a cut number
        // reads as another number).
        let mut filters = row
            .filters
            .iter()
            .map(|(kind, names)| format!("{kind} {names}"))
            .collect::<Vec<_>>()
            .join(" ");
        if filters.is_empty() {
            filters.push('-');
        }
        for l in &row.limits {
            body.push_str(&format!(
                "{:<18} {:<20} {filters}\n",
                row.rule,
                limit_text(l)
            ));
        }
    }
    if body.is_empty() {
        return body;
    }
    format!(
        "resource quota rule limit                filter\n{}\n{body}",
        "-".repeat(80)
    )
}

/// Whether `s` can be written as an element name as it is.
fn is_element_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

const XMLNS: &str = "xmlns=\"http://arc.liv.ac.uk/repos/darcs/sge/source/source/dist/util/resources/schemas/qquota/qquota.xsd\"";

/// `qquota -xml`: a `qquota_rule` element per limit of a row (as SGE 8.1.9 writes a
/// rule limiting two resources: two elements), its filters as elements named by their
/// type (`xusers` for an excluded user), then the limit.
pub fn render_xml(rows: &[QuotaRow]) -> String {
    let mut x = Xml::new();
    x.open_raw(0, "qquota_result", XMLNS);
    for (row, l) in rows
        .iter()
        .flat_map(|r| r.limits.iter().map(move |l| (r, l)))
    {
        x.open(1, "qquota_rule", &[("name", &row.rule)]);
        for (kind, value) in &row.filters {
            for (excluded, name) in filter_names(value) {
                let element = if excluded {
                    format!("x{kind}")
                } else {
                    kind.clone()
                };
                if is_element_name(&element) {
                    x.element(3, &element, &[], name);
                } else {
                    // Never splice an unexpected type into markup.
                    x.element(
                        3,
                        "filter",
                        &[("type", kind), ("excluded", &excluded.to_string())],
                        name,
                    );
                }
            }
        }
        let mut attrs = vec![("resource", l.resource.as_str()), ("limit", &l.limit)];
        if let Some(used) = &l.used {
            attrs.push(("value", used));
        }
        x.empty(3, "limit", &attrs);
        x.close(1, "qquota_rule");
    }
    x.close(0, "qquota_result");
    x.finish()
}

/// `qquota -json`: the document described in the module documentation, one line.
pub fn render_json(rows: &[QuotaRow]) -> String {
    crate::json_line(&gantry_common::output::QuotaRuleList::of(rows))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A block (`=== name`) of tests/fixtures/qquota.txt: SGE's bytes.
    pub(crate) fn fixture(name: &str) -> String {
        let all = include_str!("../tests/fixtures/qquota.txt");
        let start = all.find(&format!("=== {name}\n")).unwrap() + name.len() + 5;
        let end = all[start..]
            .find("\n=== ")
            .map_or(all.len(), |e| start + e + 1);
        all[start..end].to_string()
    }

    fn row(rule: &str, filters: &[(&str, &str)], limit: &str, used: Option<&str>) -> QuotaRow {
        QuotaRow {
            rule: rule.into(),
            filters: filters
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            limits: vec![QuotaLimit {
                resource: "slots".into(),
                limit: limit.into(),
                used: used.map(str::to_string),
            }],
        }
    }

    /// The rows of the reference transcript while user1 and user2 fill the cluster.
    fn reference_rows() -> Vec<QuotaRow> {
        vec![
            row("max_u_slots/1", &[("users", "user1")], "2", Some("2")),
            row("host_slots/1", &[("hosts", "vm")], "2", Some("2")),
            row(
                "per_group/testers",
                &[("users", "@testusers"), ("hosts", "@allhosts")],
                "3",
                Some("2"),
            ),
        ]
    }

    #[test]
    fn text_matches_sge() {
        assert_eq!(render_text(&reference_rows()), fixture("qquota -u '*'"));
        let rows = vec![
            row("max_u_slots/1", &[("users", "user1")], "2", Some("2")),
            row("max_u_slots/1", &[("users", "user2")], "2", Some("1")),
            row(
                "per_group/testers",
                &[("users", "@testusers"), ("hosts", "@allhosts")],
                "3",
                Some("3"),
            ),
        ];
        assert_eq!(
            render_text(&rows),
            fixture("qquota -u '*' (host_slots disabled)")
        );
    }

    #[test]
    fn text_never_truncates_and_shows_fixed_limits() {
        let mut r = row(
            "a_very_long_rule_set_name/a_long_rule",
            &[("users", "!user3")],
            "1234567890",
            Some("1234567890"),
        );
        r.limits.push(QuotaLimit {
            resource: "arch".into(),
            limit: "lx-amd64".into(),
            used: None,
        });
        let out = render_text(&[r]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[2],
            "a_very_long_rule_set_name/a_long_rule slots=1234567890/1234567890 users !user3"
        );
        assert_eq!(
            lines[3],
            "a_very_long_rule_set_name/a_long_rule arch=lx-amd64        users !user3"
        );
    }

    #[test]
    fn nothing_in_use_prints_nothing() {
        assert_eq!(render_text(&[]), "");
        let no_limits = QuotaRow {
            rule: "x/1".into(),
            filters: vec![],
            limits: vec![],
        };
        assert_eq!(render_text(&[no_limits]), "");
        // A rule without filters: `-` in the filter column, as SGE prints it.
        let global = row("global/1", &[], "10", Some("3"));
        assert_eq!(
            render_text(&[global]).lines().nth(2),
            Some("global/1           slots=3/10           -")
        );
        assert_eq!(
            render_xml(&[]),
            format!("<?xml version='1.0'?>\n<qquota_result {XMLNS}>\n</qquota_result>\n")
        );
        assert_eq!(render_json(&[]), "{\"quota_rules\":[]}\n");
    }

    #[test]
    fn xml_matches_sge() {
        assert_eq!(render_xml(&reference_rows()), fixture("qquota -xml"));
    }

    /// tests/sge/recorded/65_qquota_forms.txt: `limit users {*} to lic=2,slots=2` is two
    /// `qquota_rule` elements of one name.
    #[test]
    fn xml_has_an_element_per_limit() {
        let mut r = row("lic_limit/1", &[("users", "user1")], "2", Some("1"));
        r.limits.insert(
            0,
            QuotaLimit {
                resource: "lic".into(),
                limit: "2".into(),
                used: Some("1".into()),
            },
        );
        let out = render_xml(&[r]);
        let rule = |resource: &str| {
            format!(" <qquota_rule name='lic_limit/1'>\n   <users>user1</users>\n   <limit resource='{resource}' limit='2' value='1'/>\n </qquota_rule>\n")
        };
        assert!(
            out.contains(&format!("{}{}", rule("lic"), rule("slots"))),
            "{out}"
        );
    }

    #[test]
    fn xml_excluded_names_and_escaping() {
        let mut r = row(
            "s/<r>",
            &[("users", "@eng,!user1"), ("bad key", "a&b")],
            "2",
            None,
        );
        r.limits[0].resource = "x'y".into();
        let out = render_xml(&[r]);
        assert!(out.contains(" <qquota_rule name='s/&lt;r&gt;'>\n"), "{out}");
        assert!(
            out.contains("   <users>@eng</users>\n   <xusers>user1</xusers>\n"),
            "{out}"
        );
        assert!(
            out.contains("   <filter type='bad key' excluded='false'>a&amp;b</filter>\n"),
            "{out}"
        );
        assert!(
            out.contains("   <limit resource='x&apos;y' limit='2'/>\n"),
            "{out}"
        );
    }

    #[test]
    fn json_shape() {
        let mut rows = reference_rows();
        rows[2].filters.push(("users".into(), "!user3".into()));
        rows[2].limits.push(QuotaLimit {
            resource: "arch".into(),
            limit: "lx-amd64".into(),
            used: None,
        });
        let out = render_json(&rows);
        assert!(out.ends_with("}\n") && !out.trim_end().contains('\n'));
        assert!(out.starts_with(
            "{\"quota_rules\":[{\"rule\":\"max_u_slots/1\",\"filters\":{\"users\":[\"user1\"]},\"limits\":[{\"resource\":\"slots\",\"limit\":\"2\",\"used\":\"2\"}]}"
        ), "{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["quota_rules"][2],
            serde_json::json!({
                "rule": "per_group/testers",
                "filters": {"users": ["@testusers"], "hosts": ["@allhosts"], "xusers": ["user3"]},
                "limits": [
                    {"resource": "slots", "limit": "3", "used": "2"},
                    {"resource": "arch", "limit": "lx-amd64", "used": null}
                ]
            })
        );
    }

    fn cmdline(s: &str) -> Parsed {
        let words: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        parse(&words, SPECS, false).unwrap()
    }

    #[test]
    fn defaults_files_then_command_line() {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Nothing anywhere: the caller's quotas, as text.
        let s = settings_from(&[("cell", None), ("home", None)], cmdline("")).unwrap();
        assert_eq!(s, Settings::default());
        // The cell file alone.
        let cell = "# site defaults\n-u '*' -xml\n-P proj1,proj2\n";
        let s = settings_from(&[("cell", Some(cell)), ("home", None)], cmdline("")).unwrap();
        assert_eq!(s.query.users, v(&["*"]));
        assert_eq!(s.query.projects, v(&["proj1", "proj2"]));
        assert_eq!(s.format, Format::Xml);
        // The home file overrides the cell file, option by option.
        let home = "-u user1\n-u user2 -h vm\n";
        let s = settings_from(&[("cell", Some(cell)), ("home", Some(home))], cmdline("")).unwrap();
        assert_eq!(s.query.users, v(&["user1", "user2"]));
        assert_eq!(s.query.hosts, v(&["vm"]));
        assert_eq!(s.query.projects, v(&["proj1", "proj2"]));
        assert_eq!(s.format, Format::Xml);
        // The command line overrides both.
        let s = settings_from(
            &[("cell", Some(cell)), ("home", Some(home))],
            cmdline("-u user3 -l slots,h_vmem -pe smp -q all.q -json"),
        )
        .unwrap();
        assert_eq!(s.query.users, v(&["user3"]));
        assert_eq!(s.query.hosts, v(&["vm"]));
        assert_eq!(s.query.resources, v(&["slots", "h_vmem"]));
        assert_eq!(s.query.pes, v(&["smp"]));
        assert_eq!(s.query.queues, v(&["all.q"]));
        assert_eq!(s.format, Format::Json);
        // Mistakes in a file are reported.
        let bad = settings_from(&[("/x/sge_qquota", Some("-bogus"))], cmdline("")).unwrap_err();
        assert_eq!(bad.code, exit::FAILURE);
        assert!(bad
            .stderr
            .starts_with("error: invalid option argument \"-bogus\" (in /x/sge_qquota)\n"));
        assert!(bad.stderr.contains("usage: qquota"));
        let bad = settings_from(&[("/x/.sge_qquota", Some("-u 'open"))], cmdline("")).unwrap_err();
        assert!(
            bad.stderr.starts_with("error: /x/.sge_qquota: "),
            "{}",
            bad.stderr
        );
    }

    #[test]
    fn usage_errors_and_help() {
        // As SGE's qquota: the usage, then why.
        let out = run(&["-bogus".to_string()]);
        assert_eq!(out.code, exit::FAILURE);
        assert!(out.stderr.contains("usage: qquota [options]"));
        assert!(
            out.stderr
                .ends_with("\nerror: invalid option argument \"-bogus\"\n"),
            "{}",
            out.stderr
        );
        let out = run(&["-help".to_string()]);
        assert_eq!(out.code, exit::SUCCESS);
        assert!(out.stdout.contains("[-u user_list]"));
        let out = run(&["-u".to_string()]);
        assert!(out
            .stderr
            .starts_with("error: no option argument provided to \"-u\"\n"));
    }
}
