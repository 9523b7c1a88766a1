//! Where a task's files are and how the shepherd makes them: the job's output paths,
//! its TMPDIR, and the owner's identity the shepherd takes to open the job's files.

use super::*;

/// Expand `$JOB_ID $TASK_ID $JOB_NAME $USER $HOME $HOSTNAME` in an output path.
pub fn expand_path(path: &str, start: &JobStart, home: &str) -> String {
    let task = if start.spec.array.is_some() {
        start.task_id.to_string()
    } else {
        "undefined".to_string()
    };
    let mut out = path.to_string();
    for (var, val) in [
        ("$JOB_ID", start.job_id.to_string()),
        ("$TASK_ID", task),
        ("$JOB_NAME", start.spec.name.clone()),
        ("$USER", start.owner.user.clone()),
        ("$HOME", home.to_string()),
        ("$HOSTNAME", start.host.clone()),
    ] {
        out = out.replace(var, &val);
    }
    out
}

/// Where a stream goes: `-o`/`-e` (a directory gets SGE's default name inside it), else
/// `<cwd>/<name>.o<id>[.<task>]`.
pub fn output_path(start: &JobStart, cwd: &Path, home: &str, letter: char) -> PathBuf {
    let default_name = match start.spec.array {
        Some(_) => format!(
            "{}.{letter}{}.{}",
            start.spec.name, start.job_id, start.task_id
        ),
        None => format!("{}.{letter}{}", start.spec.name, start.job_id),
    };
    let given = if letter == 'o' {
        &start.spec.stdout_path
    } else {
        &start.spec.stderr_path
    };
    match for_this_host(given, &start.host) {
        Some(p) => {
            let p = PathBuf::from(expand_path(p, start, home));
            let p = if p.is_absolute() { p } else { cwd.join(p) };
            if p.is_dir() {
                p.join(default_name)
            } else {
                p
            }
        }
        None => cwd.join(default_name),
    }
}

/// The job owner's identity as this process's effective one (the real and saved ones
/// stay root's); root's comes back when it is dropped, without supplementary groups (the
/// shepherd needs none, and asking for the old list would import `getgroups`, which
/// `deploy/build.sh` cannot tell from the name service's `getgr*`). Nothing changes
/// when the shepherd runs as the owner already (a personal cluster).
pub(super) struct ActingAsOwner;

impl ActingAsOwner {
    pub(super) fn enter(uid: u32, gid: u32, groups: &[u32]) -> nix::Result<Option<ActingAsOwner>> {
        if nix::unistd::geteuid().as_raw() == uid {
            return Ok(None);
        }
        let keep_u = Uid::from_raw(u32::MAX);
        let keep_g = Gid::from_raw(u32::MAX);
        let groups: Vec<Gid> = groups.iter().map(|g| Gid::from_raw(*g)).collect();
        nix::unistd::setgroups(&groups)?;
        let back = ActingAsOwner;
        nix::unistd::setresgid(keep_g, Gid::from_raw(gid), keep_g)?;
        nix::unistd::setresuid(keep_u, Uid::from_raw(uid), keep_u)?;
        Ok(Some(back))
    }
}

impl Drop for ActingAsOwner {
    fn drop(&mut self) {
        let keep_u = Uid::from_raw(u32::MAX);
        let keep_g = Gid::from_raw(u32::MAX);
        let _ = nix::unistd::setresuid(keep_u, nix::unistd::getuid(), keep_u);
        let _ = nix::unistd::setresgid(keep_g, nix::unistd::getgid(), keep_g);
        let _ = nix::unistd::setgroups(&[]);
    }
}

/// The task's TMPDIR: `<tmpdir>/gantry.<host>/<job>.<task>.<queue>`, created by root and
/// handed to the owner (see [`private_fs`]), with `$PE_HOSTFILE` written inside first.
pub(super) fn create_tmpdir(
    start: &JobStart,
    binding: Option<&crate::binding::TaskBinding>,
    notes: &mut TaskNotes,
) -> Result<PathBuf, Failure> {
    let parent = Path::new(setting(start, "tmpdir").unwrap_or("/tmp"));
    let base = private_fs::tmpdir_base(parent, &start.host, |planted| {
        notes.add(
            "note",
            format!(
                "{} is not the execd's own directory (a file, a link or another user's): passed over",
                planted.display()
            ),
        );
    })
    .map_err(|e| fail(ShepherdFailure::BeforeJob, format!("cannot create TMPDIR in {}: {}", parent.display(), strerror(&e))))?;
    let name = format!(
        "{}.{}.{}",
        start.job_id,
        start.task_id,
        start.queue.split('@').next().unwrap_or("queue")
    );
    let dir =
        private_fs::create_task_tmpdir(&base, &name, start.owner.uid, start.owner.gid, |dir| {
            match start.pe {
                Some(_) => dir
                    .create_file(PE_HOSTFILE, 0o644)?
                    .write_all(pe_hostfile(start, binding).as_bytes()),
                None => Ok(()),
            }
        })
        .map_err(|e| {
            fail(
                ShepherdFailure::BeforeJob,
                format!(
                    "cannot create TMPDIR {}: {e}",
                    base.path().join(&name).display()
                ),
            )
        })?;
    Ok(dir.path().to_path_buf())
}

/// The path of a `-o/-e/-i/-S` path list (`[host:]path,...`) meant for the host the job
/// runs on: its own (by name, any case, or by its short name), else the one for every
/// host; none if the list names only others.
pub fn for_this_host<'a>(list: &'a Option<String>, host: &str) -> Option<&'a str> {
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_ascii_lowercase();
    list.as_deref().and_then(|l| {
        gantry_common::path_list::for_host(l, |h| {
            h.eq_ignore_ascii_case(host) || short(h) == short(host)
        })
    })
}
