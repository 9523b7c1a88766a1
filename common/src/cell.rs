//! Where a client finds its cell: the cell directory, the master's socket, and this
//! machine's host name. The daemons' files and keys are `gantry_net::cell`'s.

use std::path::{Path, PathBuf};

/// Where clients look for the cell when `GANTRY_HOME` is not set.
pub const DEFAULT_HOME: &str = "/var/lib/gantry";

/// The default UDP port the master listens on for execds.
pub const DEFAULT_PORT: u16 = 6446;

/// The cell directory a client uses: `$GANTRY_HOME`, else [`DEFAULT_HOME`].
pub fn client_home() -> PathBuf {
    std::env::var_os("GANTRY_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_HOME), PathBuf::from)
}

/// The Unix socket clients talk to, in a master's or an execd's home.
pub fn socket_path(home: &Path) -> PathBuf {
    home.join("gantry.sock")
}

/// This machine's host name, short form (as SGE shows hosts by default): the kernel's
/// node name of this UTS namespace.
pub fn local_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_name_is_the_kernels() {
        let name = local_hostname();
        assert!(!name.is_empty() && !name.contains('\n'), "{name:?}");
        let out = std::process::Command::new("uname")
            .arg("-n")
            .output()
            .unwrap();
        assert_eq!(name, String::from_utf8_lossy(&out.stdout).trim());
    }
}
