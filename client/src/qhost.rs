//! `qhost`: the exec hosts with their load values, as Grid Engine prints them.

use gantry_common::complex;
use gantry_common::load::get;
use gantry_common::value::{
    format_f6, format_memory_1, format_memory_3, parse_double, parse_memory,
};
use gantry_proto::{ComplexAttr, FromMaster, HostReport, HostView, ToMaster, ValueType};

use crate::opts::{opt, Arity, OptSpec};
use crate::xml::Xml;
use crate::Output;

const SPECS: &[OptSpec] = &[
    opt("-help", Arity::None),
    opt("-F", Arity::Optional),
    opt("-h", Arity::One),
    opt("-j", Arity::None),
    opt("-l", Arity::One),
    opt("-ncb", Arity::None),
    opt("-q", Arity::None),
    opt("-u", Arity::One),
    opt("-xml", Arity::None),
    opt("-json", Arity::None),
];

pub fn usage() -> String {
    format!(
        "Gantry {}\nusage: qhost [options]\n  [-F [resource_attribute]]  show (selected) resources\n  [-h hostlist]              display only selected hosts\n  [-help]                    print this help\n  [-j]                       display jobs hosted by host\n  [-json]                    display the information as JSON\n  [-l attr=val,...]          request the given resources\n  [-ncb]                     suppress host topology based information\n  [-q]                       display queues hosted by host\n  [-u user[,user,...]]       show only jobs for user\n  [-xml]                     display the information in XML format\n",
        env!("CARGO_PKG_VERSION")
    )
}

pub fn run(args: &[String]) -> Output {
    let p = match crate::parse_args_as(
        args,
        SPECS,
        false,
        usage,
        crate::UnknownOption::UsageThen("error: "),
    ) {
        Ok(p) => p,
        Err(out) => return out,
    };
    let report = match crate::ask(&ToMaster::HostInfo) {
        Ok(FromMaster::Hosts(r)) => r,
        Ok(other) => return crate::unexpected(&other),
        Err(out) => return out,
    };
    let view = View {
        full: p.has("-F"),
        attrs: p
            .arg("-F")
            .map(|a| a.split(',').map(str::to_string).collect()),
        hosts: p
            .arg("-h")
            .map(|a| a.split(',').map(str::to_string).collect()),
        queues: p.has("-q"),
        requests: crate::qselect::requests(p.arg("-l")),
        topology: !p.has("-ncb"),
    };
    // As SGE's qhost: a name that is no exec host must resolve, or the usage and why.
    // The master's name service says (this command never calls one).
    let unknown: Vec<String> = view
        .hosts
        .iter()
        .flatten()
        .filter(|n| !report.hosts.iter().any(|h| &h.name == *n))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        let unresolved = match crate::ask(&ToMaster::UnresolvedHosts { names: unknown }) {
            Ok(FromMaster::Names(n)) => n,
            Ok(other) => return crate::unexpected(&other),
            Err(out) => return out,
        };
        if let Some(name) = unresolved.first() {
            return Output {
                stdout: String::new(),
                stderr: format!("{}error: can't resolve hostname \"{name}\"\n", usage()),
                code: crate::exit::FAILURE,
            };
        }
    }
    if let Some((name, _)) = view
        .requests
        .iter()
        .find(|(n, _)| complex::find(&report.complexes, n).is_none())
    {
        return Output::fail(
            format!("error: unknown resource \"{name}\""),
            crate::exit::FAILURE,
        );
    }
    if p.has("-xml") {
        return Output::ok(render_xml(&report, &view));
    }
    if !p.has("-j") {
        return Output::ok(match p.has("-json") {
            true => crate::json_line(&host_list(&report, &view, |_| None)),
            false => render_text(&report, &view, |_| String::new()),
        });
    }
    // `-j`: the running jobs (of `-u`'s users, else everyone's) under their hosts.
    let users = match p.arg("-u") {
        Some(u) => crate::qselect::list(Some(u)),
        None => vec!["*".to_string()],
    };
    let listed = match crate::ask_jobs(&ToMaster::ShowJobs {
        users: users.clone(),
    }) {
        Ok(bytes) => bytes,
        Err(out) => return out,
    };
    let mut jobs = Vec::new();
    match crate::jobs_in(&listed) {
        Ok(rows) => {
            for row in rows {
                match row {
                    Ok(j) => jobs.push(j),
                    Err(e) => return crate::undecodable(e),
                }
            }
        }
        Err(out) => return out,
    }
    let tasks = match crate::ask(&ToMaster::ShowTaskLines { users }) {
        Ok(FromMaster::TaskLines(t)) => t,
        Ok(other) => return crate::unexpected(&other),
        Err(out) => return out,
    };
    if p.has("-json") {
        return Output::ok(crate::json_line(&host_list(&report, &view, |host| {
            Some(crate::qstat::host_jobs(host, &jobs, &tasks))
        })));
    }
    Output::ok(render_text(&report, &view, |host| {
        crate::qstat::host_job_lines(host, &jobs, &tasks)
    }))
}

