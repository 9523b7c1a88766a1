//! Complexes and resource matching end to end: complex attributes added with `qconf
//! -Mc`, given to hosts with `qconf -Me`, requested by jobs of a real user, on two execds
//! in their own network namespaces. Needs root (CI runs as root).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use gantry_tests::{ensure_user, is_root, skip_loudly, wait_until, Cluster, Netns};

/// Running tasks (`t`, `r`) as (job id, queue instance).
fn running(c: &Cluster) -> Vec<(u64, String)> {
    c.qstat_all()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let id = f.first()?.parse().ok()?;
            matches!(*f.get(4)?, "r" | "t").then(|| (id, f.get(7).unwrap_or(&"").to_string()))
        })
        .collect()
}

trait QstatAll {
    fn qstat_all(&self) -> String;
}

impl QstatAll for Cluster {
    fn qstat_all(&self) -> String {
        self.client("qstat", &["-u", "*"]).stdout
    }
}

fn write(c: &Cluster, name: &str, text: &str) -> String {
    let path = c.home().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn jobs_land_only_where_their_requests_fit_and_consumables_never_go_negative() {
    if !is_root() {
        skip_loudly(
            "jobs_land_only_where_their_requests_fit_and_consumables_never_go_negative",
            "network namespaces and test users need root",
        );
        return;
    }
    ensure_user("gtuser1");
    let net = Netns::create(3);
    let mut c = Cluster::init(&[]);
    c.master_netns = Some(net.names[0].clone());
    c.start_master();
    c.fast_reports("0:0:10");
    let token = c.token();
    c.start_execd("node1", &net.addrs[0], Some(&token), Some(&net.names[1]));
    c.start_execd("node2", &net.addrs[0], Some(&token), Some(&net.names[2]));
    c.wait_host_reporting("node1");
    c.wait_host_reporting("node2");

    // New attributes: a per-slot consumable and a flag.
    let sc = c.qconf(&["-sc"]).stdout;
    let footer = sc.lines().last().unwrap().to_string();
    let body: String = sc
        .lines()
        .filter(|l| *l != footer)
        .map(|l| format!("{l}\n"))
        .collect();
    let with = |extra: &str| format!("{body}{extra}{footer}\n");
    // A BOOL consumable must be EXCL (SGE's rule and message): refused, nothing changes.
    let bad = write(&c, "bad.sc", &with("gpu gpu BOOL <= YES YES 0 0\n"));
    let out = c.qconf(&["-Mc", &bad]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("Exclusive complex \"gpu\" must have EXCL as relational operator"),
        "{out:?}"
    );
    assert_eq!(c.qconf(&["-sc"]).stdout, sc);
    let good = write(
        &c,
        "good.sc",
        &with("gpu gpu INT <= YES YES 0 0\nbigmem bm BOOL == YES NO 0 0\n"),
    );
    let out = c.qconf(&["-Mc", &good]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("added \"gpu\" to complex entry list")
            && out
                .stderr
                .contains("added \"bigmem\" to complex entry list"),
        "{out:?}"
    );
    // Built-ins stay: deleting one is refused.
    let without_slots: String = with("")
        .lines()
        .filter(|l| !l.starts_with("slots "))
        .map(|l| format!("{l}\n"))
        .collect();
    let out = c.qconf(&["-Mc", &write(&c, "noslots.sc", &without_slots)]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("The built-in complex \"slots\" cannot be deleted"),
        "{out:?}"
    );

    // Two GPUs on node1 only; node2 has big memory.
    for (host, values) in [("node1", "gpu=2"), ("node2", "bigmem=TRUE")] {
        let text: String = c
            .qconf(&["-se", host])
            .stdout
            .lines()
            .filter(|l| {
                !l.starts_with("complex_values")
                    && !l.starts_with("load_values")
                    && !l.starts_with(' ')
                    && !l.starts_with("processors")
            })
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            + &format!("complex_values {values}\n");
        let out = c.qconf(&["-Me", &write(&c, &format!("{host}.e"), &text)]);
        assert_eq!(out.code, 0, "{out:?}");
        assert!(
            c.qconf(&["-se", host])
                .stdout
                .contains(&format!("complex_values        {values}")),
            "{}",
            c.qconf(&["-se", host]).stdout
        );
    }
    // An unknown attribute in complex_values is refused whole.
    let out = c.qconf(&[
        "-Me",
        &write(&c, "bad.e", "hostname node1\ncomplex_values nosuch=1\n"),
    ]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("denied: attribute \"nosuch\" is not a complex attribute"),
        "{out:?}"
    );
    // Only members of the Unix group gtuser1 may use all.q (the user's primary group,
    // as the master's name service knows it).
    assert_eq!(c.qconf(&["-au", "@gtuser1", "gpuusers"]).code, 0);
    for (attr, value) in [
        ("slots", "4"),
        ("load_thresholds", "NONE"),
        ("user_lists", "gpuusers"),
    ] {
        // SGE's -mattr refuses NONE for a list: -rattr replaces it.
        let op = if value == "NONE" { "-rattr" } else { "-mattr" };
        let out = c.qconf(&[op, "queue", attr, value, "all.q"]);
        assert_eq!(out.code, 0, "{out:?}");
    }

    // A burst: five GPU jobs, one for big memory, one no host can take.
    let submit = |req: &str| -> u64 {
        let out = c.as_user(
            "gtuser1",
            "qsub",
            &["-terse", "-wd", "/tmp", "-l", req, "-b", "y", "sleep", "60"],
        );
        assert_eq!(out.code, 0, "{out:?}");
        out.stdout.trim().parse().unwrap()
    };
    let gpu_jobs: Vec<u64> = (0..5).map(|_| submit("gpu=1")).collect();
    let big = submit("bigmem=true");
    let never = submit("bigmem=false,gpu=1");
    let mut seen_gpu_max = 0;
    wait_until("three jobs to start", Duration::from_secs(20), || {
        let r = running(&c);
        let gpu = r.iter().filter(|(id, _)| gpu_jobs.contains(id)).count();
        seen_gpu_max = seen_gpu_max.max(gpu);
        r.len() == 3
    });
    let r = running(&c);
    let gpu_running: Vec<&(u64, String)> =
        r.iter().filter(|(id, _)| gpu_jobs.contains(id)).collect();
    assert_eq!(gpu_running.len(), 2, "{r:?}");
    assert!(gpu_running.iter().all(|(_, q)| q == "all.q@node1"), "{r:?}");
    assert!(r.contains(&(big, "all.q@node2".to_string())), "{r:?}");
    assert!(seen_gpu_max <= 2);

    // qstat -F shows what is left: no GPU on node1, and node2 has none at all.
    let f = c.client("qstat", &["-F", "gpu,bigmem"]).stdout;
    assert!(f.contains("\thc:gpu=0\n"), "{f}");
    assert!(f.contains("\thf:bigmem=1.000000\n"), "{f}");
    assert_eq!(f.matches("gpu=").count(), 1, "{f}");

    // Why the others wait, in SGE's words.
    let waiting = gpu_jobs
        .iter()
        .find(|id| !r.iter().any(|(rid, _)| rid == *id))
        .unwrap();
    // node1's slots are all taken too: SGE drops a full queue instance before it
    // looks at the job's requests (tests/sge/recorded/60_per_job_consumable.txt).
    let why = c.client("qstat", &["-j", &waiting.to_string()]).stdout;
    assert!(
        why.contains("queue instance \"all.q@node1\" dropped because it is full"),
        "{why}"
    );
    assert!(
        why.contains("(-l gpu=1) cannot run in queue \"all.q@node2\" because job requests unknown resource (gpu)"),
        "{why}"
    );
    let why = c.client("qstat", &["-j", &never.to_string()]).stdout;
    assert!(
        // SGE lists the job's whole hard request list, whichever request failed.
        why.contains("(-l bigmem=false,gpu=1) cannot run at host \"node2\" because it offers only hf:bigmem=1.000000"),
        "{why}"
    );

    // A host with running jobs cannot be deleted.
    let out = c.qconf(&["-de", "node1"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("denied: host \"node1\" has running jobs"),
        "{out:?}"
    );
    assert_eq!(c.qconf(&["-sel"]).stdout, "node1\nnode2\n");

    // A GPU given back goes to the next GPU job, never a third at once.
    let first = gpu_running[0].0;
    let out = c.client("qdel", &[&first.to_string()]);
    assert_eq!(out.code, 0, "{out:?}");
    wait_until("another GPU job to start", Duration::from_secs(20), || {
        let r = running(&c);
        let gpu: Vec<_> = r.iter().filter(|(id, _)| gpu_jobs.contains(id)).collect();
        assert!(gpu.len() <= 2, "{r:?}");
        gpu.len() == 2 && !gpu.iter().any(|(id, _)| *id == first)
    });
    assert!(!running(&c).iter().any(|(id, _)| *id == never));
    let all: Vec<String> = gpu_jobs
        .iter()
        .chain([&big, &never])
        .filter(|id| **id != first)
        .map(u64::to_string)
        .collect();
    let mut args = vec!["-f"];
    args.extend(all.iter().map(String::as_str));
    let out = c.client("qdel", &args);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn scheduler_configuration_and_queues_are_edited_as_files() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    // SGE's defaults, byte for byte.
    let sconf = c.qconf(&["-ssconf"]);
    assert_eq!(sconf.code, 0, "{sconf:?}");
    assert!(
        sconf.stdout.starts_with(
            "algorithm                         default\nschedule_interval                 0:0:1\n"
        ),
        "{sconf:?}"
    );
    assert!(sconf
        .stdout
        .contains("\nqueue_sort_method                 load\n"));
    // A bad value is refused with its line; nothing changes.
    let bad = write(&c, "bad.sconf", "queue_sort_method random\n");
    let out = c.qconf(&["-Msconf", &bad]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("line 1: value \"random\" for attribute \"queue_sort_method\""),
        "{out:?}"
    );
    assert_eq!(c.qconf(&["-ssconf"]).stdout, sconf.stdout);
    let good = write(
        &c,
        "good.sconf",
        &sconf.stdout.replace(
            "queue_sort_method                 load",
            "queue_sort_method                 seqno",
        ),
    );
    let out = c.qconf(&["-Msconf", &good]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(c
        .qconf(&["-ssconf"])
        .stdout
        .contains("queue_sort_method                 seqno"));

    // Queues: add from a file, show, list, refuse bad ones, delete.
    let template = c.qconf(&["-sq"]).stdout;
    let q = template
        .replace(
            "qname                 template",
            "qname                 big.q",
        )
        .replace(
            "slots                 1",
            "slots                 2,[@allhosts=8]",
        )
        .replace(
            "pe_list               make smp mpi",
            "pe_list               NONE",
        );
    let out = c.qconf(&["-Aq", &write(&c, "big.q", &q)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("added \"big.q\" to cluster queue list"),
        "{out:?}"
    );
    assert_eq!(c.qconf(&["-sql"]).stdout, "all.q\nbig.q\n");
    assert!(c
        .qconf(&["-sq", "big.q"])
        .stdout
        .contains("slots                 2,[@allhosts=8]"));
    let out = c.qconf(&["-Aq", &write(&c, "big2.q", &q)]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("cluster queue \"big.q\" already exists"),
        "{out:?}"
    );
    for (text, want) in [
        (
            q.replace(
                "slots                 2,[@allhosts=8]",
                "slots                 many",
            ),
            "value \"many\" of attribute \"slots\"",
        ),
        (
            q.replace(
                "complex_values        NONE",
                "complex_values        nosuch=1",
            ),
            "unknown resource \"nosuch\"",
        ),
        (
            q.replace(
                "hostlist              NONE",
                "hostlist              @nosuch",
            ),
            "host group \"@nosuch\"",
        ),
        (
            q.replace(
                "h_rt                  INFINITY",
                "h_rt                  soon",
            ),
            "value \"soon\" of attribute \"h_rt\"",
        ),
    ] {
        let out = c.qconf(&["-Mq", &write(&c, "bad.q", &text)]);
        assert_ne!(out.code, 0, "{want}");
        assert!(out.stderr.contains(want), "{want}: {out:?}");
    }
    assert!(c
        .qconf(&["-sq", "big.q"])
        .stdout
        .contains("slots                 2,[@allhosts=8]"));
    let out = c.qconf(&["-dq", "big.q"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(c.qconf(&["-sql"]).stdout, "all.q\n");
    let out = c.qconf(&["-dq", "big.q"]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("cluster queue \"big.q\" does not exist"),
        "{out:?}"
    );

    // Attribute edits, all checked like a whole file.
    let sq = |c: &Cluster, key: &str| -> String {
        c.qconf(&["-sq", "all.q"])
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .map(|l| l[22..].to_string())
            .unwrap_or_default()
    };
    let ok = |c: &Cluster, args: &[&str]| {
        let out = c.qconf(args);
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        assert!(
            out.stdout
                .contains("modified \"all.q\" in cluster queue list")
                || out.stdout.contains("modified \"global\" in exechost list"),
            "{out:?}"
        );
    };
    ok(&c, &["-aattr", "queue", "user_lists", "arusers", "all.q"]);
    assert_eq!(sq(&c, "user_lists"), "arusers");
    let out = c.qconf(&["-aattr", "queue", "user_lists", "arusers", "all.q"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(
            "\"arusers\" is already in the list in \"user_lists\" of cluster queue \"all.q\""
        ),
        "{out:?}"
    );
    let out = c.qconf(&["-aattr", "queue", "user_lists", "nosuchset", "all.q"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("userset \"nosuchset\" in user_lists"),
        "{out:?}"
    );
    ok(&c, &["-dattr", "queue", "user_lists", "arusers", "all.q"]);
    assert_eq!(sq(&c, "user_lists"), "NONE");
    ok(&c, &["-aattr", "queue", "slots", "[@allhosts=4]", "all.q"]);
    assert_eq!(sq(&c, "slots"), "1,[@allhosts=4]");
    ok(&c, &["-rattr", "queue", "pe_list", "smp", "all.q"]);
    assert_eq!(sq(&c, "pe_list"), "smp");
    let file = write(
        &c,
        "attrs",
        "user_lists deadlineusers\nxuser_lists arusers\n",
    );
    ok(&c, &["-Aattr", "queue", &file, "all.q"]);
    assert_eq!(
        (sq(&c, "user_lists"), sq(&c, "xuser_lists")),
        ("deadlineusers".to_string(), "arusers".to_string())
    );
    ok(
        &c,
        &[
            "-aattr",
            "exechost",
            "complex_values",
            "virtual_free=4G",
            "global",
        ],
    );
    ok(
        &c,
        &[
            "-mattr",
            "exechost",
            "complex_values",
            "virtual_free=8G",
            "global",
        ],
    );
    assert!(c
        .qconf(&["-se", "global"])
        .stdout
        .contains("complex_values        virtual_free=8G\n"));
    ok(
        &c,
        &[
            "-dattr",
            "exechost",
            "complex_values",
            "virtual_free",
            "global",
        ],
    );
    assert!(c
        .qconf(&["-se", "global"])
        .stdout
        .contains("complex_values        NONE\n"));
    let out = c.qconf(&["-aattr", "widget", "a", "b", "c"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("unknown object type \"widget\""),
        "{out:?}"
    );

    // Projects: listed, added from a file, referenced, protected while referenced.
    let out = c.qconf(&["-sprjl"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "no project list defined\n")
    );
    let out = c.qconf(&["-Aprj", &write(&c, "chem.prj", "name chem\nacl arusers\n")]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("added \"chem\" to project list"),
        "{out:?}"
    );
    assert_eq!(
        c.qconf(&["-sprj", "chem"]).stdout,
        "name chem\noticket 0\nfshare 0\nacl arusers\nxacl NONE\n"
    );
    let out = c.qconf(&["-Aprj", &write(&c, "bad.prj", "name bio\nacl nosuchset\n")]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("userset \"nosuchset\" in acl of project \"bio\" does not exist"),
        "{out:?}"
    );
    ok(&c, &["-aattr", "queue", "projects", "chem", "all.q"]);
    let out = c.qconf(&["-aattr", "queue", "xprojects", "bio", "all.q"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("project \"bio\" in xprojects of cluster queue \"all.q\" does not exist"),
        "{out:?}"
    );
    let out = c.qconf(&["-dprj", "chem"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(
            "project \"chem\" is still referenced in projects of cluster queue \"all.q\""
        ),
        "{out:?}"
    );
    // A userset a project names cannot be deleted under it.
    assert_eq!(c.qconf(&["-au", "u1", "staff"]).code, 0);
    assert_eq!(
        c.qconf(&["-mattr", "project", "xacl", "staff", "chem"])
            .code,
        0
    );
    let out = c.qconf(&["-dul", "staff"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("userset \"staff\" is still referenced in project \"chem\""),
        "{out:?}"
    );
    ok(&c, &["-dattr", "queue", "projects", "chem", "all.q"]);
    let out = c.qconf(&["-dprj", "chem"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(c.qconf(&["-sprjl"]).code, 1);

    // The global host takes cluster-wide complex values.
    let out = c.qconf(&["-se", "global"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with("hostname              global\n"),
        "{out:?}"
    );
    let text = out.stdout.replace(
        "complex_values        NONE",
        "complex_values        slots=100",
    );
    let out = c.qconf(&["-Me", &write(&c, "global.e", &text)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(c
        .qconf(&["-se", "global"])
        .stdout
        .contains("complex_values        slots=100"));
}

#[test]
fn a_parallel_job_spans_hosts_by_its_allocation_rule_and_reads_its_pe_hostfile() {
    if !is_root() {
        skip_loudly(
            "a_parallel_job_spans_hosts_by_its_allocation_rule_and_reads_its_pe_hostfile",
            "network namespaces and test users need root",
        );
        return;
    }
    let (_, home) = ensure_user("gtuser1");
    let net = Netns::create(3);
    let mut c = Cluster::init(&[]);
    c.master_netns = Some(net.names[0].clone());
    c.start_master();
    c.fast_reports("0:0:10");
    let token = c.token();
    c.start_execd("node1", &net.addrs[0], Some(&token), Some(&net.names[1]));
    c.start_execd("node2", &net.addrs[0], Some(&token), Some(&net.names[2]));
    c.wait_host_reporting("node1");
    c.wait_host_reporting("node2");
    assert_eq!(c.qconf(&["-spl"]).stdout, "make\nmpi\nsmp\n");
    assert!(c
        .qconf(&["-sp", "smp"])
        .stdout
        .contains("allocation_rule    $pe_slots\n"));

    // A round-robin PE, offered by all.q (two slots per host).
    let pe = gantry_tests::pe_file(
        "rr",
        &[
            ("slots", "8"),
            ("allocation_rule", "$round_robin"),
            ("control_slaves", "TRUE"),
        ],
    );
    let out = c.qconf(&["-Ap", &write(&c, "rr.pe", &pe)]);
    assert_eq!(out.code, 0, "{out:?}");
    // SGE's qconf says it on stderr.
    assert!(
        out.stderr
            .contains("added \"rr\" to parallel environment list"),
        "{out:?}"
    );
    let bad = gantry_tests::pe_file("bad", &[("allocation_rule", "$sometimes")]);
    let out = c.qconf(&["-Ap", &write(&c, "bad.pe", &bad)]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("line 7: value \"$sometimes\""),
        "{out:?}"
    );
    for (attr, value) in [
        ("slots", "2"),
        ("pe_list", "make smp mpi rr"),
        ("load_thresholds", "NONE"),
    ] {
        // SGE's -mattr refuses NONE for a list: -rattr replaces it.
        let op = if value == "NONE" { "-rattr" } else { "-mattr" };
        let out = c.qconf(&[op, "queue", attr, value, "all.q"]);
        assert_eq!(out.code, 0, "{out:?}");
    }
    // Referenced by a queue: not deletable.
    let out = c.qconf(&["-dp", "rr"]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("parallel environment \"rr\" is still referenced in cluster queue \"all.q\""),
        "{out:?}"
    );

    let script = format!("{home}/pe.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat \"$PE_HOSTFILE\"\necho \"NSLOTS=$NSLOTS NHOSTS=$NHOSTS NQUEUES=$NQUEUES PE=$PE\"\n",
    )
    .unwrap();
    let out_file = format!("{home}/pe-{}.out", std::process::id());
    let _ = std::fs::remove_file(&out_file);
    let out = c.as_user(
        "gtuser1",
        "qsub",
        &[
            "-sync", "y", "-pe", "rr", "4", "-j", "y", "-o", &out_file, "-wd", &home, &script,
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let id = out.stdout.split_whitespace().nth(2).unwrap().to_string();
    let text = std::fs::read_to_string(&out_file).unwrap();
    assert!(text.contains("node1 2 all.q@node1 UNDEFINED\n"), "{text}");
    assert!(text.contains("node2 2 all.q@node2 UNDEFINED\n"), "{text}");
    assert!(
        text.contains("NSLOTS=4 NHOSTS=2 NQUEUES=2 PE=rr\n"),
        "{text}"
    );
    let acct = c.client("qacct", &["-j", &id]).stdout;
    assert!(
        acct.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["slots", "4"]),
        "{acct}"
    );

    // $pe_slots keeps a job on one host: 3 slots fit nowhere, and qstat -j says so.
    let out = c.as_user(
        "gtuser1",
        "qsub",
        &[
            "-terse",
            "-pe",
            "smp",
            "3",
            "-wd",
            "/tmp",
            "-b",
            "y",
            "/bin/true",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let smp = out.stdout.trim().to_string();
    let why = c.client("qstat", &["-j", &smp]).stdout;
    assert!(
        // No host takes all three: SGE's $pe_slots count is 0.
        why.contains("cannot run in PE \"smp\" because it only offers 0 slots"),
        "{why}"
    );
    let out = c.as_user(
        "gtuser1",
        "qsub",
        &["-pe", "nosuch", "2", "-b", "y", "/bin/true"],
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("job rejected: the requested parallel environment \"nosuch\" does not exist"),
        "{out:?}"
    );
    let out = c.client("qdel", &[&smp]);
    assert_eq!(out.code, 0, "{out:?}");
}

/// `qconf -Msconf` with one value changed, against what SGE 8.1.9 printed for the same
/// file (recorded from `../shared/tools/sge/` on 2026-11-28, its file name replaced):
/// refusals word for word with their exit status and nothing changed; values taken
/// and shown by `-ssconf` in SGE's form.
#[test]
fn scheduler_policy_attributes_are_checked_and_kept_as_sge_does() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let before = c.qconf(&["-ssconf"]).stdout;
    let with = |key: &str, value: &str| -> String {
        before
            .lines()
            .map(|l| match l.split_whitespace().next() {
                Some(k) if k == key => format!("{key:<34}{value}\n"),
                _ => format!("{l}\n"),
            })
            .collect()
    };
    // SGE's stderr, `FILE` for the file's name.
    let reading = |m: &str| {
        format!("error: {m}\nerror: error reading file: \"FILE\"\nerror reading in file\n")
    };
    let refused = |m: &str| format!("error: {m}\nerror reading in file\n");
    let cases = [
        (
            "policy_hierarchy",
            "XYZ",
            refused("Invalid policy hierarchy string. Disabling policy hierarchy."),
        ),
        (
            "policy_hierarchy",
            "OFSD",
            refused("Invalid policy hierarchy string. Disabling policy hierarchy."),
        ),
        (
            "halftime",
            "-1",
            reading("parameter \"halftime\" must be a positive number"),
        ),
        (
            "halftime",
            "abc",
            reading("error parsing unsigned long value from string \"abc\""),
        ),
        (
            "halftime",
            "1.5",
            reading("\"1.5\" is not an u_long32 value"),
        ),
        (
            "weight_tickets_share",
            "-1",
            reading("parameter \"weight_tickets_share\" must be a positive number"),
        ),
        (
            "max_functional_jobs_to_schedule",
            "abc",
            reading("error parsing unsigned long value from string \"abc\""),
        ),
        (
            "max_pending_tasks_per_job",
            "0",
            refused("invalid setting for param: \"max_pending_tasks_per_job\"(should be \">0\")"),
        ),
        (
            "compensation_factor",
            "abc",
            reading("error parsing double value from string \"abc\""),
        ),
        (
            "weight_urgency",
            "abc",
            reading("error parsing double value from string \"abc\""),
        ),
        (
            "share_override_tickets",
            "foo",
            reading("error parsing value \"foo\""),
        ),
        (
            "report_pjob_tickets",
            "foo",
            reading("error parsing value \"foo\""),
        ),
        (
            "schedule_interval",
            "soon",
            refused("attribute \"schedule_interval\" is not a time value"),
        ),
        (
            "halflife_decay_list",
            "foo",
            refused("Invalid halflife_day_list. Ignoring the setting."),
        ),
        (
            "algorithm",
            "foo",
            refused("attribute \"foo\" is not a valid algorithm name."),
        ),
    ];
    let file = c.home().join("sconf");
    let path = file.to_str().unwrap().to_string();
    for (key, value, want) in &cases {
        std::fs::write(&file, with(key, value)).unwrap();
        let out = c.qconf(&["-Msconf", &path]);
        assert_eq!(
            (
                out.code,
                out.stdout.as_str(),
                out.stderr.replace(&path, "FILE")
            ),
            (1, "", want.clone()),
            "{key} {value}"
        );
    }
    // An unknown attribute, a missing one, a file that is not there.
    std::fs::write(&file, format!("{before}nosuch 1\n")).unwrap();
    let out = c.qconf(&["-Msconf", &path]);
    assert_eq!(
        (out.code, out.stderr.replace(&path, "FILE")),
        (1, reading("unknown attribute name \"nosuch\""))
    );
    let without: String = before
        .lines()
        .filter(|l| !l.starts_with("halftime "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, without).unwrap();
    let out = c.qconf(&["-Msconf", &path]);
    assert_eq!(
        (out.code, out.stderr),
        (1, refused("required attribute \"halftime\" is missing"))
    );
    let out = c.qconf(&["-Msconf", "/nonexistent"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "error: error opening file \"/nonexistent\" for reading: No such file or directory\nerror reading in file\n"
        )
    );
    assert_eq!(
        c.qconf(&["-ssconf"]).stdout,
        before,
        "a refused file changes nothing"
    );
    // Taken, and shown as SGE shows them.
    for (key, value, shown) in [
        ("policy_hierarchy", "FSO", "FSO"),
        ("policy_hierarchy", "NONE", "NONE"),
        (
            "usage_weight_list",
            "cpu=0.5,mem=0.5,io=0",
            "cpu=0.500000,mem=0.500000,io=0.000000",
        ),
        ("usage_weight_list", "none", "NONE"),
        ("weight_user", "-1", "-1.000000"),
        ("share_override_tickets", "yes", "TRUE"),
        ("share_functional_shares", "0", "FALSE"),
        ("max_pending_tasks_per_job", "10", "10"),
    ] {
        std::fs::write(&file, with(key, value)).unwrap();
        let out = c.qconf(&["-Msconf", &path]);
        assert_eq!(out.code, 0, "{key} {value}: {out:?}");
        let now = c.qconf(&["-ssconf"]).stdout;
        assert!(
            now.contains(&format!("\n{key:<34}{shown}\n")),
            "{key} {value}: {now}"
        );
    }
}

/// User objects (`qconf -auser ... -duser`), against what SGE 8.1.9 printed for the same
/// commands (recorded from `../shared/tools/sge/` on 2026-11-28, file names replaced).
#[test]
fn user_objects_are_added_shown_modified_and_deleted_as_sge_does() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let file = c.home().join("user");
    let path = file.to_str().unwrap().to_string();
    let run = |c: &Cluster, args: &[&str]| {
        let o = c.qconf(args);
        (o.code, o.stdout, o.stderr.replace(&path, "FILE"))
    };
    let user = |name: &str, oticket: &str, project: &str| {
        format!(
            "name {name}\noticket {oticket}\nfshare 20\ndelete_time 0\ndefault_project {project}\n"
        )
    };
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or_else(|| "root".to_string(), |u| u.name)
        + "@head";
    assert_eq!(
        run(&c, &["-suserl"]),
        (1, String::new(), "no user list defined\n".into())
    );
    std::fs::write(&file, user("alice", "10", "NONE")).unwrap();
    assert_eq!(
        run(&c, &["-Auser", &path]),
        (
            0,
            format!("{me} added \"alice\" to user list\n"),
            String::new()
        )
    );
    assert_eq!(
        run(&c, &["-suser", "alice"]),
        (0, user("alice", "10", "NONE"), String::new())
    );
    assert_eq!(
        run(&c, &["-Auser", &path]),
        (1, String::new(), "user \"alice\" already exists\n".into())
    );
    assert_eq!(run(&c, &["-suserl"]), (0, "alice\n".into(), String::new()));
    // Refused files change nothing.
    for (text, want) in [
        (
            user("alice", "abc", "NONE"),
            "error: error parsing unsigned long value from string \"abc\"\nerror: error reading file: \"FILE\"\nerror reading in file\n",
        ),
        (
            user("alice", "-1", "NONE"),
            "error: parameter \"oticket\" must be a positive number\nerror: error reading file: \"FILE\"\nerror reading in file\n",
        ),
        (
            "name alice\nfshare 0\n".to_string(),
            "error: required attribute \"oticket\" is missing\nerror reading in file\n",
        ),
        (
            format!("{}foo 1\n", user("alice", "0", "NONE")),
            "error: unknown attribute name \"foo\"\nerror: error reading file: \"FILE\"\nerror reading in file\n",
        ),
        (
            user("bad/name", "0", "NONE"),
            "Slash ('/') not allowed in objectname\n",
        ),
        (
            user("alice", "0", "nosuchprj"),
            "denied: project \"nosuchprj\" does not exist\n",
        ),
    ] {
        std::fs::write(&file, &text).unwrap();
        assert_eq!(
            run(&c, &["-Muser", &path]),
            (1, String::new(), want.to_string()),
            "{text}"
        );
    }
    assert_eq!(run(&c, &["-suser", "alice"]).1, user("alice", "10", "NONE"));
    std::fs::write(&file, user("carol", "0", "NONE")).unwrap();
    assert_eq!(
        run(&c, &["-Muser", &path]),
        (1, String::new(), "carol is not known as a user\n".into())
    );
    std::fs::write(&file, user("alice", "5", "NONE")).unwrap();
    assert_eq!(
        run(&c, &["-Muser", &path]),
        (
            0,
            format!("{me} modified \"alice\" in user list\n"),
            String::new()
        )
    );
    assert_eq!(run(&c, &["-suser", "alice"]).1, user("alice", "5", "NONE"));
    assert_eq!(
        run(&c, &["-suser", "nosuch"]),
        (1, String::new(), "nosuch is not known as a user\n".into())
    );
    // A list naming one that is not there deletes nothing (SGE deletes the others).
    assert_eq!(
        run(&c, &["-duser", "alice,nosuch"]),
        (
            1,
            String::new(),
            "denied: user \"nosuch\" does not exist\n".into()
        )
    );
    assert_eq!(
        run(&c, &["-duser", "alice"]),
        (
            0,
            String::new(),
            format!("{me} removed \"alice\" from user list\n")
        )
    );
    assert_eq!(
        run(&c, &["-duser", "alice"]),
        (
            1,
            String::new(),
            "denied: user \"alice\" does not exist\n".into()
        )
    );
}

/// `enforce_user` in the global configuration, as SGE 8.1.9 does it (recorded from
/// `../shared/tools/sge/`): `auto` makes a user object at a user's first submission
/// (`delete_time` `auto_user_delete_time` seconds on), `true` refuses a user without
/// one, `false` neither.
#[test]
fn enforce_user_makes_or_requires_a_user_object_at_submission() {
    if !is_root() {
        skip_loudly(
            "enforce_user_makes_or_requires_a_user_object_at_submission",
            "submits as test users (runuser)",
        );
        return;
    }
    ensure_user("eu_u1");
    ensure_user("eu_u2");
    let mut c = Cluster::init(&[]);
    c.start_master();
    let set = |c: &Cluster, value: &str| {
        let conf = c.qconf(&["-sconf", "global"]).stdout;
        let changed: String = conf
            .lines()
            .map(|l| {
                if l.starts_with("enforce_user ") {
                    format!("enforce_user                 {value}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        // `-Mconf` takes the configuration's name from the file's.
        let dir = c.home().join("conf");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("global");
        std::fs::write(&file, changed).unwrap();
        assert_eq!(c.qconf(&["-Mconf", file.to_str().unwrap()]).code, 0);
    };
    // auto, the default: the first submission makes the object.
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let out = c.as_user("eu_u1", "qsub", &["-h", "-b", "y", "sleep", "60"]);
    assert_eq!(out.code, 0, "{out:?}");
    let shown = c.qconf(&["-suser", "eu_u1"]);
    assert_eq!(shown.code, 0, "{shown:?}");
    let delete_time: u64 = shown
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("delete_time "))
        .and_then(|t| t.parse().ok())
        .unwrap();
    assert!(
        (before + 86_400..=before + 86_400 + 60).contains(&delete_time),
        "{shown:?}"
    );
    assert_eq!(
        shown.stdout,
        format!(
            "name eu_u1\noticket 0\nfshare 0\ndelete_time {delete_time}\ndefault_project NONE\n"
        )
    );
    // true: a user without an object is refused, and nothing is written.
    set(&c, "true");
    let out = c.as_user("eu_u2", "qsub", &["-h", "-b", "y", "sleep", "60"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            1,
            "",
            "Unable to run job: job rejected: the user \"eu_u2\" does not exist\nExiting.\n"
        )
    );
    assert_eq!(c.qconf(&["-suserl"]).stdout, "eu_u1\n");
    assert_eq!(
        c.as_user("eu_u1", "qsub", &["-h", "-b", "y", "sleep", "60"])
            .code,
        0
    );
    // false: neither.
    set(&c, "false");
    let out = c.as_user("eu_u2", "qsub", &["-h", "-b", "y", "sleep", "60"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(c.qconf(&["-suserl"]).stdout, "eu_u1\n");
}

/// The share tree as SGE 8.1.9 reads, prints and refuses it
/// (`tests/fixtures/sge/fairshare/01_sharetree_qconf.txt`), kept across a restart.
#[test]
fn the_share_tree_is_added_shown_replaced_and_deleted_as_sge_does() {
    let mut c = Cluster::init(&[]);
    c.start_master();
    let file = c.home().join("tree");
    let path = file.to_str().unwrap().to_string();
    let run = |c: &Cluster, args: &[&str]| {
        let o = c.qconf(args);
        (o.code, o.stdout, o.stderr.replace(&path, "FILE"))
    };
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or_else(|| "root".to_string(), |u| u.name)
        + "@head";
    for (opt, text) in [
        (
            "-Auser",
            "name user1\noticket 0\nfshare 10\ndelete_time 0\ndefault_project NONE\n",
        ),
        (
            "-Auser",
            "name user2\noticket 0\nfshare 30\ndelete_time 0\ndefault_project NONE\n",
        ),
        (
            "-Aprj",
            "name proj1\noticket 0\nfshare 0\nacl NONE\nxacl NONE\n",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        assert_eq!(run(&c, &[opt, &path]).0, 0, "{text}");
    }
    for (opt, code, err) in [
        ("-sstree", 1, "no sharetree element\n"),
        ("-sst", 0, "No sharetree\n"),
        ("-dstree", 1, "sharetree does not exist\n"),
    ] {
        assert_eq!(
            run(&c, &[opt]),
            (code, String::new(), err.to_string()),
            "{opt}"
        );
    }
    let tree = "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=1,5,6\n\
id=1\nname=proj1\ntype=1\nshares=50\nchildnodes=2,4\n\
id=2\nname=staff\ntype=0\nshares=30\nchildnodes=3\n\
id=3\nname=default\ntype=0\nshares=20\nchildnodes=NONE\n\
id=4\nname=user1\ntype=0\nshares=10\nchildnodes=NONE\n\
id=5\nname=default\ntype=0\nshares=10\nchildnodes=NONE\n\
id=6\nname=user2\ntype=0\nshares=20\nchildnodes=NONE\n";
    std::fs::write(&file, tree).unwrap();
    assert_eq!(
        run(&c, &["-Astree", &path]),
        (0, String::new(), "changed sharetree\n".into())
    );
    assert_eq!(run(&c, &["-sstree"]), (0, tree.to_string(), String::new()));
    let view = "Root=1\n   proj1=50\n      staff=30\n         default=20\n      user1=10\n   default=10\n   user2=20\n";
    assert_eq!(run(&c, &["-sst"]), (0, view.to_string(), String::new()));
    // Refused files change nothing.
    let node = |id: u32, name: &str, t: u32, shares: &str, children: &str| {
        format!("id={id}\nname={name}\ntype={t}\nshares={shares}\nchildnodes={children}\n")
    };
    let root = |children: &str| node(0, "Root", 0, "1", children);
    for (text, want) in [
        (
            "id=0\nname=Root\ntype=0\nshares 1\nchildnodes=NONE\n".to_string(),
            "error: \"=\" is the only character allowed between the attribute name and the value in line 4\nerror: error reading file: \"FILE\"\nerror reading in file\n",
        ),
        (
            root("1") + &node(1, "user1", 0, "-5", "NONE"),
            "error: parameter \"shares\" must be a positive number\nerror: error reading file: \"FILE\"\nerror reading in file\n",
        ),
        (
            "name=Root\ntype=0\nshares=1\nchildnodes=NONE\n".to_string(),
            "error: required attribute \"id\" is missing\nerror reading in file\n",
        ),
        (
            root("1,7") + &node(1, "user1", 0, "10", "NONE"),
            "found reference to node 7 but no specification\n",
        ),
        (
            root("1,2") + &node(1, "user1", 0, "10", "NONE") + &node(2, "nosuchuser", 0, "10", "NONE"),
            "denied: share tree contains reference to unknown user/project \"nosuchuser\"\n",
        ),
        (
            root("1") + &node(1, "noproj", 1, "10", "NONE"),
            "denied: share tree contains reference to unknown user/project \"noproj\"\n",
        ),
        (
            root("1") + &node(1, "user1", 0, "10", "2") + &node(2, "user2", 0, "10", "NONE"),
            "found user \"user1\" in share tree as a non-leaf node\n",
        ),
        (
            root("1,2") + &node(1, "proj1", 1, "10", "NONE") + &node(2, "proj1", 1, "10", "NONE"),
            "denied: found node \"proj1\" twice under node \"Root\"\n",
        ),
    ] {
        std::fs::write(&file, &text).unwrap();
        for opt in ["-Astree", "-Mstree"] {
            assert_eq!(
                run(&c, &[opt, &path]),
                (1, String::new(), want.to_string()),
                "{opt} {text}"
            );
        }
    }
    assert_eq!(run(&c, &["-sst"]).1, view);
    // -mstree in the editor: unchanged is refused, a change replaces the tree.
    let edit = |c: &Cluster, editor: &str| {
        let out = std::process::Command::new(gantry_tests::bin("qconf"))
            .arg("-mstree")
            .env("GANTRY_HOME", c.home())
            .env("EDITOR", editor)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(
        edit(&c, "true"),
        (1, String::new(), "file unchanged\n".into())
    );
    assert_eq!(
        edit(&c, "sed -i s/^shares=30$/shares=40/"),
        (0, String::new(), "changed sharetree\n".into())
    );
    c.stop_master(nix::sys::signal::Signal::SIGTERM);
    c.start_master();
    assert_eq!(run(&c, &["-sst"]).1, view.replace("staff=30", "staff=40"));
    assert_eq!(
        run(&c, &["-dstree"]),
        (0, String::new(), format!("{me} removed sharetree list\n"))
    );
    // Without a tree the editor gets SGE's template.
    assert_eq!(
        edit(&c, "true"),
        (1, String::new(), "file unchanged\n".into())
    );
    assert_eq!(
        edit(&c, "sed -i s/template/Root/"),
        (0, String::new(), "changed sharetree\n".into())
    );
    assert_eq!(run(&c, &["-sst"]).1, "Root=0\n");
}
