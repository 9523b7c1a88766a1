//! The master's QUIC endpoint for execds: the version handshake, joins, and one session
//! per connected execd (load reports in, settings out, relayed client requests).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use gantry_net::tls::fingerprint;
use gantry_net::transport::{
    accept_hello, peer_certificates, read_frame, read_frame_max, write_encoded_frame, write_frame,
    TransportError,
};
use gantry_proto::{FromExecd, Relayed, ToExecd, PROTOCOL_VERSION};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tracing::{debug, info, warn, Instrument};

use crate::shell::cluster::{
    call, Answer, Cluster, ExecdJobs, Join, Load, Register, SessionEnded, CLOSE_REFUSED,
};

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// Accept execd connections until the endpoint is closed.
pub async fn serve(endpoint: quinn::Endpoint, cluster: Addr<Cluster>) {
    let unregistered = Arc::new(Semaphore::new(MAX_UNREGISTERED));
    let mut refusals = gantry_net::door::RefusalLog::default();
    while let Some(incoming) = endpoint.accept().await {
        let cluster = cluster.clone();
        let peer = incoming.remote_address();
        let Ok(permit) = Arc::clone(&unregistered).try_acquire_owned() else {
            refusals.note(&format!(
                "{MAX_UNREGISTERED} connections have not registered yet; refused {peer}"
            ));
            incoming.refuse();
            continue;
        };
        tokio::spawn(
            async move {
                match handle(incoming, cluster, permit).await {
                    Ok(()) => {}
                    Err(e) => warn!("refused: {e}"),
                }
            }
            .instrument(tracing::info_span!("execd", peer = %peer)),
        );
    }
}

async fn refuse(
    send: &mut quinn::SendStream,
    conn: &quinn::Connection,
    reason: String,
) -> Result<(), TransportError> {
    let _ = write_frame(
        send,
        &ToExecd::Refused {
            reason: reason.clone(),
        },
    )
    .await;
    let _ = send.finish();
    // Give the peer a moment to read the reason before the connection goes.
    let _ = tokio::time::timeout(Duration::from_secs(2), conn.closed()).await;
    conn.close(CLOSE_REFUSED.into(), reason.as_bytes());
    Err(TransportError::VersionMismatch(reason))
}

/// Connections that have not registered or joined yet (handshakes, hellos, joins under
/// way): more are refused until some are done. Each holds at most the pre-session
/// receive window of the master's memory.
const MAX_UNREGISTERED: usize = 128;

/// How long a new connection has for its TLS handshake, hello and first message.
const FIRST_MESSAGE_DEADLINE: Duration = Duration::from_secs(10);

/// The largest first message (a join or a registration) the master reads.
const MAX_FIRST_MESSAGE: usize = 64 * 1024;

