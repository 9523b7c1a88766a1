//! The share tree (`qconf -sstree`, `-astree`, `-Astree`, `-mstree`, `-Mstree`,
//! `-dstree`): the long-term entitlements of users and projects and of groups of them,
//! as `share_tree(5)` describes it, read and printed as SGE 8.1.9 does.
//!
//! The file is a list of nodes, each starting with `id=N`, then `name`, `type` (0 a user
//! or an inner node, 1 a project), `shares` and `childnodes` (ids, or `NONE`). The tree
//! is kept nested: ids are only the file's way of naming children, and printing numbers
//! the nodes afresh.

use serde::{Deserialize, Serialize};

use crate::conf::{read_u_long32, FileError, SgeFileError};

/// Whether a node names a user (or is an inner node) or a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeType {
    User,
    Project,
}

/// A node of the share tree and the nodes below it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareNode {
    /// A user's or a project's name at a leaf (`default`: any user of the project above
    /// without a node of its own), any name inside.
    pub name: String,
    pub node_type: NodeType,
    /// The node's share among its siblings.
    pub shares: u32,
    pub children: Vec<ShareNode>,
}

impl ShareNode {
    /// `qconf -astree`'s template: a root with one share and no children.
    pub fn template() -> ShareNode {
        ShareNode {
            name: "Root".into(),
            node_type: NodeType::User,
            shares: 1,
            children: Vec::new(),
        }
    }

    /// Every node, in the order the file prints them (each node, then its children's
    /// subtrees), with its depth.
    pub fn walk(&self) -> Vec<(usize, &ShareNode)> {
        let mut out = Vec::new();
        let mut stack = vec![(0, self)];
        while let Some((depth, n)) = stack.pop() {
            out.push((depth, n));
            for c in n.children.iter().rev() {
                stack.push((depth + 1, c));
            }
        }
        out
    }

    /// The node at `path` (`/Root/a/b`, names separated by slashes, the root's first),
    /// or None.
    pub fn find(&self, path: &str) -> Option<&ShareNode> {
        let mut parts = path.trim_start_matches('/').split('/');
        if parts.next()? != self.name {
            return None;
        }
        let mut node = self;
        for p in parts.filter(|p| !p.is_empty()) {
            node = node.children.iter().find(|c| c.name == p)?;
        }
        Some(node)
    }

    /// Is this node a leaf?
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }
}

