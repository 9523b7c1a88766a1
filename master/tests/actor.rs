//! The Cluster actor in-process: a real cell (CA, join token, spool) in a temporary
//! directory, the real actor on an actix system, a clock the test sets, and execds
//! whose orders go into a channel the test reads (the recording sink of the master's
//! effects). What is checked: a dispatch is durable before an execd hears of it; an
//! order lost with a connection is sent again when the execd says what it runs; a task
//! report is acknowledged every time it comes and accounted once; host liveness
//! follows the master's clock.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use actix::prelude::*;
use gantry_master::cell::{self, InitOptions};
use gantry_master::cluster::{
    ClientCall, Clock, Cluster, ExecdJobs, Join, Load, Register, SessionEnded,
};
use gantry_master::sched::Time;
use gantry_master::store::Store;
use gantry_net::cell::MasterPaths;
use gantry_net::tls::{certs_from_pem, fingerprint, generate_host_key, Ca};
use gantry_proto::{
    Caller, FromMaster, JobId, JobReport, LoadValue, TaskId, ToExecd, ToMaster, Verify,
};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// When the test's clock starts: 2026-11-25 00:00:00 UTC.
const T0: i64 = 1_795_564_800;

struct TestCell {
    dir: tempfile::TempDir,
}

impl TestCell {
    fn new() -> TestCell {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("cell");
        cell::init(
            &home,
            &InitOptions {
                port: 0,
                hostname: Some("master".into()),
                token_ttl_secs: 3600,
            },
        )
        .unwrap();
        TestCell { dir }
    }

    fn paths(&self) -> MasterPaths {
        MasterPaths::new(&self.dir.path().join("cell"))
    }

    /// The master on this cell, on `clock` (call inside an actix system).
    fn start(&self, clock: &Clock) -> Addr<Cluster> {
        let paths = self.paths();
        let read = |p: std::path::PathBuf| std::fs::read_to_string(p).unwrap();
        let ca = Ca::load(&read(paths.ca_cert()), &read(paths.ca_key())).unwrap();
        let store = Store::open(&paths.spool(), false).unwrap();
        Cluster::new(store, paths, ca, "master")
            .unwrap()
            .with_clock(clock.clone())
            .start()
    }
}

fn root() -> Caller {
    Caller {
        user: "root".into(),
        uid: 0,
        gid: 0,
        host: "master".into(),
    }
}

/// A user who may submit (above SGE's default `min_uid` of 1000), on every machine.
fn nobody() -> Caller {
    Caller {
        user: "nobody".into(),
        uid: 65534,
        gid: 65534,
        host: "master".into(),
    }
}

async fn ask_as(cluster: &Addr<Cluster>, caller: Caller, request: ToMaster) -> FromMaster {
    cluster.send(ClientCall { caller, request }).await.unwrap()
}

async fn ask(cluster: &Addr<Cluster>, request: ToMaster) -> FromMaster {
    ask_as(cluster, root(), request).await
}

async fn submit(cluster: &Addr<Cluster>) -> JobId {
    // `qsub -b y /bin/true`, from /.
    let mut spec = gantry_master::synthetic::job(0, "nobody", &[], &[]).spec;
    spec.cwd = Some("/".into());
    spec.submit_host = "master".into();
    let reply = ask_as(
        cluster,
        nobody(),
        ToMaster::Submit {
            spec: Box::new(spec),
            verify: Verify::default(),
        },
    )
    .await;
    let FromMaster::Submitted { job_id, .. } = reply else {
        panic!("submission refused: {reply:?}");
    };
    job_id
}

async fn jobs(cluster: &Addr<Cluster>) -> Vec<gantry_proto::JobView> {
    match ask(
        cluster,
        ToMaster::ShowJobs {
            users: vec!["*".into()],
        },
    )
    .await
    {
        FromMaster::Jobs(v) => v,
        other => panic!("qstat: {other:?}"),
    }
}

/// An execd of the test: joined with the cell's token, its orders in a channel.
struct Execd {
    host: String,
    fingerprint: String,
    session: u64,
    orders: UnboundedReceiver<ToExecd>,
}

