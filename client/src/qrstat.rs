//! `qrstat`: the advance reservations, as SGE 8.1.9's qrstat prints them (its summary
//! table, `-ar`'s detail, `-xml`), and `-json` beyond it.

use gantry_common::ar::matches_reference;
use gantry_common::dates::local_time;
use gantry_proto::{AdvanceReservation, FromMaster, ToMaster};

use crate::opts::{opt, Arity, OptSpec};
use crate::xml::escape;
use crate::{exit, Output};

const SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-ar", Arity::One),
    opt("-u", Arity::One),
    opt("-explain", Arity::None),
    opt("-xml", Arity::None),
    opt("-json", Arity::None),
];

/// qrstat(1)'s options (and -json) in SGE's layout; SGE 8.1.9's own usage lists `-he`
/// and `-terse` instead of `-ar` and `-explain`.
pub fn usage() -> String {
    format!(
        "Gantry {}\nusage: qrstat [options]\n   [-ar ar_id_list]                         show advance reservation information\n   [-explain]                               show reason for error state\n   [-help]                                  print this help\n   [-json]                                  display the information as JSON\n   [-u user_list]                           all advance reservations of users specified in list\n   [-xml]                                   display the information in XML-Format\n\nar_id_list              ar_id[,ar_id,...]\nuser_list               user|pattern[,user|pattern,...]\n",
        env!("CARGO_PKG_VERSION")
    )
}

const XMLNS: &str =
    "xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qrstat/qrstat.xsd\"";

