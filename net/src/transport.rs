//! Frames on byte streams (QUIC streams and the clients' Unix socket) and the version
//! handshake every connection starts with.

use gantry_proto::frame::{length_prefix, payload_len};
use gantry_proto::{decode, decode_hello, encode, Hello, HelloReply, ProtoError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Proto(#[from] ProtoError),
    #[error("connection closed by peer")]
    Closed,
    #[error("{0}")]
    VersionMismatch(String),
    #[error("QUIC connection failed: {0}")]
    Connection(#[from] quinn::ConnectionError),
    #[error("QUIC connect failed: {0}")]
    Connect(#[from] quinn::ConnectError),
    #[error("QUIC stream closed: {0}")]
    ClosedStream(#[from] quinn::ClosedStream),
}

/// Append one message as a frame to `buf`.
pub fn push_frame<T: Serialize>(buf: &mut Vec<u8>, msg: &T) -> Result<(), TransportError> {
    let payload = encode(msg)?;
    buf.reserve(payload.len() + 4);
    buf.extend_from_slice(&length_prefix(payload.len()));
    buf.extend_from_slice(&payload);
    Ok(())
}

/// Write one message as a frame.
pub async fn write_frame<W, T>(w: &mut W, msg: &T) -> Result<(), TransportError>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let mut buf = Vec::new();
    push_frame(&mut buf, msg)?;
    w.write_all(&buf).await?;
    Ok(())
}

/// Write one frame whose payload is encoded already.
pub async fn write_encoded_frame<W>(w: &mut W, payload: &[u8]) -> Result<(), TransportError>
where
    W: AsyncWrite + Unpin,
{
    w.write_all(&length_prefix(payload.len())).await?;
    w.write_all(payload).await?;
    Ok(())
}

/// Read one frame's bytes; `None` on a clean end of stream before the frame started.
pub async fn read_frame_bytes<R>(r: &mut R) -> Result<Option<Vec<u8>>, TransportError>
where
    R: AsyncRead + Unpin,
{
    read_frame_bytes_max(r, gantry_proto::frame::MAX_FRAME).await
}

/// [`read_frame_bytes`] for a frame of at most `max` bytes (less than the protocol's
/// limit where a peer has not shown who it is yet). The frame's buffer grows as its
/// bytes arrive, never to more than have come: a peer that announces a large frame and
/// sends it slowly, or not at all, holds no more of the daemon's memory than it sent.
pub async fn read_frame_bytes_max<R>(
    r: &mut R,
    max: usize,
) -> Result<Option<Vec<u8>>, TransportError>
where
    R: AsyncRead + Unpin,
{
    let Some(len) = read_frame_len(r).await? else {
        return Ok(None);
    };
    if len > max {
        return Err(ProtoError::FrameTooLarge(len, max).into());
    }
    read_frame_body(r, len).await.map(Some)
}

/// A frame's announced length (at most the protocol's limit); `None` on a clean end of
/// stream before it.
pub async fn read_frame_len<R>(r: &mut R) -> Result<Option<usize>, TransportError>
where
    R: AsyncRead + Unpin,
{
    let mut prefix = [0u8; 4];
    match r.read_exact(&mut prefix).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    Ok(Some(payload_len(prefix)?))
}

/// A frame's `len` bytes after its length, the buffer growing as they arrive.
pub async fn read_frame_body<R>(r: &mut R, len: usize) -> Result<Vec<u8>, TransportError>
where
    R: AsyncRead + Unpin,
{
    let mut buf = Vec::with_capacity(len.min(FIRST_CHUNK));
    let mut limited = r.take(len as u64);
    while buf.len() < len {
        // Full: room for as much again, at most what is still missing. The buffer
        // doubles only as bytes arrive, and ends at the frame's size.
        if buf.len() == buf.capacity() {
            let missing = len - buf.len();
            buf.reserve_exact(missing.min(buf.capacity().max(FIRST_CHUNK)));
        }
        if limited.read_buf(&mut buf).await? == 0 {
            return Err(TransportError::Closed);
        }
    }
    Ok(buf)
}

/// What a frame's buffer starts with before its bytes have come.
const FIRST_CHUNK: usize = 64 * 1024;

/// The largest first frame (the [`Hello`]) a daemon reads from a peer it does not know
/// yet.
pub const MAX_HELLO: usize = 4 * 1024;

/// Read one message; an end of stream is [`TransportError::Closed`].
pub async fn read_frame<R, T>(r: &mut R) -> Result<T, TransportError>
where
    R: AsyncRead + Unpin,
    T: DeserializeOwned,
{
    let bytes = read_frame_bytes(r).await?.ok_or(TransportError::Closed)?;
    Ok(decode(&bytes)?)
}

/// [`read_frame`] for a message of at most `max` bytes.
pub async fn read_frame_max<R, T>(r: &mut R, max: usize) -> Result<T, TransportError>
where
    R: AsyncRead + Unpin,
    T: DeserializeOwned,
{
    let bytes = read_frame_bytes_max(r, max)
        .await?
        .ok_or(TransportError::Closed)?;
    Ok(decode(&bytes)?)
}

/// The message both sides log when versions differ, with what to upgrade: the older
/// side, to the newer's release (docs/admin/upgrades.md: the master first, then the
/// execds and the commands).
pub fn mismatch_message(
    daemon: &str,
    daemon_version: u32,
    peer: &str,
    peer_version: u32,
) -> String {
    let older = match peer_version < daemon_version {
        true => peer,
        false => daemon,
    };
    format!(
        "protocol version mismatch: {daemon} speaks Gantry protocol {daemon_version}, {peer} speaks Gantry protocol {peer_version}: upgrade {older} to the release of the other"
    )
}

/// The accepting side of the handshake: read the peer's [`Hello`], answer it, and return
/// it if the versions match. On a mismatch the reply names both versions and the error
/// carries the same message.
pub async fn accept_hello<R, W>(
    r: &mut R,
    w: &mut W,
    our_version: u32,
    our_name: &str,
) -> Result<Hello, TransportError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let hello = read_hello(r, w, our_version, our_name).await?;
    write_frame(w, &accepted(our_version)).await?;
    Ok(hello)
}

/// The handshake's acceptance, for a side that sends it later (with its first answer,
/// in one write: a one-request client is then woken once, not twice).
pub fn accepted(our_version: u32) -> HelloReply {
    HelloReply::Accepted {
        protocol_version: our_version,
    }
}

/// Read the peer's [`Hello`] and return it if the versions match; on a mismatch, answer
/// it at once (naming both versions) and fail with the same message. The acceptance is
/// the caller's to send ([`accepted`]).
pub async fn read_hello<R, W>(
    r: &mut R,
    w: &mut W,
    our_version: u32,
    our_name: &str,
) -> Result<Hello, TransportError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let bytes = read_frame_bytes_max(r, MAX_HELLO)
        .await?
        .ok_or(TransportError::Closed)?;
    let hello = decode_hello(&bytes)?;
    if hello.protocol_version != our_version {
        let peer = match hello.role {
            gantry_proto::PeerRole::Client => "the client",
            gantry_proto::PeerRole::Execd => "the execd",
            gantry_proto::PeerRole::Master => "the master",
        };
        let message = mismatch_message(our_name, our_version, peer, hello.protocol_version);
        write_frame(
            w,
            &HelloReply::VersionMismatch {
                daemon_version: our_version,
                message: message.clone(),
            },
        )
        .await?;
        w.flush().await?;
        return Err(TransportError::VersionMismatch(message));
    }
    Ok(hello)
}

/// The connecting side's half: read the [`HelloReply`] (after sending a [`Hello`]).
pub async fn expect_hello_reply<R>(r: &mut R) -> Result<(), TransportError>
where
    R: AsyncRead + Unpin,
{
    match read_frame::<_, HelloReply>(r).await? {
        HelloReply::Accepted { .. } => Ok(()),
        HelloReply::VersionMismatch { message, .. } => {
            Err(TransportError::VersionMismatch(message))
        }
    }
}

/// The ALPN protocol a QUIC connection negotiated.
pub fn negotiated_alpn(conn: &quinn::Connection) -> Option<Vec<u8>> {
    conn.handshake_data()?
        .downcast::<quinn::crypto::rustls::HandshakeData>()
        .ok()?
        .protocol
}

/// The peer's certificate chain on a QUIC connection (empty if it presented none).
pub fn peer_certificates(
    conn: &quinn::Connection,
) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    conn.peer_identity()
        .and_then(|id| {
            id.downcast::<Vec<rustls::pki_types::CertificateDer<'static>>>()
                .ok()
        })
        .map(|b| *b)
        .unwrap_or_default()
}

