//! Job submission verifiers (`jsv(1)`): a script that is shown a job and accepts it,
//! corrects it or rejects it, speaking SGE's JSV protocol 1.0 on its standard input and
//! output. Client JSVs (`qsub -jsv`) are started by the submit client as the submitting
//! user; the server JSV (`jsv_url` in the global configuration) by the master, as the
//! user its URL names or the master's own. The conversation is a child process's pipes
//! and nothing else (the daemons call it off their event loops):
//!
//! ```text
//! qsub -> START                        <- SEND ENV (optional), STARTED
//! qsub -> PARAM name value ... [ENV ADD name value ...] BEGIN
//!                                      <- LOG level text, PARAM name [value], ENV ADD|MOD|DEL name [value]
//!                                      <- RESULT STATE ACCEPT|CORRECT|REJECT|REJECT_WAIT [message]
//! qsub -> QUIT
//! ```
//!
//! The parameters are the job's as SGE names them for JSVs (`N`, `l_hard`, `q_soft`,
//! `pe_name`/`pe_min`/`pe_max`, `t_min`/`t_max`/`t_step`, ...), plus the read-only
//! pseudo parameters `VERSION CONTEXT CLIENT USER GROUP` and `CMDNAME CMDARGS CMDARG<n>`.
//! A correction is applied with the same checks an option gets; a parameter Gantry does
//! not keep, or a read-only one, rejects the job rather than being ignored.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gantry_proto::{JobScript, JobSpec, TaskRange};

/// Who submits (the `USER` and `GROUP` parameters).
pub struct Submitter {
    pub user: String,
    pub group: String,
}

/// Who started the JSV (`CONTEXT`, `CLIENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// A submit client: `qsub`.
    Client,
    /// The master.
    Master,
}

/// How a JSV ended the verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted, corrected or not; the `LOG` lines it sent (level, text).
    Accepted { log: Vec<(String, String)> },
    /// Rejected (or failed): the message the user reads, and the `LOG` lines.
    Rejected {
        message: String,
        log: Vec<(String, String)>,
    },
}

/// A JSV URL: `[script:][user@]path`. A client may not name a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub user: Option<String>,
    pub path: String,
}

/// Read a JSV URL and check its script (an executable file), with SGE's messages.
pub fn parse_url(url: &str, context: Context) -> Result<Url, String> {
    let rest = match url.split_once(':') {
        Some(("script", p)) => p,
        Some((t, _)) if !t.contains('/') => {
            return Err(format!("type \"{t}\" in JSV URL is invalid"));
        }
        _ => url,
    };
    let (user, path) = match rest.split_once('@') {
        Some((u, p)) if !u.contains('/') => (Some(u.to_string()), p),
        _ => (None, rest),
    };
    if user.is_some() && context == Context::Client {
        return Err("specifying user is not allowed in client JSV URLs".to_string());
    }
    let meta =
        std::fs::metadata(path).map_err(|_| format!("JSV file \"{path}\" does not exist"))?;
    use std::os::unix::fs::PermissionsExt;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "JSV \"{path}\" is either not a file or not executeable"
        ));
    }
    Ok(Url {
        user,
        path: path.to_string(),
    })
}

/// How long a JSV may take to answer (`SGE_JSV_TIMEOUT`, seconds, 10 by default).
fn timeout() -> Duration {
    std::env::var("SGE_JSV_TIMEOUT")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&s| s > 0)
        .map_or(Duration::from_secs(10), Duration::from_secs)
}

/// A running JSV: its input, and its output lines as they come.
struct Instance {
    child: Child,
    input: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
    path: String,
    deadline: Instant,
}

