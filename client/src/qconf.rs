//! `qconf`: show and change the cell's configuration, Grid Engine's way.

use std::io::Write;

use gantry_common::complex::print_complexes;
use gantry_common::conf::SgeFileError;
use gantry_common::exechost::print_exechost;
use gantry_common::hostgroup::print_hostgroup;
use gantry_common::queue::print_queue;
use gantry_proto::{AttrOp, ExecHost, FromMaster, ObjectKind, RefusalKind, ToMaster};

use crate::opts::parse;

mod configs;
mod files;
mod share_tree;
mod usage;
use crate::{exit, Output};
pub use usage::usage;
use usage::SPECS;

fn list(arg: &str) -> Vec<String> {
    arg.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Send a request; `Done` messages go to stdout or stderr as SGE prints them for this
/// operation.
fn change(req: ToMaster, to_stderr: bool) -> Output {
    match crate::conn::request(&req) {
        Ok(FromMaster::Done { messages }) => {
            let text: String = messages.iter().map(|m| format!("{m}\n")).collect();
            if to_stderr {
                Output {
                    stdout: String::new(),
                    stderr: text,
                    code: exit::SUCCESS,
                }
            } else {
                Output::ok(text)
            }
        }
        other => answer(other, |_| None),
    }
}

/// What `-ke[j]` and `-km` print: every answer on stderr, as SGE's qconf prints them
/// (`show_answer_list`), failing if any is not OK.
fn shutdown_answer(reply: Result<FromMaster, crate::conn::ConnError>) -> Output {
    let (lines, failed): (Vec<String>, bool) = match reply {
        Ok(FromMaster::Items(items)) => (
            items.iter().map(|i| i.message.clone()).collect(),
            items.iter().any(|i| i.refused),
        ),
        Ok(FromMaster::Done { messages }) => (messages, false),
        other => return answer(other, |_| None),
    };
    Output {
        stdout: String::new(),
        stderr: lines.iter().map(|l| format!("{l}\n")).collect(),
        code: if failed { exit::FAILURE } else { exit::SUCCESS },
    }
}

/// Turn an answer into output with `show`, or report a refusal or failure.
fn answer(
    reply: Result<FromMaster, crate::conn::ConnError>,
    show: impl FnOnce(&FromMaster) -> Option<String>,
) -> Output {
    match reply {
        Ok(FromMaster::Refused(r)) => Output::fail(r.message, exit::for_refusal(r.kind)),
        Ok(a) => match show(&a) {
            Some(text) => Output::ok(text),
            None => Output::fail(
                format!("error: unexpected answer from the master: {a:?}"),
                exit::FAILURE,
            ),
        },
        Err(e) => Output::fail(e.to_string(), exit::FAILURE),
    }
}

fn names(reply: Result<FromMaster, crate::conn::ConnError>, empty: &str) -> Output {
    match reply {
        Ok(FromMaster::Names(n)) if n.is_empty() => Output::fail(empty.to_string(), exit::FAILURE),
        other => answer(other, |a| match a {
            FromMaster::Names(n) => Some(n.iter().map(|s| format!("{s}\n")).collect()),
            _ => None,
        }),
    }
}

fn resolvable(host: &str) -> bool {
    use std::net::ToSocketAddrs;
    (host, 0u16)
        .to_socket_addrs()
        .is_ok_and(|mut a| a.next().is_some())
}

/// A host the master does not know and that does not resolve: SGE's answer
/// (`can't resolve hostname "x"` and what the command adds), instead of the master's.
fn unresolved(
    reply: &Result<FromMaster, crate::conn::ConnError>,
    host: &str,
    suffix: &str,
) -> Option<Output> {
    match reply {
        Ok(FromMaster::Refused(r)) if r.kind == RefusalKind::NotFound && !resolvable(host) => {
            Some(Output::fail(
                format!("can't resolve hostname \"{host}\"{suffix}"),
                exit::FAILURE,
            ))
        }
        _ => None,
    }
}

/// Let the user edit `text` with `$EDITOR` (vi by default); the edited text.
fn edit(text: &str) -> Result<String, String> {
    let editor = std::env::var("EDITOR")
        .ok()
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".into());
    let mut file = tempfile_in_tmp()?;
    file.1
        .write_all(text.as_bytes())
        .map_err(|e| format!("error: cannot write {}: {e}", file.0.display()))?;
    drop(file.1);
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&file.0)
        .status()
        .map_err(|e| format!("error: cannot start the editor \"{editor}\": {e}"))?;
    let edited = std::fs::read_to_string(&file.0);
    let _ = std::fs::remove_file(&file.0);
    if !status.success() {
        return Err(format!(
            "error: the editor \"{editor}\" failed ({status}); nothing changed"
        ));
    }
    edited.map_err(|e| format!("error: cannot read the edited file: {e}"))
}