/// Who is on the other end of a local (Unix) socket, by the kernel's account
/// (`SO_PEERCRED`), never by the request. User names are kept in `names` (a minute).
pub fn local_caller(
    stream: &tokio::net::UnixStream,
    host: &str,
    names: &mut gantry_common::recent::Recent<u32, String>,
) -> Result<gantry_proto::Caller, CallerError> {
    let cred = stream.peer_cred().map_err(CallerError::Credentials)?;
    let uid = cred.uid();
    let user = names
        .get_or_lookup(uid, || {
            nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                .ok()
                .flatten()
                .map(|u| u.name)
        })
        .ok_or(CallerError::UnknownUser(uid))?;
    Ok(gantry_proto::Caller {
        user,
        uid,
        gid: cred.gid(),
        host: host.to_string(),
    })
}

/// Why a local client has no identity the daemon can act for.
#[derive(Debug, thiserror::Error)]
pub enum CallerError {
    #[error("cannot read the caller's credentials: {0}")]
    Credentials(std::io::Error),
    #[error("error: unknown user id {0} (no passwd entry)")]
    UnknownUser(u32),
}

/// Send the handshake's acceptance and the answer to a one-request client in one write:
/// the client, blocked on both, wakes once.
pub async fn answer_accepted<W, T>(
    w: &mut W,
    our_version: u32,
    reply: &T,
) -> Result<(), TransportError>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    w.write_all(&accepted_with(our_version, reply)?).await?;
    Ok(())
}

