//! `sge_share_mon`: the share tree's nodes with their shares, targets and usage, in
//! SGE's columns (`sge_share_mon(1)`), a collection every interval.

use gantry_proto::{FromMaster, ShareTreeNode, ToMaster};

use crate::Output;

/// Every field, in SGE's default order.
pub const FIELDS: &[&str] = &[
    "curr_time",
    "usage_time",
    "node_name",
    "user_name",
    "project_name",
    "shares",
    "job_count",
    "level%",
    "total%",
    "long_target_share",
    "short_target_share",
    "actual_share",
    "usage",
    "cpu",
    "mem",
    "io",
    "ltcpu",
    "ltmem",
    "ltio",
];

fn usage() -> String {
    "usage: sge_share_mon [-c count] [-d delimiter] [-f field[,field...]] [-h] [-i interval] [-l delimiter] [-m output_mode] [-n] [-o output_file] [-r delimiter] [-s string_format] [-t] [-u] [-x]\n".to_string()
}

/// Why the options are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum OptionError {
    #[error("sge_share_mon: option {0} requires an argument")]
    NoArgument(String),
    #[error("sge_share_mon: invalid {0} \"{1}\"")]
    Invalid(&'static str, String),
    #[error("sge_share_mon: unknown field \"{0}\"")]
    UnknownField(String),
    #[error("sge_share_mon: invalid option \"{0}\"")]
    UnknownOption(String),
}

/// What the options ask for.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    count: Option<u64>,
    delimiter: String,
    fields: Vec<String>,
    header: bool,
    interval: u64,
    line_delimiter: String,
    record_delimiter: String,
    names: bool,
    output: Option<(String, bool)>,
    ctime: bool,
    leaves_only: bool,
}

fn parse(args: &[String]) -> Result<Options, OptionError> {
    let mut o = Options {
        count: None,
        delimiter: "\t".into(),
        fields: FIELDS.iter().map(|f| f.to_string()).collect(),
        header: false,
        interval: 15,
        line_delimiter: "\n".into(),
        record_delimiter: "\n".into(),
        names: false,
        output: None,
        ctime: false,
        leaves_only: false,
    };
    let mut append = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| OptionError::NoArgument(name.to_string()))
        };
        match a.as_str() {
            "-c" => {
                let v = value("-c")?;
                o.count = Some(
                    v.parse()
                        .map_err(|_| OptionError::Invalid("count", v.clone()))?,
                );
            }
            "-d" => o.delimiter = value("-d")?,
            "-f" => {
                let v = value("-f")?;
                let fields: Vec<String> = v
                    .split(',')
                    .filter(|f| !f.is_empty())
                    .map(str::to_string)
                    .collect();
                if let Some(bad) = fields.iter().find(|f| !FIELDS.contains(&f.as_str())) {
                    return Err(OptionError::UnknownField(bad.clone()));
                }
                o.fields = fields;
            }
            "-h" => o.header = true,
            "-i" => {
                let v = value("-i")?;
                o.interval = v
                    .parse()
                    .map_err(|_| OptionError::Invalid("interval", v.clone()))?;
            }
            "-l" => o.line_delimiter = value("-l")?,
            "-m" => append = value("-m")?.starts_with('a'),
            "-n" => o.names = true,
            "-o" => o.output = Some((value("-o")?, false)),
            "-r" => o.record_delimiter = value("-r")?,
            // Strings are printed as they are (`%s`).
            "-s" => {
                value("-s")?;
            }
            "-t" => o.ctime = true,
            // Usage is always decayed to the time of the collection.
            "-u" => {}
            "-x" => o.leaves_only = true,
            other => return Err(OptionError::UnknownOption(other.to_string())),
        }
    }
    if let Some((_, a)) = o.output.as_mut() {
        *a = append;
    }
    Ok(o)
}

/// A time as `ctime(3)` prints it (without its newline), in the local zone.
fn ctime(t: i64) -> String {
    crate::dates::local_time(t, "%a %b %e %H:%M:%S %Y")
}

/// One collection: the header (with `-h`), then a line per node.
fn collection(o: &Options, now: i64, nodes: &[ShareTreeNode]) -> String {
    let mut out = String::new();
    if o.header {
        for f in &o.fields {
            out.push_str(f);
            out.push_str(&o.delimiter);
        }
        out.push_str(&o.line_delimiter);
        out.push_str(&o.record_delimiter);
    }
    let time = |t: i64| {
        if o.ctime && t != 0 {
            ctime(t)
        } else {
            t.to_string()
        }
    };
    // A node is a leaf when the next (in the tree's order) is not below it.
    let leaf = |i: usize| {
        let prefix = match nodes[i].path.as_str() {
            "/" => "/".to_string(),
            p => format!("{p}/"),
        };
        nodes
            .get(i + 1)
            .is_none_or(|next| !next.path.starts_with(&prefix))
    };
    for (i, n) in nodes.iter().enumerate() {
        if o.leaves_only && !leaf(i) {
            continue;
        }
        for f in &o.fields {
            let v = match f.as_str() {
                "curr_time" => time(now),
                "usage_time" => time(n.usage_time),
                "node_name" => n.path.clone(),
                "user_name" => n.user_name.clone(),
                "project_name" => n.project_name.clone(),
                "shares" => n.shares.to_string(),
                "job_count" => n.job_count.to_string(),
                "level%" => format!("{:.6}", n.level),
                "total%" => format!("{:.6}", n.total),
                "long_target_share" => format!("{:.6}", n.long_target_share),
                "short_target_share" => format!("{:.6}", n.short_target_share),
                "actual_share" => format!("{:.6}", n.actual_share),
                "usage" => format!("{:.6}", n.usage),
                "cpu" => format!("{:.6}", n.decayed.0),
                "mem" => format!("{:.6}", n.decayed.1),
                "io" => format!("{:.6}", n.decayed.2),
                "ltcpu" => format!("{:.6}", n.long_term.0),
                "ltmem" => format!("{:.6}", n.long_term.1),
                "ltio" => format!("{:.6}", n.long_term.2),
                _ => String::new(),
            };
            if o.names {
                out.push_str(f);
                out.push('=');
            }
            out.push_str(&v);
            out.push_str(&o.delimiter);
        }
        out.push_str(&o.line_delimiter);
    }
    out
}

