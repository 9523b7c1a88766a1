//! `qstat`'s tests: listings written from rows and from the master's lines, read in
//! pieces, and the other forms.

use super::*;
use gantry_proto::{ArId, HostReport, HostView, JobId, LoadValue, QueueInstanceView, TaskId};

fn fixture(name: &str) -> String {
    let all = include_str!("../../tests/fixtures/qstat.txt");
    let start = all.find(&format!("=== {name}\n")).unwrap() + name.len() + 5;
    let end = all[start..]
        .find("\n=== ")
        .map_or(all.len(), |e| start + e + 1);
    all[start..end].to_string()
}

fn idle_host() -> HostReport {
    HostReport {
        hosts: vec![HostView {
            name: "vm".into(),
            reachable: true,
            load_values: vec![
                LoadValue {
                    name: "load_avg".into(),
                    value: "0.326172".into(),
                },
                LoadValue {
                    name: "arch".into(),
                    value: "lx-amd64".into(),
                },
            ],
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
        complexes: vec![],
    }
}

/// A line written field by field is the line `format!` pads and cuts: long, short
/// and non-ASCII names and owners, job ids wider than their column, long queue
/// names, task ranges.
#[test]
fn job_lines_pad_and_cut_as_the_format_does() {
    let names = [
        "",
        "sleep",
        "exactly10c",
        "a_much_longer_job_name",
        "héllo wörld ñame",
    ];
    let owners = ["u", "twelve_chars", "thirteen_char", "ünïcödé_owner_name"];
    let queues = [
        None,
        Some("all.q@node0001"),
        Some("a.very.long.queue.name@a.host.with.a.long.name"),
    ];
    let mut n = 0u64;
    for name in names {
        for owner in owners {
            for queue in queues {
                n += 1;
                let j = JobViewRef {
                    job_id: JobId([1, 1234567, 12345678, u64::MAX][n as usize % 4]),
                    name,
                    owner,
                    priority: (n as i32 * 97) % 2048 - 1023,
                    state: JobState::pending(n.is_multiple_of(2)),
                    submit_time: 1_700_000_000 + n as i64,
                    start_time: None,
                    queue,
                    slots: [1, 99999, 123456][n as usize % 3],
                    tasks: ["", "7", "1-10000:1"][n as usize % 3],
                    hard_resources: vec![],
                    hold_jids: vec![],
                    is_array: !n.is_multiple_of(3),
                    restarted: n.is_multiple_of(5),
                    prio: (n as i64 * 9_973) % 200_000,
                };
                let tasks = if j.tasks.is_empty() {
                    "       "
                } else {
                    j.tasks
                };
                let line = format!(
                    "{:>7} {} {:<10.10} {:<12.12} {:<5} {}",
                    j.job_id,
                    prior(j.prio),
                    j.name,
                    j.owner,
                    j.state_letters(),
                    local_time(j.submit_time, "%m/%d/%Y %H:%M:%S")
                );
                for with_queue in [false, true] {
                    let mut want = line.clone();
                    if with_queue {
                        want.push_str(&format!(" {:<30}", j.queue.unwrap_or("")));
                    }
                    want.push_str(&format!(" {:>5} {}\n", j.slots, tasks));
                    assert_eq!(job_line(&j, with_queue), want, "{j:?}");
                }
            }
        }
    }
}

/// `qstat -F np_load_avg,slots -explain aE` and `qstat -explain Ea -xml` as SGE 8.1.9
/// printed them on this machine (a queue instance in alarm and in error).
#[test]
fn explained_states_come_under_their_instance_as_sge_prints_them() {
    let mut host = idle_host();
    let q = &mut host.hosts[0].queues[0];
    q.states = "aAE".into();
    q.resources = vec![
        ("hl:np_load_avg".into(), "0.417724".into()),
        ("qc:slots".into(), "2".into()),
    ];
    q.reasons = vec![
        (
            'a',
            "alarm hl:np_load_avg=0.417724 load-threshold=0.01".into(),
        ),
        (
            'E',
            "queue all.q marked QERROR as result of job 5's failure at host vm".into(),
        ),
    ];
    let f = render_qstat_f(
        &host,
        &[],
        false,
        Some(&["np_load_avg".into(), "slots".into()]),
        None,
    );
    assert!(
        f.ends_with(
            "all.q@vm                       BIP   0/0/2          0.33     lx-amd64      aAE\n\talarm hl:np_load_avg=0.417724 load-threshold=0.01\n\tqueue all.q marked QERROR as result of job 5's failure at host vm\n\thl:np_load_avg=0.417724\n\tqc:slots=2\n"
        ),
        "{f}"
    );
    let xml = render_qstat_xml(Some(&host), &[]);
    assert!(
        xml.contains(
            "      <state>aAE</state>\n      <message>queue all.q marked QERROR as result of job 5&apos;s failure at host vm</message>\n    </Queue-List>\n"
        ),
        "{xml}"
    );
}

/// `qstat -f -json`: the queue instances beside the jobs, named as SGE's XML names
/// them; `-F`'s resources and `-explain`'s messages only when asked for.
#[test]
fn full_json_lists_the_queue_instances() {
    let doc: serde_json::Value =
        serde_json::from_str(&render_qstat_json(Some(&idle_host()), &[], None, None)).unwrap();
    assert_eq!(
        doc,
        serde_json::json!({
            "jobs": [],
            "queues": [{
                "name": "all.q@vm", "qtype": "BIP", "slots_used": 0, "slots_resv": 0,
                "slots_total": 2, "load_avg": 0.326172, "arch": "lx-amd64", "state": "",
                "jobs": [],
            }],
        })
    );
    let mut host = idle_host();
    host.hosts[0].queues[0].resources = vec![
        ("hl:np_load_avg".into(), "0.163086".into()),
        ("qc:slots".into(), "2".into()),
    ];
    host.hosts[0].queues[0].reasons = vec![('E', "queue all.q marked QERROR".into())];
    let doc: serde_json::Value = serde_json::from_str(&render_qstat_json(
        Some(&host),
        &[],
        Some(&["slots".into()]),
        None,
    ))
    .unwrap();
    assert_eq!(
        doc["queues"][0]["resources"],
        serde_json::json!([{"name": "qc:slots", "value": "2"}])
    );
    assert_eq!(
        doc["queues"][0]["messages"],
        serde_json::json!([{"state": "E", "message": "queue all.q marked QERROR"}])
    );
    let jobs_only: serde_json::Value =
        serde_json::from_str(&render_qstat_json(None, &[], None, None)).unwrap();
    assert_eq!(jobs_only, serde_json::json!({"jobs": []}));
}

#[test]
fn idle_cluster_matches_sge() {
    assert_eq!(
        render_qstat_f(&idle_host(), &[], false, None, None),
        fixture("qstat -f")
    );
    // -F: every resource the instance offers, as the master lists them.
    let mut host = idle_host();
    let reference = include_str!("../../../master/tests/fixtures/qstat-f-F.txt");
    host.hosts[0].queues[0].resources = reference
        .lines()
        .filter_map(|l| l.strip_prefix('\t'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(
        render_qstat_f(&host, &[], false, Some(&[]), None),
        reference
    );
    let some = render_qstat_f(
        &host,
        &[],
        false,
        Some(&["np_load_avg".into(), "slots".into()]),
        None,
    );
    assert!(
        some.ends_with("\thl:np_load_avg=0.163086\n\tqc:slots=2\n"),
        "{some}"
    );
    assert_eq!(
        render_qstat_xml(Some(&idle_host()), &[]),
        fixture("qstat -f -xml")
    );
    assert_eq!(render_qstat_xml(None, &[]), fixture("qstat -xml"));
    assert_eq!(render_qstat(&[]), "");
}

fn job<'a>(id: u64, state: JobState, queue: Option<&'a str>, tasks: &'a str) -> JobViewRef<'a> {
    JobViewRef {
        job_id: JobId(id),
        name: "sleep",
        owner: "user1",
        priority: 0,
        state,
        submit_time: 0,
        start_time: queue.map(|_| 0),
        queue,
        slots: 1,
        tasks,
        hard_resources: vec![],
        hold_jids: vec![],
        is_array: !tasks.is_empty(),
        restarted: false,
        prio: 50_000,
    }
}

#[test]
fn scheduling_summary_matches_sge() {
    let fixture = crate::qquota::tests::fixture;
    let rule = "Jobs dropped because of exceeding limit in rule".to_string();
    assert_eq!(
        render_scheduling_summary(&[(rule.clone(), [3, 4, 5, 6, 7].map(JobId).to_vec())]),
        "Jobs dropped because of exceeding limit in rule\n\t3,\t4,\t5,\t6,\t7\n"
    );
    assert_eq!(
        render_scheduling_summary(&[(rule, [3, 4, 5, 7].map(JobId).to_vec())]),
        fixture("qstat -j")
    );
    assert_eq!(
        render_scheduling_summary(&[
            (
                "Jobs can not run because execution time not reached".into(),
                vec![JobId(8)]
            ),
            (
                "Jobs can not run because the resource requirements can not be satisfied".into(),
                vec![JobId(10)]
            ),
        ]),
        fixture("qstat -j (two reasons)")
    );
    assert_eq!(render_scheduling_summary(&[]), "");
}

#[test]
fn job_details_list_what_sge_lists_in_its_order() {
    let spec = gantry_proto::JobSpec {
        script: gantry_proto::JobScript::Script {
            path: "sim.sh".into(),
            contents: Vec::new(),
        },
        shell: Some("/bin/bash".into()),
        cwd: Some("/work".into()),
        stdout_path: Some("/work/out".into()),
        stderr_path: Some("/work/err".into()),
        merge_output: true,
        env: vec![("SGE_O_HOST".into(), "head".into())],
        hard_resources: vec![("h_rt".into(), "60".into())],
        queues: vec!["all.q".into()],
        project: Some("chem".into()),
        pe: Some(("smp".into(), "8".into())),
        ar: Some(ArId(3)),
        mail_options: "be".into(),
        reserve: true,
        ..gantry_proto::JobSpec::binary("sim", "", "head")
    };
    let d = gantry_proto::JobDetail {
        job_id: JobId(5),
        spec,
        owner: gantry_proto::JobOwner {
            user: "alice".into(),
            uid: 1001,
            gid: 1001,
            groups: vec![],
        },
        group: "alice".into(),
        submit_time: 0,
        reasons: vec![],
        errors: vec![],
        checkpoint_attr: None,
        override_tickets: 0,
        version: 0,
        predecessors: Vec::new(),
        successors: Vec::new(),
        nurg: 0.0,
        running: vec![gantry_proto::RunningTask {
            task_id: TaskId(1),
            host: "n1".into(),
            usage: Some(gantry_proto::TaskUsage {
                job_id: JobId(5),
                task_id: TaskId(1),
                cpu: 65.0,
                mem: 0.12345,
                io: 0.00012,
                vmem: Some(19.641 * 1024.0 * 1024.0),
                maxvmem: Some(20.0 * 1024.0 * 1024.0),
                binding: Some("0,0:0,1".into()),
            }),
        }],
    };
    let text = render_job_details(&[d]);
    let keys: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split(':').next())
        .skip_while(|k| *k != "account")
        .collect();
    assert_eq!(
        keys,
        [
            "account",
            "cwd",
            "stderr_path_list",
            "reserve",
            "merge",
            "hard resource_list",
            "mail_options",
            "mail_list",
            "notify",
            "job_name",
            "stdout_path_list",
            "jobshare",
            "hard_queue_list",
            "shell_list",
            "script_file",
            "parallel environment",
            "project",
            "ar_id",
            "binding",
            "job_type",
            "usage         1",
            "binding       1",
        ],
        "{text}"
    );
    for line in [
        "stderr_path_list:           NONE:NONE:/work/err\n",
        "reserve:                    y\n",
        "merge:                      y\n",
        "mail_options:               be\n",
        "mail_list:                  alice@head\n",
        "stdout_path_list:           NONE:NONE:/work/out\n",
        "shell_list:                 NONE:/bin/bash\n",
        "script_file:                sim.sh\nparallel environment:  smp range: 8\nproject:",
        "ar_id:                      3\n",
        // SGE's per-task lines (06_qsub_qdel_qacct.txt, qstat -j 28).
        "usage         1:            cpu=00:01:05, mem=0.12345 GB s, io=0.00012 GB, vmem=19.641M, maxvmem=20.000M\n",
        "binding       1:            n1=0,0:0,1\n",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
}

#[test]
fn j_takes_an_optional_job_list() {
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let p = crate::opts::parse(&words("-j 5"), QSTAT_SPECS, false).unwrap();
    assert_eq!(p.arg("-j"), Some("5"));
    let p = crate::opts::parse(&words("-j 5,6 -u *"), QSTAT_SPECS, false).unwrap();
    assert_eq!(p.arg("-j"), Some("5,6"));
    assert_eq!(p.arg("-u"), Some("*"));
    let p = crate::opts::parse(&words("-j"), QSTAT_SPECS, false).unwrap();
    assert!(p.has("-j") && p.arg("-j").is_none());
    let p = crate::opts::parse(&words("-j -u *"), QSTAT_SPECS, false).unwrap();
    assert!(p.has("-j") && p.arg("-j").is_none());
    assert_eq!(p.arg("-u"), Some("*"));
}

#[test]
fn a_listing_writes_each_line_as_alone() {
    // Priorities and times repeated and changing, row after row.
    let mut jobs = Vec::new();
    for (n, (priority, submitted)) in [(0, 0), (0, 0), (-5, 0), (-5, 60), (0, 60), (0, 3_600)]
        .into_iter()
        .enumerate()
    {
        let mut j = job(n as u64 + 1, JobState::pending(false), None, "");
        j.priority = priority;
        j.submit_time = submitted;
        jobs.push(j);
    }
    jobs[1].queue = Some("all.q@vm");
    jobs[1].start_time = Some(30);
    // Then rows alike but for one column after the name each.
    let like = |n: u64| {
        let mut j = job(n, JobState::pending(false), None, "");
        j.submit_time = 3_600;
        j
    };
    let mut next = 7;
    for vary in 0..7 {
        jobs.push(like(next));
        let mut j = like(next + 1);
        match vary {
            0 => j.owner = "user2",
            1 => j.state = JobState::pending(true),
            2 => j.submit_time = 3_601,
            3 => {
                j.queue = Some("all.q@vm");
                j.start_time = Some(3_600);
            }
            4 => j.slots = 2,
            5 => j.tasks = "1-3:1",
            _ => j.name = "other",
        }
        jobs.push(j);
        next += 2;
    }
    let listed = render_qstat(&jobs);
    let alone: String = jobs.iter().map(|j| job_line(j, true)).collect();
    assert!(listed.ends_with(&alone), "{listed}");
    assert_eq!(listed.lines().count(), jobs.len() + 2);
}

#[test]
fn a_long_listing_is_written_in_pieces_as_its_rows_are_decoded() {
    use gantry_proto::{encode, FromMaster, JobView};
    let view = |n: u64| JobView {
        job_id: JobId(n),
        name: format!("job{n}"),
        owner: "user1".into(),
        priority: 0,
        state: match n % 3 {
            0 => JobState::Running,
            _ => JobState::pending(n % 3 == 2),
        },
        submit_time: n as i64,
        start_time: n.is_multiple_of(3).then_some(n as i64),
        queue: n.is_multiple_of(3).then(|| "all.q@vm".to_string()),
        slots: 1,
        tasks: String::new(),
        hard_resources: vec![],
        hold_jids: vec![],
        is_array: false,
        restarted: false,
        prio: 50_000,
    };
    // Over 64 KiB of lines: several pieces.
    let bytes = encode(&FromMaster::Jobs((1..=2_000).map(view).collect())).unwrap();
    let rows = || crate::jobs_in(&bytes).unwrap();
    let whole = render_qstat(&rows().collect::<Result<Vec<_>, _>>().unwrap());
    assert!(whole.len() > 3 * 64 * 1024);
    let mut written = Vec::new();
    write_qstat(rows(), |_| true, &mut written).unwrap();
    assert_eq!(String::from_utf8(written).unwrap(), whole);
    // Only the rows shown; the header only when one is.
    let mut held = Vec::new();
    write_qstat(rows(), |j| j.state.is_held(), &mut held).unwrap();
    let held = String::from_utf8(held).unwrap();
    assert_eq!(
        held.lines().count(),
        2 + (1..=2_000).filter(|n| n % 3 == 2).count()
    );
    assert!(held.lines().skip(2).all(|l| l.contains(" hqw ")), "{held}");
    let mut none = Vec::new();
    write_qstat(rows(), |_| false, &mut none).unwrap();
    assert!(none.is_empty());
    // Cut short: the whole rows before are written, then the error.
    let cut = &bytes[..bytes.len() - 5];
    let mut partial = Vec::new();
    assert!(write_qstat(crate::jobs_in(cut).unwrap(), |_| true, &mut partial).is_err());
    let partial = String::from_utf8(partial).unwrap();
    assert_eq!(partial.lines().count(), 2 + 1_999);
    assert!(whole.starts_with(&partial));
}

/// The default listing's lines as the master writes them (head and tail, the time
/// written here) are the lines the client writes of the same rows: whole, chosen
/// by state, none, or cut short.
#[test]
fn job_lines_from_the_master_are_written_as_rows_are() {
    use gantry_common::joblines::{push_head, push_tail};
    use gantry_proto::{encode, FromMaster, JobLine, JobView};
    let view = |n: u64| JobView {
        job_id: JobId(n * 997),
        name: format!("a-rather-long-name{n}"),
        owner: "user1".into(),
        priority: (n % 5) as i32 * 100 - 200,
        state: match n % 4 {
            0 => JobState::Running,
            1 => JobState::Suspended,
            _ => JobState::pending(n % 4 == 2),
        },
        submit_time: 1_700_000_000 + (n / 7) as i64,
        start_time: (n % 4 < 2).then_some(1_700_000_100),
        queue: (n % 4 < 2).then(|| format!("all.q@node{n}")),
        slots: 1 + (n % 3) as u32,
        tasks: if n.is_multiple_of(2) {
            String::new()
        } else {
            n.to_string()
        },
        hard_resources: vec![],
        hold_jids: vec![],
        is_array: n % 2 == 1,
        restarted: false,
        prio: (n % 5) as i64 * 12_345,
    };
    // Over 256 KiB of lines: read in several pieces.
    let views: Vec<JobView> = (1..=6_000).map(view).collect();
    let line = |v: &JobView| {
        let mut head = String::new();
        push_head(
            &mut head,
            v.job_id,
            &prior(v.prio),
            &v.name,
            &v.owner,
            v.state_letters(),
        );
        let mut tail = String::new();
        push_tail(
            &mut tail,
            Some(&[v.queue.as_deref().unwrap_or("")]),
            v.slots,
            &v.tasks,
        );
        JobLine {
            state: v.state,
            head,
            when: v.start_time.unwrap_or(v.submit_time),
            tail,
        }
    };
    let rows = encode(&FromMaster::Jobs(views.clone())).unwrap();
    let lines = encode(&FromMaster::JobLines(views.iter().map(line).collect())).unwrap();
    assert!(lines.len() > 2 * lines::READ);
    let read = |answer: &[u8], piece: usize, shown: &dyn Fn(JobState) -> bool| {
        // Read as it is taken, and on a thread of its own: alike.
        let direct = read_apart(answer, piece, shown, false);
        let apart = read_apart(answer, piece, shown, true);
        assert_eq!(direct, apart, "piece {piece}");
        direct
    };
    fn read_apart(
        answer: &[u8],
        piece: usize,
        shown: &dyn Fn(JobState) -> bool,
        apart: bool,
    ) -> (Result<(), u8>, String) {
        let mut got = Vec::new();
        let mut writer = LineWriter::new(&mut got);
        let read = lines::read_in_pieces(answer, answer.len(), piece, apart, |l| {
            if shown(l.state) {
                writer.line(l)
            }
        });
        writer.finish();
        (
            read.map_err(|out| out.code),
            String::from_utf8(got).unwrap(),
        )
    }
    for shown in [
        &(|_: JobState| true) as &dyn Fn(JobState) -> bool,
        &|s: JobState| s.is_held(),
        &|s: JobState| s.is_running(),
        &|_: JobState| false,
    ] {
        let mut want = Vec::new();
        write_qstat(
            crate::jobs_in(&rows).unwrap(),
            |j| shown(j.state),
            &mut want,
        )
        .unwrap();
        let want = String::from_utf8(want).unwrap();
        // In pieces of any size: lines cut at a piece's end, a piece shorter than a line.
        // A piece of 1 or 2 bytes holds less than the answer's tag and count.
        for piece in [lines::READ, 4_096, 97, 7, 2, 1] {
            assert_eq!(
                read(&lines, piece, shown),
                (Ok(()), want.clone()),
                "piece {piece}"
            );
        }
    }
    // Cut short: the whole lines before, then the error.
    let cut = &lines[..lines.len() - 3];
    let (ended, partial) = read(cut, lines::READ, &|_| true);
    assert_eq!(ended, Err(crate::exit::FAILURE));
    assert_eq!(partial.lines().count(), 2 + 5_999);
    // Another answer is no listing: its refusal is what the command reports.
    let refused = encode(&FromMaster::Refused(gantry_proto::Refusal {
        kind: gantry_proto::RefusalKind::Denied,
        message: "denied".into(),
    }))
    .unwrap();
    assert!(crate::job_lines_in(&refused).is_err());
    let (ended, written) = read(&refused, lines::READ, &|_| true);
    assert_eq!(
        (ended, written.as_str()),
        (
            Err(crate::exit::for_refusal(gantry_proto::RefusalKind::Denied)),
            ""
        )
    );
}

/// Lines as a job listing's answer: `count` of them, each with a tail of `width`
/// bytes.
fn long_lines(count: u64, width: usize) -> Vec<u8> {
    use gantry_proto::{encode, FromMaster, JobLine};
    let lines = (0..count)
        .map(|n| JobLine {
            state: JobState::pending(false),
            head: format!("{n:>7} 0.50000 sleep      user1        qw    "),
            when: 1_700_000_000,
            tail: format!(" {:width$}\n", n),
        })
        .collect();
    encode(&FromMaster::JobLines(lines)).unwrap()
}

/// The answer is read off the socket as fast as it comes, whatever standard output
/// does (a pager that waits): the last byte is read before the first line is taken.
#[test]
fn a_listing_is_read_whole_while_its_first_line_waits() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    struct Counted<'a>(&'a [u8], &'a AtomicUsize);
    impl std::io::Read for Counted<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.read(buf)?;
            self.1.fetch_add(n, Ordering::SeqCst);
            Ok(n)
        }
    }
    let answer = long_lines(20_000, 40);
    let got = AtomicUsize::new(0);
    let mut first = true;
    let mut taken = 0;
    let read = lines::read_in_pieces(Counted(&answer, &got), answer.len(), 4_096, true, |_| {
        if first {
            first = false;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while got.load(Ordering::SeqCst) < answer.len() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the reader waited for the lines"
                );
                std::thread::yield_now();
            }
        }
        taken += 1;
    });
    assert!(read.is_ok());
    assert_eq!(taken, 20_000);
}

