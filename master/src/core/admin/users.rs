//! User objects: `qconf -auser/-muser/-duser/-suser/-suserl`, in SGE 8.1.9's words.

use super::*;
use gantry_common::conf::SgeFileError;
use gantry_common::user::{self, User};

/// A user file refused: the words SGE's `qconf` prints, its file's name aside.
fn unreadable(e: SgeFileError) -> Refusal {
    match e {
        SgeFileError::Alone(m) => invalid(m),
        other => invalid(format!("error: {other}")),
    }
}

impl ClusterState {
    /// A user object's default project must exist.
    fn check_user(&self, u: &User) -> Result<(), Refusal> {
        match &u.default_project {
            Some(p) if !self.input.projects.contains_key(p) => Err(refuse(
                RefusalKind::NotFound,
                format!("denied: project \"{p}\" does not exist"),
            )),
            _ => Ok(()),
        }
    }

    /// `qconf -auser/-Auser`.
    pub(super) fn add_user(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let u = user::parse_user(text).map_err(unreadable)?;
        if self.input.users.contains_key(&u.name) {
            return Err(refuse(
                RefusalKind::AlreadyExists,
                format!("user \"{}\" already exists", u.name),
            ));
        }
        self.check_user(&u)?;
        let name = u.name.clone();
        Ok(change(
            Op::Put(Object::User(u)),
            format!("{who} added \"{name}\" to user list"),
        ))
    }

    /// `qconf -muser/-Muser`.
    pub(super) fn modify_user(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let u = user::parse_user(text).map_err(unreadable)?;
        if !self.input.users.contains_key(&u.name) {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("{} is not known as a user", u.name),
            ));
        }
        self.check_user(&u)?;
        let name = u.name.clone();
        Ok(change(
            Op::Put(Object::User(u)),
            format!("{who} modified \"{name}\" in user list"),
        ))
    }

    /// `qconf -duser`: every name must be a user's, or nothing is deleted.
    pub(super) fn delete_users(&self, who: &str, names: &[String]) -> Result<Reply, Refusal> {
        let mut c = Change::default();
        for name in names {
            if !self.input.users.contains_key(name) {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("denied: user \"{name}\" does not exist"),
                ));
            }
            c.ops.push(Op::Delete(format!("user/{name}")));
            c.messages
                .push(format!("{who} removed \"{name}\" from user list"));
        }
        Ok(Reply::Change(c))
    }

    /// `qconf -suser NAME`.
    pub(super) fn show_user(&self, name: &str) -> Result<String, Refusal> {
        match name {
            "" | "template" => Ok(user::print_user(&User::new("template"))),
            _ => self
                .input
                .users
                .get(name)
                .map(user::print_user)
                .ok_or_else(|| {
                    refuse(
                        RefusalKind::NotFound,
                        format!("{name} is not known as a user"),
                    )
                }),
        }
    }

    /// `qconf -suserl` (the client says `no user list defined` when there is none).
    pub(super) fn user_names(&self) -> Vec<String> {
        self.input.users.keys().cloned().collect()
    }
}
