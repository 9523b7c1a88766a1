//! The door of a daemon's local client socket (the master's and each execd's
//! `gantry.sock`): how many connections each user and all users may hold, how long a
//! connection may take to say what it wants, and what is kept back for the daemon's
//! own work.
//!
//! Every user may connect, so every user could hold connections until the daemon has
//! no descriptor left: then root's `qconf` hangs, and on an execd another user's job
//! fails for want of a file. So:
//! - a connection is admitted by its user (the kernel's `SO_PEERCRED`, before anything
//!   is read): at most [`DoorLimits::per_user`] open at once per user and
//!   [`DoorLimits::total`] in all; root and the daemon's own user are not held to the
//!   per-user bound and have [`PRIVILEGED_EXTRA`] more in all, so an administrator
//!   gets in while others fill the door;
//! - a refused client is told why, in the protocol's own answer, written at once; a few
//!   refusers at a time ([`REFUSERS`]) then read what it still sends until it goes,
//!   beyond them the connection is closed at once;
//! - the hello and the request must have arrived [`REQUEST_DEADLINE`] after the
//!   connection was accepted, or it is closed (a connection that sends nothing, or a
//!   frame a byte at a time);
//! - the bounds come from the descriptor limit, raised to its hard limit, less a
//!   reserve for the daemon's own files (spool, journal, scripts, jobs, mail):
//!   [`DoorLimits::from_descriptors`];
//! - and should `accept` still fail for want of a descriptor, one held in reserve is
//!   given up to accept and close the connection, then taken again ([`Spare`]), so
//!   that a full process never leaves clients hanging in the listen queue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_common::recent::Recent;
use gantry_proto::{FromMaster, Refusal, RefusalKind, PROTOCOL_VERSION};
use tokio::io::AsyncReadExt;
use tokio::net::UnixStream;

use crate::transport::accepted_with;

/// How long a client has, from its connection, to send its hello and its request.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// Connections root and the daemon's user may hold beyond [`DoorLimits::total`].
pub const PRIVILEGED_EXTRA: usize = 64;

/// Refused connections told why at once; more are closed without a word.
pub const REFUSERS: usize = 32;

/// How many connections the door lets in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoorLimits {
    pub per_user: usize,
    pub total: usize,
}

/// The largest door, however many descriptors the process may have.
const MOST_TOTAL: usize = 8192;

impl DoorLimits {
    /// The bounds for a process allowed `descriptors` open files: a quarter of them (at
    /// least 256) kept for the daemon's own work and [`PRIVILEGED_EXTRA`] for
    /// administrators; of the rest at most 8,192 for clients, an eighth of that (at
    /// least 4) per user.
    pub fn for_descriptors(descriptors: u64) -> DoorLimits {
        let descriptors = usize::try_from(descriptors).unwrap_or(usize::MAX);
        let reserve = (descriptors / 4).max(256);
        let total = descriptors
            .saturating_sub(reserve + PRIVILEGED_EXTRA)
            .clamp(8, MOST_TOTAL);
        DoorLimits {
            per_user: (total / 8).max(4),
            total,
        }
    }

    /// Raise the soft descriptor limit to the hard one (as a daemon should) and take
    /// the bounds for it.
    pub fn from_descriptors() -> DoorLimits {
        use nix::sys::resource::{getrlimit, setrlimit, Resource};
        let soft = match getrlimit(Resource::RLIMIT_NOFILE) {
            Ok((soft, hard)) if soft < hard => {
                match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
                    Ok(()) => hard,
                    Err(_) => soft,
                }
            }
            Ok((soft, _)) => soft,
            Err(_) => 1024,
        };
        DoorLimits::for_descriptors(soft)
    }
}

#[derive(Debug, Default)]
struct Open {
    by_user: HashMap<u32, usize>,
    total: usize,
    /// Bytes of requests being read or handled, per user.
    bytes_by_user: HashMap<u32, usize>,
}

/// The bytes of requests one user may have under way at once (being read, decoded and
/// handled): a few of the largest scripts, and no user can make the daemon hold its
/// connections' worth of 16 MiB frames. Root and the daemon's user are not bound.
pub const USER_REQUEST_BYTES: usize = 64 << 20;

/// A request refused because its user has [`USER_REQUEST_BYTES`] under way already.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "error: user {who} has {under_way_mib} MiB of requests under way to {daemon} (at most {} MiB at once): try again when they are done",
    USER_REQUEST_BYTES >> 20
)]
pub struct TooManyBytes {
    /// The user's name, quoted, or `uid N`.
    pub who: String,
    pub under_way_mib: usize,
    pub daemon: &'static str,
}