/// A listing of lines longer than any other answer may be (16 MiB) is read (it is
/// never held whole); another answer that long is refused before it is read.
#[test]
fn a_listing_of_lines_may_be_longer_than_a_frame() {
    let answer = long_lines(17_000, 1_000);
    assert!(answer.len() > gantry_proto::frame::MAX_FRAME);
    for apart in [false, true] {
        let mut taken = 0;
        let read = lines::read_in_pieces(&answer[..], answer.len(), lines::READ, apart, |_| {
            taken += 1
        });
        assert!(read.is_ok());
        assert_eq!(taken, 17_000);
        let len = gantry_proto::frame::MAX_FRAME + 1;
        let other = std::io::Read::take(std::io::repeat(0), len as u64);
        let refused = lines::read_in_pieces(other, len, lines::READ, apart, |_| panic!("no line"));
        let out = refused.unwrap_err();
        assert_eq!(out.code, crate::exit::FAILURE);
        assert!(out.stderr.contains("16777216"), "{}", out.stderr);
    }
}

/// A socket that closes before the whole answer came: the lines before, then the
/// error.
#[test]
fn a_listing_cut_off_by_the_socket_ends_with_an_error() {
    let answer = long_lines(3_000, 10);
    let half = &answer[..answer.len() / 2];
    for apart in [false, true] {
        let mut taken = 0;
        let read = lines::read_in_pieces(half, answer.len(), 4_096, apart, |_| taken += 1);
        let out = read.unwrap_err();
        assert_eq!(out.code, crate::exit::FAILURE);
        assert!(
            out.stderr.contains("talking to the daemon"),
            "{}",
            out.stderr
        );
        assert!(taken > 1_000 && taken < 1_500, "{taken}");
    }
}

