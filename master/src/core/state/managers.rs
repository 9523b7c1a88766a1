//! Managers: `qconf -am/-dm`.

use super::*;

impl ClusterState {
    /// `qconf -am`.
    pub(crate) fn add_managers(&self, caller: &Caller, users: &[String]) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let mut managers = self.managers.clone();
        let mut messages = Vec::new();
        for u in users {
            if !valid_user_name(u) {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!("invalid user name \"{u}\""),
                ));
            }
            if managers.contains(u) {
                return Err(refuse(
                    RefusalKind::AlreadyExists,
                    format!("manager \"{u}\" already exists"),
                ));
            }
            managers.push(u.clone());
            messages.push(format!("{who} added \"{u}\" to manager list"));
        }
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::Managers(managers))],
            messages,
        }))
    }

    /// `qconf -dm`.
    pub(crate) fn delete_managers(
        &self,
        caller: &Caller,
        users: &[String],
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let mut managers = self.managers.clone();
        let mut messages = Vec::new();
        for u in users {
            if u == "root" {
                return Err(refuse(
                    RefusalKind::Denied,
                    "denied: \"root\" cannot be removed from the manager list",
                ));
            }
            if !managers.contains(u) {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("denied: manager \"{u}\" does not exist"),
                ));
            }
            managers.retain(|m| m != u);
            messages.push(format!("{who} removed \"{u}\" from manager list"));
        }
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::Managers(managers))],
            messages,
        }))
    }
}
