//! Creating a cell (`gantry-master init`), rotating its join token, and loading it at
//! start.

use std::path::{Path, PathBuf};

use gantry_common::cell::local_hostname;
use gantry_common::conf::parse_entries;
use gantry_common::exechost::{canonical_hostname, valid_hostname};
use gantry_net::cell::{unix_now, write_file_atomic, JoinToken, MasterPaths};
use gantry_net::tls::{fingerprint, generate_ca, Ca, TlsError};

use crate::core::state::initial_objects;
use crate::spool::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum CellError {
    #[error("{path}: a cell already exists here ({found} is present); refusing to overwrite it")]
    Exists { path: PathBuf, found: String },
    #[error("{path}: the directory is not empty; choose a new or empty directory for the cell")]
    NotEmpty { path: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {reason}")]
    Settings { path: PathBuf, reason: String },
    #[error("invalid host name \"{0}\"")]
    Hostname(String),
    #[error("{0}")]
    Token(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CellError + '_ {
    move |source| CellError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The master's settings, from `master.conf`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub hostname: String,
    pub port: u16,
}

pub struct InitOptions {
    pub port: u16,
    pub hostname: Option<String>,
    pub token_ttl_secs: u64,
}

pub struct Created {
    pub settings: Settings,
    pub token: JoinToken,
}

/// The invoking user's name (the first manager besides root).
fn invoking_user() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or_else(|| "root".to_string(), |u| u.name)
}

/// Create a cell in `home`. The cell is assembled in a temporary sibling directory and
/// renamed into place, so a failure leaves nothing behind and an existing cell is never
/// touched.
pub fn init(home: &Path, opts: &InitOptions) -> Result<Created, CellError> {
    let hostname = canonical_hostname(&opts.hostname.clone().unwrap_or_else(local_hostname));
    if !valid_hostname(&hostname) {
        return Err(CellError::Hostname(hostname));
    }
    if home.exists() {
        for marker in ["master.conf", "spool.redb", "ca.pem"] {
            if home.join(marker).exists() {
                return Err(CellError::Exists {
                    path: home.to_path_buf(),
                    found: marker.to_string(),
                });
            }
        }
        let mut entries = std::fs::read_dir(home).map_err(io(home))?;
        if entries.next().is_some() {
            return Err(CellError::NotEmpty {
                path: home.to_path_buf(),
            });
        }
    }
    let parent = home
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let tmp = tempfile_dir(parent)?;
    let result = populate(&tmp, &hostname, opts);
    match result {
        Ok(created) => {
            std::fs::rename(&tmp, home).map_err(|e| {
                let _ = std::fs::remove_dir_all(&tmp);
                CellError::Io {
                    path: home.to_path_buf(),
                    source: e,
                }
            })?;
            Ok(created)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

fn tempfile_dir(parent: &Path) -> Result<PathBuf, CellError> {
    use std::os::unix::fs::DirBuilderExt;
    let path = parent.join(format!(".gantry-cell-{}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(&path)
        .map_err(io(&path))?;
    Ok(path)
}

fn populate(dir: &Path, hostname: &str, opts: &InitOptions) -> Result<Created, CellError> {
    let paths = MasterPaths::new(dir);
    let ca = generate_ca(hostname)?;
    let loaded = Ca::load(&ca.cert_pem, &ca.key_pem)?;
    let (mcert, mkey) = loaded.issue_master(hostname)?;
    write(&paths.ca_cert(), ca.cert_pem.as_bytes(), 0o644)?;
    write(&paths.ca_key(), ca.key_pem.as_bytes(), 0o600)?;
    write(&paths.master_cert(), mcert.as_bytes(), 0o644)?;
    write(&paths.master_key(), mkey.as_bytes(), 0o600)?;
    let settings = Settings {
        hostname: hostname.to_string(),
        port: opts.port,
    };
    write(
        &paths.settings(),
        format!("hostname {}\nport {}\n", settings.hostname, settings.port).as_bytes(),
        0o644,
    )?;
    let token = JoinToken::generate(fingerprint(&ca.cert_der), unix_now() + opts.token_ttl_secs);
    write(
        &paths.join_token(),
        format!("{}\n", token.text()).as_bytes(),
        0o600,
    )?;
    let mut managers = vec!["root".to_string()];
    let me = invoking_user();
    if me != "root" {
        managers.push(me);
    }
    let mut objects = initial_objects(&managers);
    // Manager commands come from the master's own host until `qconf -ah` adds others.
    objects.push(crate::core::state::Object::AdminHosts(vec![
        hostname.to_string()
    ]));
    Store::create(&paths.spool(), &objects)?;
    Ok(Created { settings, token })
}

fn write(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CellError> {
    write_file_atomic(path, bytes, mode).map_err(io(path))
}

/// Read `master.conf`.
pub fn load_settings(paths: &MasterPaths) -> Result<Settings, CellError> {
    let path = paths.settings();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CellError::Settings {
                path: path.clone(),
                reason: "no cell here (run gantry-master init --home DIR first)".to_string(),
            }
        } else {
            CellError::Io {
                path: path.clone(),
                source: e,
            }
        }
    })?;
    let bad = |reason: String| CellError::Settings {
        path: path.clone(),
        reason,
    };
    let entries = parse_entries(&text).map_err(|e| bad(e.to_string()))?;
    let get = |k: &str| {
        entries
            .iter()
            .find(|e| e.key == k)
            .map(|e| e.value.clone())
            .ok_or_else(|| bad(format!("missing \"{k}\"")))
    };
    Ok(Settings {
        hostname: get("hostname")?,
        port: get("port")?
            .parse()
            .map_err(|_| bad("invalid port".to_string()))?,
    })
}

/// The current join token of the cell.
pub fn read_token(paths: &MasterPaths) -> Result<JoinToken, CellError> {
    let path = paths.join_token();
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    JoinToken::parse(&text).map_err(|e| CellError::Token(format!("{}: {e}", path.display())))
}

/// Replace the join token; execds holding the old one can no longer join.
pub fn rotate_token(paths: &MasterPaths, ttl_secs: u64) -> Result<JoinToken, CellError> {
    let ca_pem = std::fs::read_to_string(paths.ca_cert()).map_err(io(&paths.ca_cert()))?;
    let ca_der = gantry_net::tls::certs_from_pem(&ca_pem)?
        .into_iter()
        .next()
        .ok_or(CellError::Tls(TlsError::NoCertificate))?;
    let token = JoinToken::generate(fingerprint(ca_der.as_ref()), unix_now() + ttl_secs);
    write(
        &paths.join_token(),
        format!("{}\n", token.text()).as_bytes(),
        0o600,
    )?;
    Ok(token)
}

/// The command an administrator runs on a compute host to join it.
/// How to join an execution host: the token goes into a file only root may read (a
/// command line is visible to every user of the host), the execd reads it from there.
pub fn join_command(settings: &Settings, token: &JoinToken) -> String {
    format!(
        "  (umask 077; echo '{}' > /etc/gantry-join-token)\n  gantry-execd run --home /var/lib/gantry --master {}:{} --token-file /etc/gantry-join-token\n(or: deploy/install.sh execd --master {}:{} --token-file /etc/gantry-join-token)",
        token.text(),
        settings.hostname,
        settings.port,
        settings.hostname,
        settings.port,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_creates_a_cell_and_refuses_to_overwrite_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("cell");
        let opts = InitOptions {
            port: 7000,
            hostname: Some("head".into()),
            token_ttl_secs: 3600,
        };
        let created = init(&home, &opts).unwrap();
        let paths = MasterPaths::new(&home);
        assert_eq!(load_settings(&paths).unwrap(), created.settings);
        assert_eq!(read_token(&paths).unwrap(), created.token);
        use std::os::unix::fs::PermissionsExt;
        for private in [paths.join_token(), paths.ca_key(), paths.master_key()] {
            let mode = std::fs::metadata(&private).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", private.display());
        }
        let before = std::fs::read(paths.join_token()).unwrap();
        let err = init(&home, &opts).err().unwrap();
        assert!(
            err.to_string().contains("a cell already exists here"),
            "{err}"
        );
        assert_eq!(std::fs::read(paths.join_token()).unwrap(), before);
        let rotated = rotate_token(&paths, 60).unwrap();
        assert_ne!(rotated, created.token);
        assert_eq!(rotated.ca_fingerprint, created.token.ca_fingerprint);
        let join = join_command(&created.settings, &rotated);
        assert!(
            join.contains(&format!("echo '{}' >", rotated.text())),
            "{join}"
        );
        assert!(
            join.contains("--master head:7000 --token-file /etc/gantry-join-token"),
            "{join}"
        );
    }

    #[test]
    fn init_refuses_a_non_empty_directory_and_bad_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("something"), "x").unwrap();
        let opts = InitOptions {
            port: 7000,
            hostname: Some("head".into()),
            token_ttl_secs: 3600,
        };
        assert!(matches!(
            init(dir.path(), &opts),
            Err(CellError::NotEmpty { .. })
        ));
        let opts = InitOptions {
            hostname: Some("bad name".into()),
            ..opts
        };
        assert!(matches!(
            init(&dir.path().join("c"), &opts),
            Err(CellError::Hostname(_))
        ));
    }
}