#[test]
fn job_lines_have_sges_columns() {
    let out = render_qstat(&[
        job(28, JobState::Running, Some("all.q@vm"), ""),
        job(36, JobState::pending(false), None, "2-5:1"),
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0].len(), 114);
    assert_eq!(lines[1].len(), 113);
    assert!(
        lines[2].starts_with("     28 0.50000 sleep      user1        r     "),
        "{}",
        lines[2]
    );
    assert!(
        lines[2].ends_with(" all.q@vm                           1        "),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].ends_with("                                    1 2-5:1"),
        "{}",
        lines[3]
    );
    let f = render_qstat_f(
        &idle_host(),
        &[job(36, JobState::pending(false), None, "")],
        false,
        None,
        None,
    );
    assert!(f.contains(PENDING_BANNER), "{f}");
}

/// A value a user chose (`-v`, a job argument) prints as one line of `qstat -j`,
/// whatever control characters it holds: none can forge a line such as `owner: root`.
#[test]
fn values_with_control_characters_stay_on_their_line() {
    let cases = [
        ("plain value", "plain value"),
        ("tab\tstays", "tab\tstays"),
        (
            "x\nowner:                      root",
            "x\\nowner:                      root",
        ),
        ("cr\rlf\r\n", "cr\\rlf\\r\\n"),
        ("esc\u{1b}[2J", "esc\\x1b[2J"),
        ("nul\0", "nul\\x00"),
    ];
    for (value, shown) in cases {
        assert_eq!(one_line(value), shown, "{value:?}");
        assert!(!one_line(value).contains('\n'));
    }
}