/// A request's bytes counted against its user's [`USER_REQUEST_BYTES`] until dropped.
#[derive(Debug)]
pub struct BytesHeld {
    door: Arc<Door>,
    uid: u32,
    bytes: usize,
}

impl Drop for BytesHeld {
    fn drop(&mut self) {
        let mut open = self.door.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.bytes_by_user.get_mut(&self.uid) {
            *n = n.saturating_sub(self.bytes);
            if *n == 0 {
                open.bytes_by_user.remove(&self.uid);
            }
        }
    }
}

/// The door: who holds how many connections now.
#[derive(Debug)]
pub struct Door {
    limits: DoorLimits,
    /// Users held to no per-user bound (root, the daemon's own).
    privileged: [u32; 2],
    /// The daemon's name in refusals ("the master", "the execd").
    daemon: &'static str,
    open: Mutex<Open>,
    refusers: Arc<tokio::sync::Semaphore>,
}

/// Why a connection was not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The user holds as many as one user may.
    User { uid: u32, open: usize },
    /// The door is full.
    Full { open: usize },
}

/// A connection let in: its place is given back when this is dropped.
#[derive(Debug)]
pub struct Admitted {
    door: Arc<Door>,
    uid: u32,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.door.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_user.get_mut(&self.uid) {
            *n -= 1;
            if *n == 0 {
                open.by_user.remove(&self.uid);
            }
        }
    }
}

impl Door {
    pub fn new(limits: DoorLimits, daemon: &'static str) -> Arc<Door> {
        Arc::new(Door {
            limits,
            privileged: [0, nix::unistd::geteuid().as_raw()],
            daemon,
            open: Mutex::new(Open::default()),
            refusers: Arc::new(tokio::sync::Semaphore::new(REFUSERS)),
        })
    }

    pub fn limits(&self) -> DoorLimits {
        self.limits
    }

    /// Let a connection of `uid` in, or say why not.
    pub fn admit(self: &Arc<Self>, uid: u32) -> Result<Admitted, Refused> {
        let privileged = self.privileged.contains(&uid);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let room = self.limits.total + if privileged { PRIVILEGED_EXTRA } else { 0 };
        if open.total >= room {
            return Err(Refused::Full { open: open.total });
        }
        let mine = open.by_user.get(&uid).copied().unwrap_or(0);
        if !privileged && mine >= self.limits.per_user {
            return Err(Refused::User { uid, open: mine });
        }
        open.total += 1;
        *open.by_user.entry(uid).or_insert(0) += 1;
        Ok(Admitted {
            door: Arc::clone(self),
            uid,
        })
    }

    /// Count a request of `bytes` against `uid`'s [`USER_REQUEST_BYTES`], or say why not.
    pub fn reserve(
        self: &Arc<Self>,
        uid: u32,
        bytes: usize,
        user: Option<&str>,
    ) -> Result<BytesHeld, TooManyBytes> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let under_way = open.bytes_by_user.get(&uid).copied().unwrap_or(0);
        if !self.privileged.contains(&uid) && under_way.saturating_add(bytes) > USER_REQUEST_BYTES {
            return Err(TooManyBytes {
                who: user.map_or_else(|| format!("uid {uid}"), |u| format!("\"{u}\"")),
                under_way_mib: under_way.div_ceil(1 << 20),
                daemon: self.daemon,
            });
        }
        *open.bytes_by_user.entry(uid).or_insert(0) += bytes;
        Ok(BytesHeld {
            door: Arc::clone(self),
            uid,
            bytes,
        })
    }

    /// Read a client's hello and request as the door admits them, within
    /// [`REQUEST_DEADLINE`] of the connection: the request's bytes counted against its
    /// user ([`Door::reserve`]) from its announced length on, before a byte of it is
    /// read. `Ok(Err(message))`: refused (the caller answers with the message).
    pub async fn read_request<T, R, W>(
        self: &Arc<Self>,
        uid: u32,
        user: Option<&str>,
        r: &mut R,
        w: &mut W,
    ) -> Result<Result<(T, BytesHeld), TooManyBytes>, crate::transport::TransportError>
    where
        T: serde::de::DeserializeOwned,
        R: tokio::io::AsyncRead + Unpin,
        W: tokio::io::AsyncWrite + Unpin,
    {
        use crate::transport::{read_frame_body, read_frame_len, read_hello, TransportError};
        tokio::time::timeout(REQUEST_DEADLINE, async {
            read_hello(r, w, PROTOCOL_VERSION, self.daemon).await?;
            let len = read_frame_len(r).await?.ok_or(TransportError::Closed)?;
            let held = match self.reserve(uid, len, user) {
                Ok(h) => h,
                Err(too_many) => return Ok(Err(too_many)),
            };
            let bytes = read_frame_body(r, len).await?;
            let request = gantry_proto::decode(&bytes)?;
            Ok(Ok((request, held)))
        })
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
    }

    /// Connections open now (all, and `uid`'s).
    pub fn open(&self, uid: u32) -> (usize, usize) {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        (open.total, open.by_user.get(&uid).copied().unwrap_or(0))
    }

    /// What a refused client is told.
    pub fn message(&self, refused: &Refused, user: Option<&str>) -> String {
        match refused {
            Refused::User { uid, open } => {
                let who = user.map_or_else(|| format!("uid {uid}"), |u| format!("\"{u}\""));
                format!(
                    "error: user {who} has {open} connections open to {} (at most {} per user): close some and try again",
                    self.daemon, self.limits.per_user
                )
            }
            Refused::Full { open } => format!(
                "error: {} has too many client connections ({open} open): try again later",
                self.daemon
            ),
        }
    }

    /// Tell a refused client why: the refusal is written at once (it fits the socket's
    /// buffer, so the write does not wait), then, if a refuser is free, what the client
    /// still sends is read until it goes (so that its own write does not fail first);
    /// else the connection is closed at once (a Gantry client that finds it closed
    /// still reads the refusal).
    pub fn turn_away(&self, stream: UnixStream, message: String) {
        let answer = FromMaster::Refused(Refusal {
            kind: RefusalKind::Internal,
            message,
        });
        if let Ok(bytes) = accepted_with(PROTOCOL_VERSION, &answer) {
            let _ = stream.try_write(&bytes);
        }
        let Ok(permit) = Arc::clone(&self.refusers).try_acquire_owned() else {
            return;
        };
        tokio::spawn(async move {
            let _permit = permit;
            let _ = tokio::time::timeout(Duration::from_secs(1), drain(stream)).await;
        });
    }
}