fn tempfile_in_tmp() -> Result<(std::path::PathBuf, std::fs::File), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir();
    for n in 0..100u32 {
        let path = dir.join(format!("qconf-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "error: cannot create a temporary file in {}: {e}",
                    dir.display()
                ))
            }
        }
    }
    Err("error: cannot create a temporary file".into())
}

/// A resource quota file, with SGE's message when it cannot be read.
fn read_rqs_file(path: &str) -> Result<String, Output> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let reason = match e.kind() {
            std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
            std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
            _ => e.to_string(),
        };
        Output::fail(
            format!("error opening file \"{path}\" for reading: {reason}"),
            exit::FAILURE,
        )
    })?;
    // No set at all: refused (SGE's -Arqs crashes on it, its -Mrqs does nothing).
    let holds_nothing = holds_no_attribute(&text);
    if holds_nothing {
        return Err(Output::fail(
            format!("error: error reading file: \"{path}\""),
            exit::FAILURE,
        ));
    }
    Ok(text)
}

/// Does an object file hold nothing but blank lines and comments?
fn holds_no_attribute(text: &str) -> bool {
    text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#')
    })
}

fn read_file(path: &str) -> Result<String, Output> {
    std::fs::read_to_string(path).map_err(|e| {
        Output::fail(
            format!("error: cannot read file \"{path}\": {e}"),
            exit::FAILURE,
        )
    })
}

/// Print an object the master shows as text.
fn show_object(kind: ObjectKind, name: &str) -> Output {
    answer(
        crate::conn::request(&ToMaster::ShowObject {
            kind,
            name: name.to_string(),
        }),
        |a| match a {
            FromMaster::Text(t) => Some(t.clone()),
            _ => None,
        },
    )
}

/// `-m<object>`: fetch the object, let the user edit it with `$EDITOR`, send it back.
fn edit_object(kind: ObjectKind, name: &str, adding: bool) -> Output {
    let text = match crate::conn::request(&ToMaster::ShowObject {
        kind,
        name: name.to_string(),
    }) {
        Ok(FromMaster::Text(t)) => t,
        other => return answer(other, |_| None),
    };
    match edit(&text) {
        Ok(text) => send_object(kind, text, adding),
        Err(e) => Output::fail(e, exit::FAILURE),
    }
}

/// An object file, refused as SGE's qconf refuses it when it holds no attribute at all
/// (empty, or only blank lines and comments): `error: error reading file: "FILE"`, then
/// the line SGE adds for the object's kind (`then`), exit 1. Nothing is sent: an empty
/// file must never read as "every attribute at its default".
fn read_object_file(path: &str, then: Option<&str>) -> Result<String, Output> {
    let text = read_file(path)?;
    let holds_nothing = holds_no_attribute(&text);
    if !holds_nothing {
        return Ok(text);
    }
    let mut message = format!("error: error reading file: \"{path}\"");
    if let Some(then) = then {
        message.push('\n');
        message.push_str(then);
    }
    Err(Output::fail(message, exit::FAILURE))
}

/// What SGE's qconf says after `error reading file` for an object kind.
fn empty_file_line(kind: ObjectKind) -> Option<&'static str> {
    match kind {
        ObjectKind::ExecHost => Some("invalid format"),
        ObjectKind::SchedConf | ObjectKind::Pe | ObjectKind::Ckpt | ObjectKind::Project => {
            Some("error reading in file")
        }
        _ => None,
    }
}

