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
        ("-aconf", Some(hosts)) => {
            let mut out = Output::ok(String::new());
            for name in list(hosts) {
                let text = match edit(&format!("#{name}:\n")) {
                    Ok(text) => text,
                    Err(e) => return Some(Output::fail(e, exit::FAILURE)),
                };
                let step = change(ToMaster::AddConfig { name, text }, true);
                out.stderr.push_str(&step.stderr);
                out.code = step.code;
                if step.code != exit::SUCCESS {
                    break;
                }
            }
            out
        }
        // Each file's name is its host's.
        ("-Aconf", Some(files)) => {
            let mut out = Output::ok(String::new());
            for file in list(files) {
                let name = std::path::Path::new(&file)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let text = match read_object_file(
                    &file,
                    Some(&format!("error reading configuration from file {file}")),
                ) {
                    Ok(t) => t,
                    Err(o) => return Some(o),
                };
                let step = change(ToMaster::AddConfig { name, text }, true);
                out.stderr.push_str(&step.stderr);
                out.code = step.code;
                if step.code != exit::SUCCESS {
                    break;
                }
            }
            out
        }
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
        ("-Mconf", Some(files)) => {
            let mut out = Output::ok(String::new());
            for file in list(files) {
                let name = std::path::Path::new(&file)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let text = match read_object_file(
                    &file,
                    Some(&format!("error reading configuration from file {file}")),
                ) {
                    Ok(t) => t,
                    Err(o) => return Some(o),
                };
                let step = change(ToMaster::ModifyConfig { name, text }, true);
                out.stderr.push_str(&step.stderr);
                out.stdout.push_str(&step.stdout);
                out.code = step.code;
                if step.code != exit::SUCCESS {
                    break;
                }
            }
            out
        }
        _ => return None,
    })
}
