//! Mail about a job (`qsub -m b|e|a|s -M list`), sent by the execd through the cluster's
//! `mailer` as SGE's execd sends it: `mailer -s SUBJECT RECIPIENT`, the message on its
//! standard input, once per recipient. The mailer runs as the job's owner (SGE runs it
//! as the execd's user), so that nothing a job's name or addresses say ever runs with
//! the execd's rights; it gets a minute, as in SGE.

use gantry_common::mail::{self, About, Ending, Mail};
use gantry_common::value::format_time_hms;
use gantry_proto::{JobReport, JobStart};
use nix::sys::signal::Signal;
use tracing::{info, warn};

use crate::shepherd::Account;

/// What the mails of one task need, kept from its start to its end.
#[derive(Debug, Clone)]
pub struct Plan {
    pub options: String,
    pub mailer: String,
    pub recipients: Vec<String>,
    pub job_id: gantry_proto::JobId,
    pub array_task: Option<gantry_proto::TaskId>,
    pub name: String,
    pub owner: String,
    /// The queue instance (`all.q@node1`).
    pub queue: String,
    pub host: String,
    pub submit_time: i64,
    pub start_time: i64,
    pub uid: u32,
    pub gid: u32,
    pub account: Option<Account>,
}

impl Plan {
    /// The plan for a task, if its job asks for mail and the master gave a mailer.
    pub fn of(start: &JobStart, account: Option<Account>, start_time: i64) -> Option<Plan> {
        let options = &start.spec.mail_options;
        if options.is_empty() || options.contains('n') {
            return None;
        }
        let mailer = start
            .queue_settings
            .iter()
            .find(|(k, _)| k == "mailer")
            .map(|(_, v)| v.clone())?;
        Some(Plan {
            options: options.clone(),
            mailer,
            recipients: mail::recipients(
                &start.spec.mail_list,
                &start.owner.user,
                &start.spec.submit_host,
            ),
            job_id: start.job_id,
            array_task: start.spec.array.map(|_| start.task_id),
            name: start.spec.name.clone(),
            owner: start.owner.user.clone(),
            queue: start.queue.clone(),
            host: start.host.clone(),
            submit_time: start.submit_time,
            start_time,
            uid: start.owner.uid,
            gid: start.owner.gid,
            account,
        })
    }

    fn about<'a>(&'a self, queue: &'a str) -> About<'a> {
        About {
            job_id: self.job_id,
            array_task: self.array_task,
            name: &self.name,
            owner: &self.owner,
            queue,
            host: &self.host,
        }
    }

    /// The cluster queue's name (`all.q`), as SGE's start mail names it.
    fn cluster_queue(&self) -> &str {
        self.queue.split('@').next().unwrap_or(&self.queue)
    }

    /// `-m b`: the task started.
    pub fn started(&self) {
        if mail::wanted(&self.options, 'b') {
            let m = mail::started(&self.about(self.cluster_queue()), &ctime(self.start_time));
            self.send(m, "job start");
        }
    }

    /// `-m e` when the job ran, `-m a` (or `e`) when it could not.
    pub fn ended(&self, report: &JobReport) {
        let failed = report.failed != 0;
        let wanted = if failed {
            mail::wanted(&self.options, 'a') || mail::wanted(&self.options, 'e')
        } else {
            mail::wanted(&self.options, 'e')
        };
        if !wanted {
            return;
        }
        let secs = |us: u64| us as f64 / 1e6;
        let cpu = secs(report.utime_us + report.stime_us);
        let ending = Ending {
            start: ctime(report.start_time),
            end: ctime(report.end_time),
            user_time: format_time_hms(secs(report.utime_us)),
            system_time: format_time_hms(secs(report.stime_us)),
            wallclock: format_time_hms((report.end_time - report.start_time).max(0) as f64),
            cpu: if cpu == 0.0 {
                "NA".to_string()
            } else {
                format_time_hms(cpu)
            },
            // Gantry measures the largest resident set, not virtual memory.
            max_vmem: "NA".to_string(),
            exit_status: report.exit_status,
            signal: report
                .signal
                .and_then(|s| Signal::try_from(s).ok())
                .map_or_else(
                    || "unknown signal".to_string(),
                    |s| s.as_str().trim_start_matches("SIG").to_string(),
                ),
        };
        let about = self.about(&report.queue);
        if failed {
            let failure = report.shepherd_failure();
            let state = failure.map_or("<unknown reason>", |f| f.description());
            let error_state = failure.is_some_and(|f| f.is_job_error());
            let m = mail::aborted(&about, &ending, error_state, state, &report.failure);
            self.send(m, "job abortion/end");
        } else {
            let m = mail::completed(&about, &ending);
            self.send(m, "job completion");
        }
    }

    /// `-m s`: the task was suspended or continued.
    pub fn suspension(&self, suspended: bool) {
        if mail::wanted(&self.options, 's') {
            let m = mail::suspension(
                &self.about(&self.queue),
                suspended,
                &ctime(self.submit_time),
                &ctime(self.start_time),
            );
            self.send(
                m,
                if suspended {
                    "job suspend"
                } else {
                    "job continue"
                },
            );
        }
    }

    /// Hand the mail to the mailer, once per recipient, off the caller's thread.
    fn send(&self, m: Mail, kind: &'static str) {
        for to in &self.recipients {
            info!(
                job = %self.job_id,
                "sending {kind} mail to user \"{to}\"|mailer \"{}\"|\"{}\"", self.mailer, m.subject
            );
            let mut command = self.mailer_command(to, &m);
            let mailer = self.mailer.clone();
            let mut body = m.body.clone().into_bytes();
            body.truncate(32 * 1024);
            let job = self.job_id;
            tokio::spawn(async move {
                if let Err(e) = gantry_net::mailer::run(&mut command, &body).await {
                    warn!(job = %job, "mailer \"{mailer}\": {e}");
                }
            });
        }
    }

    /// The mailer's command: as the job's owner.
    fn mailer_command(&self, to: &str, m: &Mail) -> tokio::process::Command {
        let (home, name) = match &self.account {
            Some(a) => (a.home.clone(), a.name.clone()),
            None => ("/".to_string(), self.owner.clone()),
        };
        let user = gantry_net::mailer::MailUser {
            uid: self.uid,
            gid: self.gid,
            name,
            home,
        };
        gantry_net::mailer::command(&self.mailer, to, &m.subject, &user)
    }
}

/// A time of day as SGE's mails print it: `MM/DD/YYYY hh:mm:ss`, local time.
pub fn ctime(secs: i64) -> String {
    if secs == 0 {
        // A task that never started.
        return "-/-".to_string();
    }
    jiff::Timestamp::from_second(secs)
        .map(|t| {
            t.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%m/%d/%Y %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|_| "<unknown>".to_string())
}