/// `HH:MM:SS`, hours unbounded.
fn duration(secs: i64) -> String {
    let s = secs.max(0);
    format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

fn when(ts: i64) -> String {
    local_time(ts, "%m/%d/%Y %H:%M:%S")
}

fn iso(ts: i64) -> String {
    local_time(ts, "%Y-%m-%dT%H:%M:%S")
}

fn summary_row(ar: &AdvanceReservation, explain: bool) -> String {
    let cut = |s: &str, n: usize| s.chars().take(n).collect::<String>();
    let mut row = format!(
        "{:>7} {:<10} {:<12} {:<5} {:<20} {:<20} {}",
        ar.id,
        cut(ar.spec.name.as_deref().unwrap_or(""), 10),
        cut(&ar.owner, 12),
        ar.state.letter(),
        when(ar.start),
        when(ar.end),
        duration(ar.duration())
    );
    if explain {
        for e in &ar.errors {
            row.push_str(&format!("\n       {e}"));
        }
    }
    row.push('\n');
    row
}

/// The requested PE and its range as given, and the master queue list, as SGE's qrstat
/// shows the request.
fn detail(ar: &AdvanceReservation) -> String {
    let mut out = String::from(&"-".repeat(80));
    out.push('\n');
    let mut line = |k: &str, v: &str| out.push_str(&format!("{k:<30} {v}\n"));
    line("id", &ar.id.to_string());
    line("name", ar.spec.name.as_deref().unwrap_or(""));
    line("owner", &ar.owner);
    line("state", &ar.state.letter().to_string());
    line("start_time", &when(ar.start));
    line("end_time", &when(ar.end));
    line("duration", &duration(ar.duration()));
    for e in &ar.errors {
        line("message", e);
    }
    line("submission_time", &when(ar.submission_time));
    line("group", &ar.group);
    line("account", &ar.spec.account);
    if !ar.spec.resources.is_empty() {
        let list: Vec<String> = ar
            .spec
            .resources
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        line("resource_list", &list.join(", "));
    }
    if ar.spec.hard_error {
        line("error_handling", "true");
    }
    if !ar.granted.is_empty() {
        let list: Vec<String> = ar
            .granted
            .iter()
            .map(|g| format!("{}@{}={}", g.queue, g.host, g.slots))
            .collect();
        line("granted_slots_list", &list.join(","));
    }
    if let Some((pe, range)) = &ar.spec.pe {
        line(
            "granted_parallel_environment",
            &format!("{pe} slots {range}"),
        );
    }
    if !ar.spec.masterq.is_empty() {
        line("master hard queue_list", &ar.spec.masterq.join(","));
    }
    if let Some(c) = &ar.spec.ckpt {
        line("checkpoint_name", c);
    }
    if !ar.spec.mail_options.is_empty() {
        line("mail_options", &ar.spec.mail_options);
    }
    if !ar.spec.mail_list.is_empty() {
        line("mail_list", &ar.spec.mail_list.join(","));
    }
    if !ar.spec.users.is_empty() {
        line("acl_list", &ar.spec.users.join(","));
    }
    out
}

fn xml(ars: &[AdvanceReservation], details: bool, unknown: &[String]) -> String {
    let mut out = format!("<?xml version='1.0'?>\n<qrstat {XMLNS}>\n");
    let el = |out: &mut String, k: &str, v: &str| {
        if v.is_empty() {
            out.push_str(&format!("      <{k}/>\n"));
        } else {
            out.push_str(&format!("      <{k}>{}</{k}>\n", escape(v)));
        }
    };
    if ars.is_empty() && !unknown.is_empty() {
        for id in unknown {
            out.push_str("   <ar_unknown>\n");
            el(&mut out, "id", id);
            out.push_str("   </ar_unknown>\n");
        }
    }
    for ar in ars {
        out.push_str("   <ar_summary>\n");
        el(&mut out, "id", &ar.id.to_string());
        el(&mut out, "name", ar.spec.name.as_deref().unwrap_or(""));
        el(&mut out, "owner", &ar.owner);
        el(&mut out, "state", &ar.state.letter().to_string());
        el(&mut out, "start_time", &iso(ar.start));
        el(&mut out, "end_time", &iso(ar.end));
        el(&mut out, "duration", &duration(ar.duration()));
        if details {
            for e in &ar.errors {
                el(&mut out, "message", e);
            }
            el(&mut out, "submission_time", &iso(ar.submission_time));
            el(&mut out, "group", &ar.group);
            el(&mut out, "account", &ar.spec.account);
            if !ar.spec.resources.is_empty() {
                out.push_str("      <resource_list>\n");
                for (k, v) in &ar.spec.resources {
                    out.push_str(&format!(
                        "         <resource name=\"{}\" type=\"{}\"/>\n",
                        escape(k),
                        escape(v)
                    ));
                }
                out.push_str("      </resource_list>\n");
            }
            if ar.spec.hard_error {
                el(&mut out, "error_handling", "true");
            }
            if !ar.granted.is_empty() {
                out.push_str("      <granted_slots_list>\n");
                for g in &ar.granted {
                    out.push_str(&format!(
                        "         <granted_slots  queue_instance=\"{}\" slots=\"{}\"/>\n",
                        escape(&format!("{}@{}", g.queue, g.host)),
                        g.slots
                    ));
                }
                out.push_str("      </granted_slots_list>\n");
            }
            if let Some((pe, range)) = &ar.spec.pe {
                out.push_str("      <granted_parallel_environment>\n");
                out.push_str(&format!(
                    "         <parallel_environment>{}</parallel_environment>\n",
                    escape(pe)
                ));
                out.push_str(&format!("         <slots>{}</slots>\n", escape(range)));
                out.push_str("      </granted_parallel_environment>\n");
            }
            if let Some(c) = &ar.spec.ckpt {
                el(&mut out, "checkpoint_name", c);
            }
            if !ar.spec.users.is_empty() {
                out.push_str("      <acl_list>\n");
                for u in &ar.spec.users {
                    out.push_str(&format!("         <acl  user=\"{}\"/>\n", escape(u)));
                }
                out.push_str("      </acl_list>\n");
            }
        }
        out.push_str("   </ar_summary>\n");
    }
    out.push_str("</qrstat>\n");
    out
}

/// `qrstat -json`: the reservations (`gantry_common::output::ArList`), and the ids
/// `-ar` named that do not exist.
fn json(ars: &[AdvanceReservation], unknown: &[String]) -> String {
    use gantry_common::output::{ArEntry, ArList};
    crate::json_line(&ArList {
        advance_reservations: ars.iter().map(ArEntry::of).collect(),
        unknown: unknown.to_vec(),
    })
}

pub fn qrstat(args: &[String]) -> Output {
    let p = match crate::parse_args_as(
        args,
        SPECS,
        false,
        usage,
        crate::UnknownOption::Line("error: ", exit::FAILURE),
    ) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let list = |option: &str| -> Vec<String> {
        p.arg(option)
            .map(|l| {
                l.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let (ids, users) = (list("-ar"), list("-u"));
    let ars = match crate::ask(&ToMaster::ShowArs {
        users,
        ids: ids.clone(),
    }) {
        Ok(FromMaster::Ars(list)) => list,
        Ok(other) => return crate::unexpected(&other),
        Err(out) => return out,
    };
    let unknown: Vec<String> = ids
        .iter()
        .filter(|r| !ars.iter().any(|a| matches_reference(a, r)))
        .cloned()
        .collect();
    let details = !ids.is_empty();
    if p.has("-json") {
        let code = if ars.is_empty() && !unknown.is_empty() {
            exit::FAILURE
        } else {
            exit::SUCCESS
        };
        return Output {
            stdout: json(&ars, &unknown),
            stderr: String::new(),
            code,
        };
    }
    if p.has("-xml") {
        return Output::ok(xml(&ars, details, &unknown));
    }
    if details && ars.is_empty() {
        return Output {
            stdout: format!(
                "Following advance reservations do not exist:\n{}\n",
                unknown.join("\n")
            ),
            stderr: String::new(),
            code: exit::FAILURE,
        };
    }
    let mut out = String::new();
    if details {
        for ar in &ars {
            out.push_str(&detail(ar));
        }
    } else if !ars.is_empty() {
        out.push_str(&format!(
            "{:<7} {:<10} {:<12} {:<5} {:<20} {:<20} {:>8}\n",
            "ar-id", "name", "owner", "state", "start at", "end at", "duration"
        ));
        out.push_str(&"-".repeat(90));
        out.push('\n');
        for ar in &ars {
            out.push_str(&summary_row(ar, p.has("-explain")));
        }
    }
    Output::ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_sge_prints_them() {
        assert_eq!(duration(600), "00:10:00");
        assert_eq!(duration(20), "00:00:20");
        assert_eq!(duration(100 * 3600 + 61), "100:01:01");
    }
}

#[cfg(test)]
mod format_tests {
    //! `qrstat`'s layouts against SGE 8.1.9's (`05_advance_reservation.txt`), the times
    //! printed in the local zone as qrstat prints them.
    use super::*;
    use gantry_proto::{ArId, ArSpec, ArState, Grant};

    fn myar() -> AdvanceReservation {
        AdvanceReservation {
            id: ArId(2),
            spec: ArSpec {
                name: Some("myar".into()),
                account: "sge".into(),
                pe: Some(("smp".into(), "2".into())),
                ..ArSpec::default()
            },
            owner: "user1".into(),
            group: "sgeadmin".into(),
            submission_time: 1_795_302_014,
            start: 1_795_302_014,
            end: 1_795_302_614,
            granted: vec![Grant {
                queue: "all.q".into(),
                host: "vm".into(),
                slots: 2,
            }],
            granted_pe: Some(("smp".into(), 2)),
            state: ArState::Running,
            errors: Vec::new(),
        }
    }

    #[test]
    fn the_summary_row_and_the_details_are_sges() {
        let ar = myar();
        let (start, end) = (when(ar.start), when(ar.end));
        assert_eq!(
            summary_row(&ar, false),
            format!("      2 myar       user1        r     {start}  {end}  00:10:00\n")
        );
        let header = format!(
            "{:<7} {:<10} {:<12} {:<5} {:<20} {:<20} {:>8}",
            "ar-id", "name", "owner", "state", "start at", "end at", "duration"
        );
        assert_eq!(
            header,
            "ar-id   name       owner        state start at             end at               duration"
        );
        assert_eq!(
            detail(&ar),
            format!(
                "{}\nid                             2\nname                           myar\nowner                          user1\nstate                          r\nstart_time                     {start}\nend_time                       {end}\nduration                       00:10:00\nsubmission_time                {start}\ngroup                          sgeadmin\naccount                        sge\ngranted_slots_list             all.q@vm=2\ngranted_parallel_environment   smp slots 2\n",
                "-".repeat(80)
            )
        );
    }

    #[test]
    fn the_xml_is_sges() {
        let ar = myar();
        let (start, end) = (iso(ar.start), iso(ar.end));
        assert_eq!(
            xml(&[ar], true, &[]),
            format!(
                "<?xml version='1.0'?>\n<qrstat {XMLNS}>\n   <ar_summary>\n      <id>2</id>\n      <name>myar</name>\n      <owner>user1</owner>\n      <state>r</state>\n      <start_time>{start}</start_time>\n      <end_time>{end}</end_time>\n      <duration>00:10:00</duration>\n      <submission_time>{start}</submission_time>\n      <group>sgeadmin</group>\n      <account>sge</account>\n      <granted_slots_list>\n         <granted_slots  queue_instance=\"all.q@vm\" slots=\"2\"/>\n      </granted_slots_list>\n      <granted_parallel_environment>\n         <parallel_environment>smp</parallel_environment>\n         <slots>2</slots>\n      </granted_parallel_environment>\n   </ar_summary>\n</qrstat>\n"
            )
        );
        // An AR without a name: an empty element, as SGE writes it.
        let mut unnamed = myar();
        unnamed.spec.name = None;
        assert!(xml(&[unnamed], false, &[]).contains("      <name/>\n"));
    }
}
