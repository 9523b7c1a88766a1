//! The global and the host-local configurations: `qconf -sconf/-mconf/-Mconf`,
//! `-aconf/-Aconf/-dconf/-sconfl`.

use super::*;

impl ClusterState {
    /// `qconf -sconf [name]`.
    pub(crate) fn show_config(&self, name: &str) -> Result<Reply, Refusal> {
        if name == "global" {
            return Ok(Reply::Answer(FromMaster::Config(
                self.global().into_owned(),
            )));
        }
        match self.host_configs.get(name) {
            Some(c) => Ok(Reply::Answer(FromMaster::Config(c.clone()))),
            None => Err(refuse(
                RefusalKind::NotFound,
                format!("configuration {name} not defined"),
            )),
        }
    }

    /// `qconf -sconfl`: the hosts with a local configuration.
    pub(crate) fn show_config_list(&self) -> Result<Reply, Refusal> {
        if self.host_configs.is_empty() {
            return Err(refuse(
                RefusalKind::NotFound,
                "no config defined".to_string(),
            ));
        }
        Ok(Reply::Answer(FromMaster::Names(
            self.host_configs.keys().cloned().collect(),
        )))
    }

    /// `qconf -mconf/-Mconf`: the global configuration (every attribute, those not
    /// given at their defaults) or a host's (the attributes given).
    pub(crate) fn modify_config(
        &self,
        caller: &Caller,
        name: &str,
        text: &str,
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let conf = match name {
            "global" => config::parse_config(name, text),
            _ if self.host_configs.contains_key(name) => config::parse_host_config(name, text),
            _ => {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("configuration {name} does not exist"),
                ))
            }
        }
        .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::Config(conf))],
            messages: vec![format!("{who} modified \"{name}\" in configuration list")],
        }))
    }

    /// `qconf -aconf/-Aconf HOST`: a host's local configuration. The host is one of the
    /// cell's, or a name the master's host resolves (`resolves`).
    pub(crate) fn add_config(
        &self,
        caller: &Caller,
        name: &str,
        text: &str,
        resolves: &dyn Fn(&str) -> bool,
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        if name == "global" || self.host_configs.contains_key(name) {
            return Err(refuse(
                RefusalKind::AlreadyExists,
                format!("configuration {name} already exists"),
            ));
        }
        if !self.input.exechosts.contains_key(name) && !resolves(name) {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("can't resolve hostname \"{name}\""),
            ));
        }
        let conf = config::parse_host_config(name, text)
            .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::Config(conf))],
            messages: vec![format!("{who} added \"{name}\" to configuration list")],
        }))
    }

    /// `qconf -dconf host_list`. As SGE's, a host without a local configuration is
    /// "removed" too; a name that is no host is refused.
    pub(crate) fn delete_configs(
        &self,
        caller: &Caller,
        names: &[String],
        resolves: &dyn Fn(&str) -> bool,
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        let mut ops = Vec::new();
        let mut messages = Vec::new();
        for name in names {
            if name == "global" {
                return Err(refuse(
                    RefusalKind::Invalid,
                    "the global configuration can't be deleted".to_string(),
                ));
            }
            if !self.host_configs.contains_key(name)
                && !self.input.exechosts.contains_key(name)
                && !resolves(name)
            {
                return Err(refuse(
                    RefusalKind::NotFound,
                    format!("can't resolve hostname \"{name}\"\ncan't delete configuration \"{name}\" from list: configuration does not exist"),
                ));
            }
            if self.host_configs.contains_key(name) {
                ops.push(Op::Delete(format!("config/{name}")));
            }
            messages.push(format!("{who} removed \"{name}\" from configuration list"));
        }
        Ok(Reply::Change(Change { ops, messages }))
    }

    /// A host's value of a configuration attribute: its local configuration's, else the
    /// global one's.
    pub fn host_setting(&self, host: &str, key: &str) -> Option<String> {
        if let Some(v) = self.host_configs.get(host).and_then(|c| c.get(key)) {
            return Some(v.to_string());
        }
        self.global().get(key).map(str::to_string)
    }
}
