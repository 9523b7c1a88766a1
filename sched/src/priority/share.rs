//! The share-tree policy: each node's long-term target (its shares among its active
//! siblings) turned into a short-term one by the usage its users and projects had
//! (decayed with `halftime`, compensated with `compensation_factor`), and
//! `weight_tickets_share` handed down the tree to the jobs at its leaves.

use gantry_common::sharetree::{NodeType, ShareNode};
use gantry_common::usage::{Amounts, UsageOf};
use gantry_proto::ShareTreeNode;

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use super::{combined_usage, PolicyConf, PolicyJob, PolicyObjects, Ref};

/// One node of the tree as a calculation sees it.
#[derive(Debug, Clone)]
struct Node {
    name: String,
    node_type: NodeType,
    shares: f64,
    children: Vec<usize>,
    /// The project above (a user's node under a project's counts its usage in it).
    project: Option<String>,
    /// Whose usage the node is (None: an inner node, the sum of its children's).
    usage_of: Option<UsageOf>,
    decayed: Amounts,
    long_term: Amounts,
    usage_time: i64,
    /// `usage_weight_list` applied to the decayed usage (an inner node: its children's).
    usage: f64,
    job_ref_count: u32,
    /// Long-term target among active siblings, and down from the root.
    ltt: f64,
    oltt: f64,
    /// Short-term target among active siblings, and down from the root.
    stt: f64,
    ostt: f64,
    /// The long-term target down from the root, for display.
    m_share: f64,
    /// Made for a user a `default` leaf stands for (not a node of the configured tree).
    copy: bool,
}

/// The share tree of one calculation, with the nodes made for users a `default` leaf
/// stands for.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    nodes: Vec<Node>,
    usage_done: bool,
    /// Per place searched (None: the tree outside project nodes; a project node: below
    /// it), the first user leaf of each name (`default` too), made at the first search.
    leaves: FastMap<Option<usize>, FastMap<String, usize>>,
    /// The first project node of each name.
    projects: Option<FastMap<String, usize>>,
}

impl Tree {
    pub(crate) fn new(root: &ShareNode) -> Tree {
        let mut nodes = Vec::new();
        fn add(nodes: &mut Vec<Node>, n: &ShareNode, project: Option<&str>) -> usize {
            let at = nodes.len();
            let is_project = n.node_type == NodeType::Project;
            let usage_of = match n.node_type {
                NodeType::Project => Some(UsageOf::Project(n.name.clone())),
                NodeType::User if n.children.is_empty() && at > 0 && n.name != "default" => {
                    Some(match project {
                        Some(p) => UsageOf::UserInProject {
                            user: n.name.clone(),
                            project: p.to_string(),
                        },
                        None => UsageOf::User(n.name.clone()),
                    })
                }
                NodeType::User => None,
            };
            nodes.push(Node {
                name: n.name.clone(),
                node_type: n.node_type,
                shares: f64::from(n.shares),
                children: Vec::new(),
                project: project.map(str::to_string),
                usage_of,
                decayed: Amounts::default(),
                long_term: Amounts::default(),
                usage_time: 0,
                usage: 0.0,
                job_ref_count: 0,
                ltt: 0.0,
                oltt: 0.0,
                stt: 0.0,
                ostt: 0.0,
                m_share: 0.0,
                copy: false,
            });
            let below = if is_project {
                Some(n.name.as_str())
            } else {
                project
            };
            let children: Vec<usize> = n.children.iter().map(|c| add(nodes, c, below)).collect();
            nodes[at].children = children;
            at
        }
        add(&mut nodes, root, None);
        Tree {
            nodes,
            usage_done: false,
            leaves: FastMap::default(),
            projects: None,
        }
    }

