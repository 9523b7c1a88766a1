//! The global configuration: `qconf -sconf/-mconf`.

use super::*;

impl ClusterState {
    /// `qconf -sconf`.
    pub(crate) fn show_config(&self, name: &str) -> Result<Reply, Refusal> {
        if name != "global" {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("configuration {name} not defined"),
            ));
        }
        Ok(Reply::Answer(FromMaster::Config(
            self.global().into_owned(),
        )))
    }

    /// `qconf -mconf/-Mconf`.
    pub(crate) fn modify_config(
        &self,
        caller: &Caller,
        name: &str,
        text: &str,
    ) -> Result<Reply, Refusal> {
        let who = format!("{}@{}", caller.user, caller.host);
        self.manager_check(caller)?;
        if name != "global" {
            return Err(refuse(
                RefusalKind::NotFound,
                format!("configuration {name} not defined (only \"global\" exists)"),
            ));
        }
        let conf = config::parse_config(name, text)
            .map_err(|e| refuse(RefusalKind::Invalid, e.to_string()))?;
        Ok(Reply::Change(Change {
            ops: vec![Op::Put(Object::Config(conf))],
            messages: vec![format!("{who} modified \"{name}\" in configuration list")],
        }))
    }
}