/// Read what a refused client still sends until it goes.
async fn drain(mut stream: UnixStream) {
    let mut sink = [0u8; 16 * 1024];
    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
}

/// Refusals at the door go to the log at most once every ten seconds, with how many
/// there were: a user hammering the door must not fill the log too.
#[derive(Default)]
pub struct RefusalLog {
    since: Option<std::time::Instant>,
    count: u64,
}

impl RefusalLog {
    pub fn note(&mut self, message: &str) {
        self.count += 1;
        let now = std::time::Instant::now();
        if self
            .since
            .is_none_or(|t| now.duration_since(t) >= std::time::Duration::from_secs(10))
        {
            tracing::warn!(
                refused = self.count,
                "client connections refused at the door, the last: {message}"
            );
            self.since = Some(now);
            self.count = 0;
        }
    }
}

/// `uid`'s name, if the name service knows it.
pub fn user_name(names: &mut Recent<u32, String>, uid: u32) -> Option<String> {
    names.get_or_lookup(uid, || {
        nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .ok()
            .flatten()
            .map(|u| u.name)
    })
}

/// A daemon's client socket behind its door: accepts connections until one is
/// admitted, turning the others away ([`Door::turn_away`]), noting refusals in the log
/// ([`RefusalLog`]) and surviving a want of descriptors ([`Spare`]).
pub struct Entrance {
    door: Arc<Door>,
    spare: Spare,
    refusals: RefusalLog,
    /// Callers' user names, looked up once a minute at most.
    names: Recent<u32, String>,
}

/// A connection let in: its stream, its caller's uid, and its place at the door.
pub struct Entered {
    pub stream: UnixStream,
    pub uid: u32,
    pub admitted: Admitted,
}

impl Entrance {
    /// The door of `daemon` ("the master", "the execd"), bounded by its descriptors.
    pub fn new(daemon: &'static str) -> Entrance {
        let door = Door::new(DoorLimits::from_descriptors(), daemon);
        let limits = door.limits();
        tracing::info!(
            per_user = limits.per_user,
            total = limits.total,
            "client connections bounded"
        );
        Entrance {
            door,
            spare: Spare::new(),
            refusals: RefusalLog::default(),
            names: Recent::new(gantry_common::recent::NAME_SERVICE_TTL),
        }
    }

    pub fn door(&self) -> &Arc<Door> {
        &self.door
    }

    /// The user names looked up so far (for the caller's identity).
    pub fn names(&mut self) -> &mut Recent<u32, String> {
        &mut self.names
    }