impl Instance {
    fn start(path: &str, run_as: Option<(u32, u32)>) -> Result<Instance, String> {
        let mut command = Command::new(path);
        if let Some((uid, gid)) = run_as {
            use std::os::unix::process::CommandExt;
            command.gid(gid).uid(uid);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|_| format!("JSV file \"{path}\" can't be started"))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(format!("start of JSV \"{path}\" failed"));
        };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Instance {
            child,
            input,
            lines,
            path: path.to_string(),
            deadline: Instant::now() + timeout(),
        })
    }

    fn send(&mut self, command: &str) -> Result<(), String> {
        // The JSV closed its input: it ended (or will) without a verdict.
        writeln!(self.input, "{command}")
            .and_then(|()| self.input.flush())
            .map_err(|_| format!("JSV \"{}\" ended before its verdict", self.path))
    }

    fn receive(&mut self) -> Result<String, String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        self.lines.recv_timeout(left).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => format!(
                "JSV \"{}\" did not answer within {} seconds",
                self.path,
                timeout().as_secs()
            ),
            mpsc::RecvTimeoutError::Disconnected => {
                format!("JSV \"{}\" ended before its verdict", self.path)
            }
        })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.send("QUIT");
        // A JSV that does not leave when told to is stopped.
        let end = Instant::now() + Duration::from_millis(500);
        while Instant::now() < end {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run one JSV (as `run_as`, uid and gid, when given) on the job; a correction is
/// applied to `spec`.
pub fn verify(
    path: &str,
    run_as: Option<(u32, u32)>,
    spec: &mut JobSpec,
    who: &Submitter,
    context: Context,
) -> Verdict {
    let mut log = Vec::new();
    match converse(path, run_as, spec, who, context, &mut log) {
        Ok(()) => Verdict::Accepted { log },
        Err(message) => Verdict::Rejected { message, log },
    }
}

fn converse(
    path: &str,
    run_as: Option<(u32, u32)>,
    spec: &mut JobSpec,
    who: &Submitter,
    context: Context,
    log: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let mut jsv = Instance::start(path, run_as)?;
    jsv.send("START")?;
    let mut send_env = false;
    loop {
        let line = jsv.receive()?;
        let (command, rest) = split(&line);
        match command {
            "SEND" if rest == "ENV" => send_env = true,
            "SEND" => return Err(format!("got \"{rest}\" as object for SEND command")),
            "STARTED" => break,
            "LOG" => log.push(log_text(rest)),
            "ERROR" => return Err(rest.to_string()),
            _ => return Err(format!("JSV got unknown command \"{command}\"")),
        }
    }
    for (name, value) in parameters(spec, who, context) {
        jsv.send(&format!("PARAM {name} {value}"))?;
    }
    if send_env {
        for (name, value) in &spec.env {
            if !name.starts_with("SGE_O_") {
                jsv.send(&format!("ENV ADD {name} {}", value.replace('\n', "\\n")))?;
            }
        }
    }
    jsv.send("BEGIN")?;
    let mut corrected = spec.clone();
    loop {
        let line = jsv.receive()?;
        let (command, rest) = split(&line);
        match command {
            "LOG" => log.push(log_text(rest)),
            "PARAM" => {
                let (name, value) = split(rest);
                let value = (!value.is_empty()).then_some(value);
                set_parameter(&mut corrected, name, value)?;
            }
            "ENV" => {
                let (modifier, rest) = split(rest);
                let (name, value) = split(rest);
                match modifier {
                    "ADD" | "MOD" => {
                        corrected.env.retain(|(k, _)| k != name);
                        corrected.env.push((name.to_string(), value.to_string()));
                    }
                    "DEL" => corrected.env.retain(|(k, _)| k != name),
                    _ => return Err(format!("\"ENV {modifier} {name} {value}\" is invalid")),
                }
            }
            "RESULT" => {
                let (sub, rest) = split(rest);
                let (state, message) = split(rest);
                if sub != "STATE" {
                    return Err(format!("JSV got unknown command \"{sub}\""));
                }
                return match state {
                    "ACCEPT" => Ok(()),
                    "CORRECT" => {
                        *spec = corrected;
                        Ok(())
                    }
                    "REJECT" if message.is_empty() => Err("JSV rejected job".to_string()),
                    "REJECT_WAIT" if message.is_empty() => {
                        Err("JSV temporarily rejected job".to_string())
                    }
                    "REJECT" | "REJECT_WAIT" => Err(message.to_string()),
                    _ => Err(format!("JSV sent unknown result \"{rest}\"")),
                };
            }
            "ERROR" => return Err(rest.to_string()),
            _ => return Err(format!("JSV got unknown command \"{command}\"")),
        }
    }
}

/// `LOG INFO text`: (level, text).
fn log_text(rest: &str) -> (String, String) {
    let (level, text) = split(rest);
    (level.to_string(), text.to_string())
}

/// The first word and the rest of a line.
fn split(line: &str) -> (&str, &str) {
    match line.split_once(' ') {
        Some((a, b)) => (a, b.trim_start()),
        None => (line, ""),
    }
}

fn yes(b: bool) -> String {
    if b { "y" } else { "n" }.to_string()
}

fn pairs(list: &[(String, String)]) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A time as JSV parameters carry it: `CCYYMMDDhhmm.SS`, local time.
fn jsv_time(ts: i64) -> String {
    crate::dates::local_time(ts, "%Y%m%d%H%M.%S")
}

/// `pe_min`/`pe_max` of a slot range (`n`, `n-m`, `-m`, `n-`).
fn pe_bounds(range: &str) -> (String, String) {
    match range.split_once('-') {
        Some((a, b)) => (
            if a.is_empty() { "1" } else { a }.to_string(),
            if b.is_empty() { "9999999" } else { b }.to_string(),
        ),
        None => (range.to_string(), range.to_string()),
    }
}

/// The job as a JSV is shown it: the pseudo parameters first, then what the job sets.
pub fn parameters(spec: &JobSpec, who: &Submitter, context: Context) -> Vec<(String, String)> {
    let mut p: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| p.push((k.to_string(), v));
    put("VERSION", "1.0".into());
    match context {
        Context::Client => {
            put("CONTEXT", "client".into());
            put("CLIENT", "qsub".into());
        }
        Context::Master => {
            put("CONTEXT", "master".into());
            put("CLIENT", "qmaster".into());
        }
    }
    put("USER", who.user.clone());
    put("GROUP", who.group.clone());
    let (cmdname, binary) = match &spec.script {
        JobScript::Script { path, .. } => (path.clone(), false),
        JobScript::Binary { command } => (command.clone(), true),
        JobScript::Interactive { command, .. } => {
            (command.clone().unwrap_or_else(|| "NONE".into()), true)
        }
    };
    put("CMDNAME", cmdname);
    put("CMDARGS", spec.args.len().to_string());
    for (i, a) in spec.args.iter().enumerate() {
        put(&format!("CMDARG{i}"), a.clone());
    }
    if let Some(t) = spec.start_after {
        put("a", jsv_time(t));
    }
    if let Some(b) = spec
        .binding
        .as_deref()
        .and_then(|b| crate::binding::parse(b).ok())
    {
        for (k, v) in crate::binding::jsv_parameters(&b) {
            put(&k, v);
        }
    }
    if spec.account != "sge" {
        put("A", spec.account.clone());
    }
    if !spec.context.is_empty() {
        put("ac", pairs(&spec.context));
    }
    if let Some(ar) = spec.ar {
        put("ar", ar.to_string());
    }
    put("b", yes(binary));
    if let Some(cwd) = &spec.cwd {
        put("cwd", cwd.clone());
    }
    if let Some(t) = spec.deadline {
        put("dl", jsv_time(t));
    }
    if let Some(e) = &spec.stderr_path {
        put("e", e.clone());
    }
    if spec.hold {
        put("h", "u".into());
    }
    if !spec.hold_jids.is_empty() {
        put("hold_jid", spec.hold_jids.join(","));
    }
    if !spec.hold_jids_ad.is_empty() {
        put("hold_jid_ad", spec.hold_jids_ad.join(","));
    }
    if let Some(i) = &spec.stdin_path {
        put("i", i.clone());
    }
    put("j", yes(spec.merge_output));
    if spec.job_share != 0 {
        put("js", spec.job_share.to_string());
    }
    if !spec.hard_resources.is_empty() {
        put("l_hard", pairs(&spec.hard_resources));
    }
    if !spec.soft_resources.is_empty() {
        put("l_soft", pairs(&spec.soft_resources));
    }
    if !spec.mail_options.is_empty() {
        put("m", spec.mail_options.clone());
    }
    if !spec.mail_list.is_empty() {
        put("M", spec.mail_list.join(","));
    }
    put("N", spec.name.clone());
    put("notify", yes(spec.notify));
    if spec.immediate {
        put("now", "y".into());
    }
    if let Some(o) = &spec.stdout_path {
        put("o", o.clone());
    }
    if let Some(p) = &spec.project {
        put("P", p.clone());
    }
    put("p", spec.priority.to_string());
    if let Some((name, range)) = &spec.pe {
        let (min, max) = pe_bounds(range);
        put("pe_name", name.clone());
        put("pe_min", min);
        put("pe_max", max);
    }
    if !spec.masterq.is_empty() {
        put("masterq", spec.masterq.join(","));
    }
    if let Some(c) = &spec.ckpt {
        put("ckpt", c.clone());
    }
    match spec.ckpt_when.as_deref() {
        Some(w) if crate::ckpt::valid_when(w) => put("c_occasion", w.to_string()),
        Some(i) => put("c_interval", i.to_string()),
        None => {}
    }
    if !spec.queues.is_empty() {
        put("q_hard", spec.queues.join(","));
    }
    if !spec.soft_queues.is_empty() {
        put("q_soft", spec.soft_queues.join(","));
    }
    put("R", yes(spec.reserve));
    if let Some(r) = spec.restart {
        put("r", yes(r));
    }
    if let Some(s) = &spec.shell {
        put("S", s.clone());
    }
    if binary {
        put("shell", yes(spec.binary_shell));
    }
    if let Some(t) = spec.array {
        put("t_min", t.first.to_string());
        put("t_max", t.last.to_string());
        put("t_step", t.step.to_string());
    }
    if let Some(tc) = spec.max_running_tasks {
        put("tc", tc.to_string());
    }
    p
}

/// `-p`: -1023 to 1024.
fn parse_priority(v: &str) -> Option<i32> {
    v.parse::<i32>().ok().filter(|p| (-1023..=1024).contains(p))
}

/// The parameters a correction changed (added, changed or removed), by name: what
/// `jsv_allowed_mod` is checked against.
pub fn changed_parameters(
    before: &JobSpec,
    after: &JobSpec,
    who: &Submitter,
    context: Context,
) -> Vec<String> {
    let old = parameters(before, who, context);
    let new = parameters(after, who, context);
    let mut names: Vec<String> = Vec::new();
    for (k, v) in &new {
        if old.iter().find(|(ok, _)| ok == k).map(|(_, ov)| ov) != Some(v) {
            names.push(k.clone());
        }
    }
    for (k, _) in &old {
        if !new.iter().any(|(nk, _)| nk == k) {
            names.push(k.clone());
        }
    }
    if before.env != after.env {
        names.push("v".to_string());
    }
    // The binding's parameters are allowed (or not) together, as `binding`.
    let mut seen = std::collections::HashSet::new();
    names
        .into_iter()
        .map(|n| {
            if n.starts_with("binding_") {
                "binding".to_string()
            } else {
                n
            }
        })
        .filter(|n| seen.insert(n.clone()))
        .collect()
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn resource_pairs(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|item| match item.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (item.to_string(), "TRUE".to_string()),
        })
        .collect()
}