/// `qhost -json` (and the HTTP API's hosts): the hosts selected with qhost's columns,
/// what they offer under `-F`, their queue instances under `-q`, and the tasks
/// `jobs_on` finds on each (under `-j`).
pub fn host_list(
    report: &HostReport,
    view: &View,
    jobs_on: impl Fn(&str) -> Option<Vec<gantry_common::output::HostJob>>,
) -> gantry_common::output::HostList {
    use gantry_common::output::{HostEntry, HostList, HostQueue, HostResource, Request};
    let pair = |name: &str, value: &str| Request {
        name: name.to_string(),
        value: value.to_string(),
    };
    HostList {
        hosts: selected(report, view)
            .into_iter()
            .map(|h| HostEntry {
                name: h.name.clone(),
                reachable: h.reachable,
                host_values: HOST_VALUES
                    .iter()
                    .zip(columns(h).iter())
                    .map(|(n, v)| pair(n, v))
                    .collect(),
                load_values: h
                    .load_values
                    .iter()
                    .map(|lv| pair(&lv.name, &lv.value))
                    .collect(),
                resources: view.full.then(|| {
                    resources(report, h, view)
                        .into_iter()
                        .map(|(dominance, name, value)| HostResource {
                            name,
                            dominance,
                            value,
                        })
                        .collect()
                }),
                queues: view.queues.then(|| {
                    h.queues
                        .iter()
                        .map(|q| HostQueue {
                            name: q.queue.clone(),
                            qtype: q.qtype.clone(),
                            slots_used: q.used,
                            slots: q.total,
                            slots_resv: q.reserved_all,
                            state: q.states.clone(),
                        })
                        .collect()
                }),
                jobs: jobs_on(&h.name),
            })
            .collect(),
    }
}

/// The names SGE's XML gives qhost's columns.
const HOST_VALUES: [&str; 10] = [
    "arch_string",
    "num_proc",
    "m_socket",
    "m_core",
    "m_thread",
    "load_avg",
    "mem_total",
    "mem_used",
    "swap_total",
    "swap_used",
];

pub struct View {
    pub full: bool,
    pub attrs: Option<Vec<String>>,
    pub hosts: Option<Vec<String>>,
    pub queues: bool,
    /// `-l`: only hosts offering all of these.
    pub requests: Vec<(String, Option<String>)>,
    /// Without `-ncb`: the NSOC, NCOR and NTHR columns.
    pub topology: bool,
}

fn selected<'a>(report: &'a HostReport, view: &View) -> Vec<&'a HostView> {
    let mut hosts: Vec<&HostView> = report
        .hosts
        .iter()
        .filter(|h| {
            view.hosts
                .as_ref()
                .is_none_or(|list| list.iter().any(|n| n == &h.name))
        })
        .filter(|h| {
            view.requests
                .iter()
                .all(|(n, v)| offers(report, h, n, v.as_deref()))
        })
        .collect();
    hosts.sort_by(|a, b| a.name.cmp(&b.name));
    hosts
}

/// The summary columns of a host: arch, ncpu, nsoc, ncor, nthr, load, memtot, memuse,
/// swapto, swapus (`-` where unknown).
fn columns(h: &HostView) -> [String; 10] {
    let v = |n: &str| get(&h.load_values, n).map(str::to_string);
    let int = |n: &str| v(n).unwrap_or_else(|| "-".into());
    let mem = |n: &str| {
        v(n).and_then(|s| parse_memory(&s).ok())
            .map_or_else(|| "-".to_string(), format_memory_1)
    };
    let load = v("load_avg")
        .and_then(|s| parse_double(&s).ok())
        .map_or_else(|| "-".to_string(), |l| format!("{l:.2}"));
    [
        int("arch"),
        int("num_proc"),
        int("m_socket"),
        int("m_core"),
        int("m_thread"),
        load,
        mem("mem_total"),
        mem("mem_used"),
        mem("swap_total"),
        mem("swap_used"),
    ]
}

