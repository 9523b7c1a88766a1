//! The master's HTTP listener (`http_listen` in the global configuration; none by
//! default): `/metrics`, the REST API under `/api/v1/` (see [`api`]) and the status
//! page at `/` (see [`page`]).
//!
//! Two doors, one set of rules:
//! - TCP with TLS under the cell's CA. A caller is the user a certificate issued by
//!   `gantry-master user-cert` names (checked against the cell's `user-certs` record,
//!   so a revoked one is refused at its next connection); a caller without one is
//!   anonymous and may read `/metrics` only where the administrator allowed it
//!   (`http_anonymous true` on a loopback address).
//! - The Unix socket `http.sock` in the cell, on the master's host: the caller is the
//!   socket's peer (`SO_PEERCRED`), as for the `q*` commands.
//!
//! Every request then goes through the same door into the Cluster actor as a `q*`
//! command's ([`crate::shell::cluster::call`]): the same permissions, admin-host
//! checks and request rate per user; each connection is admitted by its user at a
//! [`Door`] as the client socket's are.

pub mod api;
pub mod page;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::Addr;
use gantry_common::config::HttpSettings;
use gantry_common::recent::{Recent, NAME_SERVICE_TTL};
use gantry_net::door::{Door, DoorLimits, REQUEST_DEADLINE};
use gantry_net::usercert::{user_of_certificate, IssuedCerts};
use gantry_proto::Caller;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::shell::cluster::Cluster;
use crate::shell::metrics::Metrics;

/// The uid anonymous callers are counted under at the door (none has it).
const ANONYMOUS_UID: u32 = u32::MAX - 1;

/// Who is calling, as the connection established it.
#[derive(Debug, Clone)]
pub enum Peer {
    User(Caller),
    /// No certificate: `/metrics` only, and only if `allowed`.
    Anonymous {
        allowed: bool,
    },
}

/// What every connection's requests need.
pub struct HttpDoor {
    pub cluster: Addr<Cluster>,
    pub metrics: Arc<Metrics>,
    issued: IssuedCerts,
    /// The master's host name: the host of a caller on it.
    host: String,
    door: Arc<Door>,
    tls: tokio_rustls::TlsAcceptor,
    socket: PathBuf,
    names: Mutex<Recent<u32, String>>,
}

/// Why a connection has no caller, said to each of its requests (403).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct NoCaller(pub String);

/// Who a connection's requests come from, or why they come from nobody.
pub type PeerOf = Result<Peer, NoCaller>;

impl HttpDoor {
    pub fn new(
        cluster: Addr<Cluster>,
        metrics: Arc<Metrics>,
        paths: &gantry_net::cell::MasterPaths,
        host: String,
        tls: rustls::ServerConfig,
    ) -> Arc<HttpDoor> {
        Arc::new(HttpDoor {
            cluster,
            metrics,
            issued: IssuedCerts::new(paths.user_certs()),
            host,
            door: Door::new(DoorLimits::from_descriptors(), "the master's HTTP listener"),
            tls: tokio_rustls::TlsAcceptor::from(Arc::new(tls)),
            socket: paths.http_socket(),
            names: Mutex::new(Recent::new(NAME_SERVICE_TTL)),
        })
    }

    /// The caller a user certificate names, if the cell issued it and it stands.
    fn certified(&self, der: &[u8], ip: IpAddr) -> Result<Caller, NoCaller> {
        let (user, serial) = user_of_certificate(der)
            .ok_or_else(|| NoCaller("the certificate names no user (a host's?)".to_string()))?;
        if !self.issued.admits(&user, &serial) {
            return Err(NoCaller(format!(
                "the certificate of {user} was revoked or not issued by this cell"
            )));
        }
        let account = nix::unistd::User::from_name(&user)
            .ok()
            .flatten()
            .ok_or_else(|| NoCaller(format!("error: unknown user \"{user}\"")))?;
        Ok(Caller {
            user,
            uid: account.uid.as_raw(),
            gid: account.gid.as_raw(),
            host: if ip.is_loopback() {
                self.host.clone()
            } else {
                ip.to_string()
            },
        })
    }
}

