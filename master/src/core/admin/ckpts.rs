//! Checkpointing environments: `qconf -ackpt/-mckpt/-dckpt`.

use gantry_common::ckpt;

use super::*;

impl ClusterState {
    /// `qconf -ackpt/-Ackpt`.
    pub(super) fn add_ckpt(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let c = ckpt::parse_ckpt(text).map_err(|e| invalid(e.to_string()))?;
        if self.ckpts.contains_key(&c.name) {
            return Err(refuse(
                RefusalKind::AlreadyExists,
                format!("checkpointing environment \"{}\" already exists", c.name),
            ));
        }
        let name = c.name.clone();
        Ok(change(
            Op::Put(Object::Ckpt(c)),
            format!("{who} added \"{name}\" to checkpoint interface list"),
        ))
    }

    /// `qconf -mckpt/-Mckpt`.
    pub(super) fn modify_ckpt(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let c = ckpt::parse_ckpt(text).map_err(|e| invalid(e.to_string()))?;
        if !self.ckpts.contains_key(&c.name) {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("Ckpt \"{}\" does not exist", c.name),
            ));
        }
        let name = c.name.clone();
        Ok(change(
            Op::Put(Object::Ckpt(c)),
            format!("{who} modified \"{name}\" in checkpointing environment list"),
        ))
    }

    /// `qconf -dckpt`: refused while a queue lists it or a job requests it (SGE's
    /// messages).
    pub(super) fn delete_ckpts(&self, who: &str, names: &[String]) -> Result<Reply, Refusal> {
        let mut c = Change::default();
        for name in names {
            if !self.ckpts.contains_key(name) {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("Ckpt \"{name}\" does not exist"),
                ));
            }
            if let Some(q) = self
                .input
                .queues
                .values()
                .find(|q| gantry_common::queue::list_names(q, "ckpt_list", name))
            {
                return Err(refuse(
                    RefusalKind::Denied,
                    format!(
                        "Ckpt \"{name}\" is still referenced in queue \"{}\".",
                        q.name
                    ),
                ));
            }
            if let Some(j) = self
                .input
                .jobs
                .values()
                .find(|j| j.spec.ckpt.as_deref() == Some(name.as_str()))
            {
                return Err(refuse(
                    RefusalKind::Denied,
                    format!(
                        "Checkpointing object \"{name}\" is still referenced in job {}.",
                        j.id
                    ),
                ));
            }
            c.ops.push(Op::Delete(format!("ckpt/{name}")));
            c.messages.push(format!(
                "{who} removed \"{name}\" from checkpointing environment list"
            ));
        }
        Ok(Reply::Change(c))
    }
}
