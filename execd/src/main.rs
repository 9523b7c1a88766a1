//! `gantry-execd`: the execution daemon of a compute host.

use std::net::{SocketAddr, ToSocketAddrs};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use gantry_common::cell::local_hostname;
use gantry_execd::identity::{self, JoinError};
use gantry_execd::relay;
use gantry_execd::sensor::Sensor;
use gantry_execd::session::{self, Backoff};
use gantry_net::cell::ExecdPaths;
use tracing::{error, info};

#[derive(Parser)]
#[command(name = "gantry-execd", version, about = "The Gantry execution daemon")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the execd in the foreground, logging to stderr (or --log-dir).
    Run {
        /// The execd's home: its host certificate and client socket.
        #[arg(long)]
        home: PathBuf,
        /// The master, HOST:PORT; with a standby master, both: HOST:PORT,HOST:PORT (the
        /// execd follows whichever is active).
        #[arg(long)]
        master: String,
        /// The cell's join token (needed on first start only). Prefer --token-file or
        /// GANTRY_JOIN_TOKEN: a command line is visible to every user of the host.
        #[arg(long, conflicts_with = "token_file")]
        token: Option<String>,
        /// A file holding the join token (mode 0600 or stricter).
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// This host's name in the cell (default: the system's host name).
        #[arg(long)]
        hostname: Option<String>,
        #[command(flatten)]
        log: gantry_net::log::LogArgs,
    },
    /// Run many simulated execution hosts in one process (for measuring the master at
    /// scale): each joins the cell and keeps its own certificate and QUIC session,
    /// reports load values, and finishes each job after the seconds its first argument
    /// gives (3 without one) without starting any process.
    Simulate {
        /// Where every simulated host keeps its certificate and reports (`HOME/sim0001`).
        #[arg(long)]
        home: PathBuf,
        /// How many hosts.
        #[arg(long)]
        hosts: usize,
        /// The master, HOST:PORT.
        #[arg(long)]
        master: String,
        /// The cell's join token (needed on first start only). Prefer --token-file or
        /// GANTRY_JOIN_TOKEN.
        #[arg(long, conflicts_with = "token_file")]
        token: Option<String>,
        /// A file holding the join token (mode 0600 or stricter).
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// The hosts' names: PREFIX0001, PREFIX0002, ...
        #[arg(long, default_value = "sim")]
        prefix: String,
        /// The processors each host reports.
        #[arg(long, default_value_t = 4)]
        num_proc: u32,
        /// The memory each host reports (`mem_total`).
        #[arg(long, default_value = "16G")]
        mem: String,
    },
    /// Supervise one job task (started by the execd; not for interactive use).
    #[command(hide = true)]
    Shepherd { dir: PathBuf },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Shepherd { dir } = &cli.command {
        std::process::exit(gantry_execd::shepherd::run(dir));
    }
    let settings = match &cli.command {
        Command::Run { log, .. } => log.settings("execd"),
        _ => Ok(gantry_net::log::LogSettings::stderr()),
    };
    let _log = match settings.and_then(|s| gantry_net::log::init(&s, "info")) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("gantry-execd: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Many simulated hosts share the process: their sessions and file writes spread
    // over threads, so that no host's session waits behind another's disk.
    let runtime = if matches!(cli.command, Command::Simulate { .. }) {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gantry-execd: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = match cli.command {
        Command::Run {
            home,
            master,
            token,
            token_file,
            hostname,
            log: _,
        } => match join_token(token, token_file.as_deref()) {
            Ok(token) => runtime.block_on(run(home, master, token, hostname)),
            Err(e) => Err(e),
        },
        Command::Simulate {
            home,
            hosts,
            master,
            token,
            token_file,
            prefix,
            num_proc,
            mem,
        } => match (
            join_token(token, token_file.as_deref()),
            gantry_common::value::parse_memory(&mem),
        ) {
            (Ok(token), Ok(mem_total)) if mem_total.is_finite() => {
                let spec = gantry_execd::simulate::SimSpec {
                    num_proc: num_proc.max(1),
                    mem_total,
                };
                runtime.block_on(simulate(home, hosts, master, token, prefix, spec))
            }
            (Err(e), _) => Err(e),
            _ => Err(format!("invalid memory size \"{mem}\" for --mem")),
        },
        Command::Shepherd { .. } => return ExitCode::FAILURE,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e}");
            eprintln!("gantry-execd: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The join token: `--token`, else the file `--token-file` names, else the environment's
/// `GANTRY_JOIN_TOKEN`. A token file others may read is refused (as ssh refuses such a
/// key): the token lets any holder add hosts to the cell. The variable is removed from
/// this process's environment, so the shepherds it starts never carry the token.
fn join_token(
    given: Option<String>,
    file: Option<&std::path::Path>,
) -> Result<Option<String>, String> {
    let from_env = std::env::var("GANTRY_JOIN_TOKEN").ok();
    std::env::remove_var("GANTRY_JOIN_TOKEN");
    if given.is_some() {
        // Said where the administrator sees it and where it is kept: the token is on
        // the command line, which every user of this host may read.
        let warning = "--token puts the join token on the command line, where every user of this host can read it (ps, /proc/PID/cmdline): use --token-file FILE (mode 0600) or GANTRY_JOIN_TOKEN";
        eprintln!("gantry-execd: warning: {warning}");
        tracing::warn!("{warning}");
        return Ok(given);
    }
    if let Some(path) = file {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        check_token_file_mode(path, meta.mode())?;
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        return match text.trim() {
            "" => Err(format!("the token file {} is empty", path.display())),
            t => Ok(Some(t.to_string())),
        };
    }
    Ok(from_env
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty()))
}

/// A token file must be readable by its owner only (group and others get nothing).
fn check_token_file_mode(path: &std::path::Path, mode: u32) -> Result<(), String> {
    if mode & 0o077 != 0 {
        return Err(format!(
            "the token file {} may be read by other users (mode {:04o}): chmod 600 it",
            path.display(),
            mode & 0o7777
        ));
    }
    Ok(())
}

fn resolve(master: &str) -> Result<SocketAddr, String> {
    master
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve the master address \"{master}\": {e}"))?
        .next()
        .ok_or_else(|| format!("the master address \"{master}\" resolves to nothing"))
}

