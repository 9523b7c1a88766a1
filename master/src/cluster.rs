//! The Cluster actor: the single writer of the cell's state. Requests are decided by the
//! pure functions in [`crate::state`]; a change is committed to the spool before it is
//! applied and acknowledged.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use actix::prelude::*;
use gantry_common::cell::{unix_now, JoinToken, MasterPaths};
use gantry_common::exechost::valid_hostname;
use gantry_common::tls::{certs_from_pem, fingerprint, Ca};
use gantry_proto::{Caller, FromMaster, LoadValue, Refusal, RefusalKind, ToExecd, ToMaster};
use tokio::sync::mpsc::UnboundedSender;
use tracing::{error, info, warn};

use crate::state::{ClusterState, HostRuntime, Op, Reply};
use crate::store::Store;

/// A connected execd.
struct Session {
    id: u64,
    conn: quinn::Connection,
    to_execd: UnboundedSender<ToExecd>,
}

pub struct Cluster {
    state: ClusterState,
    store: Store,
    paths: MasterPaths,
    ca: Ca,
    clock: Instant,
    sessions: HashMap<String, Session>,
    /// Hosts already logged as unreachable (so the log says it once).
    unreachable: HashSet<String>,
}

impl Cluster {
    pub fn new(
        store: Store,
        paths: MasterPaths,
        ca: Ca,
    ) -> Result<Cluster, crate::store::StoreError> {
        let mut state = ClusterState::default();
        for obj in store.load()? {
            state.apply(&Op::Put(obj));
        }
        Ok(Cluster {
            state,
            store,
            paths,
            ca,
            clock: Instant::now(),
            sessions: HashMap::new(),
            unreachable: HashSet::new(),
        })
    }

    fn now(&self) -> f64 {
        self.clock.elapsed().as_secs_f64()
    }

    /// Persist, then apply, then act on what changed.
    fn commit(&mut self, ops: &[Op]) -> Result<(), Refusal> {
        if let Err(e) = self.store.commit(ops) {
            error!("could not write the spool: {e}");
            return Err(Refusal {
                kind: RefusalKind::Internal,
                message: format!("error: the master could not write its spool: {e}"),
            });
        }
        for op in ops {
            self.state.apply(op);
        }
        let config_changed = ops
            .iter()
            .any(|op| matches!(op, Op::Put(crate::state::Object::Config(_))));
        if config_changed {
            let settings = ToExecd::Settings {
                load_report_time_secs: self.state.load_report_time(),
            };
            for s in self.sessions.values() {
                let _ = s.to_execd.send(settings.clone());
            }
        }
        // Execds whose host lost its certificate (deleted) are disconnected.
        let hosts_with_certs: HashSet<&String> = self.state.host_certs.values().collect();
        let gone: Vec<String> = self
            .sessions
            .keys()
            .filter(|h| !hosts_with_certs.contains(h))
            .cloned()
            .collect();
        for host in gone {
            if let Some(s) = self.sessions.remove(&host) {
                info!(host = %host, "exec host deleted: closing its execd's connection");
                s.conn.close(CLOSE_DELETED.into(), b"exec host deleted");
            }
            self.state.runtime.remove(&host);
        }
        Ok(())
    }

    fn check_reachability(&mut self) {
        let now = self.now();
        let hosts: Vec<String> = self.state.exechosts.keys().cloned().collect();
        for host in hosts {
            let heard = self
                .state
                .runtime
                .get(&host)
                .and_then(|r| r.last_heard)
                .is_some();
            if !heard {
                continue;
            }
            if self.state.is_reachable(&host, now) {
                self.unreachable.remove(&host);
            } else if self.unreachable.insert(host.clone()) {
                warn!(
                    host = %host,
                    "execd unreachable: no load report for more than max_unheard ({} s)",
                    self.state.max_unheard()
                );
            }
        }
    }
}

/// QUIC application close codes.
pub const CLOSE_DELETED: u32 = 1;
pub const CLOSE_REPLACED: u32 = 2;
pub const CLOSE_REFUSED: u32 = 3;
pub const CLOSE_SHUTDOWN: u32 = 4;

impl Actor for Cluster {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(Duration::from_secs(1), |act, _| act.check_reachability());
        info!(
            hosts = self.state.exechosts.len(),
            "cluster state loaded from the spool"
        );
    }
}

/// A client request with the caller established by the endpoint.
#[derive(Message)]
#[rtype(result = "FromMaster")]
pub struct ClientCall {
    pub caller: Caller,
    pub request: ToMaster,
}

impl Handler<ClientCall> for Cluster {
    type Result = MessageResult<ClientCall>;

    fn handle(&mut self, msg: ClientCall, _: &mut Self::Context) -> Self::Result {
        let now = self.now();
        let reply = match self.state.handle(&msg.caller, &msg.request, now) {
            Ok(Reply::Answer(a)) => a,
            Ok(Reply::Change(change)) => match self.commit(&change.ops) {
                Ok(()) => {
                    info!(user = %msg.caller.user, host = %msg.caller.host, "{}", change.messages.join("; "));
                    FromMaster::Done {
                        messages: change.messages,
                    }
                }
                Err(r) => FromMaster::Refused(r),
            },
            Err(r) => FromMaster::Refused(r),
        };
        MessageResult(reply)
    }
}

