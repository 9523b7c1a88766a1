//! Hierarchical group quotas: how much of the cluster each group of the tree may have
//! this cycle (its allocation), from the tree, the groups' demand and the pool.
//!
//! HTCondor's negotiator decides this (read in `src/condor_negotiator.V6/GroupEntry.cpp`
//! of the HTCondor sources: `hgq_assign_quotas`, `hgq_fairshare`,
//! `hgq_allocate_surplus`, `hgq_recover_remainders`); Gantry does what it does, in these
//! steps, and says where it chooses otherwise:
//!
//! 1. **Quotas.** The root `<none>` has the pool (the cluster's weighted slots). Top
//!    down, a node's static children get their configured quotas (scaled down together
//!    only if they exceed the node's, which the tree's rules allow only under a
//!    proportional node), its proportional children share what is left, each its
//!    fraction (fractions summing over 1 scaled down together), and the node keeps for
//!    its own jobs what its children did not get: the children's quotas are subtracted
//!    from an interior node's, so a static interior quota is the subtree's total. (This
//!    is HTCondor with `NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION` false; its default,
//!    true, double-counts interior quotas and relies on a separate check to cap them.)
//! 2. **Fair share.** Bottom up, each group is allocated what it asks for up to its
//!    quota; what it leaves unused (its surplus) goes up to its parent, whether or not
//!    it accepts surplus. At each interior node the surplus gathered from its subtree is
//!    shared among the node itself (for its own jobs, weighed by its own quota) and
//!    those of its children that accept surplus (weighed by their subtree's quota, their
//!    demand that of their subtree's accepting part): proportionally to the weights,
//!    each capped at what it still asks for, again until nothing is left or nobody asks;
//!    what zero-quota claimants still ask for is then shared equally. A child's share is
//!    handed down its subtree the same way. What the root cannot hand out stays unused.
//! 3. **Whole slots.** With integral weights (the default: a job weighs its slots),
//!    every allocation is rounded down and the fractions pooled, and the whole units
//!    of the pool are handed out one by one to groups that still ask for one, largest
//!    fraction first (then larger quota, then name): deterministic, where HTCondor
//!    takes the group served longest ago, which needs the history of earlier cycles. No
//!    unit takes a group that does not accept surplus (with its subtree) beyond its
//!    quota.
//!
//! The result does not depend on the order the groups were declared in: they are taken
//! in name order. Allocation rounds (HTCondor's `GROUP_QUOTA_MAX_ALLOCATION_ROUNDS`)
//! belong to the cycle: after a round of placing, a group that could not use its
//! allocation asks for what it got, and the allocation is computed again.

use std::collections::HashMap;

use gantry_common::groups::{declared_group, parent, ROOT};
use gantry_proto::{GroupEntry, GroupQuota};

/// Below this, an amount is nothing (float sums of shares).
const EPSILON: f64 = 1e-9;

/// One group's part of a cycle's allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupShare {
    /// Its path, or `<none>` for the root.
    pub name: String,
    /// Its quota this cycle, in weighted slots: for an interior group, what its
    /// children left it for its own jobs.
    pub quota: f64,
    /// Its quota with its subtree's.
    pub subtree_quota: f64,
    /// What its own jobs ask for (running and pending, weighted).
    pub demand: f64,
    /// What its own jobs hold (filled in by the cycle: at its start, and in what it
    /// hands out with its decisions once its starts are made; 0 from [`allocate`]).
    pub running: f64,
    /// What its own jobs may have this cycle.
    pub allocation: f64,
    /// What it got beyond its quota from others' surplus.
    pub surplus: f64,
    pub accept_surplus: bool,
    pub autoregroup: bool,
}

/// The allocation of one cycle: the root first, then every group in name order.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    pub groups: Vec<GroupShare>,
    /// The pool the root started with, and what no group could use.
    pub pool: f64,
    pub unused: f64,
}

impl Allocation {
    pub fn get(&self, name: &str) -> Option<&GroupShare> {
        self.groups.iter().find(|g| g.name == name)
    }
}

#[derive(Debug)]
struct Node {
    config: Option<GroupQuota>,
    accept_surplus: bool,
    children: Vec<usize>,
    subtree_quota: f64,
    quota: f64,
    demand: f64,
    /// What it still asks for.
    left: f64,
    allocation: f64,
}

/// A claimant of surplus at one node: the node itself or one of its children.
#[derive(Debug, Clone, Copy)]
enum Claimant {
    Own,
    Child(usize),
}