    /// Below `from` (the root: outside project nodes), the first user leaf of each
    /// name in depth-first order.
    fn first_leaves(&self, from: usize) -> FastMap<String, usize> {
        let skip_projects = from == 0;
        let mut out = FastMap::default();
        let mut stack: Vec<usize> = self.nodes[from].children.iter().rev().copied().collect();
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i];
            if n.node_type == NodeType::User && n.children.is_empty() {
                out.entry(n.name.clone()).or_insert(i);
            }
            if skip_projects && n.node_type == NodeType::Project {
                continue;
            }
            stack.extend(n.children.iter().rev());
        }
        out
    }

    /// The first project node named `name`, in depth-first order.
    fn project_node(&mut self, name: &str) -> Option<usize> {
        let nodes = &self.nodes;
        self.projects
            .get_or_insert_with(|| {
                let mut out = FastMap::default();
                for (i, n) in nodes.iter().enumerate() {
                    if n.node_type == NodeType::Project {
                        out.entry(n.name.clone()).or_insert(i);
                    }
                }
                out
            })
            .get(name)
            .copied()
    }

    /// The first user leaf named `name` (else `default`) below `place` (None: the tree
    /// outside project nodes).
    fn leaf(&mut self, place: Option<usize>, name: &str) -> Option<usize> {
        if !self.leaves.contains_key(&place) {
            let made = self.first_leaves(place.unwrap_or(0));
            self.leaves.insert(place, made);
        }
        let leaves = self.leaves.get(&place)?;
        leaves.get(name).or_else(|| leaves.get("default")).copied()
    }

    /// The node a job's tasks are charged to: its user's (below its project's node when
    /// it has a project), else the `default` leaf there (each user it stands for gets a
    /// node of its own with its shares), else none. A job whose project has no node gets
    /// none; a user without a user object is no one's.
    pub(crate) fn node_of(
        &mut self,
        job: &PolicyJob<'_>,
        objects: &PolicyObjects<'_>,
    ) -> Option<usize> {
        let has_user = objects.users.contains_key(job.user);
        let place = match &job.project {
            None => None,
            Some(p) => {
                let pnode = self.project_node(p)?;
                if self.nodes[pnode].children.is_empty() {
                    return Some(pnode);
                }
                Some(pnode)
            }
        };
        if !has_user {
            return None;
        }
        let found = self.leaf(place, job.user)?;
        if self.nodes[found].name != "default" {
            return Some(found);
        }
        // A node of the user's own beside `default`, with its shares.
        let parent = (0..self.nodes.len()).find(|&i| self.nodes[i].children.contains(&found))?;
        let mut copy = self.nodes[found].clone();
        copy.name = job.user.to_string();
        copy.copy = true;
        copy.usage_of = Some(match &copy.project {
            Some(p) => UsageOf::UserInProject {
                user: job.user.to_string(),
                project: p.clone(),
            },
            None => UsageOf::User(job.user.to_string()),
        });
        self.nodes.push(copy);
        let at = self.nodes.len() - 1;
        self.nodes[parent].children.push(at);
        self.usage_done = false;
        if let Some(leaves) = self.leaves.get_mut(&place) {
            leaves.insert(job.user.to_string(), at);
        }
        Some(at)
    }

    /// Each node's usage: its user's or project's decayed to `now`, an inner node's the
    /// sum of its children's (a project's node its project's own).
    fn settle_usage(&mut self, conf: &PolicyConf, objects: &PolicyObjects<'_>, now: i64) {
        fn go(
            t: &mut Tree,
            i: usize,
            conf: &PolicyConf,
            objects: &PolicyObjects<'_>,
            now: i64,
        ) -> f64 {
            let children = t.nodes[i].children.clone();
            let sum: f64 = children.iter().map(|&c| go(t, c, conf, objects, now)).sum();
            let n = &mut t.nodes[i];
            n.usage = match &n.usage_of {
                Some(of) => {
                    let record = objects.usage.records.get(of);
                    n.decayed = objects.usage.decayed(of, now, &conf.decay);
                    n.long_term = record.map(|r| r.long_term).unwrap_or_default();
                    n.usage_time = record.map_or(0, |r| r.at);
                    let counts = match of {
                        UsageOf::User(u) | UsageOf::UserInProject { user: u, .. } => {
                            objects.users.contains_key(u)
                        }
                        UsageOf::Project(p) => objects.projects.contains_key(p),
                    };
                    if counts {
                        combined_usage(&n.decayed, &conf.usage_weights)
                    } else {
                        0.0
                    }
                }
                None => sum,
            };
            n.usage
        }
        go(self, 0, conf, objects, now);
        self.usage_done = true;
    }

    /// The targets of every node for `refs` (which count as the nodes' jobs).
    pub(crate) fn targets_at(
        &mut self,
        refs: &[Ref],
        conf: &PolicyConf,
        objects: &PolicyObjects<'_>,
        now: i64,
    ) {
        if !self.usage_done {
            self.settle_usage(conf, objects, now);
        }
        for n in &mut self.nodes {
            n.job_ref_count = 0;
            n.ltt = 0.0;
            n.oltt = 0.0;
            n.stt = 0.0;
            n.ostt = 0.0;
            n.m_share = 0.0;
        }
        for r in refs {
            if let Some(i) = r.node {
                self.nodes[i].job_ref_count += 1;
            }
        }
        fn count(t: &mut Tree, i: usize) -> u32 {
            let children = t.nodes[i].children.clone();
            let below: u32 = children.iter().map(|&c| count(t, c)).sum();
            t.nodes[i].job_ref_count += below;
            t.nodes[i].job_ref_count
        }
        count(self, 0);
        let root = &mut self.nodes[0];
        root.ltt = 1.0;
        root.oltt = 1.0;
        root.stt = 1.0;
        root.ostt = 1.0;
        root.m_share = 1.0;
        let cf = conf.compensation_factor;
        let mut stack = vec![0usize];
        while let Some(p) = stack.pop() {
            let active: Vec<usize> = self.nodes[p]
                .children
                .iter()
                .copied()
                .filter(|&c| self.nodes[c].job_ref_count > 0)
                .collect();
            let (poltt, postt, pm) = (
                self.nodes[p].oltt,
                self.nodes[p].ostt,
                self.nodes[p].m_share,
            );
            let shares: f64 = active.iter().map(|&c| self.nodes[c].shares).sum();
            let mut shr = vec![0.0; active.len()];
            for (k, &c) in active.iter().enumerate() {
                let n = &mut self.nodes[c];
                n.ltt = if shares > 0.0 { n.shares / shares } else { 0.0 };
                n.oltt = poltt * n.ltt;
                n.m_share = pm * n.ltt;
                shr[k] = if n.oltt > 0.0 {
                    n.shares * n.shares / n.usage.max(n.oltt)
                } else {
                    0.0
                };
            }
            let set_short = |nodes: &mut Vec<Node>, shr: &[f64]| {
                let sum: f64 = shr.iter().sum();
                for (k, &c) in active.iter().enumerate() {
                    let n = &mut nodes[c];
                    n.stt = if sum > 0.0 { shr[k] / sum } else { 0.0 };
                    n.ostt = postt * n.stt;
                }
            };
            set_short(&mut self.nodes, &shr);
            if cf != 0.0 {
                let mut changed = false;
                for (k, &c) in active.iter().enumerate() {
                    let n = &self.nodes[c];
                    if n.ostt > cf * n.oltt {
                        shr[k] =
                            n.shares * n.shares / (n.usage.max(n.oltt) * (n.ostt / (cf * n.oltt)));
                        changed = true;
                    }
                }
                if changed {
                    set_short(&mut self.nodes, &shr);
                }
            }
            stack.extend(active);
        }
    }

    /// The running refs' tickets: their node's `weight_tickets_share` part, split by
    /// their `-js` or else equally among the node's refs.
    pub(crate) fn running_tickets(
        &self,
        conf: &PolicyConf,
        jobs: &[PolicyJob<'_>],
        refs: &mut [Ref],
    ) {
        let mut js_sum: FastMap<usize, f64> = FastMap::default();
        for r in refs.iter() {
            if let Some(i) = r.node {
                *js_sum.entry(i).or_default() += f64::from(jobs[r.job].job_share);
            }
        }
        for r in refs.iter_mut() {
            r.st = match r.node {
                None => 0.0,
                Some(i) => {
                    let n = &self.nodes[i];
                    let node_tickets = n.ostt * conf.tickets_share;
                    let sum = js_sum.get(&i).copied().unwrap_or(0.0);
                    if sum > 0.0 {
                        (f64::from(jobs[r.job].job_share) * node_tickets / sum).floor()
                    } else if n.job_ref_count > 0 {
                        node_tickets / f64::from(n.job_ref_count)
                    } else {
                        0.0
                    }
                }
            };
        }
    }

    /// The pending refs' tickets, in the policy's turn: each node's short-term target
    /// divided along the jobs below it (running ones first, then by what earlier
    /// policies gave or their `-js`), the first getting all, the next a half, ...; a
    /// parallel job counts as its slots. The values of the level just below the top of
    /// the tree are what the jobs get.
    pub(crate) fn pending_tickets(
        &self,
        conf: &PolicyConf,
        jobs: &[PolicyJob<'_>],
        running: &[Ref],
        pending: &mut [Ref],
        dependent: bool,
    ) {
        if conf.tickets_share <= 0.0 {
            return;
        }
        #[derive(Clone)]
        struct JobNode {
            queued: bool,
            sort: f64,
            tickets: f64,
            shr: f64,
            job: gantry_proto::JobId,
            task: gantry_proto::TaskId,
            weight: f64,
            /// Index into `pending` (None: a running ref).
            pending: Option<usize>,
        }
        let mut job_nodes: Vec<JobNode> = Vec::new();
        let mut at: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        let make = |r: &Ref, pending: Option<usize>| {
            let js = f64::from(jobs[r.job].job_share);
            JobNode {
                queued: pending.is_some(),
                sort: if dependent { r.acc + 0.01 * js } else { js },
                tickets: if dependent { r.acc } else { 0.0 },
                shr: 0.0,
                job: jobs[r.job].id,
                task: r.task,
                weight: f64::from(jobs[r.job].min_slots.max(1)),
                pending,
            }
        };
        for r in running {
            if let Some(i) = r.node {
                at[i].push(job_nodes.len());
                job_nodes.push(make(r, None));
            }
        }
        for (k, r) in pending.iter().enumerate() {
            if let Some(i) = r.node {
                at[i].push(job_nodes.len());
                job_nodes.push(make(r, Some(k)));
            }
        }
        let t_s = conf.tickets_share;
        fn level(
            tree: &Tree,
            i: usize,
            at: &[Vec<usize>],
            job_nodes: &mut Vec<JobNode>,
            t_s: f64,
        ) -> Vec<usize> {
            let mut list: Vec<usize> = at[i].clone();
            for &c in &tree.nodes[i].children {
                if tree.nodes[c].job_ref_count > 0 {
                    list.extend(level(tree, c, at, job_nodes, t_s));
                }
            }
            list.sort_by(|&a, &b| {
                let (x, y) = (&job_nodes[a], &job_nodes[b]);
                x.queued
                    .cmp(&y.queued)
                    .then(y.sort.total_cmp(&x.sort))
                    .then(x.job.cmp(&y.job))
                    .then(x.task.cmp(&y.task))
            });
            let stt = tree.nodes[i].stt;
            let mut d = 1.0;
            for &j in &list {
                let jn = &mut job_nodes[j];
                jn.shr = stt / d;
                jn.sort = jn.tickets + jn.shr * t_s;
                d += jn.weight;
            }
            list
        }
        // The top: down from the root while a node has no jobs of its own and one
        // active child.
        let mut top = 0;
        loop {
            let active: Vec<usize> = self.nodes[top]
                .children
                .iter()
                .copied()
                .filter(|&c| self.nodes[c].job_ref_count > 0)
                .collect();
            if at[top].is_empty() && active.len() == 1 {
                top = active[0];
            } else {
                break;
            }
        }
        if at[top].is_empty() {
            for &c in &self.nodes[top].children {
                if self.nodes[c].job_ref_count > 0 {
                    level(self, c, &at, &mut job_nodes, t_s);
                }
            }
        } else {
            level(self, top, &at, &mut job_nodes, t_s);
        }
        for jn in &job_nodes {
            if let Some(k) = jn.pending {
                let r = &mut pending[k];
                r.st = jn.shr * t_s;
                if dependent {
                    r.acc += r.st;
                }
            }
        }
    }

    /// Every node as `sge_share_mon` shows it, after [`Tree::targets_at`].
    fn rows(&self) -> Vec<ShareTreeNode> {
        let mut out = Vec::new();
        let root_usage = self.nodes[0].usage;
        let mut stack: Vec<(usize, String, f64, f64)> = vec![(0, "/".to_string(), 1.0, 1.0)];
        while let Some((i, path, level, total)) = stack.pop() {
            let n = &self.nodes[i];
            let (user_name, project_name) = match (&n.usage_of, n.node_type) {
                (_, NodeType::Project) => (String::new(), n.name.clone()),
                (Some(_), NodeType::User) => {
                    (n.name.clone(), n.project.clone().unwrap_or_default())
                }
                (None, NodeType::User) => (String::new(), String::new()),
            };
            out.push(ShareTreeNode {
                path: path.clone(),
                user_name,
                project_name,
                shares: n.shares as u32,
                job_count: n.job_ref_count,
                level,
                total,
                long_target_share: n.m_share,
                short_target_share: n.ostt,
                actual_share: if root_usage > 0.0 {
                    n.usage / root_usage
                } else {
                    0.0
                },
                usage: n.usage,
                decayed: (n.decayed.cpu, n.decayed.mem, n.decayed.io),
                long_term: (n.long_term.cpu, n.long_term.mem, n.long_term.io),
                usage_time: n.usage_time,
            });
            let sum: f64 = n
                .children
                .iter()
                .filter(|&&c| !self.nodes[c].copy)
                .map(|&c| self.nodes[c].shares)
                .sum();
            for &c in n.children.iter().rev().filter(|&&c| !self.nodes[c].copy) {
                let child = &self.nodes[c];
                let l = if sum > 0.0 { child.shares / sum } else { 0.0 };
                let p = if i == 0 {
                    format!("/{}", child.name)
                } else {
                    format!("{path}/{}", child.name)
                };
                stack.push((c, p, l, total * l));
            }
        }
        out
    }
}

/// The share tree as `sge_share_mon` shows it at `now`: every node with its shares,
/// targets (for the running jobs among `jobs`), usage and its part of all usage.
pub fn share_tree_nodes(
    conf: &PolicyConf,
    jobs: &[PolicyJob<'_>],
    objects: &PolicyObjects<'_>,
    now: i64,
) -> Vec<ShareTreeNode> {
    let Some(root) = objects.share_tree else {
        return Vec::new();
    };
    let mut tree = Tree::new(root);
    let mut refs = Vec::new();
    for j in jobs {
        let node = tree.node_of(j, objects);
        for &t in &j.running {
            refs.push(Ref {
                job: 0,
                task: t,
                running: true,
                user: None,
                project: None,
                department: None,
                node,
                acc: 0.0,
                ot: 0.0,
                ft: 0.0,
                st: 0.0,
            });
        }
    }
    tree.targets_at(&refs, conf, objects, now);
    tree.rows()
}
