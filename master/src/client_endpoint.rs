//! The master's Unix socket for client commands on its own host. The caller's identity
//! comes from the kernel (`SO_PEERCRED`), never from the request.

use actix::Addr;
use gantry_common::recent::{Recent, NAME_SERVICE_TTL};
use gantry_net::transport::{
    answer_accepted, answer_accepted_encoded, local_caller, read_frame, read_hello, TransportError,
};
use gantry_proto::{Caller, FromMaster, Refusal, RefusalKind, ToMaster, PROTOCOL_VERSION};
use tokio::net::{UnixListener, UnixStream};
use tracing::debug;

use crate::cluster::{Answer, Cluster};

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
        Err(message) => Answer::Message(Box::new(refused(&message))),
    };
    match reply {
        Answer::Message(m) => answer_accepted(&mut w, PROTOCOL_VERSION, &m).await,
        Answer::Encoded(bytes) => answer_accepted_encoded(&mut w, PROTOCOL_VERSION, &bytes).await,
    }
}

fn refused(message: &str) -> FromMaster {
    FromMaster::Refused(Refusal {
        kind: RefusalKind::Internal,
        message: message.to_string(),
    })
}