/// What each group's jobs ask for: `jobs` gives each job's account string (`-A`) and
/// weight; a job counts in the declared group its account names (by path, or path and
/// user), else in the root.
pub fn demand_by_group<'a>(
    tree: &[GroupEntry],
    jobs: impl Iterator<Item = (&'a str, f64)>,
) -> HashMap<String, f64> {
    let declared: std::collections::HashSet<&str> = tree.iter().map(|g| g.name.as_str()).collect();
    let mut out: HashMap<String, f64> = HashMap::new();
    for (account, weight) in jobs {
        let group = declared_group(account, |n| declared.contains(n)).unwrap_or(ROOT);
        match out.get_mut(group) {
            Some(d) => *d += weight,
            None => {
                out.insert(group.to_string(), weight);
            }
        }
    }
    out
}

/// The allocation for `tree` (groups by path; any order) with `demand` per group name
/// (`<none>` for the root's own jobs; unknown names ignored) over `pool` weighted
/// slots; `integral`: hand out whole slots (step 3).
pub fn allocate(
    tree: &[GroupEntry],
    demand: &HashMap<String, f64>,
    pool: f64,
    integral: bool,
) -> Allocation {
    let mut entries: Vec<&GroupEntry> = tree.iter().collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let mut names: Vec<&str> = vec![ROOT];
    names.extend(entries.iter().map(|g| g.name.as_str()));
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut nodes: Vec<Node> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let entry = (i > 0).then(|| entries[i - 1]);
            let d = demand.get(*name).copied().unwrap_or(0.0).max(0.0);
            Node {
                config: entry.map(|g| g.quota),
                accept_surplus: entry.is_none_or(|g| g.accept_surplus),
                children: Vec::new(),
                subtree_quota: 0.0,
                quota: 0.0,
                demand: d,
                left: d,
                allocation: 0.0,
            }
        })
        .collect();
    for (i, name) in names.iter().enumerate().skip(1) {
        // A group whose parent is missing hangs from the root (the tree's rules
        // refuse such a tree; the function stays total).
        let p = index.get(parent(name)).copied().unwrap_or(0);
        nodes[p].children.push(i);
    }
    assign_quotas(&mut nodes, 0, pool.max(0.0));
    let mut unused = fair_share(&mut nodes, 0);
    if integral {
        let parents: Vec<usize> = names
            .iter()
            .map(|name| index.get(parent(name)).copied().unwrap_or(0))
            .collect();
        unused = whole_slots(&mut nodes, &names, &parents, unused);
    }
    let groups = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let n = &nodes[i];
            GroupShare {
                name: name.to_string(),
                quota: n.quota,
                subtree_quota: n.subtree_quota,
                demand: n.demand,
                running: 0.0,
                allocation: n.allocation,
                surplus: (n.allocation - n.demand.min(n.quota)).max(0.0),
                accept_surplus: n.accept_surplus,
                autoregroup: i > 0 && entries[i - 1].autoregroup,
            }
        })
        .collect();
    Allocation {
        groups,
        pool: pool.max(0.0),
        unused: unused.max(0.0),
    }
}

/// Step 1: node `n`'s subtree has `q`; its children get theirs, it keeps the rest.
fn assign_quotas(nodes: &mut [Node], n: usize, q: f64) {
    nodes[n].subtree_quota = q;
    let children = nodes[n].children.clone();
    let (mut statics, mut fractions) = (0.0, 0.0);
    for &c in &children {
        match nodes[c].config {
            Some(GroupQuota::Static(s)) => statics += s as f64,
            Some(GroupQuota::Proportional(f)) => fractions += f,
            None => {}
        }
    }
    let static_pool = statics.min(q);
    let proportional_pool = (q - static_pool).max(0.0);
    let mut given = 0.0;
    for c in children {
        let cq = match nodes[c].config {
            Some(GroupQuota::Static(s)) if statics > 0.0 => s as f64 * static_pool / statics,
            Some(GroupQuota::Proportional(f)) => proportional_pool * f / fractions.max(1.0),
            _ => 0.0,
        };
        given += cq;
        assign_quotas(nodes, c, cq);
    }
    nodes[n].quota = (q - given).max(0.0);
}

/// Step 2 for node `n`'s subtree: what it leaves unused, for its parent.
fn fair_share(nodes: &mut [Node], n: usize) -> f64 {
    let node = &mut nodes[n];
    node.allocation = node.demand.min(node.quota);
    node.left = node.demand - node.allocation;
    let mut surplus = node.quota - node.allocation;
    let children = node.children.clone();
    if children.is_empty() {
        return surplus;
    }
    for c in children {
        surplus += fair_share(nodes, c);
    }
    hand_down(nodes, n, surplus)
}

