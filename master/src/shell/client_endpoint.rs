//! The master's Unix socket for client commands on its own host. The caller's identity
//! comes from the kernel (`SO_PEERCRED`), never from the request.

use actix::Addr;
use std::io::Write;

use gantry_net::door::{Door, Entered, Entrance};
use gantry_net::transport::{
    accepted_before, accepted_with, answer_accepted, answer_accepted_encoded, local_caller,
    CallerError, TransportError,
};
use gantry_proto::{Caller, FromMaster, Refusal, RefusalKind, ToMaster, PROTOCOL_VERSION};
use std::sync::Arc;
use tokio::net::{UnixListener, UnixStream};
use tracing::debug;

use crate::core::jobs::{ListingAnswer, ListingForm};
use crate::shell::cluster::{Answer, Cluster, ListingError};

/// Accept client connections until the task is dropped, each admitted by its user at
/// the door (see `gantry_net::door`).
pub async fn serve(listener: UnixListener, cluster: Addr<Cluster>, host: String) {
    let mut entrance = Entrance::new("the master");
    loop {
        let Entered {
            stream,
            uid,
            admitted,
        } = entrance.next(&listener).await;
        let cluster = cluster.clone();
        let caller = local_caller(&stream, &host, entrance.names());
        let door = Arc::clone(entrance.door());
        actix_rt::spawn(async move {
            if let Err(e) = handle(stream, cluster, caller, &door, uid).await {
                debug!("client connection: {e}");
            }
            drop(admitted);
        });
    }
}

async fn handle(
    stream: UnixStream,
    cluster: Addr<Cluster>,
    caller: Result<Caller, CallerError>,
    door: &Arc<Door>,
    uid: u32,
) -> Result<(), TransportError> {
    let (mut r, mut w) = stream.into_split();
    // The hello and the request, in time and within the user's bytes under way, or
    // the connection goes; the bytes stay counted until the request is answered.
    let user = caller.as_ref().ok().map(|c| c.user.clone());
    let (request, _held): (ToMaster, _) = match door
        .read_request(uid, user.as_deref(), &mut r, &mut w)
        .await?
    {
        Ok(got) => got,
        Err(too_many) => {
            return answer_accepted(&mut w, PROTOCOL_VERSION, &refused(&too_many.to_string())).await
        }
    };
    // An interactive session: joined, then the socket and the stream to the task's
    // execd carry its frames both ways until either end closes.
    if let (Ok(caller), true) = (&caller, request.opens_session()) {
        return match crate::shell::cluster::join_session(&cluster, caller.clone(), request).await {
            Ok(joined) => {
                answer_accepted(&mut w, PROTOCOL_VERSION, &joined.answer).await?;
                let mut local = r
                    .reunite(w)
                    .map_err(|_| std::io::Error::other("the socket's halves do not match"))?;
                crate::shell::cluster::carry_session(&cluster, joined, &mut local).await;
                Ok(())
            }
            Err(refusal) => answer_accepted(&mut w, PROTOCOL_VERSION, &refusal).await,
        };
    }
    let reply = match (caller, ListingForm::asked(&request)) {
        (Ok(caller), Some((users, form))) => {
            // The listing is written by the thread that makes it, the socket blocking
            // there (see `list_jobs_writing`); a refusal is small and written here.
            let stream = r
                .reunite(w)
                .map_err(|_| std::io::Error::other("the socket's halves do not match"))?
                .into_std()?;
            stream.set_nonblocking(false)?;
            stream.set_write_timeout(Some(LISTING_WRITE_TIMEOUT))?;
            let mut writer = stream.try_clone()?;
            let write = Box::new(move |made: Result<&ListingAnswer, ListingError>| {
                let parts = made.map(|answer| answer.slices().collect::<Vec<_>>());
                if let Err(e) = write_listing(&mut writer, parts.as_deref().map_err(|e| e.clone()))
                {
                    debug!("client connection: {e}");
                }
            });
            let answer =
                crate::shell::cluster::list_jobs_writing(&cluster, caller, users, form, write)
                    .await;
            let mut stream = stream;
            return match answer {
                Answer::Sent => Ok(()),
                Answer::Message(m) => Ok(stream.write_all(&accepted_with(PROTOCOL_VERSION, &m)?)?),
                Answer::Encoded(bytes) => write_listing(&mut stream, Ok(&[&bytes])),
            };
        }
        (Ok(caller), None) => crate::shell::cluster::call(&cluster, caller, request).await,
        (Err(error), _) => Answer::Message(Box::new(refused(&error.to_string()))),
    };
    match reply {
        Answer::Message(m) => answer_accepted(&mut w, PROTOCOL_VERSION, &m).await,
        Answer::Encoded(bytes) => answer_accepted_encoded(&mut w, PROTOCOL_VERSION, &bytes).await,
        Answer::Sent => Ok(()),
    }
}

