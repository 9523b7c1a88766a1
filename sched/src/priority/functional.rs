//! The functional policy: `weight_tickets_functional` divided by the functional shares
//! (`fshare`) of users, projects and departments and the jobs' own (`-js`), weighted by
//! `weight_user`, `weight_project`, `weight_department` and `weight_job`.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use super::{Holder, Holders, PolicyConf, PolicyJob, Ref};

/// Pending refs grouped by what they share, each group in the order its refs are
/// served: by the tickets earlier policies gave (dependent), else as listed.
pub(crate) struct Categories {
    lists: Vec<VecDeque<usize>>,
}

impl Categories {
    pub(crate) fn new<K: Eq + Hash>(
        refs: &[Ref],
        jobs: &[PolicyJob<'_>],
        dependent: bool,
        key: impl Fn(&Ref) -> Option<K>,
    ) -> Categories {
        let mut by_key: HashMap<K, usize, foldhash::fast::RandomState> = HashMap::default();
        let mut lists: Vec<Vec<usize>> = Vec::new();
        for (i, r) in refs.iter().enumerate() {
            let Some(k) = key(r) else { continue };
            let c = *by_key.entry(k).or_insert_with(|| {
                lists.push(Vec::new());
                lists.len() - 1
            });
            lists[c].push(i);
        }
        if dependent {
            for list in &mut lists {
                list.sort_by(|&a, &b| {
                    let (ra, rb) = (&refs[a], &refs[b]);
                    let (ja, jb) = (&jobs[ra.job], &jobs[rb.job]);
                    rb.acc
                        .total_cmp(&ra.acc)
                        .then(ja.submit_time.cmp(&jb.submit_time))
                        .then(ja.id.cmp(&jb.id))
                        .then(ra.task.cmp(&rb.task))
                });
            }
        }
        Categories {
            lists: lists.into_iter().map(VecDeque::from).collect(),
        }
    }

    /// Every category's first ref: (category, ref).
    pub(crate) fn heads(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.lists
            .iter()
            .enumerate()
            .filter_map(|(c, l)| l.front().map(|&r| (c, r)))
    }

    /// Take a category's first ref; its next (if any) is the new first.
    pub(crate) fn pop(&mut self, category: usize) -> Option<usize> {
        self.lists[category].pop_front()
    }

    pub(crate) fn head(&self, category: usize) -> Option<usize> {
        self.lists[category].front().copied()
    }

    /// How many refs are left in all.
    pub(crate) fn len(&self) -> usize {
        self.lists.iter().map(VecDeque::len).sum()
    }

    /// Every category's first ref and the refs after it.
    pub(crate) fn rest(&self) -> Vec<(usize, Vec<usize>)> {
        self.lists
            .iter()
            .filter_map(|l| l.front().map(|&h| (h, l.iter().skip(1).copied().collect())))
            .collect()
    }
}

/// The functional shares of a ref's user, project and department: each object's
/// `fshare`, divided among its running jobs when `share_functional_shares` (None where
/// the ref has no such object).
fn object_shares(conf: &PolicyConf, holders: &Holders, r: &Ref) -> [Option<f64>; 3] {
    holders.of(r).map(|h| {
        h.map(|h: &Holder| {
            if conf.share_functional_shares && h.job_cnt > 0 {
                h.fshare / f64::from(h.job_cnt)
            } else {
                h.fshare
            }
        })
    })
}

/// The sums of shares over running refs: (user, project, department, job).
fn running_sums(
    conf: &PolicyConf,
    jobs: &[PolicyJob<'_>],
    holders: &Holders,
    refs: &[Ref],
) -> [f64; 4] {
    let mut s = [0.0; 4];
    for r in refs {
        for (k, f) in object_shares(conf, holders, r).into_iter().enumerate() {
            s[k] += f.unwrap_or(0.0);
        }
        s[3] += f64::from(jobs[r.job].job_share);
    }
    s
}

/// `weight_tickets_functional` times the weighted share of each kind.
fn tickets(conf: &PolicyConf, w: &[f64; 4], f: &[Option<f64>; 4], s: &[f64; 4]) -> f64 {
    (0..4)
        .map(|k| match f[k] {
            Some(f) if s[k] > 0.0 => w[k] * f * conf.tickets_functional / s[k],
            _ => 0.0,
        })
        .sum()
}

/// Running refs: the shares of the kinds in use, their weights made to add up to one,
/// so the running jobs' tickets add up to `weight_tickets_functional`.
pub(crate) fn running(
    conf: &PolicyConf,
    jobs: &[PolicyJob<'_>],
    holders: &Holders,
    refs: &mut [Ref],
) {
    let s = running_sums(conf, jobs, holders, refs);
    let configured = [
        conf.weight_user,
        conf.weight_project,
        conf.weight_department,
        conf.weight_job,
    ];
    let mut w = [0.0; 4];
    for k in 0..4 {
        if s[k] > 0.0 {
            w[k] = configured[k];
        }
    }
    let sum: f64 = w.iter().sum();
    if sum > 0.0 {
        for x in &mut w {
            *x /= sum;
        }
    }
    for r in refs.iter_mut() {
        let [u, p, d] = object_shares(conf, holders, r);
        let f = [u, p, d, Some(f64::from(jobs[r.job].job_share))];
        r.ft = tickets(conf, &w, &f, &s);
    }
}

/// Pending refs, in the policy's turn: one at a time, the one that would get most as
/// the next to start (`max_functional_jobs_to_schedule` of them), each getting what it
/// would have beside the running jobs and those chosen before it; the others what the
/// first of their category was estimated to get.
pub(crate) fn pending(
    conf: &PolicyConf,
    jobs: &[PolicyJob<'_>],
    holders: &mut Holders,
    running_refs: &[Ref],
    refs: &mut [Ref],
    dependent: bool,
) {
    if conf.tickets_functional <= 0.0 {
        return;
    }
    let mut s = running_sums(conf, jobs, holders, running_refs);
    let configured = [
        conf.weight_user,
        conf.weight_project,
        conf.weight_department,
        conf.weight_job,
    ];
    let total: f64 = configured.iter().sum();
    let w = if total > 0.0 {
        configured.map(|x| x / total)
    } else {
        configured
    };
    let shared = conf.share_functional_shares;
    let key = |r: &Ref| {
        let has = |i: Option<usize>, list: &[Holder]| i.filter(|&i| list[i].fshare > 0.0);
        let k = (
            jobs[r.job].job_share,
            has(r.user, &holders.users),
            has(r.department, &holders.departments),
            has(r.project, &holders.projects),
        );
        (k.0 > 0 || k.1.is_some() || k.2.is_some() || k.3.is_some()).then_some(k)
    };
    let mut categories = Categories::new(refs, jobs, dependent, key);
    let rounds = conf.max_functional_jobs_to_schedule.min(categories.len());
    let mut winners: Vec<usize> = Vec::with_capacity(rounds);
    let mut heads: Vec<(usize, usize)> = Vec::new();
    for _ in 0..rounds {
        let mut best: Option<(usize, usize, f64)> = None;
        heads.clear();
        heads.extend(categories.heads());
        for &(c, i) in &heads {
            let r = &refs[i];
            // What it would get as the next to start (for the order only).
            let mut f = [None; 4];
            let mut sums = [0.0; 4];
            for (k, h) in holders.of(r).into_iter().enumerate() {
                if let Some(h) = h {
                    let fk = if shared {
                        h.fshare / f64::from(h.job_cnt + 1)
                    } else {
                        h.fshare
                    };
                    f[k] = Some(fk);
                    sums[k] = s[k] + 0.001 + if shared { 0.0 } else { fk };
                }
            }
            let js = f64::from(jobs[r.job].job_share);
            f[3] = Some(js);
            sums[3] = s[3] + 0.001 + js;
            let est = tickets(conf, &w, &f, &sums);
            refs[i].ft = est;
            let key = est + if dependent { refs[i].acc } else { 0.0 };
            let better = match best {
                None => true,
                Some((_, b, bkey)) => {
                    let (ra, rb) = (&refs[i], &refs[b]);
                    let (ja, jb) = (&jobs[ra.job], &jobs[rb.job]);
                    key > bkey
                        || (key == bkey
                            && (ja.submit_time, ja.id, ra.task) < (jb.submit_time, jb.id, rb.task))
                }
            };
            if better {
                best = Some((c, i, key));
            }
        }
        let Some((c, winner, _)) = best else { break };
        categories.pop(c);
        if let Some(next) = categories.head(c) {
            refs[next].ft = refs[winner].ft;
        }
        holders.raise(&refs[winner], 1);
        let r = &refs[winner];
        let mut f = [None; 4];
        for (k, h) in holders.of(r).into_iter().enumerate() {
            if let Some(h) = h {
                let fk = if shared {
                    h.fshare / f64::from(h.job_cnt.max(1))
                } else {
                    h.fshare
                };
                f[k] = Some(fk);
                if !shared || h.job_cnt <= 1 {
                    s[k] += fk;
                }
            }
        }
        let js = f64::from(jobs[r.job].job_share);
        f[3] = Some(js);
        s[3] += js;
        refs[winner].ft = tickets(conf, &w, &f, &s);
        winners.push(winner);
    }
    for &i in &winners {
        holders.raise(&refs[i], -1);
        if dependent {
            refs[i].acc += refs[i].ft;
        }
    }
    for (head, others) in categories.rest() {
        let ft = refs[head].ft;
        for i in others {
            refs[i].ft = ft;
            if dependent {
                refs[i].acc += ft;
            }
        }
    }
}
