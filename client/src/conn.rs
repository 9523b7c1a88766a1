//! Talking to the local daemon (the master, or the execd that relays to it) over its
//! Unix socket.

use std::path::PathBuf;

use gantry_common::cell::{client_home, socket_path};
use gantry_common::transport::{expect_hello_reply, read_frame, write_frame, TransportError};
use gantry_proto::{FromMaster, Hello, PeerRole, ToMaster};

#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("error: cannot reach Gantry at {path}: {source} (is GANTRY_HOME the cell or execd directory, and is the daemon running?)")]
    Connect {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("error: {0}")]
    Transport(#[from] TransportError),
    #[error("error: cannot start the client runtime: {0}")]
    Runtime(std::io::Error),
}

/// Send one request to the daemon of `$GANTRY_HOME` and wait for the answer.
pub fn request(req: &ToMaster) -> Result<FromMaster, ConnError> {
    let path = socket_path(&client_home());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(ConnError::Runtime)?;
    rt.block_on(async {
        let stream = tokio::net::UnixStream::connect(&path)
            .await
            .map_err(|source| ConnError::Connect {
                path: path.clone(),
                source,
            })?;
        let (mut r, mut w) = stream.into_split();
        write_frame(
            &mut w,
            &Hello::new(PeerRole::Client, env!("CARGO_PKG_VERSION")),
        )
        .await?;
        write_frame(&mut w, req).await?;
        expect_hello_reply(&mut r).await?;
        Ok(read_frame(&mut r).await?)
    })
}
