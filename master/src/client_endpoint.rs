//! The master's Unix socket for client commands on its own host. The caller's identity
//! comes from the kernel (`SO_PEERCRED`), never from the request.

use actix::Addr;
use gantry_common::transport::{accept_hello, read_frame, write_frame, TransportError};
use gantry_proto::{Caller, FromMaster, Refusal, RefusalKind, ToMaster, PROTOCOL_VERSION};
use tokio::net::{UnixListener, UnixStream};
use tracing::debug;

use crate::cluster::Cluster;

/// Accept client connections until the task is dropped.
pub async fn serve(listener: UnixListener, cluster: Addr<Cluster>, host: String) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let cluster = cluster.clone();
                let host = host.clone();
                actix_rt::spawn(async move {
                    if let Err(e) = handle(stream, cluster, host).await {
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
pub fn local_caller(stream: &UnixStream, host: &str) -> Result<Caller, String> {
    let cred = stream
        .peer_cred()
        .map_err(|e| format!("cannot read the caller's credentials: {e}"))?;
    let uid = cred.uid();
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
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
    host: String,
) -> Result<(), TransportError> {
    let caller = local_caller(&stream, &host);
    let (mut r, mut w) = stream.into_split();
    accept_hello(&mut r, &mut w, PROTOCOL_VERSION, "the master").await?;
    let request: ToMaster = read_frame(&mut r).await?;
    let reply = match caller {
        Ok(caller) => crate::cluster::call(&cluster, caller, request).await,
        Err(message) => refused(&message),
    };
    write_frame(&mut w, &reply).await
}

fn refused(message: &str) -> FromMaster {
    FromMaster::Refused(Refusal {
        kind: RefusalKind::Internal,
        message: message.to_string(),
    })
}