/// `-A<object>` / `-M<object>`: the object from a file.
fn from_file(path: &str, kind: ObjectKind, adding: bool) -> Output {
    let read = match kind {
        ObjectKind::Complex => files::read_complex_file(path),
        // The group quota tree (Gantry's own): an empty file empties it, as -dgq does.
        ObjectKind::GroupTree => read_file(path),
        ObjectKind::SchedConf => {
            files::read_checked_file(path, gantry_common::schedconf::parse_schedconf)
        }
        ObjectKind::User => files::read_checked_file(path, gantry_common::user::parse_user),
        ObjectKind::Pe => files::read_checked_file(path, gantry_common::pe::check_pe_file),
        _ => read_object_file(path, empty_file_line(kind)),
    };
    match read {
        Ok(text) => send_object(kind, text, adding),
        Err(o) => o,
    }
}

/// A host group as the master shows it, nested groups walked in place (at most 16
/// deep): `visit(member, depth)` for each member, a subgroup before its own members.
fn walk_hostgroup(
    name: &str,
    depth: usize,
    visit: &mut dyn FnMut(&str, usize),
) -> Result<(), Output> {
    if depth > 16 {
        return Ok(());
    }
    match crate::ask(&ToMaster::ShowHostGroup {
        name: name.to_string(),
    }) {
        Ok(FromMaster::HostGroup(g)) => {
            for m in g.hostlist {
                visit(&m, depth + 1);
                if m.starts_with('@') {
                    walk_hostgroup(&m, depth + 1, visit)?;
                }
            }
            Ok(())
        }
        Ok(other) => Err(crate::unexpected(&other)),
        Err(o) => Err(o),
    }
}

/// SGE's qconf reports an object added or modified from a file or an editor on
/// stderr, but a quota set's (`-Arqs`) and a user's (`-Auser`) on stdout.
fn send_object(kind: ObjectKind, text: String, adding: bool) -> Output {
    let req = if adding {
        ToMaster::AddObject { kind, text }
    } else {
        ToMaster::ModifyObject { kind, text }
    };
    change(req, !matches!(kind, ObjectKind::Rqs | ObjectKind::User))
}

