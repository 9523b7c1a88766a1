//! Projects: `qconf -aprj/-mprj/-dprj`.

use super::*;

impl ClusterState {
    /// `qconf -aprj/-Aprj`.
    pub(super) fn add_project(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let p = project::parse_project(text).map_err(|e| invalid(e.to_string()))?;
        if self.input.projects.contains_key(&p.name) {
            return Err(refuse(
                RefusalKind::AlreadyExists,
                format!("project \"{}\" already exists", p.name),
            ));
        }
        self.check_sets(&p.acl, "acl", &format!("project \"{}\"", p.name))?;
        self.check_sets(&p.xacl, "xacl", &format!("project \"{}\"", p.name))?;
        let name = p.name.clone();
        Ok(change(
            Op::Put(Object::Project(p)),
            format!("{who} added \"{name}\" to project list"),
        ))
    }

    /// `qconf -mprj/-Mprj`.
    pub(super) fn modify_project(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        let p = project::parse_project(text).map_err(|e| invalid(e.to_string()))?;
        if !self.input.projects.contains_key(&p.name) {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("project \"{}\" does not exist", p.name),
            ));
        }
        self.check_sets(&p.acl, "acl", &format!("project \"{}\"", p.name))?;
        self.check_sets(&p.xacl, "xacl", &format!("project \"{}\"", p.name))?;
        let name = p.name.clone();
        Ok(change(
            Op::Put(Object::Project(p)),
            format!("{who} modified \"{name}\" in project list"),
        ))
    }

    /// `qconf -dprj`: refused while something names the project.
    pub(super) fn delete_projects(&self, who: &str, names: &[String]) -> Result<Reply, Refusal> {
        let mut c = Change::default();
        for name in names {
            if !self.input.projects.contains_key(name) {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("project \"{name}\" does not exist"),
                ));
            }
            if let Some(place) = self.project_user(name) {
                return Err(refuse(
                    RefusalKind::Denied,
                    format!("denied: project \"{name}\" is still referenced in {place}"),
                ));
            }
            c.ops.push(Op::Delete(format!("project/{name}")));
            c.messages
                .push(format!("{who} removed \"{name}\" from project list"));
        }
        Ok(Reply::Change(c))
    }

    /// Where a project is still used: a queue's or host's (x)projects, or a job.
    fn project_user(&self, name: &str) -> Option<String> {
        for q in self.input.queues.values() {
            for key in ["projects", "xprojects"] {
                if gantry_common::queue::list_names(q, key, name) {
                    return Some(format!("{key} of cluster queue \"{}\"", q.name));
                }
            }
        }
        for h in self
            .input
            .exechosts
            .values()
            .chain(self.input.global_host.as_ref())
        {
            if h.projects.iter().chain(&h.xprojects).any(|p| p == name) {
                return Some(format!("exec host \"{}\"", h.hostname));
            }
        }
        if let Some(u) = self
            .input
            .users
            .values()
            .find(|u| u.default_project.as_deref() == Some(name))
        {
            return Some(format!("user \"{}\"", u.name));
        }
        self.input
            .jobs
            .values()
            .find(|j| j.spec.project.as_deref() == Some(name))
            .map(|j| format!("job {}", j.id))
    }
}
