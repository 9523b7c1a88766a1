//! The execd's identity: joining the cell with a token on first start, and the host
//! certificate it keeps for every later start.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use gantry_common::conf::parse_entries;
use gantry_net::cell::{write_file_atomic, ExecdPaths, JoinToken};
use gantry_net::tls::{generate_host_key, join_client_config, MASTER_SERVER_NAME};
use gantry_net::transport::{expect_hello_reply, read_frame, write_frame, TransportError};
use gantry_proto::{FromExecd, Hello, PeerRole, ToExecd, PROTOCOL_VERSION};

/// What an execd needs to connect with mutual TLS.
#[derive(Debug, Clone)]
pub struct Identity {
    pub hostname: String,
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Failed(String),
}

/// The identity saved in `home`, if the execd has joined before.
pub fn load(home: &Path) -> Result<Option<Identity>, String> {
    let p = ExecdPaths::new(home);
    if !p.host_cert().exists() {
        return Ok(None);
    }
    let read =
        |path: &Path| std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
    let conf = read(&p.identity())?;
    let entries = parse_entries(&conf).map_err(|e| format!("{}: {e}", p.identity().display()))?;
    let hostname = entries
        .iter()
        .find(|e| e.key == "hostname")
        .map(|e| e.value.clone())
        .ok_or_else(|| format!("{}: no hostname", p.identity().display()))?;
    Ok(Some(Identity {
        hostname,
        ca_pem: read(&p.ca_cert())?,
        cert_pem: read(&p.host_cert())?,
        key_pem: read(&p.host_key())?,
    }))
}

fn save(home: &Path, id: &Identity) -> Result<(), String> {
    let p = ExecdPaths::new(home);
    let w = |path: &Path, data: &str, mode| {
        write_file_atomic(path, data.as_bytes(), mode)
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    w(&p.host_key(), &id.key_pem, 0o600)?;
    w(&p.ca_cert(), &id.ca_pem, 0o644)?;
    w(&p.identity(), &format!("hostname {}\n", id.hostname), 0o644)?;
    // The certificate last: its presence marks a completed join.
    w(&p.host_cert(), &id.cert_pem, 0o644)
}

/// Join the cell: verify the master by the CA fingerprint in the token, send a fresh
/// public key, receive and save the host certificate.
pub async fn join(
    endpoint: &quinn::Endpoint,
    master: SocketAddr,
    token_text: &str,
    hostname: &str,
    home: &Path,
) -> Result<Identity, JoinError> {
    let token = JoinToken::parse(token_text).map_err(|e| JoinError::Refused(e.to_string()))?;
    let config = join_client_config(token.ca_fingerprint, PROTOCOL_VERSION)
        .map_err(|e| JoinError::Failed(e.to_string()))?;
    let fail = |e: &dyn std::fmt::Display| JoinError::Failed(format!("joining via {master}: {e}"));
    let conn = endpoint
        .connect_with(config, master, MASTER_SERVER_NAME)
        .map_err(|e| fail(&e))?
        .await
        .map_err(|e| match e {
            quinn::ConnectionError::TransportError(t) => {
                JoinError::Refused(format!("the master at {master} could not be verified: {t}"))
            }
            other => fail(&other),
        })?;
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| fail(&e))?;
    write_frame(
        &mut send,
        &Hello::new(PeerRole::Execd, env!("CARGO_PKG_VERSION")),
    )
    .await
    .map_err(|e| fail(&e))?;
    let (key_pem, public_key) = generate_host_key().map_err(|e| fail(&e))?;
    write_frame(
        &mut send,
        &FromExecd::Join {
            token: token_text.trim().to_string(),
            hostname: hostname.to_string(),
            public_key,
        },
    )
    .await
    .map_err(|e| fail(&e))?;
    // A master of another protocol refuses for good; a connection lost meanwhile (a
    // master busy with a thousand joins at once) is tried again.
    expect_hello_reply(&mut recv).await.map_err(|e| match e {
        TransportError::VersionMismatch(_) => JoinError::Refused(e.to_string()),
        other => fail(&other),
    })?;
    let reply: ToExecd = tokio::time::timeout(Duration::from_secs(30), read_frame(&mut recv))
        .await
        .map_err(|_| fail(&"no answer from the master"))?
        .map_err(|e| fail(&e))?;
    conn.close(0u32.into(), b"joined");
    match reply {
        ToExecd::Joined {
            hostname,
            host_cert_pem,
            ca_cert_pem,
        } => {
            let id = Identity {
                hostname,
                ca_pem: ca_cert_pem,
                cert_pem: host_cert_pem,
                key_pem,
            };
            save(home, &id).map_err(JoinError::Failed)?;
            Ok(id)
        }
        ToExecd::Refused { reason } => Err(JoinError::Refused(reason)),
        other => Err(fail(&format!("unexpected answer {other:?}"))),
    }
}