/// A resource value as `qhost -F` prints it: memory scaled, numbers as `%f`.
fn format_resource(complexes: &[ComplexAttr], name: &str, value: &str) -> String {
    match complex::find(complexes, name).map(|c| c.value_type) {
        Some(ValueType::Memory) => {
            parse_memory(value).map_or_else(|_| value.to_string(), format_memory_3)
        }
        Some(ValueType::Int | ValueType::Double) => {
            parse_double(value).map_or_else(|_| value.to_string(), format_f6)
        }
        _ => value.to_string(),
    }
}

/// The host's resources for `-F`: (dominance, name, printed value).
fn resources(report: &HostReport, h: &HostView, view: &View) -> Vec<(String, String, String)> {
    let wanted = |name: &str| {
        view.attrs.as_ref().is_none_or(|list| {
            list.iter().any(|a| {
                a == name || complex::find(&report.complexes, a).is_some_and(|c| c.name == name)
            })
        })
    };
    let mut out = Vec::new();
    for lv in &h.load_values {
        if wanted(&lv.name) && !h.complex_values.iter().any(|(k, _)| k == &lv.name) {
            out.push((
                "hl".to_string(),
                lv.name.clone(),
                format_resource(&report.complexes, &lv.name, &lv.value),
            ));
        }
    }
    for (name, value) in &h.complex_values {
        if wanted(name) {
            let consumable = complex::find(&report.complexes, name)
                .is_some_and(|c| c.consumable != gantry_proto::Consumable::No);
            // A consumable shows what is left of it, as the scheduler sees it (what
            // `qstat -F` shows for the host's queue instances), as SGE's qhost does.
            let left = consumable
                .then(|| {
                    let key = format!("hc:{name}");
                    h.queues
                        .iter()
                        .flat_map(|q| q.resources.iter())
                        .find(|(k, _)| *k == key)
                        .map(|(_, v)| v.clone())
                })
                .flatten();
            out.push((
                if consumable { "hc" } else { "hf" }.to_string(),
                name.clone(),
                left.unwrap_or_else(|| format_resource(&report.complexes, name, value)),
            ));
        }
    }
    out
}

/// Does the host offer `name` (`=value`), among the values `-F` shows for it, compared
/// by the attribute's type and relational operator?
fn offers(report: &HostReport, h: &HostView, name: &str, value: Option<&str>) -> bool {
    let Some(attr) = complex::find(&report.complexes, name) else {
        return false;
    };
    let all = View {
        full: true,
        attrs: None,
        hosts: None,
        queues: false,
        requests: Vec::new(),
        topology: true,
    };
    let Some((_, _, offered)) = resources(report, h, &all)
        .into_iter()
        .find(|(_, n, _)| *n == attr.name)
    else {
        return false;
    };
    let Some(value) = value else {
        return true;
    };
    // What -F prints of an INT is a double (`2.000000`).
    let shown = gantry_common::value::parse_value(attr.value_type, &offered)
        .or_else(|_| parse_double(&offered).map(gantry_common::value::Value::Num));
    match (
        shown,
        gantry_common::value::parse_value(attr.value_type, value),
    ) {
        (Ok(o), Ok(r)) => gantry_common::value::satisfies(attr.value_type, attr.relop, &o, &r),
        _ => false,
    }
}

