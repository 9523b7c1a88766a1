//! Talking to the local daemon (the master, or the execd that relays to it) over its
//! Unix socket: one request, one answer, with plain blocking I/O (a command is one
//! short-lived process; an async runtime would only add start-up time).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use gantry_common::cell::{client_home, socket_path};
use gantry_proto::frame::{length_prefix, payload_len};
use gantry_proto::{decode, encode, FromMaster, Hello, HelloReply, PeerRole, ProtoError, ToMaster};

#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("error: cannot reach Gantry at {path}: {source} (is GANTRY_HOME the cell or execd directory, and is the daemon running?)")]
    Connect {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("error: talking to the daemon: {0}")]
    Io(#[from] std::io::Error),
    #[error("error: {0}")]
    Proto(#[from] ProtoError),
    #[error("error: {0}")]
    VersionMismatch(String),
}

fn frame(bytes: &[u8]) -> Vec<u8> {
    let mut out = length_prefix(bytes.len()).to_vec();
    out.extend_from_slice(bytes);
    out
}

fn read_frame(s: &mut UnixStream) -> Result<Vec<u8>, ConnError> {
    let mut prefix = [0u8; 4];
    s.read_exact(&mut prefix)?;
    let mut buf = vec![0u8; payload_len(prefix)?];
    s.read_exact(&mut buf)?;
    Ok(buf)
}

/// Send one request to the daemon of `$GANTRY_HOME` and wait for the answer.
pub fn request(req: &ToMaster) -> Result<FromMaster, ConnError> {
    Ok(decode(&request_bytes(req)?)?)
}

/// The same, the answer left encoded (to decode in place).
pub fn request_bytes(req: &ToMaster) -> Result<Vec<u8>, ConnError> {
    let mut stream = request_stream(req)?;
    read_frame(&mut stream)
}

/// The same, the answer left on the socket: its length, then the socket to read
/// exactly that many bytes from. The length is not held to the frame limit: a reader
/// that takes a long answer a piece at a time holds no more of it than it must (and
/// checks the limit where it would hold the whole).
pub fn request_reader(req: &ToMaster) -> Result<(usize, UnixStream), ConnError> {
    let mut stream = request_stream(req)?;
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix)?;
    Ok((u32::from_be_bytes(prefix) as usize, stream))
}

/// The same, for a request after whose answer the socket goes on carrying frames (an
/// interactive session): the answer, and the socket.
pub fn request_keeping(req: &ToMaster) -> Result<(FromMaster, UnixStream), ConnError> {
    let mut stream = request_stream(req)?;
    let answer = decode(&read_frame(&mut stream)?)?;
    Ok((answer, stream))
}

/// [`request`] to the daemon of the cell or execd directory `home`.
pub fn request_at(home: &std::path::Path, req: &ToMaster) -> Result<FromMaster, ConnError> {
    let mut stream = request_stream_at(&socket_path(home), req)?;
    Ok(decode(&read_frame(&mut stream)?)?)
}

/// Send `req` and read the master's hello: the socket, its answer next.
fn request_stream(req: &ToMaster) -> Result<UnixStream, ConnError> {
    request_stream_at(&socket_path(&client_home()), req)
}

fn request_stream_at(path: &std::path::Path, req: &ToMaster) -> Result<UnixStream, ConnError> {
    let path = path.to_path_buf();
    let mut stream = UnixStream::connect(&path).map_err(|source| ConnError::Connect {
        path: path.clone(),
        source,
    })?;
    // Hello and request in one write: one round trip.
    let mut out = frame(&encode(&Hello::new(
        PeerRole::Client,
        env!("CARGO_PKG_VERSION"),
    ))?);
    out.extend_from_slice(&frame(&encode(req)?));
    if let Err(e) = stream.write_all(&out) {
        // A daemon that refuses the connection at its door answers before it reads and
        // may have closed it already: its answer is still there to read.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e.into());
        }
        return match read_frame(&mut stream).map(|b| decode::<HelloReply>(&b)) {
            Ok(Ok(HelloReply::Accepted { .. })) => Ok(stream),
            Ok(Ok(HelloReply::VersionMismatch { message, .. })) => {
                Err(ConnError::VersionMismatch(message))
            }
            _ => Err(e.into()),
        };
    }
    match decode::<HelloReply>(&read_frame(&mut stream)?)? {
        HelloReply::Accepted { .. } => {}
        HelloReply::VersionMismatch { message, .. } => {
            return Err(ConnError::VersionMismatch(message))
        }
    }
    Ok(stream)
}