/// An execd asks to join with a token.
#[derive(Message)]
#[rtype(result = "Result<ToExecd, String>")]
pub struct Join {
    pub token: String,
    pub hostname: String,
    pub public_key: Vec<u8>,
    pub peer: SocketAddr,
}

impl Handler<Join> for Cluster {
    type Result = Result<ToExecd, String>;

    fn handle(&mut self, msg: Join, _: &mut Self::Context) -> Self::Result {
        let presented = JoinToken::parse(&msg.token).map_err(|e| e.to_string())?;
        let current = crate::cell::read_token(&self.paths)
            .map_err(|e| format!("the master cannot read its join token: {e}"))?;
        if !current.matches(&presented) {
            return Err("the join token is not valid (wrong or rotated)".into());
        }
        if current.expires_at <= unix_now() {
            return Err("the join token has expired (rotate it with gantry-master token)".into());
        }
        if !valid_hostname(&msg.hostname) {
            return Err(format!("invalid host name \"{}\"", msg.hostname));
        }
        let cert_pem = self
            .ca
            .issue_host(&msg.hostname, &msg.public_key)
            .map_err(|e| e.to_string())?;
        let der = certs_from_pem(&cert_pem)
            .map_err(|e| e.to_string())?
            .into_iter()
            .next()
            .ok_or("no certificate issued")?;
        let fp = hex::encode(fingerprint(der.as_ref()));
        let change = self.state.join(&msg.hostname, &fp);
        self.commit(&change.ops).map_err(|r| r.message)?;
        info!(host = %msg.hostname, peer = %msg.peer, "execd joined the cell; host certificate issued");
        Ok(ToExecd::Joined {
            hostname: msg.hostname,
            host_cert_pem: cert_pem,
            ca_cert_pem: self.ca.cert_pem.clone(),
        })
    }
}

/// An execd with a host certificate connected.
#[derive(Message)]
#[rtype(result = "Result<(String, u64), String>")]
pub struct Register {
    pub fingerprint: String,
    pub claimed_hostname: String,
    pub session_id: u64,
    pub conn: quinn::Connection,
    pub to_execd: UnboundedSender<ToExecd>,
}

impl Handler<Register> for Cluster {
    type Result = Result<(String, u64), String>;

    fn handle(&mut self, msg: Register, _: &mut Self::Context) -> Self::Result {
        let Some(host) = self.state.host_certs.get(&msg.fingerprint).cloned() else {
            return Err("unknown host certificate (the host was deleted or its certificate replaced); join again with a token".into());
        };
        if host != msg.claimed_hostname {
            warn!(host = %host, claimed = %msg.claimed_hostname, "execd claims another host name than its certificate's; using the certificate's");
        }
        if let Some(old) = self.sessions.insert(
            host.clone(),
            Session {
                id: msg.session_id,
                conn: msg.conn,
                to_execd: msg.to_execd,
            },
        ) {
            old.conn
                .close(CLOSE_REPLACED.into(), b"replaced by a new connection");
        }
        info!(host = %host, "execd connected");
        Ok((host, self.state.load_report_time()))
    }
}

/// A load report from a connected execd.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Load {
    pub host: String,
    pub values: Vec<LoadValue>,
}

impl Handler<Load> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: Load, _: &mut Self::Context) {
        if !self.state.exechosts.contains_key(&msg.host) {
            return;
        }
        let now = self.now();
        if let Some(change) = self.state.slots_for_new_host(&msg.host, &msg.values) {
            if self.commit(&change.ops).is_err() {
                return;
            }
        }
        let was_unreachable = self.unreachable.remove(&msg.host);
        self.state.runtime.insert(
            msg.host.clone(),
            HostRuntime {
                load_values: msg.values,
                last_heard: Some(now),
            },
        );
        if was_unreachable {
            info!(host = %msg.host, "execd reachable again");
        }
    }
}

/// An execd's connection ended.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SessionEnded {
    pub host: String,
    pub session_id: u64,
    pub reason: String,
}

impl Handler<SessionEnded> for Cluster {
    type Result = ();

    fn handle(&mut self, msg: SessionEnded, _: &mut Self::Context) {
        if self
            .sessions
            .get(&msg.host)
            .is_some_and(|s| s.id == msg.session_id)
        {
            self.sessions.remove(&msg.host);
            info!(host = %msg.host, "execd disconnected: {}", msg.reason);
        }
    }
}

/// Close every execd connection (shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for Cluster {
    type Result = ();

    fn handle(&mut self, _: Shutdown, _: &mut Self::Context) {
        for (_, s) in self.sessions.drain() {
            s.conn.close(CLOSE_SHUTDOWN.into(), b"master shutting down");
        }
    }
}
