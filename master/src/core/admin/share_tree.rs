//! `qconf -sstree -astree -Astree -mstree -Mstree -dstree`: the share tree, one object,
//! replaced whole or not at all, in SGE 8.1.9's words.

use super::*;
use gantry_common::conf::SgeFileError;
use gantry_common::sharetree::{self, NodeType, ShareNode};

impl ClusterState {
    /// `-sstree` (and the editor's file of `-astree`/`-mstree`, which SGE gives the
    /// template when there is no tree).
    pub(super) fn show_share_tree(&self, name: &str) -> Result<String, Refusal> {
        match &*self.input.share_tree {
            Some(root) => Ok(sharetree::print_share_tree(root)),
            None if name == "template" => Ok(sharetree::print_share_tree(&share_tree_template())),
            None => Err(refuse(RefusalKind::NotFound, "no sharetree element")),
        }
    }

    /// `-astree/-Astree/-mstree/-Mstree`: as in SGE, each replaces the tree there is
    /// (or makes the first). Every leaf but a `default` one names a user object
    /// (type 0) or a project (type 1) that exists.
    pub(super) fn replace_share_tree(&self, text: &str) -> Result<Reply, Refusal> {
        let root = sharetree::parse_share_tree(text).map_err(|e| match e {
            SgeFileError::Alone(m) => invalid(m),
            other => invalid(format!("error: {other}")),
        })?;
        // The root names no one, whatever its name.
        for (_, node) in root.walk().into_iter().skip(1) {
            if !node.is_leaf()
                && node.node_type == NodeType::User
                && self.input.users.contains_key(&node.name)
            {
                return Err(invalid(format!(
                    "found user \"{}\" in share tree as a non-leaf node",
                    node.name
                )));
            }
            let known = match node.node_type {
                _ if !node.is_leaf() => true,
                NodeType::User => {
                    node.name == "default" || self.input.users.contains_key(&node.name)
                }
                NodeType::Project => self.input.projects.contains_key(&node.name),
            };
            if !known {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!(
                        "denied: share tree contains reference to unknown user/project \"{}\"",
                        node.name
                    ),
                ));
            }
        }
        Ok(change(
            Op::Put(Object::ShareTree(Some(root))),
            "changed sharetree".to_string(),
        ))
    }

    /// `-dstree`.
    pub(super) fn delete_share_tree(&self, who: &str) -> Result<Reply, Refusal> {
        if self.input.share_tree.is_none() {
            return Err(refuse(RefusalKind::NotFound, "sharetree does not exist"));
        }
        Ok(change(
            Op::Put(Object::ShareTree(None)),
            format!("{who} removed sharetree list"),
        ))
    }
}

/// The template `qconf -astree` gives the editor when there is no tree.
fn share_tree_template() -> ShareNode {
    ShareNode {
        name: "template".into(),
        shares: 0,
        ..ShareNode::template()
    }
}
