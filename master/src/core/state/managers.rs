//! Managers and operators: `qconf -am/-dm`, `qconf -ao/-do`.

use super::*;

/// The two lists of privileged users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Manager,
    Operator,
}

impl Role {
    fn word(self) -> &'static str {
        match self {
            Role::Manager => "manager",
            Role::Operator => "operator",
        }
    }
}

impl ClusterState {
    /// `qconf -am`.
    pub(crate) fn add_managers(&self, caller: &Caller, users: &[String]) -> Result<Reply, Refusal> {
        self.add_to_list(Role::Manager, caller, users)
    }

    /// `qconf -dm`.
    pub(crate) fn delete_managers(
        &self,
        caller: &Caller,
        users: &[String],
    ) -> Result<Reply, Refusal> {
        self.delete_from_list(Role::Manager, caller, users)
    }

    /// `qconf -ao`.
    pub(crate) fn add_operators(
        &self,
        caller: &Caller,
        users: &[String],
    ) -> Result<Reply, Refusal> {
        self.add_to_list(Role::Operator, caller, users)
    }

    /// `qconf -do`.
    pub(crate) fn delete_operators(
        &self,
        caller: &Caller,
        users: &[String],
    ) -> Result<Reply, Refusal> {
        self.delete_from_list(Role::Operator, caller, users)
    }

    fn list_of(&self, role: Role) -> &Vec<String> {
        match role {
            Role::Manager => &self.managers,
            Role::Operator => &self.operators,
        }
    }

    fn list_object(role: Role, users: Vec<String>) -> Object {
        match role {
            Role::Manager => Object::Managers(users),
            Role::Operator => Object::Operators(users),
        }
    }

    fn add_to_list(&self, role: Role, caller: &Caller, users: &[String]) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let mut list = self.list_of(role).clone();
        let mut messages = Vec::new();
        for u in users {
            if !valid_user_name(u) {
                return Err(refuse(
                    RefusalKind::Invalid,
                    format!("invalid user name \"{u}\""),
                ));
            }
            if list.contains(u) {
                return Err(refuse(
                    RefusalKind::AlreadyExists,
                    format!("{} \"{u}\" already exists", role.word()),
                ));
            }
            list.push(u.clone());
            messages.push(format!("{who} added \"{u}\" to {} list", role.word()));
        }
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Self::list_object(role, list))],
            messages,
        }))
    }

    fn delete_from_list(
        &self,
        role: Role,
        caller: &Caller,
        users: &[String],
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let mut list = self.list_of(role).clone();
        let mut messages = Vec::new();
        for u in users {
            if role == Role::Manager && u == "root" {
                return Err(refuse(
                    RefusalKind::Denied,
                    "denied: \"root\" cannot be removed from the manager list",
                ));
            }
            if !list.contains(u) {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("denied: {} \"{u}\" does not exist", role.word()),
                ));
            }
            list.retain(|m| m != u);
            messages.push(format!("{who} removed \"{u}\" from {} list", role.word()));
        }
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Self::list_object(role, list))],
            messages,
        }))
    }
}
