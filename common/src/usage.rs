//! Usage for the share-tree policy: the CPU, memory and I/O the jobs of each user and
//! project used, decayed with the scheduler configuration's `halftime` as
//! `sched_conf(5)` describes it ("a radioactive-type exponential decay"), each kind
//! that `halflife_decay_list` names by its own half-life, and what of
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

    /// Each kind multiplied by the same kind of `factors`.
    pub fn times(&self, factors: &Amounts) -> Amounts {
        Amounts {
            cpu: self.cpu * factors.cpu,
            mem: self.mem * factors.mem,
            io: self.io * factors.io,
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

/// One of SGE's decay constants: what is left of a usage value per minute (SGE's
/// usage interval) with a half-life of `minutes` (`sge_support.c`): nothing left for
/// a negative half-life, everything for 0 (no decay), otherwise `1 - ln 2 / minutes`,
/// within 0.002 % of halving every half-life (0.4999881 after a week with the
/// default 168 hours). A half-life shorter than ln 2 minutes keeps nothing (SGE's
/// negative constant makes its `pow` a NaN).
pub fn decay_constant(minutes: f64) -> f64 {
    if minutes < 0.0 {
        0.0
    } else if minutes == 0.0 {
        1.0
    } else {
        (1.0 - std::f64::consts::LN_2 / minutes).max(0.0)
    }
}

/// How fast each kind of usage decays, as the scheduler configuration says: the
/// default from `halftime` (hours), a kind that `halflife_decay_list` names
/// (`cpu=M:mem=M:io=M`, minutes) by its own half-life, as SGE 8.1.9's code does it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decay {
    /// Each kind's decay constant (see [`decay_constant`]).
    pub per_minute: Amounts,
}

impl Decay {
    /// Usage that never decays (`halftime 0`, no list).
    pub const NONE: Decay = Decay {
        per_minute: Amounts {
            cpu: 1.0,
            mem: 1.0,
            io: 1.0,
        },
    };

    /// The decay of `halftime` (hours) and `halflife_decay_list` (`none` or
    /// `name=minutes:...`; names other than `cpu`, `mem` and `io` are kinds Gantry
    /// does not measure, and an entry that is no number is left out: the
    /// configuration was checked when it was written).
    pub fn new(halftime_hours: f64, halflife_decay_list: &str) -> Decay {
        let default = decay_constant(halftime_hours * 60.0);
        let mut per_minute = Amounts::new(default, default, default);
        let list = halflife_decay_list.trim();
        if !list.eq_ignore_ascii_case("none") {
            for item in list.split(':') {
                let Some((name, minutes)) = item.split_once('=') else {
                    continue;
                };
                let Ok(minutes) = minutes.trim().parse::<f64>() else {
                    continue;
                };
                match name.trim() {
                    "cpu" => per_minute.cpu = decay_constant(minutes),
                    "mem" => per_minute.mem = decay_constant(minutes),
                    "io" => per_minute.io = decay_constant(minutes),
                    _ => {}
                }
            }
        }
        Decay { per_minute }
    }

    /// The decay of a single half-life of `halftime` seconds for every kind.
    pub fn halftime(seconds: f64) -> Decay {
        Decay::new(seconds.max(0.0) / 3600.0, "none")
    }

    /// What is left of each kind after `elapsed` seconds (everything when no time
    /// passed).
    pub fn factors(&self, elapsed: f64) -> Amounts {
        if elapsed <= 0.0 {
            return Decay::NONE.per_minute;
        }
        let left = |c: f64| {
            if c >= 1.0 {
                1.0
            } else {
                c.powf(elapsed / 60.0)
            }
        };
        Amounts::new(
            left(self.per_minute.cpu),
            left(self.per_minute.mem),
            left(self.per_minute.io),
        )
    }
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
    pub fn decayed_at(&self, now: i64, decay: &Decay) -> Amounts {
        self.decayed.times(&decay.factors((now - self.at) as f64))
    }

    /// `delta` used by `now`: what there was decayed to `now`, plus `delta`.
    pub fn add(&mut self, delta: &Amounts, now: i64, decay: &Decay) {
        let at = now.max(self.at);
        self.decayed = self.decayed_at(at, decay).plus(delta);
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
    pub fn charge(&self, charges: &[Charge<'_>], now: i64, decay: &Decay) -> Charged {
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
                record.add(&delta, now, decay);
            }
        }
        out
    }

    /// The decayed usage of `of` as of `now` (nothing if it has none).
    pub fn decayed(&self, of: &UsageOf, now: i64, decay: &Decay) -> Amounts {
        self.records
            .get(of)
            .map(|u| u.decayed_at(now, decay))
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
            let left = Decay::halftime(halftime).factors(elapsed);
            assert!(
                (left.cpu - want).abs() < within,
                "{elapsed} {halftime}: {left:?}"
            );
            assert_eq!((left.cpu, left.cpu), (left.mem, left.io));
        }
    }

    #[test]
    fn halflife_decay_list_gives_each_kind_its_own_half_life() {
        const LN2: f64 = std::f64::consts::LN_2;
        // (halftime hours, list, after seconds, what is left of cpu, mem, io)
        let minute = 60.0;
        let cases: [(f64, &str, f64, [f64; 3]); 7] = [
            // No list: every kind by halftime (1 hour: a minute decays by 1 - ln2/60).
            (1.0, "none", minute, [1.0 - LN2 / 60.0; 3]),
            // cpu by one minute: 1 - ln 2 per minute, the rest by the hour.
            (
                1.0,
                "cpu=1",
                minute,
                [1.0 - LN2, 1.0 - LN2 / 60.0, 1.0 - LN2 / 60.0],
            ),
            // Two minutes of a two-minute half-life: (1 - ln2/2)^2, about a half.
            (
                0.0,
                "cpu=2:mem=0:io=2",
                2.0 * minute,
                [0.42697, 1.0, 0.42697],
            ),
            // A negative half-life keeps nothing; 0 decays nothing (halftime 0 too).
            (
                168.0,
                "mem=-1:io=0",
                minute,
                [1.0 - LN2 / 10080.0, 0.0, 1.0],
            ),
            // Shorter than ln 2 minutes: nothing is left (SGE's constant is below 0).
            (0.0, "cpu=0.5", minute, [0.0, 1.0, 1.0]),
            // Names Gantry does not measure change nothing.
            (0.0, "finished_jobs=-1:cpu=1", minute, [1.0 - LN2, 1.0, 1.0]),
            // No time passed: everything is left whatever the list.
            (1.0, "cpu=-1", 0.0, [1.0, 1.0, 1.0]),
        ];
        for (hours, list, elapsed, want) in cases {
            let left = Decay::new(hours, list).factors(elapsed);
            for (got, want) in [left.cpu, left.mem, left.io].into_iter().zip(want) {
                assert!(
                    (got - want).abs() < 1e-4,
                    "{hours} {list} {elapsed}: {left:?}"
                );
            }
        }
        // 4 CPU seconds under a one-minute half-life are below 2.25 within a minute
        // (what the end-to-end test waits for) and about 1 s after two.
        let mut u = Usage::default();
        let decay = Decay::new(168.0, "cpu=1");
        u.add(&Amounts::new(4.0, 0.0, 0.0), 0, &decay);
        assert!(u.decayed_at(60, &decay).cpu < 2.25);
        assert!((u.decayed_at(120, &decay).cpu - 4.0 * 0.306853_f64.powi(2)).abs() < 1e-3);
        assert_eq!(u.long_term.cpu, 4.0);
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
            let c = book.charge(&[charge(cpu, finished)], 1000, &Decay::NONE);
            apply(&mut book, c);
        }
        let alice = book.decayed(&UsageOf::User("alice".into()), 1000, &Decay::NONE);
        assert_eq!(alice, Amounts::new(30.0, 60.0, 0.0));
        assert_eq!(
            book.decayed(&UsageOf::Project("chem".into()), 1000, &Decay::NONE),
            alice
        );
        assert_eq!(
            book.decayed(
                &UsageOf::UserInProject {
                    user: "alice".into(),
                    project: "chem".into()
                },
                1000,
                &Decay::NONE
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
        let hour = Decay::halftime(HOUR);
        let mut u = Usage::default();
        u.add(&Amounts::new(100.0, 0.0, 0.0), 0, &hour);
        u.add(&Amounts::new(100.0, 0.0, 0.0), 3600, &hour);
        // 100 about halved once, plus 100: about 150 at one hour, 75 at two.
        let f = hour.factors(3600.0).cpu;
        assert!((u.decayed_at(3600, &hour).cpu - (100.0 * f + 100.0)).abs() < 1e-9);
        assert!((u.decayed_at(7200, &hour).cpu - (100.0 * f + 100.0) * f).abs() < 1e-9);
        assert!((u.decayed_at(7200, &hour).cpu - 75.0).abs() < 1.0);
        assert_eq!(u.long_term.cpu, 200.0);
        // A charge stamped earlier than the record decays nothing back.
        u.add(&Amounts::new(10.0, 0.0, 0.0), 10, &hour);
        assert!((u.decayed_at(3600, &hour).cpu - (100.0 * f + 110.0)).abs() < 1e-9);
    }
}
