//! Parallel environments: `qconf -ap/-mp/-dp`.

use super::*;

impl ClusterState {
    /// `qconf -ap/-Ap`.
    pub(super) fn add_pe(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let p = pe::parse_pe(text).map_err(|e| invalid(e.to_string()))?;
        if self.input.pes.contains_key(&p.name) {
            return Err(refuse(
                RefusalKind::AlreadyExists,
                format!("parallel environment \"{}\" already exists", p.name),
            ));
        }
        self.check_pe_refs(&p)?;
        let name = p.name.clone();
        Ok(change(
            Op::Put(Object::Pe(p)),
            format!("{who} added \"{name}\" to parallel environment list"),
        ))
    }

    /// `qconf -mp/-Mp`.
    pub(super) fn modify_pe(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let p = pe::parse_pe(text).map_err(|e| invalid(e.to_string()))?;
        if !self.input.pes.contains_key(&p.name) {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("parallel environment \"{}\" does not exist", p.name),
            ));
        }
        self.check_pe_refs(&p)?;
        let name = p.name.clone();
        Ok(change(
            Op::Put(Object::Pe(p)),
            format!("{who} modified \"{name}\" in parallel environment list"),
        ))
    }

    /// `qconf -dp`: refused while a queue names it or a job requests it.
    pub(super) fn delete_pes(&self, who: &str, names: &[String]) -> Result<Reply, Refusal> {
        let mut c = Change::default();
        for name in names {
            if !self.input.pes.contains_key(name) {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("denied: parallel environment \"{name}\" does not exist"),
                ));
            }
            if let Some(q) = self
                .input
                .queues
                .values()
                .find(|q| gantry_common::queue::list_names(q, "pe_list", name))
            {
                return Err(refuse(
                    RefusalKind::Denied,
                    format!(
                        "denied: parallel environment \"{name}\" is still referenced in cluster queue \"{}\"",
                        q.name
                    ),
                ));
            }
            if let Some(j) = self.input.jobs.values().find(|j| {
                j.spec
                    .pe
                    .as_ref()
                    .is_some_and(|(p, _)| crate::core::jobs::wildcard(p, name))
            }) {
                return Err(refuse(
                    RefusalKind::Denied,
                    format!(
                        "denied: parallel environment \"{name}\" is still requested by job {}",
                        j.id
                    ),
                ));
            }
            c.ops.push(Op::Delete(format!("pe/{name}")));
            c.messages.push(format!(
                "{who} removed \"{name}\" from parallel environment list"
            ));
        }
        Ok(Reply::Change(c))
    }

    /// The usersets a PE names must exist.
    fn check_pe_refs(&self, p: &pe::Pe) -> Result<(), Refusal> {
        for (key, sets) in [
            ("user_lists", &p.user_lists),
            ("xuser_lists", &p.xuser_lists),
        ] {
            for set in sets {
                if !self.input.usersets.contains_key(set) {
                    return Err(invalid(format!(
                        "userset \"{set}\" in {key} of parallel environment \"{}\" does not exist",
                        p.name
                    )));
                }
            }
        }
        Ok(())
    }
}