/// What SGE 8.1.9 printed for `command` in the functional policy's cell
/// (`tests/fixtures/sge/fairshare/02_functional_priority.txt`).
fn functional_cell_output(command: &str) -> &'static str {
    let transcript =
        include_str!("../../../tests/fixtures/sge/fairshare/02_functional_priority.txt");
    let block = format!("=== [root] $ {command}\n--- stdout\n");
    let from = &transcript[transcript.find(&block).unwrap() + block.len()..];
    &from[..from.find("--- stderr").unwrap()]
}

/// The functional policy's cell of that transcript: user3's job 6 running, five
/// pending jobs, with the priorities and tickets SGE gave them.
fn functional_cell() -> (Vec<JobViewRef<'static>>, Vec<gantry_proto::PriorityRow>) {
    // (job, owner, prior, ntckts, ftckt, share), as SGE listed them.
    let listed = [
        (6, "user3", 1.0, 1.0, 10000.0, 1.0),
        (4, "user2", 0.04167, 0.08333, 833.0, 0.34),
        (7, "user3", 0.04167, 0.08333, 833.0, 0.34),
        (5, "user2", 0.02083, 0.04167, 416.0, 0.17),
        (2, "user1", 0.01278, 0.025, 250.0, 0.10),
        (3, "user1", 0.00625, 0.0125, 125.0, 0.05),
    ];
    let mut jobs = Vec::new();
    let mut prios = Vec::new();
    for (id, owner, prior, ntckts, ftckt, share) in listed {
        let running = id == 6;
        let mut j = job(
            id,
            if running {
                JobState::Running
            } else {
                JobState::pending(false)
            },
            running.then_some("all.q@vm"),
            "",
        );
        j.owner = owner;
        j.prio = (prior * 100_000.0_f64).round() as i64;
        jobs.push(j);
        prios.push(gantry_proto::PriorityRow {
            job_id: JobId(id),
            task: running.then_some(TaskId(1)),
            prio: prior,
            nurg: 0.0,
            npprior: 0.5,
            ntckts,
            urg: 1000.0,
            rrcontr: 1000.0,
            wtcontr: 0.0,
            dlcontr: 0.0,
            ppri: 0,
            ovrts: 0,
            otckt: 0.0,
            ftckt,
            stckt: 0.0,
            share,
            project: None,
            department: Some("defaultdepartment".into()),
            deadline: None,
            usage: None,
        });
    }
    (jobs, prios)
}