pub fn share_mon(args: &[String]) -> Output {
    if args.iter().any(|a| a == "-help") {
        return Output::ok(usage());
    }
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => return Output::usage_error(&e.to_string(), &usage()),
    };
    let mut printed = 0u64;
    loop {
        let (now, nodes) = match crate::ask(&ToMaster::ShowShareTree) {
            Ok(FromMaster::ShareTreeNodes { now, nodes }) => (now, nodes),
            Ok(other) => return crate::unexpected(&other),
            Err(out) => return out,
        };
        if nodes.is_empty() {
            return Output::fail("sge_share_mon: no share tree".into(), crate::exit::FAILURE);
        }
        let text = collection(&o, now, &nodes);
        match &o.output {
            Some((path, append)) => {
                use std::io::Write;
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(*append || printed > 0)
                    .truncate(!*append && printed == 0)
                    .open(path);
                match file.and_then(|mut f| f.write_all(text.as_bytes())) {
                    Ok(()) => {}
                    Err(e) => {
                        return Output::fail(
                            format!("sge_share_mon: cannot write \"{path}\": {e}"),
                            crate::exit::FAILURE,
                        )
                    }
                }
            }
            None => {
                use std::io::Write;
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                let _ = stdout.flush();
            }
        }
        printed += 1;
        if o.count.is_some_and(|c| printed >= c) {
            return Output::ok(String::new());
        }
        std::thread::sleep(std::time::Duration::from_secs(o.interval.max(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(
        path: &str,
        user: &str,
        shares: u32,
        level: f64,
        usage: f64,
        cpu: f64,
    ) -> ShareTreeNode {
        ShareTreeNode {
            path: path.into(),
            user_name: user.into(),
            project_name: String::new(),
            shares,
            job_count: 0,
            level,
            total: level,
            long_target_share: 0.0,
            short_target_share: 0.0,
            actual_share: if usage > 0.0 { 1.0 } else { 0.0 },
            usage,
            decayed: if user.is_empty() {
                (0.0, 0.0, 0.0)
            } else {
                (cpu, 0.098510, 0.014685)
            },
            long_term: if user.is_empty() {
                (0.0, 0.0, 0.0)
            } else {
                (63.292361, 0.099065, 0.014768)
            },
            usage_time: if user.is_empty() { 0 } else { 1795844141 },
        }
    }

    /// The columns SGE 8.1.9 printed (`04_sharetree_usage.txt`): a tab after every
    /// field, the header and an empty line with `-h`, `name=value` with `-n`, the
    /// fields `-f` asks for with the delimiter `-d` gives.
    #[test]
    fn a_collection_is_printed_in_sges_columns() {
        let nodes = [
            node("/", "", 1, 1.0, 62.925604, 0.0),
            node("/user1", "user1", 75, 0.75, 62.925604, 62.925604),
        ];
        let o = parse(&["-h".into(), "-c".into(), "1".into()]).unwrap();
        let text = collection(&o, 1795844141, &nodes);
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines[0], "curr_time\tusage_time\tnode_name\tuser_name\tproject_name\tshares\tjob_count\tlevel%\ttotal%\tlong_target_share\tshort_target_share\tactual_share\tusage\tcpu\tmem\tio\tltcpu\tltmem\tltio\t");
        assert_eq!(lines[1], "");
        assert_eq!(lines[2], "1795844141\t0\t/\t\t\t1\t0\t1.000000\t1.000000\t0.000000\t0.000000\t1.000000\t62.925604\t0.000000\t0.000000\t0.000000\t0.000000\t0.000000\t0.000000\t");
        assert_eq!(lines[3], "1795844141\t1795844141\t/user1\tuser1\t\t75\t0\t0.750000\t0.750000\t0.000000\t0.000000\t1.000000\t62.925604\t62.925604\t0.098510\t0.014685\t63.292361\t0.099065\t0.014768\t");
        let o = parse(&[
            "-h".into(),
            "-d".into(),
            "|".into(),
            "-f".into(),
            "node_name,user_name,shares".into(),
            "-x".into(),
        ])
        .unwrap();
        assert_eq!(
            collection(&o, 1, &nodes),
            "node_name|user_name|shares|\n\n/user1|user1|75|\n"
        );
        let o = parse(&["-n".into(), "-f".into(), "node_name,shares".into()]).unwrap();
        assert_eq!(
            collection(&o, 1, &nodes),
            "node_name=/\tshares=1\t\nnode_name=/user1\tshares=75\t\n"
        );
        assert!(parse(&["-f".into(), "colour".into()]).is_err());
    }
}