async fn handle(
    incoming: quinn::Incoming,
    cluster: Addr<Cluster>,
    unregistered: OwnedSemaphorePermit,
) -> Result<(), TransportError> {
    let peer = incoming.remote_address();
    let deadline = tokio::time::Instant::now() + FIRST_MESSAGE_DEADLINE;
    let conn = match tokio::time::timeout_at(deadline, incoming).await {
        Ok(conn) => conn?,
        Err(_) => return Err(TransportError::Closed),
    };
    let (mut send, mut recv) = match tokio::time::timeout_at(deadline, conn.accept_bi()).await {
        Ok(r) => r?,
        Err(_) => {
            conn.close(CLOSE_REFUSED.into(), b"no hello");
            return Err(TransportError::Closed);
        }
    };
    let hello = tokio::time::timeout_at(
        deadline,
        accept_hello(&mut recv, &mut send, PROTOCOL_VERSION, "the master"),
    )
    .await
    .unwrap_or_else(|_| Err(TransportError::Closed));
    if let Err(e) = hello {
        let _ = send.finish();
        let _ = tokio::time::timeout(Duration::from_secs(2), conn.closed()).await;
        conn.close(CLOSE_REFUSED.into(), e.to_string().as_bytes());
        return Err(e);
    }
    let certs = peer_certificates(&conn);
    let first = tokio::time::timeout_at(
        deadline,
        read_frame_max::<_, FromExecd>(&mut recv, MAX_FIRST_MESSAGE),
    )
    .await
    .unwrap_or_else(|_| Err(TransportError::Closed));
    let first = match first {
        Ok(m) => m,
        Err(e) => {
            conn.close(CLOSE_REFUSED.into(), b"malformed message");
            return Err(e);
        }
    };
    let Some(cert) = certs.first() else {
        // No certificate: the only thing this peer may do is join.
        let FromExecd::Join {
            token,
            hostname,
            public_key,
        } = first
        else {
            return refuse(
                &mut send,
                &conn,
                "a peer without a host certificate may only join".into(),
            )
            .await;
        };
        let reply = cluster
            .send(Join {
                token,
                hostname: hostname.clone(),
                public_key,
                peer,
                from_masters_machine: is_local_address(peer.ip()),
            })
            .await
            .map_err(|_| TransportError::Closed)?;
        return match reply {
            Ok(joined) => {
                write_frame(&mut send, &joined).await?;
                let _ = send.finish();
                let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
                Ok(())
            }
            Err(reason) => {
                refuse(&mut send, &conn, format!("{reason} (host \"{hostname}\")")).await
            }
        };
    };
    let FromExecd::Register { hostname: claimed } = first else {
        return refuse(&mut send, &conn, "expected a registration".into()).await;
    };
    let fp = hex::encode(fingerprint(cert.as_ref()));
    let session_id = NEXT_SESSION.fetch_add(1, Ordering::Relaxed);
    let (tx, mut rx) = mpsc::unbounded_channel::<ToExecd>();
    let registered = cluster
        .send(Register {
            fingerprint: fp,
            claimed_hostname: claimed,
            session_id,
            conn: Some(conn.clone()),
            to_execd: tx,
        })
        .await
        .map_err(|_| TransportError::Closed)?;
    let (host, load_report_time) = match registered {
        Ok(r) => r,
        Err(reason) => return refuse(&mut send, &conn, reason.to_string()).await,
    };
    // A registered execd: the room of a session, and its place among the unregistered
    // given up.
    gantry_net::tls::open_session_limits(&conn);
    drop(unregistered);
    write_frame(
        &mut send,
        &ToExecd::Settings {
            load_report_time_secs: load_report_time,
        },
    )
    .await?;
    // Settings pushed by the Cluster go out on the control stream.
    let writer = tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            if write_frame(&mut send, &msg).await.is_err() {
                break;
            }
        }
    });
    // Relayed client requests arrive on their own streams.
    let relays = {
        let conn = conn.clone();
        let cluster = cluster.clone();
        let host = host.clone();
        tokio::spawn(async move {
            while let Ok((send, recv)) = conn.accept_bi().await {
                tokio::spawn(relay(send, recv, cluster.clone(), host.clone()));
            }
        })
    };
    let reason = loop {
        match read_frame::<_, FromExecd>(&mut recv).await {
            Ok(FromExecd::LoadReport { values }) => {
                debug!(host = %host, n = values.len(), "load report");
                cluster.do_send(Load {
                    host: host.clone(),
                    values,
                });
            }
            Ok(FromExecd::JobStarted { job_id, task_id }) => cluster.do_send(ExecdJobs::Started {
                host: host.clone(),
                job_id,
                task_id,
            }),
            Ok(FromExecd::JobFinished(report)) => cluster.do_send(ExecdJobs::Finished {
                host: host.clone(),
                report: Box::new(report),
            }),
            Ok(FromExecd::RunningJobs { tasks, pe_tasks }) => cluster.do_send(ExecdJobs::Running {
                host: host.clone(),
                tasks,
                pe_tasks,
            }),
            Ok(FromExecd::TaskUsage { tasks }) => cluster.do_send(ExecdJobs::Usage {
                host: host.clone(),
                tasks,
            }),
            Ok(other) => {
                warn!(host = %host, "unexpected message from execd: {other:?}");
            }
            Err(e) => break e.to_string(),
        }
    };
    writer.abort();
    relays.abort();
    cluster.do_send(SessionEnded {
        host: host.clone(),
        session_id,
        reason,
    });
    info!(host = %host, "session ended");
    Ok(())
}

/// One client request relayed by an execd for a local user it vouches for. The host is
/// the execd's own, from its certificate, whatever the message says.
async fn relay(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    cluster: Addr<Cluster>,
    host: String,
) {
    let reply = match read_frame::<_, Relayed>(&mut recv).await {
        Ok(Relayed {
            mut caller,
            request,
        }) if request.opens_session() => {
            // An interactive session for a user on the execd's host: this stream and
            // the one to the task's execd carry its frames both ways.
            caller.host = host;
            match crate::shell::cluster::join_session(&cluster, caller, request).await {
                Ok(joined) => {
                    if write_frame(&mut send, &joined.answer).await.is_err() {
                        return;
                    }
                    let mut here = tokio::io::join(recv, send);
                    crate::shell::cluster::carry_session(&cluster, joined, &mut here).await;
                    let (_, mut a) = here.into_inner();
                    let _ = a.finish();
                    return;
                }
                Err(refusal) => Answer::Message(Box::new(refusal)),
            }
        }
        Ok(Relayed {
            mut caller,
            request,
        }) => {
            caller.host = host;
            call(&cluster, caller, request).await
        }
        Err(e) => {
            warn!("malformed relayed request: {e}");
            return;
        }
    };
    let _ = match reply {
        Answer::Message(m) => write_frame(&mut send, &m).await,
        Answer::Encoded(bytes) => write_encoded_frame(&mut send, &bytes).await,
        // Only a local client's listing is written where it is made.
        Answer::Sent => Ok(()),
    };
    let _ = send.finish();
}

/// Is `ip` one of this machine's own addresses (a join from the master's machine)? Only
/// a local address can be bound.
fn is_local_address(ip: std::net::IpAddr) -> bool {
    ip.is_loopback() || std::net::UdpSocket::bind((ip, 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::is_local_address;

    #[test]
    fn only_the_masters_own_addresses_are_local() {
        // (address, local)
        let table = [
            ("127.0.0.1", true),
            ("127.0.0.2", true),
            ("::1", true),
            ("192.0.2.1", false),
            ("198.51.100.7", false),
            ("2001:db8::1", false),
        ];
        for (ip, local) in table {
            assert_eq!(is_local_address(ip.parse().unwrap()), local, "{ip}");
        }
    }
}
