//! The execd's Unix socket: client commands on a compute host talk to it, and it relays
//! their requests to the master, vouching for the caller the kernel names.

use gantry_common::transport::{accept_hello, read_frame, write_frame, TransportError};
use gantry_proto::{Caller, FromMaster, Refusal, RefusalKind, Relayed, ToMaster, PROTOCOL_VERSION};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tracing::debug;

pub async fn serve(
    listener: UnixListener,
    hostname: String,
    current: watch::Receiver<Option<quinn::Connection>>,
) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let hostname = hostname.clone();
                let conn = current.borrow().clone();
                tokio::spawn(async move {
                    if let Err(e) = handle(stream, hostname, conn).await {
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

fn refused(message: String) -> FromMaster {
    FromMaster::Refused(Refusal {
        kind: RefusalKind::Internal,
        message,
    })
}

fn caller_of(stream: &UnixStream, host: &str) -> Result<Caller, String> {
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
    hostname: String,
    conn: Option<quinn::Connection>,
) -> Result<(), TransportError> {
    let caller = caller_of(&stream, &hostname);
    let (mut r, mut w) = stream.into_split();
    accept_hello(&mut r, &mut w, PROTOCOL_VERSION, "the execd").await?;
    let request: ToMaster = read_frame(&mut r).await?;
    let reply = match (caller, conn) {
        (Err(m), _) => refused(m),
        (Ok(_), None) => refused(format!(
            "error: the execd on \"{hostname}\" is not connected to the master"
        )),
        (Ok(caller), Some(conn)) => match forward(&conn, Relayed { caller, request }).await {
            Ok(reply) => reply,
            Err(e) => refused(format!("error: relaying to the master failed: {e}")),
        },
    };
    write_frame(&mut w, &reply).await
}

async fn forward(conn: &quinn::Connection, relayed: Relayed) -> Result<FromMaster, TransportError> {
    let (mut send, mut recv) = conn.open_bi().await?;
    write_frame(&mut send, &relayed).await?;
    send.finish()?;
    read_frame(&mut recv).await
}