impl Execd {
    async fn join(cluster: &Addr<Cluster>, cell: &TestCell, host: &str) -> Execd {
        let token = cell::read_token(&cell.paths()).unwrap().text();
        let (_key_pem, public_key) = generate_host_key().unwrap();
        let joined = cluster
            .send(Join {
                token,
                hostname: host.into(),
                public_key,
                peer: "127.0.0.1:9".parse().unwrap(),
                from_masters_machine: false,
            })
            .await
            .unwrap()
            .unwrap();
        let ToExecd::Joined { host_cert_pem, .. } = joined else {
            panic!("join: {joined:?}");
        };
        let der = certs_from_pem(&host_cert_pem).unwrap().remove(0);
        let mut execd = Execd {
            host: host.into(),
            fingerprint: hex::encode(fingerprint(der.as_ref())),
            session: 0,
            orders: unbounded_channel().1,
        };
        execd.connect(cluster).await;
        execd
    }

    /// A new session (the first, or after a cut), and a load report.
    async fn connect(&mut self, cluster: &Addr<Cluster>) {
        let (to_execd, orders) = unbounded_channel();
        self.session += 1;
        self.orders = orders;
        cluster
            .send(Register {
                fingerprint: self.fingerprint.clone(),
                claimed_hostname: self.host.clone(),
                session_id: self.session,
                conn: None,
                to_execd,
            })
            .await
            .unwrap()
            .unwrap();
        let values = [
            ("arch", "lx-amd64"),
            ("num_proc", "2"),
            ("np_load_avg", "0.00"),
            ("mem_free", "4G"),
        ]
        .iter()
        .map(|(n, v)| LoadValue {
            name: n.to_string(),
            value: v.to_string(),
        })
        .collect();
        cluster
            .send(Load {
                host: self.host.clone(),
                values,
            })
            .await
            .unwrap();
    }

    /// The next order that is not a settings update, within 10 s.
    async fn next_order(&mut self) -> ToExecd {
        loop {
            let order = tokio::time::timeout(Duration::from_secs(10), self.orders.recv())
                .await
                .expect("an order within 10 s")
                .expect("the master keeps the session");
            if !matches!(order, ToExecd::Settings { .. }) {
                return order;
            }
        }
    }

    /// Orders waiting now, settings updates left out.
    fn waiting_orders(&mut self) -> Vec<ToExecd> {
        let mut out = Vec::new();
        while let Ok(order) = self.orders.try_recv() {
            if !matches!(order, ToExecd::Settings { .. }) {
                out.push(order);
            }
        }
        out
    }
}

fn started(order: ToExecd) -> (JobId, TaskId) {
    match order {
        ToExecd::StartJob(start) => (start.job_id, start.task_id),
        other => panic!("expected a start order, got {other:?}"),
    }
}

#[test]
fn a_dispatch_is_durable_before_the_execd_hears_of_it() {
    let cell = TestCell::new();
    let clock = Clock::manual(Time::from_secs(T0));
    let id = System::new().block_on(async {
        let cluster = cell.start(&clock);
        let mut execd = Execd::join(&cluster, &cell, "node1").await;
        let id = submit(&cluster).await;
        assert_eq!(started(execd.next_order().await), (id, TaskId(1)));
        id
        // The system ends here without a shutdown: the master is gone as in a crash.
    });
    // A master restarted on the same spool knows the task the execd was told to start,
    // and when: the test's clock, not the time of day.
    let clock = Clock::manual(Time::from_secs(T0 + 60));
    System::new().block_on(async {
        let cluster = cell.start(&clock);
        let views = jobs(&cluster).await;
        assert_eq!(views.len(), 1, "{views:?}");
        let job = &views[0];
        assert_eq!(job.job_id, id);
        assert_eq!(job.queue.as_deref(), Some("all.q@node1"));
        assert_eq!((job.submit_time, job.start_time), (T0, Some(T0)));
    });
}