pub fn run(args: &[String]) -> Output {
    if args.is_empty() {
        return Output::usage_error("error: no option given", &usage());
    }
    // -Mrqs takes a file and, optionally, the sets to take from it.
    if let Some(pos) = args.iter().position(|a| a == "-Mrqs") {
        let Some(file) = args.get(pos + 1) else {
            return Output::usage_error(
                "error: no option argument provided to \"-Mrqs\"",
                &usage(),
            );
        };
        let text = match read_rqs_file(file) {
            Ok(t) => t,
            Err(o) => return o,
        };
        return match args.get(pos + 2).filter(|a| !a.starts_with('-')) {
            None => change(
                ToMaster::ReplaceObjects {
                    kind: ObjectKind::Rqs,
                    text,
                },
                true,
            ),
            Some(names) => {
                // Only the named sets, which the file must contain.
                let sets = match gantry_common::rqs::parse_sets(&text) {
                    Ok(s) => s,
                    Err(e) => return Output::fail(e.0, exit::FAILURE),
                };
                let mut chosen = String::new();
                for name in list(names) {
                    match sets.iter().find(|s| s.name == name) {
                        Some(s) => chosen.push_str(&gantry_common::rqs::print_set(s)),
                        None => {
                            return Output::fail(
                                format!(
                                    "resource quota set \"{name}\" not found in file \"{file}\""
                                ),
                                exit::FAILURE,
                            )
                        }
                    }
                }
                send_object(ObjectKind::Rqs, chosen, false)
            }
        };
    }
    // -?attr take three more words than the parser knows about.
    if let Some((pos, op, from_file)) = args.iter().enumerate().find_map(|(i, a)| {
        let (op, file) = match a.as_str() {
            "-aattr" => (AttrOp::Add, false),
            "-mattr" => (AttrOp::Modify, false),
            "-dattr" => (AttrOp::Delete, false),
            "-rattr" => (AttrOp::Replace, false),
            "-Aattr" => (AttrOp::Add, true),
            "-Mattr" => (AttrOp::Modify, true),
            "-Dattr" => (AttrOp::Delete, true),
            "-Rattr" => (AttrOp::Replace, true),
            _ => return None,
        };
        Some((i, op, file))
    }) {
        let rest = &args[pos + 1..];
        let needed = if from_file { 3 } else { 4 };
        if rest.len() < needed {
            return Output::usage_error(
                &format!("error: no option argument provided to \"{}\"", args[pos]),
                &usage(),
            );
        }
        let object = rest[0].clone();
        let targets: Vec<String> = rest[needed - 1..].iter().flat_map(|t| list(t)).collect();
        if !from_file {
            return change(
                ToMaster::EditAttribute {
                    op,
                    object,
                    attr: rest[1].clone(),
                    value: rest[2].clone(),
                    targets,
                },
                false,
            );
        }
        // The file: `attribute value` lines, each applied in turn.
        let text = match read_file(&rest[1]) {
            Ok(t) => t,
            Err(o) => return o,
        };
        let entries = match gantry_common::conf::parse_entries(&text) {
            Ok(e) => e,
            Err(e) => return Output::fail(format!("error: {}: {e}", rest[1]), exit::FAILURE),
        };
        let mut out = Output::ok(String::new());
        for e in entries {
            let step = change(
                ToMaster::EditAttribute {
                    op,
                    object: object.clone(),
                    attr: e.key,
                    value: e.value,
                    targets: targets.clone(),
                },
                false,
            );
            out.stdout.push_str(&step.stdout);
            out.stderr.push_str(&step.stderr);
            out.code = step.code;
            if step.code != exit::SUCCESS {
                break;
            }
        }
        return out;
    }
    let p = match parse(args, SPECS, false) {
        Ok(p) => p,
        // SGE's qconf points to its help rather than printing it.
        Err(e @ crate::opts::OptError::Unknown(_)) => {
            return Output::fail(format!("{e}\nUsage: qconf -help"), exit::FAILURE)
        }
        Err(e) => return Output::usage_error(&e.to_string(), &usage()),
    };
    if p.has("-help") {
        return Output::ok(usage());
    }
    // Each option is carried out in order, as qconf does; the first failure stops.
    let mut out = Output::ok(String::new());
    let json = p.has("-json");
    for g in p.options.iter().filter(|g| g.name != "-json") {
        let arg = g.arg.as_deref();
        let mut step = one(g.name, arg);
        // `-json`: what a show option printed, as its document.
        if json && step.code == exit::SUCCESS && gantry_common::output::is_show_option(g.name) {
            step.stdout =
                crate::json_line(&gantry_common::output::config_shown(g.name, &step.stdout));
        }
        out.stdout.push_str(&step.stdout);
        out.stderr.push_str(&step.stderr);
        out.code = step.code;
        if step.code != exit::SUCCESS {
            break;
        }
    }
    out
}

