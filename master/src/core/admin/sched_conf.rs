//! The scheduler configuration: `qconf -msconf`.

use super::*;

impl ClusterState {
    /// `qconf -msconf/-Msconf`.
    pub(super) fn modify_schedconf(&self, _who: &str, text: &str) -> Result<Reply, Refusal> {
        let conf = schedconf::parse_schedconf(text).map_err(|e| invalid(e.to_string()))?;
        Ok(change(
            Op::Put(Object::Config(conf)),
            // SGE's words, without the caller.
            "changed scheduler configuration".to_string(),
        ))
    }
}