/// The text form; `jobs_on` gives the job lines shown under a host (`-j`).
pub fn render_text(report: &HostReport, view: &View, jobs_on: impl Fn(&str) -> String) -> String {
    let hosts = selected(report, view);
    // With -l SGE lists the hosts that offer it, no global line, and nothing at all
    // when none does.
    if !view.requests.is_empty() && hosts.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    if view.topology {
        out.push_str("HOSTNAME                ARCH         NCPU NSOC NCOR NTHR  LOAD  MEMTOT  MEMUSE  SWAPTO  SWAPUS\n");
        out.push_str(&"-".repeat(94));
    } else {
        out.push_str(
            "HOSTNAME                ARCH         NCPU  LOAD  MEMTOT  MEMUSE  SWAPTO  SWAPUS\n",
        );
        out.push_str(&"-".repeat(79));
    }
    out.push('\n');
    let row = |name: &str, c: &[String; 10]| {
        if view.topology {
            format!(
                "{:<23.23} {:<13.13}{:>4.4} {:>4.4} {:>4.4} {:>4.4} {:>5.5} {:>7.7} {:>7.7} {:>7.7} {:>7.7}\n",
                name, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]
            )
        } else {
            format!(
                "{:<23.23} {:<13.13}{:>4.4} {:>5.5} {:>7.7} {:>7.7} {:>7.7} {:>7.7}\n",
                name, c[0], c[1], c[5], c[6], c[7], c[8], c[9]
            )
        }
    };
    let dash: [String; 10] = std::array::from_fn(|_| "-".to_string());
    if view.requests.is_empty() {
        out.push_str(&row("global", &dash));
    }
    for h in hosts {
        out.push_str(&row(&h.name, &columns(h)));
        if view.full {
            let res = resources(report, h, view);
            for (i, (dom, name, value)) in res.iter().enumerate() {
                let prefix = if view.attrs.is_some() && i == 0 {
                    "    Host Resource(s):      "
                } else {
                    "   "
                };
                out.push_str(&format!("{prefix}{dom}:{name}={value}\n"));
            }
        }
        if view.queues {
            for q in &h.queues {
                out.push_str(&format!(
                    "   {:<20} {:<5} {:<14}{}\n",
                    q.queue,
                    q.qtype,
                    format!("{}/{}/{}", q.reserved_all, q.used, q.total),
                    q.states
                ));
            }
        }
        out.push_str(&jobs_on(&h.name));
    }
    out
}

const XMLNS: &str = "xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qhost/qhost.xsd\"";

