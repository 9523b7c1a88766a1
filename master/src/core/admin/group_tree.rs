//! `qconf -sgq -mgq -Mgq -dgq`: the tree of hierarchical group quotas, one object,
//! replaced whole or not at all.

use super::*;
use gantry_common::groups;

impl ClusterState {
    pub(super) fn show_group_tree(&self) -> String {
        groups::print_groups(&self.input.group_tree)
    }

    /// A new tree from its text: every rule checked, a file breaking one refused whole
    /// with its line and reason.
    pub(super) fn modify_group_tree(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let tree = groups::parse_groups(text).map_err(|e| invalid(e.to_string()))?;
        for g in &tree {
            if let Some(set) = g
                .user_lists
                .iter()
                .find(|s| !self.input.usersets.contains_key(*s))
            {
                return Err(invalid(format!(
                    "userset \"{set}\" in user_lists of group \"{}\" does not exist",
                    g.name
                )));
            }
        }
        Ok(change(
            Op::Put(Object::GroupTree(tree)),
            format!("{who} modified the group quota tree"),
        ))
    }

    /// `-dgq`: no group left; every job runs in the root.
    pub(super) fn delete_group_tree(&self, who: &str) -> Result<Reply, Refusal> {
        if self.input.group_tree.is_empty() {
            return Err(refuse(
                RefusalKind::NotFound,
                "the group quota tree is empty".to_string(),
            ));
        }
        Ok(change(
            Op::Put(Object::GroupTree(Vec::new())),
            format!("{who} removed the group quota tree"),
        ))
    }
}
