//! The execd's part of an interactive session: the master opens a stream on this
//! execd's connection for a job's owner, names the task and presents its key
//! ([`TaskAttach`]); the execd connects to the socket the task's shepherd waits on and
//! carries the bytes both ways, reading none of them (the frames are the command's and
//! the shepherd's). Every session rides the connection the execd already has to the
//! master: no port is opened on a compute host.

use std::time::{Duration, Instant};

use gantry_net::transport::{read_frame_max, write_frame};
use gantry_proto::{SessionFrame, TaskAttach};
use tokio::net::UnixStream;
use tracing::{debug, warn};

use crate::jobs::TaskKey;

/// Where the sessions of this host's interactive tasks are found (a running task's
/// socket), for the streams the master opens.
#[derive(Clone)]
pub struct SessionSockets(
    std::sync::Arc<dyn Fn(TaskKey) -> Option<std::path::PathBuf> + Send + Sync>,
);

impl SessionSockets {
    pub fn new(f: impl Fn(TaskKey) -> Option<std::path::PathBuf> + Send + Sync + 'static) -> Self {
        SessionSockets(std::sync::Arc::new(f))
    }

    pub fn find(&self, key: TaskKey) -> Option<std::path::PathBuf> {
        (self.0)(key)
    }
}

/// How long a session the master joins waits for the task's shepherd to listen: the
/// master counts the task as running from its dispatch, before it has started here.
const SHEPHERD_WAIT: Duration = Duration::from_secs(30);

pub async fn join(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    sockets: SessionSockets,
) {
    let attach: TaskAttach = match read_frame_max(&mut recv, 4096).await {
        Ok(a) => a,
        Err(e) => {
            warn!("malformed session request from the master: {e}");
            return;
        }
    };
    let key = (attach.job_id, attach.task_id, attach.pe_task.unwrap_or(0));
    let deadline = Instant::now() + SHEPHERD_WAIT;
    let mut shepherd = loop {
        let found = sockets.find(key);
        if let Some(path) = &found {
            match UnixStream::connect(path).await {
                Ok(s) => break s,
                Err(e) => debug!("session of {}: {e}", crate::jobs::task_name(key)),
            }
        }
        if Instant::now() >= deadline {
            let why = format!(
                "the task {} has no session on this host",
                crate::jobs::task_name(key)
            );
            let _ = write_frame(&mut send, &SessionFrame::Failed(why)).await;
            let _ = send.finish();
            return;
        }
        // The shepherd is starting: it listens within milliseconds.
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    // The shepherd checks the key.
    if write_frame(&mut shepherd, &attach).await.is_err() {
        return;
    }
    let mut remote = tokio::io::join(recv, send);
    if let Err(e) = gantry_net::transport::splice(&mut shepherd, &mut remote).await {
        debug!("session of {} ended: {e}", crate::jobs::task_name(key));
    }
    let (_, mut send) = remote.into_inner();
    let _ = send.finish();
}
