//! Parallel environments (`qconf -sp`, `-ap`, `-mp`, ...): the object, its file format,
//! its allocation rule, slot ranges (`-pe mpi 4-16`) and the three a fresh cell has.

use serde::{Deserialize, Serialize};

use crate::conf::{list_or_none, parse_entries, split_list, FileError};
use crate::value::parse_bool;

/// How a parallel job's slots are spread over hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AllocationRule {
    /// `$pe_slots`: every slot on one host.
    PeSlots,
    /// `$fill_up`: fill each host before taking the next.
    FillUp,
    /// `$round_robin`: one slot per host in turn.
    RoundRobin,
    /// An integer: exactly this many slots on each host used.
    PerHost(u32),
}

impl AllocationRule {
    pub fn parse(text: &str) -> Option<AllocationRule> {
        match text {
            "$pe_slots" => Some(AllocationRule::PeSlots),
            "$fill_up" => Some(AllocationRule::FillUp),
            "$round_robin" => Some(AllocationRule::RoundRobin),
            n => n
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .map(AllocationRule::PerHost),
        }
    }

    pub fn print(self) -> String {
        match self {
            AllocationRule::PeSlots => "$pe_slots".into(),
            AllocationRule::FillUp => "$fill_up".into(),
            AllocationRule::RoundRobin => "$round_robin".into(),
            AllocationRule::PerHost(n) => n.to_string(),
        }
    }
}

/// A slot range as SGE prints it in `qstat -j` and a job's category: two neighbours are
/// a list (`1-2` is `1,2`), anything else as written.
pub fn sge_slot_range(range: &str) -> String {
    match range.split_once('-') {
        Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
            (Ok(a), Ok(b)) if b == a + 1 => format!("{a},{b}"),
            _ => range.to_string(),
        },
        None => range.to_string(),
    }
}

/// A parallel environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pe {
    pub name: String,
    pub slots: u32,
    pub user_lists: Vec<String>,
    pub xuser_lists: Vec<String>,
    pub start_proc_args: String,
    pub stop_proc_args: String,
    pub allocation_rule: AllocationRule,
    pub control_slaves: bool,
    pub job_is_first_task: bool,
    pub urgency_slots: String,
    pub accounting_summary: bool,
    pub qsort_args: String,
}

impl Pe {
    /// A PE with SGE's template values.
    pub fn new(name: &str) -> Pe {
        Pe {
            name: name.to_string(),
            slots: 0,
            user_lists: Vec::new(),
            xuser_lists: Vec::new(),
            start_proc_args: "NONE".into(),
            stop_proc_args: "NONE".into(),
            allocation_rule: AllocationRule::PeSlots,
            control_slaves: false,
            job_is_first_task: true,
            urgency_slots: "min".into(),
            accounting_summary: false,
            qsort_args: "NONE".into(),
        }
    }
}

/// The parallel environments of a fresh cell: `make`, `smp` and `mpi`.
pub fn default_pes() -> Vec<Pe> {
    let mut make = Pe::new("make");
    make.slots = 999;
    make.allocation_rule = AllocationRule::RoundRobin;
    make.control_slaves = true;
    make.job_is_first_task = false;
    make.accounting_summary = true;
    let mut smp = Pe::new("smp");
    smp.slots = 999;
    smp.control_slaves = true;
    smp.accounting_summary = true;
    // SGE's mpi template (util/resources/pe/mpi): 99999 slots, one record per task.
    let mut mpi = Pe::new("mpi");
    mpi.slots = 99999;
    mpi.allocation_rule = AllocationRule::FillUp;
    mpi.control_slaves = true;
    vec![make, smp, mpi]
}

fn bool_word(b: bool) -> &'static str {
    if b {
        "TRUE"
    } else {
        "FALSE"
    }
}

/// The PE as `qconf -sp` prints it.
pub fn print_pe(p: &Pe) -> String {
    let rows = [
        ("pe_name", p.name.clone()),
        ("slots", p.slots.to_string()),
        ("user_lists", list_or_none(&p.user_lists)),
        ("xuser_lists", list_or_none(&p.xuser_lists)),
        ("start_proc_args", p.start_proc_args.clone()),
        ("stop_proc_args", p.stop_proc_args.clone()),
        ("allocation_rule", p.allocation_rule.print()),
        ("control_slaves", bool_word(p.control_slaves).into()),
        ("job_is_first_task", bool_word(p.job_is_first_task).into()),
        ("urgency_slots", p.urgency_slots.clone()),
        ("accounting_summary", bool_word(p.accounting_summary).into()),
        ("qsort_args", p.qsort_args.clone()),
    ];
    rows.iter().map(|(k, v)| format!("{k:<19}{v}\n")).collect()
}