const EXT: priority::Columns = priority::Columns {
    pri: false,
    urg: false,
    ext: true,
};

/// `qstat -ext` as SGE 8.1.9 printed it, byte for byte: a pending job's cpu, mem and
/// io columns are 27 blanks.
#[test]
fn ext_listing_is_sges() {
    let (jobs, prios) = functional_cell();
    assert_eq!(
        priority::render(EXT, &jobs, &prios),
        functional_cell_output("qstat -u \"*\" -ext")
    );
}

/// `qstat -f -ext` as SGE 8.1.9 printed it: the separators 108 and 110 characters
/// wider, each job's `-ext` line without the queue column.
#[test]
fn full_listing_with_ext_is_sges() {
    let (jobs, prios) = functional_cell();
    let mut host = idle_host();
    host.hosts[0].load_values[0].value = "1.12".into();
    host.hosts[0].queues[0].used = 1;
    host.hosts[0].queues[0].total = 1;
    let lines = priority::Lines::new(EXT, &prios);
    assert_eq!(
        render_qstat_f(&host, &jobs, false, None, Some(&lines)),
        functional_cell_output("qstat -u \"*\" -f -ext")
    );
}

/// `qstat -g t` as SGE 8.1.9 prints a 4-slot job of a PE with `job_is_first_task
/// FALSE` (`tests/fixtures/sge/interactive/08_pe_tasks_qstat_qdel.txt`, job 2: MASTER
/// and four SLAVE lines), but for the time column (the zone's), and a pending job
/// under it as the default listing has it.
#[test]
fn qstat_g_t_has_a_line_per_slot_as_sge() {
    let recorded =
        include_str!("../../../tests/fixtures/sge/interactive/08_pe_tasks_qstat_qdel.txt");
    let sge: Vec<&str> = recorded
        .lines()
        .skip_while(|l| *l != "=== [root] $ qstat -g t -u \"*\"")
        .skip(2)
        .take_while(|l| !l.starts_with("--- stderr"))
        .collect();
    let mut running = job(2, JobState::Running, Some("all.q@vm"), "");
    running.name = "pe_notask";
    running.slots = 4;
    let when = crate::dates::time_in(&crate::dates::local_zone(), 0, "%m/%d/%Y %H:%M:%S");
    let lines = gantry_proto::TaskLines {
        job_id: JobId(2),
        tasks: String::new(),
        lines: std::iter::once(("all.q@vm".to_string(), true))
            .chain((0..4).map(|_| ("all.q@vm".to_string(), false)))
            .collect(),
        usage: None,
    };
    let pending = job(3, JobState::pending(false), None, "");
    let out = render_qstat_gt(&[running.clone(), pending.clone()], &[lines]);
    let want: Vec<String> = sge
        .iter()
        .map(|l| l.replace("12/02/2026 04:55:04", &when))
        .collect();
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got[..want.len()], want[..]);
    // A pending job: no slots column, blank master and task columns (SGE 8.1.9's
    // `qstat -g t` of a held job on this machine).
    assert_eq!(
        got[want.len()..],
        [format!(
            "      3 0.50000 sleep      user1        qw    {when}                                              "
        )]
    );
    assert_eq!(render_qstat_gt(&[], &[]), "");
}