/// Make `home`, resolve the masters and open the UDP socket its sessions go out on.
fn client_endpoint(
    home: &std::path::Path,
    master: &str,
) -> Result<(Vec<SocketAddr>, quinn::Endpoint), String> {
    std::fs::create_dir_all(home).map_err(|e| format!("{}: {e}", home.display()))?;
    // Every master of a `--master a,b` list.
    let masters = master
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(resolve)
        .collect::<Result<Vec<_>, _>>()?;
    if masters.is_empty() {
        return Err(format!("no master address in \"{master}\""));
    }
    let bind: SocketAddr = if masters[0].is_ipv6() {
        "[::]:0".parse().map_err(|e| format!("{e}"))?
    } else {
        "0.0.0.0:0".parse().map_err(|e| format!("{e}"))?
    };
    let endpoint = gantry_net::tls::client_endpoint(bind)
        .map_err(|e| format!("cannot open a UDP socket: {e}"))?;
    Ok((masters, endpoint))
}

async fn run(
    home: PathBuf,
    master: String,
    token: Option<String>,
    hostname: Option<String>,
) -> Result<(), String> {
    let (masters, endpoint) = client_endpoint(&home, &master)?;
    // A first start joins through the first master listed (the active one).
    let id = identity_of(&endpoint, masters[0], &home, token.as_deref(), hostname).await?;
    let sensor = Sensor::new().map_err(|e| e.to_string())?;
    let paths = ExecdPaths::new(&home);
    let socket = paths.socket();
    let _ = std::fs::remove_file(&socket);
    let listener = tokio::net::UnixListener::bind(&socket)
        .map_err(|e| format!("{}: {e}", socket.display()))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| format!("{}: {e}", socket.display()))?;
    let (current_tx, current_rx) = tokio::sync::watch::channel(None);
    let (finished_tx, finished_rx) = tokio::sync::mpsc::unbounded_channel();
    let jobs = gantry_execd::jobs::Jobs::new(&home, &id.hostname, finished_tx)
        .map_err(|e| format!("{}: {e}", home.join("jobs").display()))?;
    jobs.adopt();
    // Jobs find Gantry's qrsh where Grid Engine's would be ($SGE_ROOT/bin/$ARC).
    if let Err(e) =
        std::env::current_exe().and_then(|exe| gantry_execd::sge_root::prepare(&home, &exe))
    {
        tracing::warn!(
            "cannot prepare {}: {e}",
            gantry_execd::sge_root::root(&home).display()
        );
    }
    info!(host = %id.hostname, "gantry-execd {} serving clients on {}", env!("CARGO_PKG_VERSION"), socket.display());
    let relay_task = tokio::spawn(relay::serve(listener, id.hostname.clone(), current_rx));
    let shutdown = std::sync::Arc::new(tokio::sync::Notify::new());
    let session_task = tokio::spawn(session::run(
        endpoint.clone(),
        masters,
        id,
        session::RealHost { sensor, jobs },
        current_tx,
        finished_rx,
        std::sync::Arc::clone(&shutdown),
    ));
    // SIGTERM, or the master's `qconf -ke[j]`.
    tokio::select! {
        () = wait_for_signal() => {}
        () = shutdown.notified() => {}
    }
    info!("shutting down");
    relay_task.abort();
    session_task.abort();
    let _ = std::fs::remove_file(&socket);
    endpoint.close(0u32.into(), b"execd shutting down");
    let _ = tokio::time::timeout(Duration::from_secs(2), endpoint.wait_idle()).await;
    Ok(())
}

