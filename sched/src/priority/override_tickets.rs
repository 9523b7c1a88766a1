//! The override policy: the `oticket` of users, projects and departments and a job's
//! own (`qalter -ot`), shared among their jobs (`share_override_tickets`) or given whole
//! to each.

use super::{Holders, PolicyConf, PolicyJob, Ref};

/// Running refs: an object's override tickets divided equally among its running refs
/// (or each given all of them), plus the job's own.
pub(crate) fn running(
    conf: &PolicyConf,
    jobs: &[PolicyJob<'_>],
    holders: &Holders,
    refs: &mut [Ref],
) {
    for r in refs.iter_mut() {
        let own = f64::from(jobs[r.job].override_tickets);
        let objects: f64 = holders
            .of(r)
            .into_iter()
            .flatten()
            .filter(|h| h.oticket > 0.0)
            .map(|h| {
                if !conf.share_override_tickets {
                    h.oticket
                } else if h.job_cnt > 0 {
                    h.oticket / f64::from(h.job_cnt)
                } else {
                    0.0
                }
            })
            .sum();
        r.ot = objects + own;
    }
}

/// Pending refs, in the policy's turn: without sharing each gets the whole of its
/// objects' tickets; with sharing they are handed out one job at a time, each pending
/// job getting what it would have as the next of its objects' jobs to start.
pub(crate) fn pending(
    conf: &PolicyConf,
    jobs: &[PolicyJob<'_>],
    holders: &mut Holders,
    refs: &mut [Ref],
    dependent: bool,
) {
    let eligible = |r: &Ref, holders: &Holders| {
        jobs[r.job].override_tickets > 0
            || holders.of(r).into_iter().flatten().any(|h| h.oticket > 0.0)
    };
    if !conf.share_override_tickets {
        for r in refs.iter_mut() {
            let sum: f64 = holders.of(r).into_iter().flatten().map(|h| h.oticket).sum();
            r.ot = sum + f64::from(jobs[r.job].override_tickets);
            if dependent {
                r.acc += r.ot;
            }
        }
        return;
    }
    // Categories of refs with the same tickets to share: same own tickets and the same
    // objects holding some.
    let key = |r: &Ref, holders: &Holders| {
        let has = |i: Option<usize>, list: &[super::Holder]| i.filter(|&i| list[i].oticket > 0.0);
        (
            jobs[r.job].override_tickets,
            has(r.user, &holders.users),
            has(r.department, &holders.departments),
            has(r.project, &holders.projects),
        )
    };
    let mut categories = super::functional::Categories::new(refs, jobs, dependent, |r| {
        eligible(r, holders).then(|| key(r, holders))
    });
    let mut raised: Vec<usize> = Vec::new();
    loop {
        // Each category's first ref, as the next of its objects' jobs to start.
        let mut best: Option<(usize, usize, f64)> = None;
        for (c, i) in categories.heads() {
            let r = &refs[i];
            let est = holders
                .of(r)
                .into_iter()
                .flatten()
                .filter(|h| h.oticket > 0.0)
                .map(|h| h.oticket / f64::from(h.job_cnt + 1))
                .sum::<f64>()
                + f64::from(jobs[r.job].override_tickets);
            let better = match best {
                None => true,
                // Ties: the lower job id, then the lower task id.
                Some((_, b, e)) => {
                    est > e
                        || (est == e
                            && (jobs[r.job].id, r.task) < (jobs[refs[b].job].id, refs[b].task))
                }
            };
            if better {
                best = Some((c, i, est));
            }
        }
        let Some((c, winner, est)) = best else { break };
        categories.pop(c);
        let r = &mut refs[winner];
        r.ot = est;
        r.acc += est;
        holders.raise(r, 1);
        raised.push(winner);
    }
    for i in raised {
        holders.raise(&refs[i], -1);
    }
}
