//! `gantry-master`: create a cell, run the master, rotate the join token.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::ExitCode;

use actix::Actor;
use clap::{Parser, Subcommand};
use gantry_common::cell::DEFAULT_PORT;
use gantry_master::cell::{self, InitOptions};
use gantry_master::cluster::{Cluster, Shutdown};
use gantry_master::shell::active;
use gantry_master::store::Store;
use gantry_master::{client_endpoint, execd_endpoint};
use gantry_net::cell::{parse_duration, MasterPaths};
use gantry_net::tls::{master_endpoint_config, master_server_config, Ca};
use gantry_proto::PROTOCOL_VERSION;
use tracing::{error, info};

#[derive(Parser)]
#[command(name = "gantry-master", version, about = "The Gantry master daemon")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a new cell: cluster CA, master certificate, join token, default configuration.
    Init {
        /// The cell directory (must not exist or be empty).
        #[arg(long)]
        home: PathBuf,
        /// UDP port execds connect to.
        #[arg(long, default_value_t = DEFAULT_PORT)]
        port: u16,
        /// The master's host name as execds will dial it (default: this host's name).
        #[arg(long)]
        hostname: Option<String>,
        /// How long the join token stays valid (e.g. 24h, 7d, 3600).
        #[arg(long, default_value = "24h")]
        token_ttl: String,
    },
    /// Run the master in the foreground, logging to stderr.
    Run {
        #[arg(long)]
        home: PathBuf,
        /// Start even though the spool's journal is damaged or missing: drop what cannot
        /// be read (each dropped change is logged) instead of refusing to start.
        #[arg(long)]
        recover_spool: bool,
        /// Be the cell's standby master (on a second host sharing the cell directory):
        /// wait while another master holds the spool, and take over when it dies (not
        /// when it was shut down: docs/admin/standby.md).
        #[arg(long)]
        standby: bool,
        #[command(flatten)]
        log: gantry_net::log::LogArgs,
    },
    /// Replace the join token (the old one stops working at once) and print the join command.
    Token {
        #[arg(long)]
        home: PathBuf,
        #[arg(long, default_value = "24h")]
        ttl: String,
    },
    /// Issue a client certificate for USER for the HTTP listener (USER.pem and USER.key
    /// in --out), list those issued, or revoke a user's.
    UserCert {
        #[arg(long)]
        home: PathBuf,
        /// The user (a name the master's host knows).
        user: Option<String>,
        /// How long the certificate is valid (e.g. 30d, 12h).
        #[arg(long, default_value = "30d")]
        valid: String,
        /// Where to write USER.pem and USER.key.
        #[arg(long, default_value = ".")]
        out: PathBuf,
        /// Revoke every certificate issued to USER.
        #[arg(long)]
        revoke: bool,
        /// List the certificates issued.
        #[arg(long)]
        list: bool,
    },
    /// Write a backup of the cell to FILE (a new file): its spool as of now, the job
    /// scripts, certificates, keys and settings. Asks the running master, which goes on
    /// serving; without one, reads the cell's files itself.
    Backup {
        #[arg(long)]
        home: PathBuf,
        file: PathBuf,
    },
    /// Restore a backup into the cell (the master stopped): its spool, journal and job
    /// scripts are replaced (the old ones kept as *.before-restore), its other files
    /// written where missing.
    Restore {
        #[arg(long)]
        home: PathBuf,
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Info until the global configuration's loglevel is read.
    let settings = match &cli.command {
        Command::Run { log, .. } => log.settings("master"),
        _ => Ok(gantry_net::log::LogSettings::stderr()),
    };
    let _log = match settings.and_then(|s| gantry_net::log::init(&s, "info")) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("gantry-master: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Init {
            home,
            port,
            hostname,
            token_ttl,
        } => init(home, port, hostname, &token_ttl),
        Command::Run {
            home,
            recover_spool,
            standby,
            log: _,
        } => run(home, recover_spool, standby),
        Command::Token { home, ttl } => token(home, &ttl),
        Command::UserCert {
            home,
            user,
            valid,
            out,
            revoke,
            list,
        } => user_cert(home, user, &valid, out, revoke, list),
        Command::Backup { home, file } => backup(&home, &file),
        Command::Restore { home, file } => restore(&home, &file),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gantry-master: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Why a `gantry-master` command failed (printed after `gantry-master: `).
#[derive(Debug, thiserror::Error)]
enum MasterError {
    #[error("invalid duration \"{0}\" (use e.g. 3600, 90s, 30m, 24h, 7d)")]
    Duration(String),
    #[error(transparent)]
    Cell(#[from] cell::CellError),
    #[error(transparent)]
    Tls(#[from] gantry_net::tls::TlsError),
    #[error(transparent)]
    Start(#[from] gantry_master::cluster::StartError),
    #[error(transparent)]
    Active(#[from] active::ActiveError),
    /// A file of the cell, its spool or its socket.
    #[error("{}: {source}", path.display())]
    Path {
        path: PathBuf,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{0}")]
    Usage(String),
    #[error("cannot listen on UDP {addr}: {source}")]
    Udp {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
}

impl MasterError {
    fn at(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> MasterError + '_ {
        move |e| MasterError::Path {
            path: path.to_path_buf(),
            source: Box::new(e),
        }
    }
}

fn ttl(text: &str) -> Result<u64, MasterError> {
    parse_duration(text)
        .filter(|&s| s > 0)
        .ok_or_else(|| MasterError::Duration(text.to_string()))
}

fn init(
    home: PathBuf,
    port: u16,
    hostname: Option<String>,
    token_ttl: &str,
) -> Result<(), MasterError> {
    let opts = InitOptions {
        port,
        hostname,
        token_ttl_secs: ttl(token_ttl)?,
    };
    let created = cell::init(&home, &opts)?;
    let home = std::fs::canonicalize(&home).unwrap_or(home);
    println!(
        "Created the Gantry cell in {} (master host \"{}\", port {}).",
        home.display(),
        created.settings.hostname,
        created.settings.port
    );
    println!(
        "Start the master:\n  gantry-master run --home {}",
        home.display()
    );
    println!(
        "Join an execution host with (token valid for {token_ttl}, kept in {}):\n{}",
        home.join("join-token").display(),
        cell::join_command(&created.settings, &created.token)
    );
    Ok(())
}

fn token(home: PathBuf, ttl_text: &str) -> Result<(), MasterError> {
    let paths = MasterPaths::new(&home);
    let settings = cell::load_settings(&paths)?;
    let token = cell::rotate_token(&paths, ttl(ttl_text)?)?;
    println!("{}", cell::join_command(&settings, &token));
    Ok(())
}

fn user_cert(
    home: PathBuf,
    user: Option<String>,
    valid: &str,
    out: PathBuf,
    revoke: bool,
    list: bool,
) -> Result<(), MasterError> {
    use gantry_net::usercert::{read_issued, write_issued, IssuedCert};
    let paths = MasterPaths::new(&home);
    let record = paths.user_certs();
    let mut issued = read_issued(&record).map_err(MasterError::at(&record))?;
    if list {
        for c in &issued {
            let state = if c.revoked { "revoked" } else { "valid" };
            println!("{} {} {} {state}", c.serial, c.user, c.not_after);
        }
        return Ok(());
    }
    let Some(user) = user else {
        return Err(MasterError::Usage("a user name is required".to_string()));
    };
    if revoke {
        let mut revoked = 0;
        for c in issued.iter_mut().filter(|c| c.user == user && !c.revoked) {
            c.revoked = true;
            revoked += 1;
        }
        write_issued(&record, &issued).map_err(MasterError::at(&record))?;
        println!("revoked {revoked} certificate(s) of {user}");
        return Ok(());
    }
    let account = nix::unistd::User::from_name(&user)
        .ok()
        .flatten()
        .ok_or_else(|| MasterError::Usage(format!("unknown user \"{user}\"")))?;
    let seconds = ttl(valid)?;
    let read = |p: PathBuf| std::fs::read_to_string(&p).map_err(MasterError::at(&p));
    let ca = Ca::load(&read(paths.ca_cert())?, &read(paths.ca_key())?)?;
    let days = i64::try_from(seconds.div_ceil(86_400))
        .unwrap_or(i64::MAX)
        .max(1);
    let cert = ca.issue_user(&user, days)?;
    let cert_path = out.join(format!("{user}.pem"));
    let key_path = out.join(format!("{user}.key"));
    gantry_net::cell::write_file_atomic(&cert_path, cert.cert_pem.as_bytes(), 0o644)
        .map_err(MasterError::at(&cert_path))?;
    gantry_net::cell::write_file_atomic(&key_path, cert.key_pem.as_bytes(), 0o600)
        .map_err(MasterError::at(&key_path))?;
    if nix::unistd::geteuid().is_root() {
        // The user's own files.
        for p in [&cert_path, &key_path] {
            nix::unistd::chown(p, Some(account.uid), Some(account.gid))
                .map_err(|e| MasterError::at(p)(e.into()))?;
        }
    }
    issued.push(IssuedCert {
        serial: cert.serial.clone(),
        user: user.clone(),
        not_after: cert.not_after,
        revoked: false,
    });
    write_issued(&record, &issued).map_err(MasterError::at(&record))?;
    println!(
        "Issued a certificate for {user} (serial {}, valid {days} day(s)): {} and {}",
        cert.serial,
        cert_path.display(),
        key_path.display()
    );
    Ok(())
}

/// `gantry-master backup`: through the running master, else from the cell's files.
fn backup(home: &std::path::Path, file: &std::path::Path) -> Result<(), MasterError> {
    use gantry_client::conn::{request_at, ConnError};
    use gantry_master::store::backup;
    use gantry_proto::{FromMaster, ToMaster};
    let file = std::path::absolute(file).map_err(MasterError::at(file))?;
    let request = ToMaster::Backup {
        path: file.to_string_lossy().into_owned(),
    };
    match request_at(home, &request) {
        Ok(FromMaster::Done { messages }) => {
            for m in messages {
                println!("{m}");
            }
            Ok(())
        }
        Ok(FromMaster::Refused(r)) => Err(MasterError::Usage(r.message)),
        Ok(other) => Err(MasterError::Usage(format!(
            "error: unexpected answer from the master: {other:?}"
        ))),
        // No master runs on the cell: the spool is read here (as the master would
        // open it) and closed again.
        Err(ConnError::Connect { .. }) => {
            let paths = MasterPaths::new(home);
            let spool = paths.spool();
            let at_spool = |e: gantry_master::store::StoreError| MasterError::Path {
                path: spool.clone(),
                source: Box::new(e),
            };
            let mut store = Store::open(&spool, false).map_err(at_spool)?;
            let written = backup::cell_files(home).and_then(|files| store.backup(&file, &files));
            store.close().map_err(at_spool)?;
            let contents = written.map_err(|e| MasterError::Path {
                path: file.clone(),
                source: Box::new(e),
            })?;
            println!(
                "backup of the cell written to {}: {contents}",
                file.display()
            );
            Ok(())
        }
        Err(e) => Err(MasterError::Usage(e.to_string())),
    }
}

/// `gantry-master restore`.
fn restore(home: &std::path::Path, file: &std::path::Path) -> Result<(), MasterError> {
    use gantry_master::store::backup;
    let (contents, kept) = backup::restore(home, file).map_err(|e| MasterError::Path {
        path: file.to_path_buf(),
        source: Box::new(e),
    })?;
    println!(
        "restored {} into {}: {contents}",
        file.display(),
        home.display()
    );
    if !kept.is_empty() {
        println!("kept the cell's own {}", kept.join(", "));
    }
    Ok(())
}

fn run(home: PathBuf, recover_spool: bool, standby: bool) -> Result<(), MasterError> {
    let paths = MasterPaths::new(&home);
    let settings = cell::load_settings(&paths)?;
    let read = |p: PathBuf| std::fs::read_to_string(&p).map_err(MasterError::at(&p));
    let ca_pem = read(paths.ca_cert())?;
    let ca = Ca::load(&ca_pem, &read(paths.ca_key())?)?;
    let master_key = read(paths.master_key())?;
    let server_config = master_server_config(
        &ca_pem,
        &read(paths.master_cert())?,
        &master_key,
        PROTOCOL_VERSION,
    )?;
    let https_config =
        gantry_net::tls::https_server_config(&ca_pem, &read(paths.master_cert())?, &master_key)?;
    let endpoint_config = master_endpoint_config(&master_key);
    let store = active::open_spool(&paths, recover_spool, standby)?;
    let claim = active::claim(&paths)?;

    let system = actix_rt::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("cannot start the tokio runtime")
    });
    system.block_on(async move {
        let socket = paths.socket();
        if socket.exists() {
            // A socket left by a master that did not shut down cleanly. The spool's lock
            // (taken above) proves no other master runs on this cell.
            let _ = std::fs::remove_file(&socket);
        }
        let listener = std::os::unix::net::UnixListener::bind(&socket)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(MasterError::at(&socket))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))
            .map_err(MasterError::at(&socket))?;
        // The Cluster actor and the client socket share one thread with its own event
        // loop: a client request is read, handled, committed and answered without
        // waking another thread (two cores; every hand-off costs a context switch).
        let cluster_thread = actix_rt::Arbiter::new();
        let state = Cluster::new(store, MasterPaths::new(&home), ca, &settings.hostname)?;
        let (metrics, http_settings) = (state.metrics(), state.http_settings());
        let cluster = Cluster::start_in_arbiter(&cluster_thread.handle(), move |_| state);
        // The HTTP listener on a thread of its own: its TLS handshakes and requests wait
        // neither for the execds' QUIC traffic (the runtime's workers) nor the actor's.
        let http_thread = actix_rt::Arbiter::new();
        let (stop_http, http_stopped) = tokio::sync::oneshot::channel::<()>();
        {
            let door = gantry_master::shell::http::HttpDoor::new(
                cluster.clone(),
                metrics,
                &paths,
                settings.hostname.clone(),
                https_config,
            );
            http_thread.spawn(async move {
                tokio::select! {
                    () = gantry_master::shell::http::serve(door, http_settings) => {}
                    _ = http_stopped => {}
                }
            });
        }
        let (stop_clients, clients_stopped) = tokio::sync::oneshot::channel::<()>();
        {
            let cluster = cluster.clone();
            let host = settings.hostname.clone();
            cluster_thread.spawn(async move {
                match tokio::net::UnixListener::from_std(listener) {
                    Ok(listener) => tokio::select! {
                        () = client_endpoint::serve(listener, cluster, host) => {}
                        _ = clients_stopped => {}
                    },
                    Err(e) => error!("cannot listen for clients: {e}"),
                }
            });
        }
        let addr = std::net::SocketAddr::from(([0, 0, 0, 0], settings.port));
        let udp =
            gantry_net::tls::bind_udp(addr).map_err(|source| MasterError::Udp { addr, source })?;
        let endpoint = quinn::Endpoint::new(
            endpoint_config,
            Some(server_config),
            udp,
            std::sync::Arc::new(quinn::TokioRuntime),
        )
        .map_err(|source| MasterError::Udp { addr, source })?;
        info!(
            host = %settings.hostname,
            "gantry-master {} listening for execds on udp/{} and for clients on {}",
            env!("CARGO_PKG_VERSION"),
            settings.port,
            socket.display()
        );
        let execds = tokio::spawn(execd_endpoint::serve(endpoint.clone(), cluster.clone()));
        wait_for_signal().await;
        info!("shutting down");
        let _ = stop_clients.send(());
        let _ = cluster.send(Shutdown).await;
        endpoint.close(0u32.into(), b"master shutting down");
        execds.abort();
        let _ = stop_http.send(());
        http_thread.stop();
        let _ = std::fs::remove_file(&socket);
        let _ = std::fs::remove_file(paths.http_socket());
        // A standby does not take over from a master shut down on purpose.
        claim.stopped();
        endpoint.wait_idle().await;
        cluster_thread.stop();
        actix_rt::System::current().stop();
        Ok::<(), MasterError>(())
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            error!("cannot install a SIGTERM handler: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
