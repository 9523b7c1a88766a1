//! The master's Unix socket for client commands on its own host. The caller's identity
//! comes from the kernel (`SO_PEERCRED`), never from the request.

use actix::Addr;
use gantry_common::recent::{Recent, NAME_SERVICE_TTL};
use gantry_common::transport::{accepted, push_frame, read_frame, read_hello, TransportError};
use gantry_proto::{Caller, FromMaster, Refusal, RefusalKind, ToMaster, PROTOCOL_VERSION};
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tracing::debug;

use crate::cluster::Cluster;

/// Accept client connections until the task is dropped.
pub async fn serve(listener: UnixListener, cluster: Addr<Cluster>, host: String) {
    // Callers' user names, looked up once a minute at most.
    let mut names = Recent::new(NAME_SERVICE_TTL);
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let cluster = cluster.clone();
                let caller = local_caller(&stream, &host, &mut names);
                actix_rt::spawn(async move {
                    if let Err(e) = handle(stream, cluster, caller).await {
                        debug!("client connection: {e}");
                    }
                });
            }
            Err(e) => {
                tracing::warn!("accepting a client connection failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// Who is on the other end of a local socket, by the kernel's account.
pub fn local_caller(
    stream: &UnixStream,
    host: &str,
    names: &mut Recent<u32, String>,
) -> Result<Caller, String> {
    let cred = stream
        .peer_cred()
        .map_err(|e| format!("cannot read the caller's credentials: {e}"))?;
    let uid = cred.uid();
    let user = names
        .get_or_lookup(uid, || {
            nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                .ok()
                .flatten()
                .map(|u| u.name)
        })
        .ok_or_else(|| format!("error: unknown user id {uid} (no passwd entry)"))?;
    Ok(Caller {
        user,
        uid,
        gid: cred.gid(),
        host: host.to_string(),
    })
}

async fn handle(
    stream: UnixStream,
    cluster: Addr<Cluster>,
    caller: Result<Caller, String>,
) -> Result<(), TransportError> {
    let (mut r, mut w) = stream.into_split();
    read_hello(&mut r, &mut w, PROTOCOL_VERSION, "the master").await?;
    let request: ToMaster = read_frame(&mut r).await?;
    let reply = match caller {
        Ok(caller) => crate::cluster::call(&cluster, caller, request).await,
        Err(message) => refused(&message),
    };
    // The handshake's acceptance and the answer in one write: the client, blocked on
    // both, wakes once.
    let mut out = Vec::new();
    push_frame(&mut out, &accepted(PROTOCOL_VERSION))?;
    push_frame(&mut out, &reply)?;
    w.write_all(&out).await?;
    Ok(())
}

fn refused(message: &str) -> FromMaster {
    FromMaster::Refused(Refusal {
        kind: RefusalKind::Internal,
        message: message.to_string(),
    })
}