    /// The next connection the door lets in.
    pub async fn next(&mut self, listener: &tokio::net::UnixListener) -> Entered {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let Ok(uid) = stream.peer_cred().map(|c| c.uid()) else {
                        continue;
                    };
                    match self.door.admit(uid) {
                        Ok(admitted) => {
                            return Entered {
                                stream,
                                uid,
                                admitted,
                            }
                        }
                        Err(refused) => {
                            let user = user_name(&mut self.names, uid);
                            let message = self.door.message(&refused, user.as_deref());
                            self.refusals.note(&message);
                            self.door.turn_away(stream, message);
                        }
                    }
                }
                Err(e) => {
                    if !self.spare.on_accept_error(listener, &e).await {
                        tracing::warn!("accepting a client connection failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }
    }
}

/// A descriptor held in reserve, given up when `accept` fails for want of one.
pub struct Spare(Option<std::fs::File>);

impl Spare {
    pub fn new() -> Spare {
        Spare(std::fs::File::open("/dev/null").ok())
    }

    /// After `accept` failed with `error`: if it was for want of a descriptor, free the
    /// spare, accept and close the connection waiting first (its client sees the
    /// connection end rather than hang), and take the spare again. True if it was.
    pub async fn on_accept_error(
        &mut self,
        listener: &tokio::net::UnixListener,
        error: &std::io::Error,
    ) -> bool {
        if !matches!(
            error.raw_os_error(),
            Some(nix::libc::EMFILE | nix::libc::ENFILE)
        ) {
            return false;
        }
        self.0 = None;
        if let Ok(Ok((stream, _))) =
            tokio::time::timeout(Duration::from_millis(10), listener.accept()).await
        {
            drop(stream);
        }
        self.0 = std::fs::File::open("/dev/null").ok();
        true
    }
}

impl Default for Spare {
    fn default() -> Self {
        Spare::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_follow_the_descriptors() {
        // (descriptor limit, per user, total)
        let table = [
            (1024, 88, 704),
            (4096, 376, 3008),
            (20_000, 1024, 8192),
            (1_048_576, 1024, 8192),
            (300, 4, 8),
            (0, 4, 8),
        ];
        for (descriptors, per_user, total) in table {
            assert_eq!(
                DoorLimits::for_descriptors(descriptors),
                DoorLimits { per_user, total },
                "{descriptors}"
            );
        }
    }

    #[test]
    fn a_users_requests_under_way_are_bounded_in_bytes() {
        let door = Door::new(
            DoorLimits {
                per_user: 100,
                total: 100,
            },
            "the master",
        );
        let frame = 16 << 20;
        let held: Vec<BytesHeld> = (0..4)
            .map(|_| door.reserve(1001, frame, Some("alice")).unwrap())
            .collect();
        assert_eq!(
            door.reserve(1001, 1, Some("alice")).unwrap_err().to_string(),
            "error: user \"alice\" has 64 MiB of requests under way to the master (at most 64 MiB at once): try again when they are done"
        );
        // Another user, and root, are not held back by alice's.
        let bob = door.reserve(1002, frame, None).unwrap();
        let root: Vec<BytesHeld> = (0..8)
            .map(|_| door.reserve(0, frame, None).unwrap())
            .collect();
        drop(held);
        assert!(door.reserve(1001, frame, None).is_ok());
        drop((bob, root));
        assert!(door.open.lock().unwrap().bytes_by_user.is_empty());
    }

    #[test]
    fn a_user_fills_only_their_share_and_root_gets_in_past_a_full_door() {
        let door = Door::new(
            DoorLimits {
                per_user: 3,
                total: 5,
            },
            "the master",
        );
        let alice: Vec<Admitted> = (0..3).map(|_| door.admit(1001).unwrap()).collect();
        assert_eq!(
            door.admit(1001).unwrap_err(),
            Refused::User { uid: 1001, open: 3 }
        );
        let bob: Vec<Admitted> = (0..2).map(|_| door.admit(1002).unwrap()).collect();
        // Full for everyone but root and the daemon's user.
        assert_eq!(door.admit(1003).unwrap_err(), Refused::Full { open: 5 });
        let root: Vec<Admitted> = (0..PRIVILEGED_EXTRA)
            .map(|_| door.admit(0).unwrap())
            .collect();
        assert!(door.admit(0).is_err());
        assert_eq!(door.open(1001), (5 + PRIVILEGED_EXTRA, 3));
        // Places come back as connections close.
        drop(alice);
        drop(root);
        assert_eq!(door.open(1001), (2, 0));
        assert!(door.admit(1001).is_ok());
        drop(bob);
        assert_eq!(door.open(1002), (0, 0));
        assert_eq!(
            door.message(&Refused::User { uid: 1001, open: 3 }, Some("alice")),
            "error: user \"alice\" has 3 connections open to the master (at most 3 per user): close some and try again"
        );
    }
}