/// Serve while the configuration asks for a listener, rebinding when it changes.
pub async fn serve(door: Arc<HttpDoor>, mut settings: watch::Receiver<HttpSettings>) {
    loop {
        let now = *settings.borrow_and_update();
        let serving = async {
            match now.listen {
                Some(addr) => listen(&door, addr, now).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = serving => {
                // Could not bind: wait for another address.
                if settings.changed().await.is_err() {
                    return;
                }
            }
            changed = settings.changed() => {
                if changed.is_err() {
                    return;
                }
                info!("the HTTP listener's configuration changed");
            }
        }
        let _ = std::fs::remove_file(&door.socket);
    }
}

async fn listen(door: &Arc<HttpDoor>, addr: SocketAddr, settings: HttpSettings) {
    let tcp = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            warn!("cannot listen for HTTP on {addr}: {e}");
            return;
        }
    };
    let _ = std::fs::remove_file(&door.socket);
    let unix = match tokio::net::UnixListener::bind(&door.socket) {
        Ok(l) => {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&door.socket, std::fs::Permissions::from_mode(0o666));
            Some(l)
        }
        Err(e) => {
            warn!("cannot listen on {}: {e}", door.socket.display());
            None
        }
    };
    info!(
        "serving HTTPS on {addr} and HTTP on {}{}",
        door.socket.display(),
        if settings.anonymous_allowed() {
            " (/metrics open to everyone on loopback)"
        } else {
            ""
        }
    );
    let router = api::router(Arc::clone(door));
    let anonymous = settings.anonymous_allowed();
    loop {
        tokio::select! {
            accepted = tcp.accept() => match accepted {
                Ok((stream, peer)) => {
                    let door = Arc::clone(door);
                    let router = router.clone();
                    tokio::spawn(async move {
                        if let Err(e) = over_tls(door, router, stream, peer, anonymous).await {
                            debug!(%peer, "HTTPS connection: {e}");
                        }
                    });
                }
                Err(e) => {
                    warn!("HTTP accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            accepted = async {
                match &unix {
                    Some(l) => l.accept().await,
                    None => std::future::pending().await,
                }
            } => match accepted {
                Ok((stream, _)) => {
                    let door = Arc::clone(door);
                    let router = router.clone();
                    tokio::spawn(async move {
                        if let Err(e) = over_unix(door, router, stream).await {
                            debug!("HTTP connection on the socket: {e}");
                        }
                    });
                }
                Err(e) => {
                    warn!("HTTP accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn over_tls(
    door: Arc<HttpDoor>,
    router: axum::Router,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    anonymous: bool,
) -> Result<(), BoxError> {
    // Answers are written as they are made (head, then body): without TCP_NODELAY a
    // small one waits for the client's delayed acknowledgement (40 ms on Linux).
    stream.set_nodelay(true)?;
    let tls = tokio::time::timeout(REQUEST_DEADLINE, door.tls.accept(stream)).await??;
    let presented = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref().to_vec());
    let who = match presented {
        Some(der) => door.certified(&der, peer.ip()).map(Peer::User),
        None => Ok(Peer::Anonymous { allowed: anonymous }),
    };
    serve_connection(door, router, tls, who).await
}

async fn over_unix(
    door: Arc<HttpDoor>,
    router: axum::Router,
    stream: tokio::net::UnixStream,
) -> Result<(), BoxError> {
    let who = {
        let mut names = door.names.lock().unwrap_or_else(|e| e.into_inner());
        gantry_net::transport::local_caller(&stream, &door.host, &mut names)
            .map(Peer::User)
            .map_err(|e| NoCaller(e.to_string()))
    };
    serve_connection(door, router, stream, who).await
}

/// Serve one connection's requests as `who` (or answer each with why not).
async fn serve_connection<S>(
    door: Arc<HttpDoor>,
    router: axum::Router,
    stream: S,
    who: PeerOf,
) -> Result<(), BoxError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let uid = match &who {
        Ok(Peer::User(c)) => c.uid,
        _ => ANONYMOUS_UID,
    };
    let admitted = door.door.admit(uid);
    let who = match (who, &admitted) {
        (Ok(peer), Ok(_)) => Ok(peer),
        (Err(e), _) => Err(e),
        (Ok(_), Err(refused)) => Err(NoCaller(door.door.message(refused, None))),
    };
    let service =
        hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            let router = router.clone();
            request.extensions_mut().insert(who.clone());
            tower::ServiceExt::oneshot(router, request)
        });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(REQUEST_DEADLINE);
    builder
        .serve_connection(TokioIo::new(stream), service)
        .await?;
    drop(admitted);
    Ok(())
}
