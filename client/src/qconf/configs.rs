//! `qconf`'s configuration options: the global configuration and the host-local ones
//! (`-sconf -mconf -Mconf -aconf -Aconf -dconf -sconfl`).

use gantry_common::config::print_config;
use gantry_proto::{FromMaster, ToMaster};

use super::{answer, change, edit, list, names, read_object_file, unresolved};
use crate::{exit, Output};

/// The answer to a configuration option, or None for any other option.
pub(super) fn configuration(name: &str, arg: Option<&str>) -> Option<Output> {
    let req = crate::conn::request;
    Some(match (name, arg) {
        ("-sconf", conf) => {
            let name = conf.unwrap_or("global");
            let reply = req(&ToMaster::ShowConfig {
                name: name.to_string(),
            });
            if let Some(out) = unresolved(&reply, name, ": can't resolve host name") {
                return Some(out);
            }
            answer(reply, |a| match a {
                FromMaster::Config(c) => Some(print_config(c)),
                _ => None,
            })
        }
        ("-sconfl", _) => names(req(&ToMaster::ShowConfigList), "no config defined"),
        ("-dconf", Some(hosts)) => change(ToMaster::DeleteConfigs { names: list(hosts) }, true),
        // A host's local configuration, written in the editor (from an empty one).
        ("-aconf", Some(hosts)) => each(list(hosts), |name| {
            let text = edit(&format!("#{name}:\n")).map_err(|e| Output::fail(e, exit::FAILURE))?;
            Ok(ToMaster::AddConfig { name, text })
        }),
        // Each file's name is its host's.
        ("-Aconf", Some(files)) => each(list(files), |file| {
            let (name, text) = named_file(&file)?;
            Ok(ToMaster::AddConfig { name, text })
        }),
        ("-mconf", conf) => {
            let name = conf.unwrap_or("global").to_string();
            let current = match req(&ToMaster::ShowConfig { name: name.clone() }) {
                Ok(FromMaster::Config(c)) => c,
                other => return Some(answer(other, |_| None)),
            };
            match edit(&print_config(&current)) {
                Ok(text) => change(ToMaster::ModifyConfig { name, text }, true),
                Err(e) => Output::fail(e, exit::FAILURE),
            }
        }
        ("-Mconf", Some(files)) => each(list(files), |file| {
            let (name, text) = named_file(&file)?;
            Ok(ToMaster::ModifyConfig { name, text })
        }),
        _ => return None,
    })
}

/// A configuration file: the configuration's name (the file's) and its text.
fn named_file(file: &str) -> Result<(String, String), Output> {
    let name = std::path::Path::new(file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = read_object_file(
        file,
        Some(&format!("error reading configuration from file {file}")),
    )?;
    Ok((name, text))
}

/// Send the request made of each item in turn, stopping at the first refused; what the
/// master said of each, on stderr as SGE's qconf says it.
fn each(items: Vec<String>, request: impl Fn(String) -> Result<ToMaster, Output>) -> Output {
    let mut out = Output::ok(String::new());
    for item in items {
        let step = match request(item) {
            Ok(req) => change(req, true),
            Err(o) => return o,
        };
        out.stderr.push_str(&step.stderr);
        out.stdout.push_str(&step.stdout);
        out.code = step.code;
        if step.code != exit::SUCCESS {
            break;
        }
    }
    out
}