#[test]
fn an_order_lost_with_a_connection_is_sent_again_and_only_then() {
    let cell = TestCell::new();
    let clock = Clock::manual(Time::from_secs(T0));
    System::new().block_on(async {
        let cluster = cell.start(&clock);
        let mut execd = Execd::join(&cluster, &cell, "node1").await;
        let id = submit(&cluster).await;
        assert_eq!(started(execd.next_order().await), (id, TaskId(1)));
        // The connection is cut before the execd started the task; it comes back and
        // says it runs nothing: the order comes again.
        cluster
            .send(SessionEnded {
                host: "node1".into(),
                session_id: execd.session,
                reason: "cut".into(),
            })
            .await
            .unwrap();
        execd.connect(&cluster).await;
        cluster
            .send(ExecdJobs::Running {
                host: "node1".into(),
                tasks: Vec::new(),
                pe_tasks: Vec::new(),
            })
            .await
            .unwrap();
        assert_eq!(started(execd.next_order().await), (id, TaskId(1)));
        // Cut again after it started the task: it says so, and nothing is sent again.
        execd.connect(&cluster).await;
        cluster
            .send(ExecdJobs::Running {
                host: "node1".into(),
                tasks: vec![(id, TaskId(1))],
                pe_tasks: Vec::new(),
            })
            .await
            .unwrap();
        // The actor answers in order: whatever it sent for the report is queued before
        // this answer.
        jobs(&cluster).await;
        assert_eq!(execd.waiting_orders(), Vec::new());
    });
}

#[test]
fn a_report_is_acknowledged_each_time_and_accounted_once() {
    let cell = TestCell::new();
    let clock = Clock::manual(Time::from_secs(T0));
    System::new().block_on(async {
        let cluster = cell.start(&clock);
        let mut execd = Execd::join(&cluster, &cell, "node1").await;
        let id = submit(&cluster).await;
        assert_eq!(started(execd.next_order().await), (id, TaskId(1)));
        let report = JobReport {
            job_id: id,
            task_id: TaskId(1),
            host: "node1".into(),
            queue: "all.q".into(),
            exit_status: 0,
            signal: None,
            failed: 0,
            failure: String::new(),
            start_time: T0,
            end_time: T0 + 7,
            utime_us: 1_000,
            stime_us: 2_000,
            maxrss_kb: 1_024,
            accounted: Default::default(),
            checkpointed: false,
            pe_task: None,
        };
        // The execd sends its report; the acknowledgement is lost with the
        // connection, so it sends the report again on the next one.
        for _ in 0..2 {
            cluster
                .send(ExecdJobs::Finished {
                    host: "node1".into(),
                    report: Box::new(report.clone()),
                })
                .await
                .unwrap();
            assert_eq!(
                execd.next_order().await,
                ToExecd::ReportAck {
                    job_id: id,
                    task_id: TaskId(1),
                    pe_task: None,
                }
            );
            execd.connect(&cluster).await;
        }
        let FromMaster::Accounting(records) =
            ask(&cluster, ToMaster::Accounting { job: None }).await
        else {
            panic!("qacct refused");
        };
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(
            (records[0].job_id, records[0].report.end_time),
            (id, T0 + 7)
        );
        assert_eq!(jobs(&cluster).await, Vec::new());
    });
}

#[test]
fn host_liveness_follows_the_masters_clock() {
    let cell = TestCell::new();
    let clock = Clock::manual(Time::from_secs(T0));
    System::new().block_on(async {
        let cluster = cell.start(&clock);
        let _execd = Execd::join(&cluster, &cell, "node1").await;
        let reachable = |reply: FromMaster| match reply {
            FromMaster::Hosts(report) => report
                .hosts
                .iter()
                .find(|h| h.name == "node1")
                .map(|h| h.reachable),
            other => panic!("qhost: {other:?}"),
        };
        assert_eq!(
            reachable(ask(&cluster, ToMaster::HostInfo).await),
            Some(true)
        );
        // SGE's default max_unheard is 5 minutes.
        clock.set(Time::from_secs(T0 + 300));
        assert_eq!(
            reachable(ask(&cluster, ToMaster::HostInfo).await),
            Some(true)
        );
        clock.set(Time::from_secs(T0 + 301));
        assert_eq!(
            reachable(ask(&cluster, ToMaster::HostInfo).await),
            Some(false)
        );
    });
}
