//! The daemons' files in a cell (the master's CA, keys and spool, an execd's host
//! certificate), written atomically, and join tokens.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use gantry_common::cell::socket_path;
use rand::RngCore;

/// Files of a master's cell.
pub struct MasterPaths {
    pub home: PathBuf,
}

impl MasterPaths {
    pub fn new(home: &Path) -> Self {
        MasterPaths {
            home: home.to_path_buf(),
        }
    }
    pub fn settings(&self) -> PathBuf {
        self.home.join("master.conf")
    }
    pub fn ca_cert(&self) -> PathBuf {
        self.home.join("ca.pem")
    }
    pub fn ca_key(&self) -> PathBuf {
        self.home.join("ca.key")
    }
    pub fn master_cert(&self) -> PathBuf {
        self.home.join("master.pem")
    }
    pub fn master_key(&self) -> PathBuf {
        self.home.join("master.key")
    }
    pub fn join_token(&self) -> PathBuf {
        self.home.join("join-token")
    }
    pub fn spool(&self) -> PathBuf {
        self.home.join("spool.redb")
    }
    /// The user certificates issued for the HTTP listener (`gantry-master user-cert`).
    pub fn user_certs(&self) -> PathBuf {
        self.home.join("user-certs")
    }

    /// The HTTP listener's Unix socket (callers known by their credentials).
    pub fn http_socket(&self) -> PathBuf {
        self.home.join("http.sock")
    }

    pub fn socket(&self) -> PathBuf {
        socket_path(&self.home)
    }
}

/// Files of an execd's home.
pub struct ExecdPaths {
    pub home: PathBuf,
}

impl ExecdPaths {
    pub fn new(home: &Path) -> Self {
        ExecdPaths {
            home: home.to_path_buf(),
        }
    }
    pub fn identity(&self) -> PathBuf {
        self.home.join("host.conf")
    }
    pub fn ca_cert(&self) -> PathBuf {
        self.home.join("ca.pem")
    }
    pub fn host_cert(&self) -> PathBuf {
        self.home.join("host.pem")
    }
    pub fn host_key(&self) -> PathBuf {
        self.home.join("host.key")
    }
    pub fn socket(&self) -> PathBuf {
        socket_path(&self.home)
    }
}

/// Write a file atomically (temporary file, fsync, rename) with the given mode.
pub fn write_file_atomic(path: &Path, contents: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(contents)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A join token: `gantry1.<CA fingerprint, hex>.<expiry, unix seconds>.<secret, hex>`.
/// The fingerprint lets a new execd verify the master; the secret and expiry let the
/// master admit the execd. The master compares the whole token with the one in its
/// cell, so the expiry cannot be altered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinToken {
    pub ca_fingerprint: [u8; 32],
    pub expires_at: u64,
    pub secret: [u8; 16],
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("malformed join token (expected gantry1.<fingerprint>.<expiry>.<secret>)")]
    Malformed,
}

impl JoinToken {
    pub fn generate(ca_fingerprint: [u8; 32], expires_at: u64) -> Self {
        let mut secret = [0u8; 16];
        rand::thread_rng().fill_bytes(&mut secret);
        JoinToken {
            ca_fingerprint,
            expires_at,
            secret,
        }
    }

    pub fn parse(text: &str) -> Result<Self, TokenError> {
        let parts: Vec<&str> = text.trim().split('.').collect();
        if parts.len() != 4 || parts[0] != "gantry1" {
            return Err(TokenError::Malformed);
        }
        let fp = hex::decode(parts[1]).map_err(|_| TokenError::Malformed)?;
        let secret = hex::decode(parts[3]).map_err(|_| TokenError::Malformed)?;
        Ok(JoinToken {
            ca_fingerprint: fp.try_into().map_err(|_| TokenError::Malformed)?,
            expires_at: parts[2].parse().map_err(|_| TokenError::Malformed)?,
            secret: secret.try_into().map_err(|_| TokenError::Malformed)?,
        })
    }

    pub fn text(&self) -> String {
        format!(
            "gantry1.{}.{}.{}",
            hex::encode(self.ca_fingerprint),
            self.expires_at,
            hex::encode(self.secret)
        )
    }

    /// Does `presented` equal this token? Compared in constant time.
    pub fn matches(&self, presented: &JoinToken) -> bool {
        let a = self.text();
        let b = presented.text();
        a.len() == b.len()
            && a.bytes()
                .zip(b.bytes())
                .fold(0u8, |acc, (x, y)| acc | (x ^ y))
                == 0
    }
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Parse a duration like `24h`, `30m`, `90s`, `7d`, or a plain number of seconds.
pub fn parse_duration(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        's' => (&t[..t.len() - 1], 1),
        'm' => (&t[..t.len() - 1], 60),
        'h' => (&t[..t.len() - 1], 3600),
        'd' => (&t[..t.len() - 1], 86400),
        _ => (t, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_round_trip_and_comparison() {
        let t = JoinToken::generate([7u8; 32], 1_900_000_000);
        let text = t.text();
        assert!(text.starts_with("gantry1.0707"));
        let back = JoinToken::parse(&text).unwrap();
        assert_eq!(back, t);
        assert!(t.matches(&back));
        let mut other = back.clone();
        other.secret[0] ^= 1;
        assert!(!t.matches(&other));
        let mut later = back;
        later.expires_at += 1;
        assert!(!t.matches(&later));
    }

    #[test]
    fn malformed_tokens() {
        for bad in [
            "",
            "gantry1",
            "gantry2.00.1.00",
            "gantry1.zz.1.00",
            "gantry1.0707.x.0011",
            &format!("gantry1.{}.1.{}", "07".repeat(31), "00".repeat(16)),
        ] {
            assert_eq!(JoinToken::parse(bad), Err(TokenError::Malformed), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("24h"), Some(86400));
        assert_eq!(parse_duration("90s"), Some(90));
        assert_eq!(parse_duration("2d"), Some(172800));
        assert_eq!(parse_duration("15m"), Some(900));
        assert_eq!(parse_duration("5"), Some(5));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration(""), None);
    }

    #[test]
    fn atomic_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secret");
        write_file_atomic(&p, b"one", 0o600).unwrap();
        write_file_atomic(&p, b"two", 0o600).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