fn one(name: &str, arg: Option<&str>) -> Output {
    if let Some(out) = configs::configuration(name, arg) {
        return out;
    }
    let req = crate::conn::request;
    match (name, arg) {
        ("-sc", _) => answer(req(&ToMaster::ShowComplexes), |a| match a {
            FromMaster::Complexes(c) => Some(print_complexes(c)),
            _ => None,
        }),
        ("-sel", _) => names(
            req(&ToMaster::ShowExecHostList),
            "no execution host defined",
        ),
        ("-se", Some(host)) => {
            let reply = req(&ToMaster::ShowExecHost {
                host: host.to_string(),
            });
            if let Some(out) = unresolved(&reply, host, "") {
                return out;
            }
            answer(reply, |a| match a {
                FromMaster::ExecHost(h) => Some(print_exechost(h)),
                _ => None,
            })
        }
        ("-ae", Some(host)) => change(
            ToMaster::AddExecHost {
                text: print_exechost(&ExecHost::new(host)),
            },
            true,
        ),
        ("-ae", None) => match edit(&print_exechost(&ExecHost::new("template"))) {
            Ok(text) => change(ToMaster::AddExecHost { text }, true),
            Err(e) => Output::fail(e, exit::FAILURE),
        },
        ("-Ae", Some(file)) => match read_object_file(file, Some("invalid format")) {
            Ok(text) => change(ToMaster::AddExecHost { text }, true),
            Err(o) => o,
        },
        ("-mc", _) => edit_object(ObjectKind::Complex, "", false),
        ("-Mc", Some(file)) => from_file(file, ObjectKind::Complex, false),
        ("-me", Some(host)) => {
            let text = match req(&ToMaster::ShowExecHost {
                host: host.to_string(),
            }) {
                Ok(FromMaster::ExecHost(h)) => print_exechost(&h),
                other => return answer(other, |_| None),
            };
            match edit(&text) {
                Ok(text) => change(
                    ToMaster::ModifyObject {
                        kind: ObjectKind::ExecHost,
                        text,
                    },
                    true,
                ),
                Err(e) => Output::fail(e, exit::FAILURE),
            }
        }
        ("-Me", Some(file)) => from_file(file, ObjectKind::ExecHost, false),
        ("-sgq", _) => show_object(ObjectKind::GroupTree, ""),
        ("-mgq", _) => edit_object(ObjectKind::GroupTree, "", false),
        ("-Mgq", Some(file)) => from_file(file, ObjectKind::GroupTree, false),
        ("-dgq", _) => change(
            ToMaster::DeleteObjects {
                kind: ObjectKind::GroupTree,
                names: Vec::new(),
            },
            false,
        ),
        ("-ssconf", _) => show_object(ObjectKind::SchedConf, ""),
        ("-msconf", _) => edit_object(ObjectKind::SchedConf, "", false),
        ("-Msconf", Some(file)) => from_file(file, ObjectKind::SchedConf, false),
        ("-aq", name) => {
            let mut q = gantry_common::queue::new_queue(name.unwrap_or("template"), "NONE");
            if let Some(a) = q.attr_mut("pe_list") {
                a.default = "NONE".into();
            }
            match edit(&print_queue(&q)) {
                Ok(text) => change(
                    ToMaster::AddObject {
                        kind: ObjectKind::Queue,
                        text,
                    },
                    true,
                ),
                Err(e) => Output::fail(e, exit::FAILURE),
            }
        }
        ("-Aq", Some(file)) => from_file(file, ObjectKind::Queue, true),
        ("-mq", Some(name)) => edit_object(ObjectKind::Queue, name, false),
        ("-Mq", Some(file)) => from_file(file, ObjectKind::Queue, false),
        ("-dq", Some(names)) => change(
            ToMaster::DeleteObjects {
                kind: ObjectKind::Queue,
                names: list(names),
            },
            true,
        ),
        ("-sp", Some(name)) => show_object(ObjectKind::Pe, name),
        ("-spl", _) => names(
            req(&ToMaster::ShowObjectList {
                kind: ObjectKind::Pe,
            }),
            "no parallel environment defined",
        ),
        ("-ap", Some(name)) => {
            let template = gantry_common::pe::print_pe(&gantry_common::pe::Pe::new(name));
            match edit(&template) {
                Ok(text) => send_object(ObjectKind::Pe, text, true),
                Err(e) => Output::fail(e, exit::FAILURE),
            }
        }
        ("-Ap", Some(file)) => from_file(file, ObjectKind::Pe, true),
        ("-mp", Some(name)) => edit_object(ObjectKind::Pe, name, false),
        ("-Mp", Some(file)) => from_file(file, ObjectKind::Pe, false),
        ("-dp", Some(name)) => change(
            ToMaster::DeleteObjects {
                kind: ObjectKind::Pe,
                names: list(name),
            },
            true,
        ),
        ("-sckpt", Some(name)) => show_object(ObjectKind::Ckpt, name),
        ("-sckptl", _) => names(
            req(&ToMaster::ShowObjectList {
                kind: ObjectKind::Ckpt,
            }),
            "no ckpt interface definition defined",
        ),
        ("-ackpt", Some(name)) => {
            let template = gantry_common::ckpt::print_ckpt(&gantry_common::ckpt::Ckpt::new(name));
            match edit(&template) {
                Ok(text) => send_object(ObjectKind::Ckpt, text, true),
                Err(e) => Output::fail(e, exit::FAILURE),
            }
        }
        ("-Ackpt", Some(file)) => from_file(file, ObjectKind::Ckpt, true),
        ("-mckpt", Some(name)) => edit_object(ObjectKind::Ckpt, name, false),
        ("-Mckpt", Some(file)) => from_file(file, ObjectKind::Ckpt, false),
        ("-dckpt", Some(name)) => change(
            ToMaster::DeleteObjects {
                kind: ObjectKind::Ckpt,
                names: list(name),
            },
            true,
        ),
        ("-sprj", Some(name)) => show_object(ObjectKind::Project, name),
        ("-sprjl", _) => names(
            req(&ToMaster::ShowObjectList {
                kind: ObjectKind::Project,
            }),
            "no project list defined",
        ),
        ("-aprj", _) => edit_object(ObjectKind::Project, "template", true),
        ("-Aprj", Some(file)) => from_file(file, ObjectKind::Project, true),
        ("-mprj", Some(name)) => edit_object(ObjectKind::Project, name, false),
        ("-Mprj", Some(file)) => from_file(file, ObjectKind::Project, false),
        ("-dprj", Some(names)) => change(
            ToMaster::DeleteObjects {
                kind: ObjectKind::Project,
                names: list(names),
            },
            true,
        ),
        ("-suser", Some(names)) => {
            let mut out = Output::ok(String::new());
            for name in list(names) {
                let shown = show_object(ObjectKind::User, &name);
                out.stdout.push_str(&shown.stdout);
                out.stderr.push_str(&shown.stderr);
                out.code = out.code.max(shown.code);
            }
            out
        }
        ("-suserl", _) => names(
            req(&ToMaster::ShowObjectList {
                kind: ObjectKind::User,
            }),
            "no user list defined",
        ),
        ("-auser", _) => edit_object(ObjectKind::User, "template", true),
        ("-Auser", Some(file)) => from_file(file, ObjectKind::User, true),
        ("-muser", Some(name)) => edit_object(ObjectKind::User, name, false),
        ("-Muser", Some(file)) => from_file(file, ObjectKind::User, false),
        ("-duser", Some(names)) => change(
            ToMaster::DeleteObjects {
                kind: ObjectKind::User,
                names: list(names),
            },
            true,
        ),
        ("-sstree", _) => show_object(ObjectKind::ShareTree, ""),
        ("-sst", _) => share_tree::show_view(),
        ("-astree" | "-mstree", _) => share_tree::edit(),
        ("-Astree" | "-Mstree", Some(file)) => match share_tree::read_file(file) {
            Ok(text) => change(
                ToMaster::ModifyObject {
                    kind: ObjectKind::ShareTree,
                    text,
                },
                true,
            ),
            Err(o) => o,
        },
        ("-clearusage", users) => change(
            ToMaster::ClearUsage {
                users: users.map(list).unwrap_or_default(),
            },
            true,
        ),
        ("-dstree", _) => change(
            ToMaster::DeleteObjects {
                kind: ObjectKind::ShareTree,
                names: Vec::new(),
            },
            true,
        ),
        ("-srqsl", _) => names(
            req(&ToMaster::ShowObjectList {
                kind: ObjectKind::Rqs,
            }),
            "no resource quota set list defined",
        ),
        ("-srqs", names) => show_object(ObjectKind::Rqs, names.unwrap_or("")),
        ("-arqs", names) => {
            let template: String = names
                .unwrap_or("template")
                .split(',')
                .filter(|n| !n.is_empty())
                .map(|n| {
                    format!(
                        "{{\n   name         {n}\n   description  NONE\n   enabled      FALSE\n   limit        to slots=0\n}}\n"
                    )
                })
                .collect();
            match edit(&template) {
                Ok(text) => send_object(ObjectKind::Rqs, text, true),
                Err(e) => Output::fail(e, exit::FAILURE),
            }
        }
        ("-Arqs", Some(file)) => match read_rqs_file(file) {
            Ok(text) => send_object(ObjectKind::Rqs, text, true),
            Err(o) => o,
        },
        ("-mrqs", names) => {
            let text = match req(&ToMaster::ShowObject {
                kind: ObjectKind::Rqs,
                name: names.unwrap_or("").to_string(),
            }) {
                Ok(FromMaster::Text(t)) => t,
                other => return answer(other, |_| None),
            };
            match edit(&text) {
                Ok(text) if names.is_some() => send_object(ObjectKind::Rqs, text, false),
                Ok(text) => change(
                    ToMaster::ReplaceObjects {
                        kind: ObjectKind::Rqs,
                        text,
                    },
                    true,
                ),
                Err(e) => Output::fail(e, exit::FAILURE),
            }
        }
        ("-drqs", Some(names)) => change(
            ToMaster::DeleteObjects {
                kind: ObjectKind::Rqs,
                names: list(names),
            },
            true,
        ),
        ("-de", Some(hosts)) => change(ToMaster::DeleteExecHosts { hosts: list(hosts) }, true),
        ("-ke" | "-kej", None) => Output::fail(
            "Need a hostname or the keyword \"all\"".to_string(),
            exit::FAILURE,
        ),
        ("-ke" | "-kej", Some(hosts)) => shutdown_answer(req(&ToMaster::KillExecds {
            hosts: list(hosts),
            kill_jobs: name == "-kej",
        })),
        ("-km", _) => shutdown_answer(req(&ToMaster::KillMaster)),
        // Gantry has no calendars: none can be defined.
        ("-scall", _) => Output::fail("no calendar defined".to_string(), exit::FAILURE),
        ("-sm", _) => names(req(&ToMaster::ShowManagers), "no manager defined"),
        ("-so", _) => names(req(&ToMaster::ShowOperators), "no operator defined"),
        ("-sh", _) => names(
            req(&ToMaster::ShowObjectList {
                kind: ObjectKind::AdminHost,
            }),
            "no administrative host defined",
        ),
        // SGE's qconf reports these on stderr, success included.
        ("-ah", Some(hosts)) => change(
            ToMaster::AddObject {
                kind: ObjectKind::AdminHost,
                text: hosts.to_string(),
            },
            true,
        ),
        ("-dh", Some(hosts)) => change(
            ToMaster::DeleteObjects {
                kind: ObjectKind::AdminHost,
                names: list(hosts),
            },
            true,
        ),
        ("-am", Some(users)) => change(ToMaster::AddManagers { users: list(users) }, true),
        ("-dm", Some(users)) => change(ToMaster::DeleteManagers { users: list(users) }, true),
        ("-ao", Some(users)) => change(ToMaster::AddOperators { users: list(users) }, true),
        ("-do", Some(users)) => change(ToMaster::DeleteOperators { users: list(users) }, true),
        ("-sql", _) => names(req(&ToMaster::ShowQueueList), "no cqueue list defined"),
        // Each queue of a list shown in turn; the ones not found said on stderr.
        ("-sq", Some(qs)) => {
            let mut out = Output::ok(String::new());
            for q in list(qs) {
                let shown = answer(req(&ToMaster::ShowQueue { name: q }), |a| match a {
                    FromMaster::Queue(q) => Some(print_queue(q)),
                    _ => None,
                });
                out.stdout.push_str(&shown.stdout);
                out.stderr.push_str(&shown.stderr);
                out.code = out.code.max(shown.code);
            }
            out
        }
        ("-sq", None) => Output::ok(print_queue(&gantry_common::queue::new_queue(
            "template", "NONE",
        ))),
        ("-shgrpl", _) => names(
            req(&ToMaster::ShowHostGroupList),
            "no host group list defined",
        ),
        ("-shgrp", Some(g)) => answer(
            req(&ToMaster::ShowHostGroup {
                name: g.to_string(),
            }),
            |a| match a {
                FromMaster::HostGroup(g) => Some(print_hostgroup(g)),
                _ => None,
            },
        ),
        ("-shgrp_resolved", Some(g)) => {
            // Resolve nested groups on the client from the groups the master shows.
            let mut hosts: Vec<String> = Vec::new();
            let walked = walk_hostgroup(g, 0, &mut |member, _| {
                if !member.starts_with('@') && !hosts.iter().any(|h| h == member) {
                    hosts.push(member.to_string());
                }
            });
            match walked {
                Ok(()) => Output::ok(format!("{}\n", hosts.join(" "))),
                Err(o) => o,
            }
        }
        ("-shgrp_tree", Some(g)) => {
            // The group, then each member three blanks further in, a subgroup with its
            // own members under it (SGE's qconf -shgrp_tree).
            let mut out = format!("{g}\n");
            let walked = walk_hostgroup(g, 0, &mut |member, depth| {
                out.push_str(&format!("{}{member}\n", " ".repeat(depth * 3)));
            });
            match walked {
                Ok(()) => Output::ok(out),
                Err(o) => o,
            }
        }
        ("-ahgrp", Some(g)) => {
            let template = print_hostgroup(&gantry_proto::HostGroup {
                name: g.to_string(),
                hostlist: vec![],
            });
            match edit(&template) {
                Ok(text) => change(ToMaster::AddHostGroup { text }, true),
                Err(e) => Output::fail(e, exit::FAILURE),
            }
        }
        ("-Ahgrp", Some(file)) => match read_object_file(file, None) {
            Ok(text) => change(ToMaster::AddHostGroup { text }, true),
            Err(o) => o,
        },
        ("-mhgrp", Some(g)) => match req(&ToMaster::ShowHostGroup {
            name: g.to_string(),
        }) {
            Ok(FromMaster::HostGroup(current)) => match edit(&print_hostgroup(&current)) {
                Ok(text) => change(ToMaster::ModifyHostGroup { text }, true),
                Err(e) => Output::fail(e, exit::FAILURE),
            },
            other => answer(other, |_| None),
        },
        ("-Mhgrp", Some(file)) => match read_object_file(file, None) {
            Ok(text) => change(ToMaster::ModifyHostGroup { text }, true),
            Err(o) => o,
        },
        ("-sul", _) => names(req(&ToMaster::ShowUserSetList), "no userset list defined"),
        ("-su", Some(lists)) => {
            answer(
                req(&ToMaster::ShowUserSets { names: list(lists) }),
                |a| match a {
                    FromMaster::UserSets(sets) => Some(
                        sets.iter()
                            .map(gantry_common::userset::print_userset)
                            .collect(),
                    ),
                    _ => None,
                },
            )
        }
        ("-au" | "-du", Some(both)) => {
            let (users, sets) = both.split_once(' ').unwrap_or((both, ""));
            let (users, sets) = (list(users), list(sets));
            let request = if name == "-au" {
                ToMaster::AddUsersToSets { users, sets }
            } else {
                ToMaster::DeleteUsersFromSets { users, sets }
            };
            change(request, true)
        }
        ("-dul", Some(lists)) => change(ToMaster::DeleteUserSets { names: list(lists) }, true),
        ("-Au", Some(file)) => match read_object_file(file, Some("error reading in file")) {
            Ok(text) => change(ToMaster::AddUserSet { text }, true),
            Err(o) => o,
        },
        ("-Mu", Some(file)) => match read_object_file(file, Some("error reading in file")) {
            Ok(text) => change(ToMaster::ModifyUserSet { text }, true),
            Err(o) => o,
        },
        ("-dhgrp", Some(g)) => change(
            ToMaster::DeleteHostGroup {
                name: g.to_string(),
            },
            true,
        ),
        (other, None) => Output::usage_error(
            &format!("error: no option argument provided to \"{other}\""),
            &usage(),
        ),
        // SGE's qconf points to its help rather than printing it.
        (other, Some(_)) => Output::fail(
            format!("error: invalid option argument \"{other}\"\nUsage: qconf -help"),
            exit::FAILURE,
        ),
    }
}