/// The identity kept in `home`, else one got by joining the cell with `token` (retried
/// with backoff while the master cannot be reached). `hostname`: the name to join as
/// (the system's by default), which a kept identity must have.
async fn identity_of(
    endpoint: &quinn::Endpoint,
    master: SocketAddr,
    home: &std::path::Path,
    token: Option<&str>,
    hostname: Option<String>,
) -> Result<identity::Identity, String> {
    if let Some(id) = identity::load(home)? {
        if let Some(h) = &hostname {
            if h != &id.hostname {
                return Err(format!(
                    "this execd joined as \"{}\"; it cannot run as \"{h}\" (use another --home to join as another host)",
                    id.hostname
                ));
            }
        }
        return Ok(id);
    }
    let Some(token) = token else {
        return Err(format!(
            "{} holds no host certificate: the first start needs the join token (--token-file FILE or GANTRY_JOIN_TOKEN; gantry-master init and gantry-master token print it)",
            home.display()
        ));
    };
    let hostname = hostname.unwrap_or_else(local_hostname);
    let mut backoff = Backoff::new();
    loop {
        match identity::join(endpoint, master, token, &hostname, home).await {
            Ok(id) => {
                info!(host = %id.hostname, "joined the cell at {master}");
                return Ok(id);
            }
            Err(JoinError::Refused(reason)) => return Err(format!("join refused: {reason}")),
            Err(JoinError::Failed(reason)) => {
                let d = backoff.next_delay();
                error!("{reason}; retrying in {:.1} s", d.as_secs_f64());
                tokio::time::sleep(d).await;
            }
        }
    }
}

/// `simulate`: `hosts` simulated execution hosts on one UDP socket, each with its own
/// identity, session and report spool, until SIGTERM.
async fn simulate(
    home: PathBuf,
    hosts: usize,
    master: String,
    token: Option<String>,
    prefix: String,
    spec: gantry_execd::simulate::SimSpec,
) -> Result<(), String> {
    use gantry_execd::simulate::{host_name, SimHost};
    let (masters, endpoint) = client_endpoint(&home, &master)?;
    let master_addr = masters[0];
    let mut tasks = Vec::with_capacity(hosts);
    for n in 1..=hosts {
        let name = host_name(&prefix, n);
        let host_home = home.join(&name);
        let (endpoint, token, spec) = (endpoint.clone(), token.clone(), spec.clone());
        tasks.push(tokio::spawn(async move {
            let setup = async {
                std::fs::create_dir_all(&host_home)
                    .map_err(|e| format!("{}: {e}", host_home.display()))?;
                let id = identity_of(
                    &endpoint,
                    master_addr,
                    &host_home,
                    token.as_deref(),
                    Some(name.clone()),
                )
                .await?;
                let (finished_tx, finished_rx) = tokio::sync::mpsc::unbounded_channel();
                let host = SimHost::new(&host_home, &name, spec, finished_tx)
                    .map_err(|e| format!("{}: {e}", host_home.display()))?;
                Ok::<_, String>((id, host, finished_rx))
            };
            match setup.await {
                Ok((id, host, finished_rx)) => {
                    let (current_tx, _current_rx) = tokio::sync::watch::channel(None);
                    session::run(
                        endpoint,
                        vec![master_addr],
                        id,
                        host,
                        current_tx,
                        finished_rx,
                        std::sync::Arc::new(tokio::sync::Notify::new()),
                    )
                    .await;
                }
                Err(e) => error!(host = %name, "{e}"),
            }
        }));
    }
    info!("simulating {hosts} execution hosts ({prefix}0001 ...) for the master at {master}");
    wait_for_signal().await;
    info!("shutting down");
    for t in &tasks {
        t.abort();
    }
    endpoint.close(0u32.into(), b"execd shutting down");
    let _ = tokio::time::timeout(Duration::from_secs(2), endpoint.wait_idle()).await;
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_others_may_read_is_refused() {
        let path = std::path::Path::new("/etc/gantry-join-token");
        // (mode, accepted)
        let table = [
            (0o100600, true),
            (0o100400, true),
            (0o100700, true),
            (0o100640, false),
            (0o100604, false),
            (0o100644, false),
            (0o100620, false),
        ];
        for (mode, accepted) in table {
            assert_eq!(
                check_token_file_mode(path, mode).is_ok(),
                accepted,
                "{mode:o}"
            );
        }
        assert_eq!(
            check_token_file_mode(path, 0o100644).unwrap_err(),
            "the token file /etc/gantry-join-token may be read by other users (mode 0644): chmod 600 it"
        );
    }
}