/// A PE name: letters, digits and `._-`.
pub fn valid_pe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= crate::names::MAX_NAME_LENGTH
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Read a PE file (`-Ap`, `-Mp`): `pe_name` required, unknown attributes and bad values
/// refused with their line, attributes left out at the template's value.
pub fn parse_pe(text: &str) -> Result<Pe, FileError> {
    let entries = parse_entries(text)?;
    let Some(name) = entries.iter().find(|e| e.key == "pe_name") else {
        return Err(FileError::Object(
            "the parallel environment file has no \"pe_name\" attribute".into(),
        ));
    };
    if !valid_pe_name(&name.value) {
        return Err(FileError::at(
            name.line,
            format!("invalid parallel environment name \"{}\"", name.value),
        ));
    }
    let mut p = Pe::new(&name.value);
    for e in &entries {
        let bad = |what: &str| {
            FileError::at(
                e.line,
                format!(
                    "value \"{}\" of attribute \"{}\" is not {what}",
                    e.value, e.key
                ),
            )
        };
        let flag = || parse_bool(&e.value).map_err(|_| bad("TRUE or FALSE"));
        let list = || -> Vec<String> {
            split_list(&e.value)
                .into_iter()
                .filter(|v| !v.eq_ignore_ascii_case("NONE"))
                .collect()
        };
        match e.key.as_str() {
            "pe_name" => {}
            "slots" => p.slots = e.value.parse().map_err(|_| bad("a slot count"))?,
            "user_lists" => p.user_lists = list(),
            "xuser_lists" => p.xuser_lists = list(),
            "start_proc_args" => p.start_proc_args = e.value.clone(),
            "stop_proc_args" => p.stop_proc_args = e.value.clone(),
            "allocation_rule" => {
                p.allocation_rule = AllocationRule::parse(&e.value).ok_or_else(|| {
                    bad("an allocation rule ($pe_slots, $fill_up, $round_robin or a number)")
                })?
            }
            "control_slaves" => p.control_slaves = flag()?,
            "job_is_first_task" => p.job_is_first_task = flag()?,
            "urgency_slots" => {
                if !matches!(e.value.as_str(), "min" | "max" | "avg")
                    && e.value.parse::<u32>().is_err()
                {
                    return Err(bad("min, max, avg or a number"));
                }
                p.urgency_slots = e.value.clone();
            }
            "accounting_summary" => p.accounting_summary = flag()?,
            "qsort_args" => p.qsort_args = e.value.clone(),
            other => {
                return Err(FileError::at(
                    e.line,
                    format!("unknown attribute \"{other}\" in parallel environment"),
                ))
            }
        }
    }
    Ok(p)
}

/// The attributes of a parallel environment file, in the order SGE's qconf asks for
/// them: each is required.
const PE_ATTRIBUTES: [&str; 12] = [
    "pe_name",
    "slots",
    "user_lists",
    "xuser_lists",
    "start_proc_args",
    "stop_proc_args",
    "allocation_rule",
    "control_slaves",
    "job_is_first_task",
    "urgency_slots",
    "accounting_summary",
    "qsort_args",
];

/// A parallel environment file as SGE's `qconf -Ap/-Mp` reads it before sending it:
/// every attribute present (`required attribute "qsort_args" is missing`), then
/// [`parse_pe`]'s checks.
pub fn check_pe_file(text: &str) -> Result<Pe, crate::conf::SgeFileError> {
    use crate::conf::SgeFileError;
    let entries = parse_entries(text)?;
    for key in PE_ATTRIBUTES {
        if !entries.iter().any(|e| e.key == key) {
            return Err(SgeFileError::Refused(format!(
                "required attribute \"{key}\" is missing"
            )));
        }
    }
    parse_pe(text).map_err(|e| SgeFileError::Reading(e.to_string()))
}

/// A slot range of `-pe name range`: `n`, `n-m`, `-m` (1 to m), `n-` (n or more).
pub fn parse_slot_range(text: &str) -> Option<(u32, u32)> {
    let (lo, hi) = match text.split_once('-') {
        None => {
            let n = text.parse().ok()?;
            (n, n)
        }
        Some((a, b)) => (
            if a.is_empty() { 1 } else { a.parse().ok()? },
            if b.is_empty() {
                u32::MAX
            } else {
                b.parse().ok()?
            },
        ),
    };
    (lo >= 1 && lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn smp_prints_as_sge_does_and_parses_back() {
        let pes = default_pes();
        let smp = pes.iter().find(|p| p.name == "smp").unwrap();
        assert_eq!(
            print_pe(smp),
            include_str!("../tests/fixtures/qconf-sp-smp.txt")
        );
        for p in &pes {
            assert_eq!(&parse_pe(&print_pe(p)).unwrap(), p);
        }
    }

    #[test]
    fn bad_files_are_refused_with_their_line() {
        let cases = [
            ("pe_name x\nallocation_rule $sometimes\n", "line 2: value \"$sometimes\" of attribute \"allocation_rule\" is not an allocation rule ($pe_slots, $fill_up, $round_robin or a number)"),
            ("pe_name x\nslots lots\n", "line 2: value \"lots\" of attribute \"slots\" is not a slot count"),
            ("pe_name x\ncontrol_slaves maybe\n", "line 2: value \"maybe\" of attribute \"control_slaves\" is not TRUE or FALSE"),
            ("pe_name x\ncolour blue\n", "line 2: unknown attribute \"colour\" in parallel environment"),
            ("slots 4\n", "the parallel environment file has no \"pe_name\" attribute"),
            ("pe_name a/b\n", "line 1: invalid parallel environment name \"a/b\""),
        ];
        for (text, want) in cases {
            assert_eq!(parse_pe(text).unwrap_err().to_string(), want);
        }
        let p = parse_pe("pe_name mpi4\nslots 64\nallocation_rule 4\n").unwrap();
        assert_eq!(p.allocation_rule, AllocationRule::PerHost(4));
    }

    #[test]
    fn slot_ranges() {
        assert_eq!(parse_slot_range("4"), Some((4, 4)));
        assert_eq!(parse_slot_range("2-8"), Some((2, 8)));
        assert_eq!(parse_slot_range("-8"), Some((1, 8)));
        assert_eq!(parse_slot_range("4-"), Some((4, u32::MAX)));
        for bad in ["0", "8-2", "x", "", "1-x"] {
            assert_eq!(parse_slot_range(bad), None, "{bad}");
        }
    }
}