/// The handshake's acceptance and the answer, as [`answer_accepted`] writes them.
pub fn accepted_with<T: Serialize>(our_version: u32, reply: &T) -> Result<Vec<u8>, TransportError> {
    let mut out = Vec::new();
    push_frame(&mut out, &accepted(our_version))?;
    push_frame(&mut out, reply)?;
    Ok(out)
}

/// The same with the answer encoded already (its frame's payload).
pub async fn answer_accepted_encoded<W>(
    w: &mut W,
    our_version: u32,
    payload: &[u8],
) -> Result<(), TransportError>
where
    W: AsyncWrite + Unpin,
{
    w.write_all(&accepted_before(our_version, payload.len())?)
        .await?;
    w.write_all(payload).await?;
    Ok(())
}

/// What goes before an answer of `len` bytes encoded already: the handshake's
/// acceptance and the answer's length.
pub fn accepted_before(our_version: u32, len: usize) -> Result<Vec<u8>, TransportError> {
    let mut out = Vec::new();
    push_frame(&mut out, &accepted(our_version))?;
    out.extend_from_slice(&length_prefix(len));
    Ok(out)
}

/// What each direction of a spliced session reads at once.
pub const SPLICE_BUFFER: usize = 256 * 1024;

/// Carry an interactive session's bytes both ways between two streams until both
/// directions have ended (or either fails), reading neither: the frames are the
/// command's and the shepherd's.
pub async fn splice<A, B>(a: &mut A, b: &mut B) -> std::io::Result<(u64, u64)>
where
    A: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + ?Sized,
    B: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + ?Sized,
{
    tokio::io::copy_bidirectional_with_sizes(a, b, SPLICE_BUFFER, SPLICE_BUFFER).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::PeerRole;

    #[tokio::test]
    async fn frames_round_trip_and_oversized_frames_are_refused() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        write_frame(&mut a, &("hello".to_string(), 7u32))
            .await
            .unwrap();
        let got: (String, u32) = read_frame(&mut b).await.unwrap();
        assert_eq!(got, ("hello".to_string(), 7));
        a.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
        assert!(matches!(
            read_frame_bytes(&mut b).await,
            Err(TransportError::Proto(ProtoError::FrameTooLarge(..)))
        ));
        drop(a);
        assert!(read_frame_bytes(&mut b).await.unwrap().is_none());
    }

    /// A frame announced large and sent slowly is held only as far as it came; one cut
    /// short is an error, and one over the reader's bound is refused before any byte of
    /// it is read.
    #[tokio::test]
    async fn a_frame_grows_as_its_bytes_arrive() {
        let (mut a, mut b) = tokio::io::duplex(1 << 10);
        let len = 3 * FIRST_CHUNK + 17;
        let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let sent = payload.clone();
        let writer = tokio::spawn(async move {
            a.write_all(&length_prefix(len)).await.unwrap();
            for piece in sent.chunks(1000) {
                a.write_all(piece).await.unwrap();
            }
            a
        });
        let got = read_frame_bytes(&mut b).await.unwrap().unwrap();
        assert_eq!(got, payload);
        assert!(got.capacity() < 2 * len, "capacity {}", got.capacity());
        let mut a = writer.await.unwrap();
        // Announced 16 MiB, sent 5 bytes, then gone: nothing like 16 MiB was allocated,
        // and the reader says the stream closed.
        a.write_all(&length_prefix(gantry_proto::frame::MAX_FRAME))
            .await
            .unwrap();
        a.write_all(b"12345").await.unwrap();
        drop(a);
        assert!(matches!(
            read_frame_bytes(&mut b).await,
            Err(TransportError::Closed)
        ));
        // Over the bound: refused from the prefix.
        let (mut a, mut b) = tokio::io::duplex(1 << 10);
        a.write_all(&length_prefix(MAX_HELLO + 1)).await.unwrap();
        assert!(matches!(
            read_frame_bytes_max(&mut b, MAX_HELLO).await,
            Err(TransportError::Proto(ProtoError::FrameTooLarge(..)))
        ));
    }

    #[tokio::test]
    async fn garbage_instead_of_hello_is_refused() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        a.write_all(&[0, 0, 0, 4, 1, 2, 3, 4]).await.unwrap();
        let (mut r, mut w) = tokio::io::split(&mut b);
        assert!(accept_hello(&mut r, &mut w, 1, "the master").await.is_err());
    }

    #[tokio::test]
    async fn version_mismatch_names_both_versions_on_both_sides() {
        let (mut client, mut daemon) = tokio::io::duplex(1 << 16);
        let mut hello = Hello::new(PeerRole::Client, "test");
        hello.protocol_version = 2;
        write_frame(&mut client, &hello).await.unwrap();
        let (mut r, mut w) = tokio::io::split(&mut daemon);
        let err = accept_hello(&mut r, &mut w, 1, "the master")
            .await
            .unwrap_err();
        let want = "protocol version mismatch: the master speaks Gantry protocol 1, the client speaks Gantry protocol 2: upgrade the master to the release of the other";
        assert_eq!(err.to_string(), want);
        let err = expect_hello_reply(&mut client).await.unwrap_err();
        assert_eq!(err.to_string(), want);
    }
}
