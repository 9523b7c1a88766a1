//! The daemons' logs: to standard error (the default) or to files in a directory,
//! rotated by `tracing-appender` and the oldest removed; as text or as one JSON object
//! a line; at the level the global configuration's `loglevel` says, changed while the
//! daemon runs (`GANTRY_LOG`, when set, decides instead: a filter such as
//! `gantry_master=debug`).

use std::path::PathBuf;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

/// The daemons' logging options (`gantry-master run`, `gantry-execd run`).
#[derive(Debug, Clone, clap::Args)]
pub struct LogArgs {
    /// Log to files in this directory (rotated; default: standard error).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// How often the log file is rotated: minutely, hourly, daily or never.
    #[arg(long, default_value = "daily")]
    pub log_rotation: String,
    /// How many rotated log files are kept.
    #[arg(long, default_value_t = 7)]
    pub log_keep: usize,
    /// Log one JSON object a line instead of text.
    #[arg(long)]
    pub log_json: bool,
}

impl LogArgs {
    /// The settings of a daemon whose files are named `prefix.DATE`.
    pub fn settings(&self, prefix: &str) -> Result<LogSettings, LogError> {
        Ok(LogSettings {
            dir: self.log_dir.clone(),
            prefix: prefix.to_string(),
            rotation: self.log_rotation.parse()?,
            keep: self.log_keep,
            json: self.log_json,
        })
    }
}

/// Where and how a daemon logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// Files named `PREFIX.DATE` in this directory (None: standard error).
    pub dir: Option<PathBuf>,
    /// The files' name before the date (`master`, `execd`).
    pub prefix: String,
    pub rotation: Rotation,
    /// Rotated files kept (the oldest beyond are removed).
    pub keep: usize,
    pub json: bool,
}

impl LogSettings {
    /// Text on standard error.
    pub fn stderr() -> LogSettings {
        LogSettings {
            dir: None,
            prefix: String::new(),
            rotation: Rotation::Never,
            keep: 1,
            json: false,
        }
    }
}

/// How often a log file is closed and the next begun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotation {
    Minutely,
    Hourly,
    Daily,
    Never,
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("unknown log rotation \"{0}\" (minutely, hourly, daily or never)")]
    UnknownRotation(String),
    #[error("cannot log to {dir}: {source}")]
    Dir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot log to {dir}: {source}")]
    Appender {
        dir: PathBuf,
        source: tracing_appender::rolling::InitError,
    },
}

impl std::str::FromStr for Rotation {
    type Err = LogError;

    fn from_str(s: &str) -> Result<Rotation, LogError> {
        match s {
            "minutely" => Ok(Rotation::Minutely),
            "hourly" => Ok(Rotation::Hourly),
            "daily" => Ok(Rotation::Daily),
            "never" => Ok(Rotation::Never),
            other => Err(LogError::UnknownRotation(other.to_string())),
        }
    }
}

/// The tracing filter of an SGE `loglevel` (`log_crit` .. `log_debug`); an unknown one
/// (the configuration's check refuses those) is `log_warning`'s.
pub fn filter_of_loglevel(loglevel: &str) -> &'static str {
    match loglevel {
        "log_crit" | "log_err" => "error",
        "log_warning" => "warn",
        "log_notice" | "log_info" => "info",
        "log_debug" => "debug",
        _ => "warn",
    }
}

/// The running daemon's filter, which `loglevel` changes (None: `GANTRY_LOG` decides,
/// or logging was not started by [`init`]).
static FILTER: std::sync::OnceLock<Option<reload::Handle<EnvFilter, Registry>>> =
    std::sync::OnceLock::new();

/// The global configuration's `loglevel` was read (at start, and when it changes).
pub fn set_loglevel(loglevel: &str) {
    if let Some(Some(handle)) = FILTER.get() {
        let _ = handle.modify(|f| *f = EnvFilter::new(filter_of_loglevel(loglevel)));
    }
}

/// Keeps the log files written: dropped at the daemon's exit, it flushes what is
/// queued for them.
pub struct LogGuard {
    _flushes: Option<tracing_appender::non_blocking::WorkerGuard>,
}

/// Start logging as `settings` say, at `initial` until a `loglevel` is read (or as
/// `GANTRY_LOG` says).
pub fn init(settings: &LogSettings, initial: &str) -> Result<LogGuard, LogError> {
    let (filter, from_environment) = match EnvFilter::try_from_env("GANTRY_LOG") {
        Ok(f) => (f, true),
        Err(_) => (EnvFilter::new(initial), false),
    };
    let (filter, handle) = reload::Layer::new(filter);
    let (writer, guard) = match &settings.dir {
        None => (
            tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stderr),
            None,
        ),
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|source| LogError::Dir {
                dir: dir.clone(),
                source,
            })?;
            let rotation = match settings.rotation {
                Rotation::Minutely => tracing_appender::rolling::Rotation::MINUTELY,
                Rotation::Hourly => tracing_appender::rolling::Rotation::HOURLY,
                Rotation::Daily => tracing_appender::rolling::Rotation::DAILY,
                Rotation::Never => tracing_appender::rolling::Rotation::NEVER,
            };
            let appender = tracing_appender::rolling::Builder::new()
                .rotation(rotation)
                .filename_prefix(&settings.prefix)
                .max_log_files(settings.keep.max(1))
                .build(dir)
                .map_err(|source| LogError::Appender {
                    dir: dir.clone(),
                    source,
                })?;
            let (writer, guard) = tracing_appender::non_blocking(appender);
            (
                tracing_subscriber::fmt::writer::BoxMakeWriter::new(writer),
                Some(guard),
            )
        }
    };
    let ansi = settings.dir.is_none() && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let registry = tracing_subscriber::registry().with(filter);
    if settings.json {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(writer)
                    .with_ansi(false),
            )
            .init();
    } else {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(writer)
                    .with_ansi(ansi),
            )
            .init();
    }
    let _ = FILTER.set((!from_environment).then_some(handle));
    Ok(LogGuard { _flushes: guard })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sge_loglevels_map_to_filters() {
        for (level, filter) in [
            ("log_crit", "error"),
            ("log_err", "error"),
            ("log_warning", "warn"),
            ("log_notice", "info"),
            ("log_info", "info"),
            ("log_debug", "debug"),
        ] {
            assert_eq!(filter_of_loglevel(level), filter, "{level}");
        }
        assert_eq!("daily".parse::<Rotation>().unwrap(), Rotation::Daily);
        assert!("weekly".parse::<Rotation>().is_err());
    }
}