/// Apply one `PARAM name [value]` of a correction (no value: the parameter is removed).
pub fn set_parameter(spec: &mut JobSpec, name: &str, value: Option<&str>) -> Result<(), String> {
    let refused = || {
        format!(
            "JSV tries to set \"{name}\" to \"{}\"",
            value.unwrap_or_default()
        )
    };
    let flag = |v: Option<&str>| match v {
        Some("y") => Ok(true),
        Some("n") => Ok(false),
        None => Err(format!("JSV tries to delete boolean parameter \"{name}\"")),
        Some(_) => Err(refused()),
    };
    let number = |v: &str| v.parse::<u32>().map_err(|_| refused());
    let time = |v: &str| crate::dates::parse_date_time(v, jiff::Zoned::now()).ok_or_else(refused);
    match (name, value) {
        ("VERSION" | "CONTEXT" | "CLIENT" | "USER" | "GROUP" | "JOB_ID" | "CMDNAME" | "b", _) => {
            return Err(format!(
                "JSV tries to modify read-only parameter \"{name}\""
            ))
        }
        ("N", None) => return Err(format!("JSV tries to delete \"{name}\"")),
        ("N", Some(v)) => {
            if v.contains('/') {
                return Err(refused());
            }
            spec.name = v.to_string();
        }
        ("CMDARGS", Some(v)) => {
            let n = number(v)? as usize;
            spec.args.resize(n, String::new());
        }
        (arg, v) if arg.starts_with("CMDARG") => {
            let i: usize = arg["CMDARG".len()..].parse().map_err(|_| refused())?;
            if i >= spec.args.len() {
                spec.args.resize(i + 1, String::new());
            }
            spec.args[i] = v.unwrap_or_default().to_string();
        }
        ("a", v) => spec.start_after = v.map(time).transpose()?,
        ("dl", v) => spec.deadline = v.map(time).transpose()?,
        ("A", v) => spec.account = v.unwrap_or("sge").to_string(),
        ("ac", v) => {
            spec.context = v.map(resource_pairs).unwrap_or_default();
        }
        ("ar", v) => {
            spec.ar = v
                .map(|v| v.parse::<gantry_proto::ArId>().map_err(|_| refused()))
                .transpose()?
        }
        ("cwd", v) => spec.cwd = v.map(str::to_string),
        ("e", v) => spec.stderr_path = v.map(str::to_string),
        ("o", v) => spec.stdout_path = v.map(str::to_string),
        ("i", v) => spec.stdin_path = v.map(str::to_string),
        ("h", None | Some("n")) => spec.hold = false,
        ("h", Some("u")) => spec.hold = true,
        ("hold_jid", v) => spec.hold_jids = v.map(list).unwrap_or_default(),
        ("hold_jid_ad", v) => spec.hold_jids_ad = v.map(list).unwrap_or_default(),
        ("j", v) => spec.merge_output = flag(v)?,
        ("notify", v) => spec.notify = flag(v)?,
        ("R", v) => spec.reserve = flag(v)?,
        ("now", v) => spec.immediate = flag(v)?,
        ("shell", v) => spec.binary_shell = flag(v)?,
        ("r", None) => spec.restart = None,
        ("r", v) => spec.restart = Some(flag(v)?),
        ("js", v) => spec.job_share = v.map(number).transpose()?.unwrap_or(0),
        ("l_hard", v) => spec.hard_resources = v.map(resource_pairs).unwrap_or_default(),
        ("l_soft", v) => spec.soft_resources = v.map(resource_pairs).unwrap_or_default(),
        ("q_hard", v) => spec.queues = v.map(list).unwrap_or_default(),
        ("masterq", v) => spec.masterq = v.map(list).unwrap_or_default(),
        ("ckpt", v) => spec.ckpt = v.map(str::to_string),
        ("c_occasion", Some(v)) if crate::ckpt::valid_when(v) => {
            spec.ckpt_when = Some(v.to_string())
        }
        ("c_interval", Some(v)) if crate::value::parse_time(v).is_ok() => {
            spec.ckpt_when = Some(v.to_string())
        }
        ("c_occasion" | "c_interval", None) => spec.ckpt_when = None,
        ("q_soft", v) => spec.soft_queues = v.map(list).unwrap_or_default(),
        ("m", v) => {
            spec.mail_options = match v {
                Some(v) => crate::mail::parse_options(v).ok_or_else(refused)?,
                None => String::new(),
            }
        }
        ("M", v) => {
            spec.mail_list = match v {
                Some(v) => crate::mail::parse_list(v).ok_or_else(refused)?,
                None => Vec::new(),
            }
        }
        ("P", v) => spec.project = v.map(str::to_string),
        ("p", v) => {
            spec.priority = match v {
                Some(v) => parse_priority(v).ok_or_else(refused)?,
                None => 0,
            }
        }
        ("S", v) => spec.shell = v.map(str::to_string),
        ("pe_name", None) => spec.pe = None,
        ("pe_name", Some(v)) => {
            let range = spec.pe.take().map_or_else(|| "1".to_string(), |(_, r)| r);
            spec.pe = Some((v.to_string(), range));
        }
        ("pe_min" | "pe_max", Some(v)) => {
            let n = number(v)?;
            let Some((pe, range)) = spec.pe.take() else {
                return Err(refused());
            };
            let (min, max) = pe_bounds(&range);
            let (min, max) = if name == "pe_min" {
                (n.to_string(), max)
            } else {
                (min, n.to_string())
            };
            let range = if min == max {
                min
            } else {
                format!("{min}-{max}")
            };
            spec.pe = Some((pe, range));
        }
        ("t_min" | "t_max" | "t_step", Some(v)) => {
            let n = number(v)?;
            let mut t = spec.array.unwrap_or(TaskRange {
                first: 1,
                last: 1,
                step: 1,
            });
            match name {
                "t_min" => t.first = n,
                "t_max" => t.last = n,
                _ => t.step = n,
            }
            if t.first == 0 || t.step == 0 || t.first > t.last {
                return Err(refused());
            }
            spec.array = Some(t);
        }
        ("t_min" | "t_max" | "t_step", None) => spec.array = None,
        ("tc", v) => spec.max_running_tasks = v.map(number).transpose()?,
        (b, v) if b.starts_with("binding_") => {
            let current = spec
                .binding
                .as_deref()
                .and_then(|t| crate::binding::parse(t).ok());
            let changed =
                crate::binding::set_jsv_parameter(current, b, v).map_err(|_| refused())?;
            spec.binding = changed.map(|b| crate::binding::print(&b));
        }
        _ => return Err(refused()),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