/// What node `n`'s subtree still asks for, as far as surplus reaches it: its own, and
/// that of the children that accept surplus.
fn subtree_left(nodes: &[Node], n: usize) -> f64 {
    nodes[n].left
        + nodes[n]
            .children
            .iter()
            .filter(|&&c| nodes[c].accept_surplus)
            .map(|&c| subtree_left(nodes, c))
            .sum::<f64>()
}

/// Share `s` within node `n`'s subtree (the node and its accepting children); what is
/// left over.
fn hand_down(nodes: &mut [Node], n: usize, s: f64) -> f64 {
    if s <= EPSILON {
        return s.max(0.0);
    }
    let mut claimants = vec![(Claimant::Own, nodes[n].quota, nodes[n].left)];
    for &c in &nodes[n].children {
        if nodes[c].accept_surplus {
            claimants.push((
                Claimant::Child(c),
                nodes[c].subtree_quota,
                subtree_left(nodes, c),
            ));
        }
    }
    let shares = split(s, &claimants);
    let mut left = s;
    for ((who, _, _), share) in claimants.into_iter().zip(shares) {
        if share <= 0.0 {
            continue;
        }
        left -= share;
        match who {
            Claimant::Own => {
                nodes[n].allocation += share;
                nodes[n].left -= share;
            }
            Claimant::Child(c) => left += hand_down(nodes, c, share),
        }
    }
    left.max(0.0)
}

/// Shares of `s` for claimants `(weight, demand)`: by weight, each capped at its demand,
/// until nothing is left or no weighted claimant asks; then equal shares among those
/// that still ask.
fn split(s: f64, claimants: &[(Claimant, f64, f64)]) -> Vec<f64> {
    let mut got = vec![0.0; claimants.len()];
    let mut s = s;
    let asking = |got: &[f64], i: usize| claimants[i].2 - got[i] > EPSILON;
    for weighted in [true, false] {
        loop {
            let active: Vec<usize> = (0..claimants.len())
                .filter(|&i| asking(&got, i) && (!weighted || claimants[i].1 > EPSILON))
                .collect();
            if active.is_empty() || s <= EPSILON {
                break;
            }
            let total: f64 = if weighted {
                active.iter().map(|&i| claimants[i].1).sum()
            } else {
                active.len() as f64
            };
            let mut given = 0.0;
            for &i in &active {
                let part = if weighted { claimants[i].1 } else { 1.0 };
                let give = (s * part / total).min(claimants[i].2 - got[i]);
                got[i] += give;
                given += give;
            }
            s -= given;
            if given <= EPSILON {
                break;
            }
        }
    }
    got
}

/// Could node `n` take one more slot without taking a subtree that refuses surplus
/// beyond its quota (its own, or an ancestor's)?
fn room_for_one(nodes: &[Node], parents: &[usize], n: usize) -> bool {
    let subtree_allocation = |a: usize| -> f64 {
        fn sum(nodes: &[Node], a: usize) -> f64 {
            nodes[a].allocation
                + nodes[a]
                    .children
                    .iter()
                    .map(|&c| sum(nodes, c))
                    .sum::<f64>()
        }
        sum(nodes, a)
    };
    let mut a = n;
    loop {
        if a == 0 {
            return true;
        }
        if !nodes[a].accept_surplus
            && subtree_allocation(a) + 1.0 > nodes[a].subtree_quota + EPSILON
        {
            return false;
        }
        a = parents[a];
    }
}

/// Step 3: whole slots; returns what stays unused.
fn whole_slots(nodes: &mut [Node], names: &[&str], parents: &[usize], unused: f64) -> f64 {
    let mut fractions: Vec<(usize, f64)> = Vec::new();
    let mut pooled = 0.0;
    for (i, n) in nodes.iter_mut().enumerate() {
        let whole = (n.allocation + EPSILON).floor();
        let fraction = (n.allocation - whole).max(0.0);
        pooled += fraction;
        n.left += n.allocation - whole;
        n.allocation = whole;
        fractions.push((i, fraction));
    }
    // Largest fraction first, then the larger quota, then the name.
    fractions.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(nodes[b.0].quota.total_cmp(&nodes[a.0].quota))
            .then(names[a.0].cmp(names[b.0]))
    });
    let mut units = (pooled + EPSILON).floor();
    let mut handed = true;
    while units >= 1.0 && handed {
        handed = false;
        for &(i, _) in &fractions {
            if units < 1.0 {
                break;
            }
            if nodes[i].left >= 1.0 - EPSILON && room_for_one(nodes, parents, i) {
                let n = &mut nodes[i];
                n.allocation += 1.0;
                n.left -= 1.0;
                units -= 1.0;
                handed = true;
            }
        }
    }
    unused + pooled - ((pooled + EPSILON).floor() - units)
}

#[cfg(test)]
mod tests;