/// A listing's answer (or why it could not be made) written to a local client's
/// socket, blocking.
fn write_listing(
    socket: &mut std::os::unix::net::UnixStream,
    made: Result<&[&[u8]], ListingError>,
) -> Result<(), TransportError> {
    match made {
        Ok(parts) => {
            let len = parts.iter().map(|p| p.len()).sum();
            room_for(socket, len);
            let head = accepted_before(PROTOCOL_VERSION, len)?;
            let mut slices: Vec<std::io::IoSlice<'_>> = std::iter::once(&head[..])
                .chain(parts.iter().copied())
                .filter(|p| !p.is_empty())
                .map(std::io::IoSlice::new)
                .collect();
            write_all_vectored(socket, &mut slices)?;
        }
        Err(error) => socket.write_all(&accepted_with(
            PROTOCOL_VERSION,
            &refused(&error.to_string()),
        )?)?,
    }
    Ok(())
}

/// Write every slice, as many at once as the system takes.
fn write_all_vectored(
    w: &mut impl Write,
    mut slices: &mut [std::io::IoSlice<'_>],
) -> std::io::Result<()> {
    // IOV_MAX on Linux.
    const AT_ONCE: usize = 1024;
    while !slices.is_empty() {
        match w.write_vectored(&slices[..slices.len().min(AT_ONCE)]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => std::io::IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Let the socket take a whole answer of `len` bytes at once, so that its writer does
/// not wait for the client to read one buffer's worth after another (each a wake-up of
/// either side): as root beyond `net.core.wmem_max`, else up to it.
fn room_for(socket: &std::os::unix::net::UnixStream, len: usize) {
    use nix::sys::socket::{getsockopt, setsockopt, sockopt};
    // The kernel counts each piece's own overhead against the buffer too.
    let wanted = len.saturating_add(len / 4).saturating_add(64 << 10);
    if getsockopt(socket, sockopt::SndBuf).is_ok_and(|has| has >= wanted) {
        return;
    }
    if setsockopt(socket, sockopt::SndBufForce, &wanted).is_err() {
        let _ = setsockopt(socket, sockopt::SndBuf, &wanted);
    }
}

/// How long a listing's writer waits for a client that reads nothing before it gives
/// up on it (a `qstat` reads its answer off the socket as it comes, whatever its
/// standard output waits for).
const LISTING_WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

fn refused(message: &str) -> FromMaster {
    FromMaster::Refused(Refusal {
        kind: RefusalKind::Internal,
        message: message.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes at most `at_once` bytes per write, and counts the slices it was offered.
    struct Trickle {
        got: Vec<u8>,
        at_once: usize,
        most_slices: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.write_vectored(&[std::io::IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
            self.most_slices = self.most_slices.max(bufs.len());
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.at_once - n);
                self.got.extend_from_slice(&b[..take]);
                n += take;
                if n == self.at_once {
                    break;
                }
            }
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Every byte of every slice is written in order, whatever the writer takes at a
    /// time, and never more slices at once than the system takes.
    #[test]
    fn slices_are_written_whole_and_in_order() {
        let parts: Vec<Vec<u8>> = (0..3_000u32)
            .map(|n| n.to_string().into_bytes().repeat(1 + n as usize % 3))
            .collect();
        let want: Vec<u8> = parts.concat();
        for at_once in [1, 7, 4_096, usize::MAX / 2] {
            let mut slices: Vec<std::io::IoSlice<'_>> =
                parts.iter().map(|p| std::io::IoSlice::new(p)).collect();
            let mut w = Trickle {
                got: Vec::new(),
                at_once,
                most_slices: 0,
            };
            write_all_vectored(&mut w, &mut slices).unwrap();
            assert_eq!(w.got, want, "{at_once} at once");
            assert!(w.most_slices <= 1024);
        }
    }
}
