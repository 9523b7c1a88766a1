//! What a job starts with: its environment (SGE's variables and the ones it was
//! submitted with), `$PE_HOSTFILE`, its CPU binding.

use super::*;

/// A job's `PATH` after its TMPDIR when it was given none, as SGE's shepherd sets it.
pub(super) const DEFAULT_PATH: &str = "/usr/local/bin:/bin:/usr/bin";

#[allow(clippy::too_many_arguments)]
pub(super) fn job_environment(
    start: &JobStart,
    user: &Account,
    home: &str,
    tmpdir: &Path,
    shell: &str,
    cwd: &Path,
    out_path: &Path,
    err_path: &Path,
) -> Vec<(String, String)> {
    let spec = &start.spec;
    let mut env: Vec<(String, String)> = spec.env.clone();
    let (task, first, last, step) = match spec.array {
        Some(r) => (
            start.task_id.to_string(),
            r.first.to_string(),
            r.last.to_string(),
            r.step.to_string(),
        ),
        None => (
            "undefined".to_string(),
            "undefined".to_string(),
            "undefined".to_string(),
            "undefined".to_string(),
        ),
    };
    let tmp = tmpdir.to_string_lossy().into_owned();
    let mut hosts: Vec<&str> = start.granted.iter().map(|g| g.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let mut set = vec![
        ("HOME", home.to_string()),
        ("USER", user.name.clone()),
        ("LOGNAME", user.name.clone()),
        ("SHELL", shell.to_string()),
        // The task's TMPDIR first, then the PATH the job was given (`-v PATH`, `-V`),
        // else SGE's.
        (
            "PATH",
            format!(
                "{tmp}:{}",
                spec.env
                    .iter()
                    .rev()
                    .find(|(k, _)| k == "PATH")
                    .map_or(DEFAULT_PATH, |(_, v)| v.as_str())
            ),
        ),
        ("JOB_ID", start.job_id.to_string()),
        ("JOB_NAME", spec.name.clone()),
        ("REQUEST", spec.name.clone()),
        (
            "JOB_SCRIPT",
            match &spec.script {
                // SGE's qrsh jobs have no script of their own.
                JobScript::Interactive { .. } => "QRSH".to_string(),
                other => other.script_file().to_string(),
            },
        ),
        ("SGE_TASK_ID", task),
        ("SGE_TASK_FIRST", first),
        ("SGE_TASK_LAST", last),
        ("SGE_TASK_STEPSIZE", step),
        ("NSLOTS", start.slots.to_string()),
        ("NHOSTS", hosts.len().max(1).to_string()),
        ("NQUEUES", start.granted.len().max(1).to_string()),
        (
            "QUEUE",
            start.queue.split('@').next().unwrap_or("").to_string(),
        ),
        ("HOSTNAME", start.host.clone()),
        ("TMPDIR", tmp.clone()),
        ("TMP", tmp),
        // SGE's word for every job its shepherd starts, qrsh's included.
        ("ENVIRONMENT", "BATCH".to_string()),
        // SGE's: 1 when the task runs again (its host failed under it, or it migrated),
        // 2 when it restarts from a checkpoint.
        ("RESTARTED", start.restarted.to_string()),
        ("SGE_CWD_PATH", cwd.to_string_lossy().into_owned()),
        ("SGE_STDOUT_PATH", out_path.to_string_lossy().into_owned()),
        ("SGE_STDERR_PATH", err_path.to_string_lossy().into_owned()),
        ("SGE_ACCOUNT", spec.account.clone()),
    ];
    // SGE's variables for a checkpointing job (`-ckpt`).
    if let Some(c) = &start.checkpoint {
        set.push(("SGE_CKPT_ENV", c.env.name.clone()));
        set.push(("SGE_CKPT_DIR", c.env.ckpt_dir.clone()));
    }
    if let Some(pe) = &start.pe {
        set.push(("PE", pe.clone()));
        set.push((
            "PE_HOSTFILE",
            tmpdir.join(PE_HOSTFILE).to_string_lossy().into_owned(),
        ));
    }
    for (k, v) in set {
        env.retain(|(ek, _)| ek != k);
        env.push((k.to_string(), v));
    }
    env
}

/// A login session's environment, as SGE's shepherd gives a qlogin: the shell, home,
/// user and the terminal type the command sent, a plain `PATH`, and the time zone if
/// the command sent one.
pub(super) fn login_environment(
    start: &JobStart,
    user: &Account,
    home: &str,
    shell: &str,
) -> Vec<(String, String)> {
    let sent = |name: &str| {
        start
            .spec
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut env = vec![
        ("SHELL".to_string(), shell.to_string()),
        ("HOME".to_string(), home.to_string()),
        ("LOGNAME".to_string(), user.name.clone()),
        ("USER".to_string(), user.name.clone()),
        ("PATH".to_string(), "/bin:/usr/bin".to_string()),
    ];
    for name in ["TERM", "TZ"] {
        if let Some(v) = sent(name) {
            env.push((name.to_string(), v));
        }
    }
    env
}

/// A job's shell that the global configuration's `login_shells` names starts as a login
/// shell, as SGE's shepherd starts it (`-sh`: the profile sets its PATH): its `argv[0]`.
pub(super) fn login_name(shell: &str, login_shells: Option<&str>) -> Option<String> {
    let name = std::path::Path::new(shell)
        .file_name()
        .map_or_else(|| shell.to_string(), |n| n.to_string_lossy().into_owned());
    login_shells
        .is_some_and(|list| {
            list.split(',')
                .map(str::trim)
                .any(|s| s == name && !s.eq_ignore_ascii_case("none"))
        })
        .then(|| format!("-{name}"))
}

/// The name of the PE host file in the task's TMPDIR.
pub(super) const PE_HOSTFILE: &str = "pe_hostfile";

/// `host slots queue@host UNDEFINED`, one line per granted queue instance, the master
/// queue first.
/// SGE's `pe_hostfile`: host, slots, queue instance, and the cores of a `-binding pe`
/// on this host (`0,0:0,1`; `UNDEFINED` elsewhere and without one).
pub(super) fn pe_hostfile(
    start: &JobStart,
    binding: Option<&crate::binding::TaskBinding>,
) -> String {
    start
        .granted
        .iter()
        .map(|g| {
            let cores = match binding {
                Some(b)
                    if b.kind == gantry_common::binding::BindingType::Pe
                        && g.host == start.host =>
                {
                    b.cores_text()
                }
                _ => "UNDEFINED".to_string(),
            };
            format!("{} {} {}@{} {cores}\n", g.host, g.slots, g.queue, g.host)
        })
        .collect()
}

/// Restrict this process (and so the job it starts) to these processors.
pub(super) fn bind_to(cpus: &[u32]) -> nix::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        set.set(c as usize)?;
    }
    nix::sched::sched_setaffinity(Pid::from_raw(0), &set)
}
