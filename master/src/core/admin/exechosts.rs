//! Exec hosts edited as objects: `qconf -me/-Me`.

use super::*;

impl ClusterState {
    /// `qconf -me/-Me` (the global host too); the reported values stay the execd's.
    pub(super) fn modify_exec_host(&self, who: &str, text: &str) -> Result<Reply, Refusal> {
        // The global host's name is reserved for it: read it in a host's place.
        let is_global = text.lines().any(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some("hostname") && w.next() == Some("global")
        });
        let parsed = if is_global {
            let replaced: String = text
                .lines()
                .map(|l| {
                    if l.split_whitespace().next() == Some("hostname") {
                        "hostname global.invalid\n".to_string()
                    } else {
                        format!("{l}\n")
                    }
                })
                .collect();
            exechost::parse_exechost(&replaced).map(|mut h| {
                h.hostname = "global".into();
                h
            })
        } else {
            exechost::parse_exechost(text)
        }
        .map_err(|e| invalid(e.to_string()))?;
        if !is_global && !self.input.exechosts.contains_key(&parsed.hostname) {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("\"{}\" is not an execution host", parsed.hostname),
            ));
        }
        exechost::check_exechost(&parsed, &self.input.complexes).map_err(invalid)?;
        let owner = format!("exec host \"{}\"", parsed.hostname);
        self.check_sets(&parsed.user_lists, "user_lists", &owner)?;
        self.check_sets(&parsed.xuser_lists, "xuser_lists", &owner)?;
        self.check_projects(&parsed.projects, "projects", &owner)?;
        self.check_projects(&parsed.xprojects, "xprojects", &owner)?;
        let mut host = parsed;
        // What the execd reports is not the administrator's to edit.
        if let Some(old) = self.input.exechosts.get(&host.hostname) {
            host.load_values = old.load_values.clone();
            host.processors = old.processors;
        } else {
            host.load_values = Vec::new();
            host.processors = 0;
        }
        let name = host.hostname.clone();
        Ok(change(
            Op::Put(Object::ExecHost(host)),
            format!("{who} modified \"{name}\" in exechost list"),
        ))
    }
}
