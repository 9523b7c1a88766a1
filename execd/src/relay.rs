//! The execd's Unix socket: client commands on a compute host talk to it, and it relays
//! their requests to the master, vouching for the caller the kernel names.

use gantry_net::door::{Door, Entered, Entrance};
use gantry_net::transport::{
    answer_accepted, local_caller, read_frame, write_frame, TransportError,
};
use gantry_proto::{Caller, FromMaster, Refusal, RefusalKind, Relayed, ToMaster, PROTOCOL_VERSION};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tracing::debug;

/// Accept client connections until the task is dropped, each admitted by its user at
/// the door (see `gantry_net::door`), so that no user can take the descriptors the
/// execd's jobs need.
pub async fn serve(
    listener: UnixListener,
    hostname: String,
    current: watch::Receiver<Option<quinn::Connection>>,
) {
    let mut entrance = Entrance::new("the execd");
    loop {
        let Entered {
            stream,
            uid,
            admitted,
        } = entrance.next(&listener).await;
        let caller = local_caller(&stream, &hostname, entrance.names());
        let hostname = hostname.clone();
        let conn = current.borrow().clone();
        let door = std::sync::Arc::clone(entrance.door());
        tokio::spawn(async move {
            if let Err(e) = handle(stream, hostname, caller, conn, &door, uid).await {
                debug!("client connection: {e}");
            }
            drop(admitted);
        });
    }
}

fn refused(message: String) -> FromMaster {
    FromMaster::Refused(Refusal {
        kind: RefusalKind::Internal,
        message,
    })
}

async fn handle(
    stream: UnixStream,
    hostname: String,
    caller: Result<Caller, gantry_net::transport::CallerError>,
    conn: Option<quinn::Connection>,
    door: &std::sync::Arc<Door>,
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
            return answer_accepted(&mut w, PROTOCOL_VERSION, &refused(too_many.to_string())).await
        }
    };
    // An interactive session: once the master has joined it, this socket and the
    // stream to the master carry its frames both ways.
    if let (Ok(caller), Some(conn), true) = (&caller, &conn, request.opens_session()) {
        let relayed = Relayed {
            caller: caller.clone(),
            request: request.clone(),
        };
        let opened = async {
            let (mut send, mut recv) = conn.open_bi().await?;
            write_frame(&mut send, &relayed).await?;
            let answer: FromMaster = read_frame(&mut recv).await?;
            Ok::<_, TransportError>((send, recv, answer))
        };
        return match opened.await {
            Ok((send, recv, answer @ FromMaster::Attached { .. })) => {
                answer_accepted(&mut w, PROTOCOL_VERSION, &answer).await?;
                let mut local = r
                    .reunite(w)
                    .map_err(|_| std::io::Error::other("the socket's halves do not match"))?;
                let mut remote = tokio::io::join(recv, send);
                let _ = gantry_net::transport::splice(&mut local, &mut remote).await;
                let (_, mut send) = remote.into_inner();
                let _ = send.finish();
                Ok(())
            }
            Ok((_, _, answer)) => answer_accepted(&mut w, PROTOCOL_VERSION, &answer).await,
            Err(e) => {
                let answer = refused(format!("error: relaying to the master failed: {e}"));
                answer_accepted(&mut w, PROTOCOL_VERSION, &answer).await
            }
        };
    }
    let reply = match (caller, conn) {
        (Err(error), _) => refused(error.to_string()),
        (Ok(_), None) => refused(format!(
            "error: the execd on \"{hostname}\" is not connected to the master"
        )),
        (Ok(caller), Some(conn)) => match forward(&conn, Relayed { caller, request }).await {
            Ok(reply) => reply,
            Err(e) => refused(format!("error: relaying to the master failed: {e}")),
        },
    };
    answer_accepted(&mut w, PROTOCOL_VERSION, &reply).await
}

async fn forward(conn: &quinn::Connection, relayed: Relayed) -> Result<FromMaster, TransportError> {
    let (mut send, mut recv) = conn.open_bi().await?;
    write_frame(&mut send, &relayed).await?;
    send.finish()?;
    read_frame(&mut recv).await
}
