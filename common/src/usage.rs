//! Usage for the share-tree policy: the CPU, memory and I/O the jobs of each user and
//! project used, decayed with the scheduler configuration's `halftime` as
//! `sched_conf(5)` describes it ("a radioactive-type exponential decay"), and what of
//! each running task's measurements has been counted already, so that a measurement
//! that comes again (after a reconnect, a restart) is never counted twice.
//!
//! Plain values and arithmetic: the master keeps the book, the scheduler reads it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use gantry_proto::{JobId, TaskId};

/// An amount of each kind of usage: CPU seconds, memory in GB seconds, I/O in GB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Amounts {
    pub cpu: f64,
    pub mem: f64,
    pub io: f64,
}

impl Amounts {
    pub fn new(cpu: f64, mem: f64, io: f64) -> Amounts {
        Amounts { cpu, mem, io }
    }

    /// `usage_weight_list` applied: one usage value.
    pub fn weighted(&self, weights: &Amounts) -> f64 {
        self.cpu * weights.cpu + self.mem * weights.mem + self.io * weights.io
    }

    /// What `self` (a later cumulative measurement) adds to `counted`, never less than
    /// nothing (a measurement that went back counts nothing).
    pub fn beyond(&self, counted: &Amounts) -> Amounts {
        Amounts {
            cpu: (self.cpu - counted.cpu).max(0.0),
            mem: (self.mem - counted.mem).max(0.0),
            io: (self.io - counted.io).max(0.0),
        }
    }

    /// The larger of each kind.
    pub fn max(&self, other: &Amounts) -> Amounts {
        Amounts {
            cpu: self.cpu.max(other.cpu),
            mem: self.mem.max(other.mem),
            io: self.io.max(other.io),
        }
    }

    pub fn plus(&self, other: &Amounts) -> Amounts {
        Amounts {
            cpu: self.cpu + other.cpu,
            mem: self.mem + other.mem,
            io: self.io + other.io,
        }
    }

    pub fn scaled(&self, factor: f64) -> Amounts {
        Amounts {
            cpu: self.cpu * factor,
            mem: self.mem * factor,
            io: self.io * factor,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.cpu == 0.0 && self.mem == 0.0 && self.io == 0.0
    }
}

/// How much of a usage value is left after `elapsed` seconds with a half-life of
/// `halftime` seconds: 1 without decay (`halftime` 0) or when no time passed. As SGE
/// 8.1.9 decays it (`sge_support.c`): per minute by `1 - ln 2 / halftime_minutes`,
/// which is within 0.002 % of halving every `halftime` (0.4999881 after a week with
/// the default 168 hours).
pub fn decay_factor(elapsed: f64, halftime: f64) -> f64 {
    if halftime <= 0.0 || elapsed <= 0.0 {
        return 1.0;
    }
    let per_minute = 1.0 - std::f64::consts::LN_2 / (halftime / 60.0);
    if per_minute <= 0.0 {
        return 0.0;
    }
    per_minute.powf(elapsed / 60.0)
}

/// Whose usage a record is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum UsageOf {
    User(String),
    Project(String),
    /// A user's usage within one project (a user's node under a project's in the share
    /// tree counts this).
    UserInProject {
        user: String,
        project: String,
    },
}

impl UsageOf {
    /// The record's spool key.
    pub fn key(&self) -> String {
        match self {
            UsageOf::User(u) => format!("usage/user/{u}"),
            UsageOf::Project(p) => format!("usage/project/{p}"),
            UsageOf::UserInProject { user, project } => {
                format!("usage/user-project/{user}/{project}")
            }
        }
    }
}

/// One user's or project's usage: decayed (as of `at`, Unix seconds) and long-term
/// (never decayed), as `sge_share_mon` shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub decayed: Amounts,
    pub at: i64,
    pub long_term: Amounts,
}

impl Usage {
    /// The decayed usage as of `now`.
    pub fn decayed_at(&self, now: i64, halftime: f64) -> Amounts {
        self.decayed
            .scaled(decay_factor((now - self.at) as f64, halftime))
    }

    /// `delta` used by `now`: what there was decayed to `now`, plus `delta`.
    pub fn add(&mut self, delta: &Amounts, now: i64, halftime: f64) {
        let at = now.max(self.at);
        self.decayed = self.decayed_at(at, halftime).plus(delta);
        self.at = at;
        self.long_term = self.long_term.plus(delta);
    }
}

/// Every user's and project's usage, and what of each running task's measurements is
/// counted in it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageBook {
    pub records: BTreeMap<UsageOf, Usage>,
    /// Per running task, the cumulative measurement counted so far.
    pub counted: BTreeMap<(JobId, TaskId), Amounts>,
}

/// One task's cumulative measurement to charge to its owner and project.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge<'a> {
    pub job: JobId,
    pub task: TaskId,
    pub user: &'a str,
    pub project: Option<&'a str>,
    pub measured: Amounts,
    /// The task ended: nothing more will be measured (its count is forgotten).
    pub finished: bool,
}

/// What charging changes in the book: records to put and task counts to put or forget.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Charged {
    pub records: BTreeMap<UsageOf, Usage>,
    pub counted: BTreeMap<(JobId, TaskId), Amounts>,
    pub forgotten: Vec<(JobId, TaskId)>,
}