/// `qstat -t -u '*'` as SGE 8.1.9 printed it on this machine for a parallel job whose
/// usage its execd had reported, and a held job.
#[test]
fn qstat_t_adds_the_master_tasks_usage_as_sge() {
    let when = crate::dates::time_in(&crate::dates::local_zone(), 0, "%m/%d/%Y %H:%M:%S");
    let mut running = job(8, JobState::Running, Some("all.q@vm"), "");
    running.name = "pe.sh";
    running.prio = 50_000;
    let mut held = job(6, JobState::pending(true), None, "");
    held.name = "sleep";
    held.prio = 0;
    let lines = gantry_proto::TaskLines {
        job_id: JobId(8),
        tasks: String::new(),
        lines: vec![
            ("all.q@vm".to_string(), true),
            ("all.q@vm".to_string(), false),
        ],
        usage: Some(gantry_proto::TaskUsage {
            job_id: JobId(8),
            task_id: TaskId(1),
            cpu: 0.0,
            mem: 0.00004,
            io: 0.00117,
            vmem: None,
            maxvmem: None,
            binding: None,
        }),
    };
    let want = [
        "job-ID  prior   name       user         state submit/start at     queue                          master ja-task-ID task-ID state cpu        mem     io      stat failed ".to_string(),
        "-".repeat(167),
        format!("      8 0.50000 pe.sh      user1        r     {when} all.q@vm                       MASTER                        r     00:00:00 0.00004 0.00117 "),
        "                                                                  all.q@vm                       SLAVE         ".to_string(),
        format!("      6 0.00000 sleep      user1        hqw   {when}                                              "),
    ];
    let out = super::lines::render_qstat_t(&[running, held], &[lines]);
    assert_eq!(out.lines().collect::<Vec<_>>(), want);
}

#[test]
fn a_task_list_is_read_task_by_task() {
    for (list, want) in [
        ("1", vec!["1"]),
        ("1,5", vec!["1", "5"]),
        ("2-4:1", vec!["2", "3", "4"]),
        ("1-7:3,9", vec!["1", "4", "7", "9"]),
    ] {
        assert_eq!(super::each_task_id(list), want, "{list}");
    }
}