/// The tree as `qconf -sstree` prints it: the nodes in the order [`ShareNode::walk`]
/// gives, numbered from 0 in that order.
pub fn print_share_tree(root: &ShareNode) -> String {
    let nodes = root.walk();
    // A node's id is its place in the walk; its children's are found by identity.
    let id_of = |n: &ShareNode| {
        nodes
            .iter()
            .position(|(_, m)| std::ptr::eq(*m, n))
            .unwrap_or_default()
    };
    let mut out = String::new();
    for (id, (_, n)) in nodes.iter().enumerate() {
        let children = if n.children.is_empty() {
            "NONE".to_string()
        } else {
            n.children
                .iter()
                .map(|c| id_of(c).to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        out.push_str(&format!(
            "id={id}\nname={}\ntype={}\nshares={}\nchildnodes={children}\n",
            n.name,
            match n.node_type {
                NodeType::User => 0,
                NodeType::Project => 1,
            },
            n.shares
        ));
    }
    out
}

/// How deep a tree may be (a bound on the recursion that reads it).
pub const MAX_DEPTH: usize = 256;

/// One node as the file gives it, before the tree is put together.
struct FlatNode {
    line: usize,
    id: u32,
    name: Option<String>,
    node_type: Option<NodeType>,
    shares: Option<u32>,
    children: Option<Vec<u32>>,
}

/// Read a share tree file (`-Astree`, `-Mstree`, the editor's of `-astree`,
/// `-mstree`): `attribute=value` lines, a node beginning at each `id`. The first node is
/// the root; every other node must be some node's child, once; a child must exist.
pub fn parse_share_tree(text: &str) -> Result<ShareNode, SgeFileError> {
    let mut flat: Vec<FlatNode> = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((idx, raw)) = lines.next() {
        let line = idx + 1;
        let mut logical = raw.to_string();
        while logical.ends_with('\\') {
            logical.pop();
            logical.push(' ');
            match lines.next() {
                Some((_, next)) => logical.push_str(next),
                None => return Err(FileError::at(line, "continuation at end of file").into()),
            }
        }
        let trimmed = logical.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(c) = trimmed.chars().find(|c| c.is_control() && *c != '\t') {
            return Err(FileError::at(
                line,
                format!("the line holds a control character (U+{:04X})", c as u32),
            )
            .into());
        }
        let Some((key, value)) = trimmed
            .split_once('=')
            .filter(|(k, _)| !k.trim().contains(char::is_whitespace))
        else {
            return Err(SgeFileError::Reading(format!(
                "\"=\" is the only character allowed between the attribute name and the value in line {line}"
            )));
        };
        let (key, value) = (key.trim(), value.trim());
        if key == "id" {
            flat.push(FlatNode {
                line,
                id: read_u_long32(key, value)?,
                name: None,
                node_type: None,
                shares: None,
                children: None,
            });
            continue;
        }
        let Some(node) = flat.last_mut() else {
            return Err(SgeFileError::Refused(
                "required attribute \"id\" is missing".into(),
            ));
        };
        let twice = || {
            SgeFileError::Alone(format!(
                "attribute \"{key}\" appears twice in node {}",
                node.id
            ))
        };
        match key {
            "name" => {
                if node.name.replace(value.to_string()).is_some() {
                    return Err(twice());
                }
            }
            "type" => {
                let t = match read_u_long32(key, value)? {
                    0 => NodeType::User,
                    1 => NodeType::Project,
                    other => {
                        return Err(SgeFileError::Alone(format!(
                            "node type {other} of node {} is neither 0 (user) nor 1 (project)",
                            node.id
                        )))
                    }
                };
                if node.node_type.replace(t).is_some() {
                    return Err(twice());
                }
            }
            "shares" => {
                if node.shares.replace(read_u_long32(key, value)?).is_some() {
                    return Err(twice());
                }
            }
            "childnodes" => {
                let ids = if value.eq_ignore_ascii_case("NONE") {
                    Vec::new()
                } else {
                    value
                        .split(|c: char| c == ',' || c.is_whitespace())
                        .filter(|s| !s.is_empty())
                        .map(|s| read_u_long32(key, s))
                        .collect::<Result<Vec<_>, _>>()?
                };
                if node.children.replace(ids).is_some() {
                    return Err(twice());
                }
            }
            other => {
                return Err(SgeFileError::Reading(format!(
                    "unknown attribute name \"{}\"",
                    crate::names::bounded_message(other)
                )))
            }
        }
    }
    assemble(flat)
}

/// Put the flat nodes together into the tree the first one roots.
fn assemble(flat: Vec<FlatNode>) -> Result<ShareNode, SgeFileError> {
    if flat.is_empty() {
        return Err(SgeFileError::Refused(
            "required attribute \"id\" is missing".into(),
        ));
    }
    for (i, n) in flat.iter().enumerate() {
        if flat[..i].iter().any(|m| m.id == n.id) {
            return Err(SgeFileError::Alone(format!(
                "node id {} is used twice (line {})",
                n.id, n.line
            )));
        }
        let missing = match () {
            _ if n.name.is_none() => Some("name"),
            _ if n.node_type.is_none() => Some("type"),
            _ if n.shares.is_none() => Some("shares"),
            _ if n.children.is_none() => Some("childnodes"),
            _ => None,
        };
        if let Some(attr) = missing {
            return Err(SgeFileError::Refused(format!(
                "required attribute \"{attr}\" is missing"
            )));
        }
    }
    // Each node is some node's child once, the root none's.
    let mut parent_of: Vec<Option<usize>> = vec![None; flat.len()];
    for (p, n) in flat.iter().enumerate() {
        for c in n.children.iter().flatten() {
            let Some(ci) = flat.iter().position(|m| m.id == *c) else {
                return Err(SgeFileError::Alone(format!(
                    "found reference to node {c} but no specification"
                )));
            };
            if ci == 0 || parent_of[ci].replace(p).is_some() {
                return Err(SgeFileError::Alone(format!(
                    "node {c} is a child of more than one node"
                )));
            }
        }
    }
    if let Some(orphan) = (1..flat.len()).find(|&i| parent_of[i].is_none()) {
        return Err(SgeFileError::Alone(format!(
            "node {} is not a child of any node",
            flat[orphan].id
        )));
    }
    // Each node but the root has one parent, the root none: built from the root, no
    // node is met twice (a loop of other nodes is not met at all: counted after).
    fn build(flat: &[FlatNode], i: usize, depth: usize) -> Result<ShareNode, SgeFileError> {
        let n = &flat[i];
        if depth > MAX_DEPTH {
            return Err(SgeFileError::Alone(format!(
                "the share tree is deeper than {MAX_DEPTH} levels"
            )));
        }
        let children = n
            .children
            .iter()
            .flatten()
            .map(|c| {
                let ci = flat.iter().position(|m| m.id == *c).unwrap_or_default();
                build(flat, ci, depth + 1)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ShareNode {
            name: n.name.clone().unwrap_or_default(),
            node_type: n.node_type.unwrap_or(NodeType::User),
            shares: n.shares.unwrap_or_default(),
            children,
        })
    }
    let root = build(&flat, 0, 0)?;
    // A cycle among non-root nodes is unreachable from the root: count what was built.
    let built = root.walk().len();
    if built != flat.len() {
        return Err(SgeFileError::Alone(
            "some nodes form a loop not reachable from the root".into(),
        ));
    }
    // No two children of one node share a name.
    for (_, n) in root.walk() {
        for (i, c) in n.children.iter().enumerate() {
            if n.children[..i].iter().any(|d| d.name == c.name) {
                return Err(SgeFileError::Alone(format!(
                    "denied: found node \"{}\" twice under node \"{}\"",
                    c.name, n.name
                )));
            }
        }
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use SgeFileError::{Alone, Reading, Refused};

    /// A tree as SGE 8.1.9's `qconf -sstree` printed it
    /// (`tests/fixtures/sge/fairshare/01_sharetree_qconf.txt`).
    const PRINTED: &str = "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=1,5,6\n\
id=1\nname=proj1\ntype=1\nshares=50\nchildnodes=2,4\n\
id=2\nname=staff\ntype=0\nshares=30\nchildnodes=3\n\
id=3\nname=default\ntype=0\nshares=20\nchildnodes=NONE\n\
id=4\nname=user1\ntype=0\nshares=10\nchildnodes=NONE\n\
id=5\nname=default\ntype=0\nshares=10\nchildnodes=NONE\n\
id=6\nname=user2\ntype=0\nshares=20\nchildnodes=NONE\n";

    #[test]
    fn a_tree_sge_printed_reads_and_prints_back_the_same() {
        let root = parse_share_tree(PRINTED).unwrap();
        assert_eq!(print_share_tree(&root), PRINTED);
        let view: Vec<(usize, &str, u32)> = root
            .walk()
            .iter()
            .map(|(d, n)| (*d, n.name.as_str(), n.shares))
            .collect();
        assert_eq!(
            view,
            [
                (0, "Root", 1),
                (1, "proj1", 50),
                (2, "staff", 30),
                (3, "default", 20),
                (2, "user1", 10),
                (1, "default", 10),
                (1, "user2", 20)
            ]
        );
        assert_eq!(root.children[0].node_type, NodeType::Project);
        assert_eq!(root.find("/Root/proj1/staff").unwrap().shares, 30);
        assert!(root.find("/Root/nosuch").is_none());
    }

    #[test]
    fn ids_name_the_nodes_in_any_order_and_are_numbered_afresh() {
        // share_tree(5): childnodes lists the children's ids. (SGE 8.1.9 instead takes
        // the nodes after each one in the file as its children, whatever their ids.)
        let text = "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=7,3\n\
id=3\nname=user2\ntype=0\nshares=25\nchildnodes=NONE\n\
id=7\nname=user1\ntype=0\nshares=75\nchildnodes=NONE\n";
        let root = parse_share_tree(text).unwrap();
        assert_eq!(
            print_share_tree(&root),
            "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=1,2\n\
id=1\nname=user1\ntype=0\nshares=75\nchildnodes=NONE\n\
id=2\nname=user2\ntype=0\nshares=25\nchildnodes=NONE\n"
        );
    }

    #[test]
    fn bad_files_are_refused_in_sge_words() {
        let node = |id: u32, name: &str, shares: &str, children: &str| {
            format!("id={id}\nname={name}\ntype=0\nshares={shares}\nchildnodes={children}\n")
        };
        let root = |children: &str| node(0, "Root", "1", children);
        let cases = [
            // Recorded from SGE 8.1.9's `qconf -Astree`.
            (
                "id=0\nname=Root\ntype=0\nshares 1\nchildnodes=NONE\n".to_string(),
                Reading(
                    "\"=\" is the only character allowed between the attribute name and the value in line 4"
                        .into(),
                ),
            ),
            (
                root("1") + &node(1, "user1", "-5", "NONE"),
                Reading("parameter \"shares\" must be a positive number".into()),
            ),
            (
                root("1") + &node(1, "user1", "abc", "NONE"),
                Reading("error parsing unsigned long value from string \"abc\"".into()),
            ),
            (
                "name=Root\ntype=0\nshares=1\nchildnodes=NONE\n".to_string(),
                Refused("required attribute \"id\" is missing".into()),
            ),
            (
                "id=0\nname=Root\ntype=0\nshares=1\ncolour=red\nchildnodes=NONE\n".to_string(),
                Reading("unknown attribute name \"colour\"".into()),
            ),
            (
                root("1,7") + &node(1, "user1", "10", "NONE"),
                Alone("found reference to node 7 but no specification".into()),
            ),
            (
                root("1,2") + &node(1, "user1", "10", "NONE") + &node(2, "user1", "20", "NONE"),
                Alone("denied: found node \"user1\" twice under node \"Root\"".into()),
            ),
            // Gantry's own: SGE reads these without a word.
            (
                root("1,2") + &node(1, "user1", "10", "NONE") + &node(1, "user2", "10", "NONE"),
                Alone("node id 1 is used twice (line 11)".into()),
            ),
            (
                root("1") + "id=1\nname=user1\ntype=2\nshares=10\nchildnodes=NONE\n",
                Alone("node type 2 of node 1 is neither 0 (user) nor 1 (project)".into()),
            ),
            (
                root("1") + &node(1, "a", "10", "NONE") + &node(2, "b", "10", "NONE"),
                Alone("node 2 is not a child of any node".into()),
            ),
            (
                root("1") + &node(1, "a", "10", "2") + &node(2, "b", "10", "1"),
                Alone("node 1 is a child of more than one node".into()),
            ),
            (
                root("0"),
                Alone("node 0 is a child of more than one node".into()),
            ),
            (
                root("1") + &node(1, "a", "10", "NONE") + &node(2, "b", "10", "3") + &node(3, "c", "1", "2"),
                Alone("some nodes form a loop not reachable from the root".into()),
            ),
            (String::new(), Refused("required attribute \"id\" is missing".into())),
            (
                "id=0\nname=Root\ntype=0\nchildnodes=NONE\n".to_string(),
                Refused("required attribute \"shares\" is missing".into()),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_share_tree(&text), Err(want), "{text}");
        }
    }
}