impl UsageBook {
    /// What the charges change (the book itself is left as it is: the caller commits
    /// the change, and the commit applies it). Each charge adds what its measurement
    /// has beyond what was counted of its task, decayed to `now` before.
    pub fn charge(&self, charges: &[Charge<'_>], now: i64, halftime: f64) -> Charged {
        let mut out = Charged::default();
        for c in charges {
            let key = (c.job, c.task);
            let counted = out
                .counted
                .get(&key)
                .or_else(|| self.counted.get(&key))
                .copied()
                .unwrap_or_default();
            let delta = c.measured.beyond(&counted);
            if c.finished {
                out.counted.remove(&key);
                out.forgotten.push(key);
            } else if !delta.is_zero() || !self.counted.contains_key(&key) {
                out.counted.insert(key, c.measured.max(&counted));
            }
            if delta.is_zero() {
                continue;
            }
            let mut whose = vec![UsageOf::User(c.user.to_string())];
            if let Some(p) = c.project {
                whose.push(UsageOf::Project(p.to_string()));
                whose.push(UsageOf::UserInProject {
                    user: c.user.to_string(),
                    project: p.to_string(),
                });
            }
            for of in whose {
                let record = out
                    .records
                    .entry(of.clone())
                    .or_insert_with(|| self.records.get(&of).copied().unwrap_or_default());
                record.add(&delta, now, halftime);
            }
        }
        out
    }

    /// The decayed usage of `of` as of `now` (nothing if it has none).
    pub fn decayed(&self, of: &UsageOf, now: i64, halftime: f64) -> Amounts {
        self.records
            .get(of)
            .map(|u| u.decayed_at(now, halftime))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: f64 = 3600.0;

    #[test]
    fn usage_halves_every_halftime_and_not_at_all_without_one() {
        // SGE's own figures (docs/dev/sge-priority-notes.md, 5.4): halftime 168 hours,
        // a week and a day.
        let week = 7.0 * 86_400.0;
        let cases = [
            (0.0, 3600.0, 1.0, 1e-12),
            (week, 168.0 * 3600.0, 0.4999881, 1e-7),
            (86_400.0, 168.0 * 3600.0, 0.9057206, 1e-7),
            (3600.0, 3600.0, 0.5, 1e-2),
            (7200.0, 3600.0, 0.25, 1e-2),
            (1.0e9, 0.0, 1.0, 1e-12),
            (-5.0, 3600.0, 1.0, 1e-12),
        ];
        for (elapsed, halftime, want, within) in cases {
            assert!(
                (decay_factor(elapsed, halftime) - want).abs() < within,
                "{elapsed} {halftime}: {}",
                decay_factor(elapsed, halftime)
            );
        }
    }

    #[test]
    fn a_measurement_is_counted_once_whatever_comes_again() {
        let mut book = UsageBook::default();
        let charge = |cpu: f64, finished: bool| Charge {
            job: JobId(7),
            task: TaskId(1),
            user: "alice",
            project: Some("chem"),
            measured: Amounts::new(cpu, 2.0 * cpu, 0.0),
            finished,
        };
        let apply = |book: &mut UsageBook, c: Charged| {
            book.records.extend(c.records);
            book.counted.extend(c.counted);
            for k in c.forgotten {
                book.counted.remove(&k);
            }
        };
        // 10 s, the same report again (a reconnect), 25 s, an older one, the end at 30.
        for (cpu, finished) in [
            (10.0, false),
            (10.0, false),
            (25.0, false),
            (20.0, false),
            (30.0, true),
        ] {
            let c = book.charge(&[charge(cpu, finished)], 1000, 0.0);
            apply(&mut book, c);
        }
        let alice = book.decayed(&UsageOf::User("alice".into()), 1000, 0.0);
        assert_eq!(alice, Amounts::new(30.0, 60.0, 0.0));
        assert_eq!(
            book.decayed(&UsageOf::Project("chem".into()), 1000, 0.0),
            alice
        );
        assert_eq!(
            book.decayed(
                &UsageOf::UserInProject {
                    user: "alice".into(),
                    project: "chem".into()
                },
                1000,
                0.0
            ),
            alice
        );
        assert!(
            book.counted.is_empty(),
            "a finished task's count is forgotten"
        );
    }

    #[test]
    fn what_was_used_decays_from_when_it_was_counted() {
        let mut u = Usage::default();
        u.add(&Amounts::new(100.0, 0.0, 0.0), 0, HOUR);
        u.add(&Amounts::new(100.0, 0.0, 0.0), 3600, HOUR);
        // 100 about halved once, plus 100: about 150 at one hour, 75 at two.
        let f = decay_factor(3600.0, HOUR);
        assert!((u.decayed_at(3600, HOUR).cpu - (100.0 * f + 100.0)).abs() < 1e-9);
        assert!((u.decayed_at(7200, HOUR).cpu - (100.0 * f + 100.0) * f).abs() < 1e-9);
        assert!((u.decayed_at(7200, HOUR).cpu - 75.0).abs() < 1.0);
        assert_eq!(u.long_term.cpu, 200.0);
        // A charge stamped earlier than the record decays nothing back.
        u.add(&Amounts::new(10.0, 0.0, 0.0), 10, HOUR);
        assert!((u.decayed_at(3600, HOUR).cpu - (100.0 * f + 110.0)).abs() < 1e-9);
    }
}