pub fn render_xml(report: &HostReport, view: &View) -> String {
    let mut x = Xml::new();
    x.open_raw(0, "qhost", XMLNS);
    let names = HOST_VALUES;
    let dash: [String; 10] = std::array::from_fn(|_| "-".to_string());
    let host = |x: &mut Xml, name: &str, cols: &[String; 10], h: Option<&HostView>| {
        x.open(1, "host", &[("name", name)]);
        for (n, v) in names.iter().zip(cols.iter()) {
            x.element(3, "hostvalue", &[("name", n)], v);
        }
        if let Some(h) = h {
            if view.full {
                for (dom, name, value) in resources(report, h, view) {
                    x.element(
                        3,
                        "resourcevalue",
                        &[("name", &name), ("dominance", &dom)],
                        &value,
                    );
                }
            }
            if view.queues {
                for q in &h.queues {
                    x.open(3, "queue", &[("name", &q.queue)]);
                    let qv = [
                        ("qtype_string", q.qtype.clone()),
                        ("slots_used", q.used.to_string()),
                        ("slots", q.total.to_string()),
                        ("slots_resv", q.reserved_all.to_string()),
                        ("state_string", q.states.clone()),
                    ];
                    for (n, v) in qv {
                        x.element(6, "queuevalue", &[("qname", &q.queue), ("name", n)], &v);
                    }
                    x.close(3, "queue");
                }
            }
        }
        x.close(1, "host");
    };
    host(&mut x, "global", &dash, None);
    for h in selected(report, view) {
        host(&mut x, &h.name, &columns(h), Some(h));
    }
    x.close(0, "qhost");
    x.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::{LoadValue, QueueInstanceView};

    /// The host of the SGE reference transcripts.
    fn reference_report() -> HostReport {
        let lv = "load_avg=0.326172,load_short=0.498535,load_medium=0.326172,load_long=0.144531,arch=lx-amd64,num_proc=2,mem_free=23917.718750M,swap_free=0.000000M,virtual_free=23917.718750M,mem_total=24105.550781M,swap_total=0.000000M,virtual_total=24105.550781M,mem_used=187.832031M,swap_used=0.000000M,virtual_used=187.832031M,cpu=0.000000,m_topology=SCC,m_topology_inuse=SCC,m_socket=1,m_core=2,m_thread=2,np_load_avg=0.163086,np_load_short=0.249268,np_load_medium=0.163086,np_load_long=0.072265";
        HostReport {
            hosts: vec![HostView {
                name: "vm".into(),
                reachable: true,
                load_values: lv
                    .split(',')
                    .map(|p| {
                        let (n, v) = p.split_once('=').unwrap();
                        LoadValue {
                            name: n.into(),
                            value: v.into(),
                        }
                    })
                    .collect(),
                complex_values: vec![],
                queues: vec![QueueInstanceView {
                    queue: "all.q".into(),
                    qtype: "BIP".into(),
                    reserved: 0,
                    reserved_all: 0,
                    used: 0,
                    total: 2,
                    states: String::new(),
                    resources: vec![],
                    reasons: Vec::new(),
                }],
            }],
            complexes: complex::default_complexes(),
        }
    }

    fn view(full: bool, attrs: Option<&str>, queues: bool) -> View {
        View {
            full,
            attrs: attrs.map(|a| a.split(',').map(str::to_string).collect()),
            hosts: None,
            queues,
            requests: Vec::new(),
            topology: true,
        }
    }

    fn fixture(name: &str) -> String {
        let all = include_str!("../tests/fixtures/qhost.txt");
        let start = all.find(&format!("=== {name}\n")).unwrap() + name.len() + 5;
        let end = all[start..]
            .find("\n=== ")
            .map_or(all.len(), |e| start + e + 1);
        all[start..end].to_string()
    }

    /// `-l` and `-ncb` as SGE 8.1.9 prints them on this machine: the hosts that offer
    /// the request and no global line, nothing at all when none does; without the
    /// topology columns.
    #[test]
    fn requests_and_no_topology() {
        let report = reference_report();
        let with = |requests: &[(&str, Option<&str>)], topology: bool| {
            let mut v = view(false, None, false);
            v.requests = requests
                .iter()
                .map(|(n, val)| (n.to_string(), val.map(str::to_string)))
                .collect();
            v.topology = topology;
            render_text(&report, &v, |_| String::new())
        };
        let header = "HOSTNAME                ARCH         NCPU NSOC NCOR NTHR  LOAD  MEMTOT  MEMUSE  SWAPTO  SWAPUS\n";
        let vm = with(&[("arch", Some("lx-amd64"))], true);
        assert!(vm.starts_with(header), "{vm}");
        assert!(!vm.contains("global"), "{vm}");
        assert!(vm.contains("\nvm "), "{vm}");
        assert_eq!(
            with(&[("a", Some("lx-*")), ("num_proc", Some("2"))], true),
            vm
        );
        assert_eq!(with(&[("arch", Some("sol-amd64"))], true), "");
        assert_eq!(with(&[("num_proc", Some("4"))], true), "");
        let plain = with(&[], false);
        assert_eq!(
            plain.lines().take(3).collect::<Vec<_>>(),
            [
                "HOSTNAME                ARCH         NCPU  LOAD  MEMTOT  MEMUSE  SWAPTO  SWAPUS",
                &"-".repeat(79),
                "global                  -               -     -       -       -       -       -",
            ]
        );
        assert!(plain.contains("\nvm                      lx-amd64        2  0.33   23.5G  187.8M     0.0     0.0\n"), "{plain}");
    }

    #[test]
    fn default_output_matches_sge() {
        assert_eq!(
            render_text(&reference_report(), &view(false, None, false), |_| {
                String::new()
            }),
            fixture("qhost")
        );
    }

    #[test]
    fn full_output_matches_sge() {
        assert_eq!(
            render_text(&reference_report(), &view(true, None, false), |_| {
                String::new()
            }),
            fixture("qhost -F")
        );
        assert_eq!(
            render_text(
                &reference_report(),
                &view(true, Some("num_proc,mem_free,load_avg,np_load_avg"), false),
                |_| String::new()
            ),
            fixture("qhost -F num_proc,mem_free,load_avg,np_load_avg")
        );
    }

    #[test]
    fn queue_output_matches_sge() {
        assert_eq!(
            render_text(&reference_report(), &view(false, None, true), |_| {
                String::new()
            }),
            fixture("qhost -q")
        );
    }

    #[test]
    fn xml_output_matches_sge() {
        assert_eq!(
            render_xml(&reference_report(), &view(false, None, false)),
            fixture("qhost -xml")
        );
        assert_eq!(
            render_xml(&reference_report(), &view(true, None, false)),
            fixture("qhost -F -xml")
        );
    }

    #[test]
    fn unreachable_host_shows_dashes_for_dynamic_values_and_state_u() {
        let mut r = reference_report();
        let h = &mut r.hosts[0];
        h.reachable = false;
        h.load_values
            .retain(|l| gantry_common::load::STATIC_VALUES.contains(&l.name.as_str()));
        h.queues[0].states = "u".into();
        let out = render_text(&r, &view(false, None, true), |_| String::new());
        assert!(out.contains("vm                      lx-amd64        2    1    2    2     -   23.5G       -     0.0       -\n"), "{out}");
        assert!(
            out.contains("   all.q                BIP   0/0/2         u\n"),
            "{out}"
        );
    }
}
