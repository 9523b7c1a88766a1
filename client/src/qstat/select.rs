//! Which jobs and queue instances `qstat` lists: `-s`'s states and holds, and the
//! queue selection (`-q`, `-qs`, `-U`, `-pe`, `-l`) the master makes.

use std::collections::HashSet;

use gantry_proto::{Holds, JobId, JobState, JobViewRef, QueuesSelected};

/// `-s {p|r|s|z|hu|ho|hs|hd|hj|ha|h|a}`, as SGE's qstat reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateFilter {
    pending: bool,
    running: bool,
    suspended: bool,
    zombies: bool,
    /// The holds a pending job must have one of (none asked: any pending job).
    holds: Holds,
}

impl Default for StateFilter {
    /// Without `-s`: pending, running and suspended jobs.
    fn default() -> Self {
        StateFilter {
            pending: true,
            running: true,
            suspended: true,
            zombies: false,
            holds: Holds::NONE,
        }
    }
}

impl StateFilter {
    /// SGE's reading: its flags tried in turn at the point reached, longer ones before
    /// the one-letter `h`, and anything no flag starts with an error.
    pub fn parse(text: &str) -> Option<StateFilter> {
        const ALL_HOLDS: Holds = Holds(0x3f);
        let flags: [(&str, Holds); 12] = [
            ("hu", Holds::USER),
            ("hs", Holds::SYSTEM),
            ("ho", Holds::OPERATOR),
            ("hd", Holds::ARRAY_DEPENDENCY),
            ("hj", Holds::JOB_DEPENDENCY),
            ("ha", Holds::START_TIME),
            ("h", ALL_HOLDS),
            ("p", Holds::NONE),
            ("r", Holds::NONE),
            ("s", Holds::NONE),
            ("z", Holds::NONE),
            ("a", Holds::NONE),
        ];
        let mut f = StateFilter {
            pending: false,
            running: false,
            suspended: false,
            zombies: false,
            holds: Holds::NONE,
        };
        let mut rest = text;
        while !rest.is_empty() {
            let mut matched = false;
            for (flag, holds) in flags {
                let Some(after) = rest.strip_prefix(flag) else {
                    continue;
                };
                rest = after;
                matched = true;
                f.holds = f.holds.with(holds, true);
                match flag {
                    "r" => f.running = true,
                    "s" => f.suspended = true,
                    "z" => f.zombies = true,
                    "a" => {
                        f.pending = true;
                        f.running = true;
                        f.suspended = true;
                    }
                    _ => f.pending = true,
                }
            }
            if !matched {
                return None;
            }
        }
        Some(f)
    }

    pub fn zombies(&self) -> bool {
        self.zombies
    }

    /// Is a row in this state listed?
    pub fn shows(&self, state: JobState) -> bool {
        match state {
            JobState::Pending { holds } => {
                self.pending && (!self.holds.any() || holds.0 & self.holds.0 != 0)
            }
            JobState::Error => self.pending && !self.holds.any(),
            JobState::Running | JobState::Transferring | JobState::Deleting => self.running,
            JobState::Suspended | JobState::QueueSuspended => self.suspended,
            JobState::Zombie => self.zombies,
        }
    }
}

/// The queue instances (and pending jobs) a queue selection leaves.
#[derive(Debug, Default)]
pub struct Selection {
    instances: HashSet<String>,
    /// Pending jobs are listed only if they could run in a selected instance (`-q`,
    /// `-U`, `-pe`, `-l`; not `-qs`).
    fitting: Option<HashSet<JobId>>,
    /// SGE's closing line when `-U` or `-pe` left no instance.
    pub closing: Option<String>,
}

impl Selection {
    pub fn new(selected: QueuesSelected, pending_filtered: bool) -> Selection {
        Selection {
            instances: selected.instances.into_iter().collect(),
            fitting: pending_filtered.then(|| selected.fitting_jobs.into_iter().collect()),
            closing: selected
                .emptied_by
                .map(|o| format!("error: no queues remaining after {o} queue selection\n")),
        }
    }

    pub fn has_instance(&self, instance: &str) -> bool {
        self.instances.contains(instance)
    }

    pub fn instances(&self) -> &HashSet<String> {
        &self.instances
    }

    /// Is a row listed: a running one in a selected instance, a pending one that fits.
    pub fn shows(&self, j: &JobViewRef) -> bool {
        match j.queue {
            Some(q) => self.instances.contains(q),
            None => self.fitting.as_ref().is_none_or(|f| f.contains(&j.job_id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_letters_read_as_sges() {
        let pending = |holds: Holds| JobState::Pending { holds };
        // (-s, shown: qw, hqw(user), hqw(operator), qw(start time), r, s, z, Eqw)
        let table: &[(&str, [bool; 8])] = &[
            ("p", [true, true, true, true, false, false, false, true]),
            ("r", [false, false, false, false, true, false, false, false]),
            ("s", [false, false, false, false, false, true, false, false]),
            ("z", [false, false, false, false, false, false, true, false]),
            (
                "hu",
                [false, true, false, false, false, false, false, false],
            ),
            (
                "ho",
                [false, false, true, false, false, false, false, false],
            ),
            (
                "ha",
                [false, false, false, true, false, false, false, false],
            ),
            ("h", [false, true, true, true, false, false, false, false]),
            (
                "huho",
                [false, true, true, false, false, false, false, false],
            ),
            (
                "phu",
                [false, true, false, false, false, false, false, false],
            ),
            ("a", [true, true, true, true, true, true, false, true]),
            ("pr", [true, true, true, true, true, false, false, true]),
            ("rz", [false, false, false, false, true, false, true, false]),
        ];
        let states = [
            pending(Holds::NONE),
            pending(Holds::USER),
            pending(Holds::OPERATOR),
            pending(Holds::START_TIME),
            JobState::Running,
            JobState::Suspended,
            JobState::Zombie,
            JobState::Error,
        ];
        for (text, shown) in table {
            let f = StateFilter::parse(text).expect(text);
            let got: Vec<bool> = states.iter().map(|s| f.shows(*s)).collect();
            assert_eq!(&got[..], &shown[..], "-s {text}");
        }
        for bad in ["x", "hx", "px", "H", "-"] {
            assert_eq!(StateFilter::parse(bad), None, "-s {bad}");
        }
        let default = StateFilter::default();
        assert!(default.shows(JobState::Suspended) && !default.shows(JobState::Zombie));
    }
}
