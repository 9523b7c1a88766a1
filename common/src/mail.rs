//! Mail about jobs, as SGE sends it: `qsub -m` options, `-M` lists, and the messages
//! the execd sends through the configured `mailer` (`mailer -s SUBJECT RECIPIENT`, the
//! body on its standard input, one call per recipient).

/// The `-m` letters in the order SGE prints them.
const LETTERS: [char; 5] = ['a', 'b', 'e', 'n', 's'];

/// `-m b|e|a|s|n` (any combination, `bea`): the letters in SGE's order, or `None` for a
/// list with any other character, or none at all.
pub fn parse_options(text: &str) -> Option<String> {
    if text.is_empty() || text.chars().any(|c| !LETTERS.contains(&c)) {
        return None;
    }
    Some(LETTERS.iter().filter(|l| text.contains(**l)).collect())
}

/// `-M user[@host],...`: the addresses, each once, or `None` for an empty address.
pub fn parse_list(text: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for item in text.split(',') {
        let (user, host) = match item.split_once('@') {
            Some((u, h)) => (u, Some(h)),
            None => (item, None),
        };
        // An address is never an option to the mailer.
        if user.is_empty()
            || user.starts_with('-')
            || host.is_some_and(|h| h.is_empty() || h.contains('@'))
            || item.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return None;
        }
        if !out.iter().any(|a| a == item) {
            out.push(item.to_string());
        }
    }
    Some(out)
}

/// Is mail wanted at this event (`a`, `b`, `e`, `s`)? Never with `n`.
pub fn wanted(options: &str, event: char) -> bool {
    !options.contains('n') && options.contains(event)
}

/// Are stored mail settings well-formed (as `-m` and `-M` make them)? The master checks
/// what a client sends: the execd hands them to the mailer.
pub fn check(options: &str, list: &[String]) -> Result<(), String> {
    if !options.is_empty() && parse_options(options).as_deref() != Some(options) {
        return Err(format!(
            "ERROR! Wrong mail options list format \"{options}\" specified to -m option"
        ));
    }
    if !list.is_empty() && parse_list(&list.join(",")).as_deref() != Some(list) {
        return Err(format!(
            "ERROR! Wrong mail list format \"{}\" specified to -M option",
            list.join(",")
        ));
    }
    check_count(list)
}

/// The most recipients a job's `-M` may name: each event starts the mailer once per
/// recipient (SGE has no bound; 2,000 recipients started 2,000 mailers per event).
pub const MAX_RECIPIENTS: usize = 64;

/// Refuse a `-M` list longer than [`MAX_RECIPIENTS`].
pub fn check_count(list: &[String]) -> Result<(), String> {
    if list.len() > MAX_RECIPIENTS {
        return Err(format!(
            "ERROR! -M names {} mail recipients, at most {MAX_RECIPIENTS} may be given",
            list.len()
        ));
    }
    Ok(())
}

/// Who gets the mail: the `-M` list, else the owner at the submit host (as SGE's qsub
/// sets it).
pub fn recipients(list: &[String], owner: &str, submit_host: &str) -> Vec<String> {
    if list.is_empty() {
        vec![format!("{owner}@{submit_host}")]
    } else {
        list.to_vec()
    }
}

/// One mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub subject: String,
    pub body: String,
}

/// The task a mail is about.
#[derive(Debug, Clone, Copy)]
pub struct About<'a> {
    pub job_id: gantry_proto::JobId,
    /// The task of an array job (`None` for a job without `-t`).
    pub array_task: Option<gantry_proto::TaskId>,
    pub name: &'a str,
    pub owner: &'a str,
    pub queue: &'a str,
    pub host: &'a str,
}

impl About<'_> {
    /// `Job 12 (name) WHAT`, or `Job-array task 12.3 (name) WHAT`.
    fn subject(&self, what: &str) -> String {
        match self.array_task {
            Some(t) => format!("Job-array task {}.{t} ({}) {what}", self.job_id, self.name),
            None => format!("Job {} ({}) {what}", self.job_id, self.name),
        }
    }
}

/// How a task ended, for the end and abort mails; times as SGE prints them
/// (`MM/DD/YYYY hh:mm:ss`, durations `hh:mm:ss`, `NA` for what is not known).
#[derive(Debug, Clone)]
pub struct Ending {
    pub start: String,
    pub end: String,
    pub user_time: String,
    pub system_time: String,
    pub wallclock: String,
    pub cpu: String,
    pub max_vmem: String,
    pub exit_status: i32,
    /// The signal's name without `SIG` (`KILL`), or SGE's `unknown signal`.
    pub signal: String,
}

/// `-m b`: the job started.
pub fn started(about: &About, start: &str) -> Mail {
    let subject = about.subject("Started");
    let body = format!(
        "{subject}\n User       = {}\n Queue      = {}\n Host       = {}\n Start Time = {start}",
        about.owner, about.queue, about.host
    );
    Mail { subject, body }
}

/// `-m e`: the job ended (its command ran; any exit status).
pub fn completed(about: &About, e: &Ending) -> Mail {
    let subject = about.subject("Complete");
    let body = format!(
        "{subject}\n User             = {}\n Queue            = {}\n Host             = {}\n Start Time       = {}\n End Time         = {}\n User Time        = {}\n System Time      = {}\n Wallclock Time   = {}\n CPU              = {}\n Max vmem         = {}\n Exit Status      = {}",
        about.owner,
        about.queue,
        about.host,
        e.start,
        e.end,
        e.user_time,
        e.system_time,
        e.wallclock,
        e.cpu,
        e.max_vmem,
        e.exit_status
    );
    Mail { subject, body }
}

/// `-m a` (or `e`): the job could not run; `state` is what the shepherd was doing
/// (`assumedly before job`), `reason` why. A job left in error state (`Eqw`) says so,
/// and how to clear it, as SGE's mail does.
pub fn aborted(about: &About, e: &Ending, error_state: bool, state: &str, reason: &str) -> Mail {
    let (action, comment) = if error_state {
        (
            "Set in error state",
            "\nUse \"qmod -c <jobid>\" to clear job error state\nonce the problem is fixed.",
        )
    } else {
        ("Aborted", "")
    };
    let subject = about.subject(action);
    let body = format!(
        "{subject}\n Exit Status      = {}\n Signal           = {}\n User             = {}\n Queue            = {}\n Host             = {}\n Start Time       = {}\n End Time         = {}\n CPU              = {}\n Max vmem         = {}\nfailed {state} because:\n{reason}{comment}",
        e.exit_status,
        e.signal,
        about.owner,
        about.queue,
        about.host,
        e.start,
        e.end,
        e.cpu,
        e.max_vmem
    );
    Mail { subject, body }
}

/// `-m s`: the job was suspended (`suspended`) or continued.
pub fn suspension(about: &About, suspended: bool, submitted: &str, start: &str) -> Mail {
    let subject = about.subject(if suspended { "Suspended" } else { "Continued" });
    let body = format!(
        "{subject}\n Master queue    = {}\n Owner           = {}\n Submission time = {submitted}\n Start time      = {start}",
        about.queue, about.owner
    );
    Mail { subject, body }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::{JobId, TaskId};

    #[test]
    fn options_parse_to_sge_order() {
        let table: &[(&str, Option<&str>)] = &[
            ("b", Some("b")),
            ("eb", Some("be")),
            ("sbea", Some("abes")),
            ("n", Some("n")),
            ("bb", Some("b")),
            ("", None),
            ("x", None),
            ("b,e", None),
        ];
        for (text, want) in table {
            assert_eq!(parse_options(text).as_deref(), *want, "{text}");
        }
        assert!(wanted("be", 'b') && !wanted("be", 'a') && !wanted("bn", 'b'));
    }

    #[test]
    fn lists_parse_and_default_to_the_owner() {
        assert_eq!(
            parse_list("a@x.org,b,a@x.org"),
            Some(vec!["a@x.org".to_string(), "b".to_string()])
        );
        for bad in ["", "a,,b", "@x", "a@", "a@b@c", "a b", "-oQ/tmp"] {
            assert_eq!(parse_list(bad), None, "{bad}");
        }
        assert_eq!(recipients(&[], "alice", "head"), ["alice@head"]);
    }

    #[test]
    fn a_list_of_recipients_is_bounded() {
        let list = |n: usize| (0..n).map(|i| format!("u{i}@x.org")).collect::<Vec<_>>();
        assert_eq!(check("be", &list(MAX_RECIPIENTS)), Ok(()));
        assert_eq!(
            check("be", &list(2000)),
            Err("ERROR! -M names 2000 mail recipients, at most 64 may be given".to_string())
        );
    }

    #[test]
    fn messages_read_as_sge_writes_them() {
        let about = About {
            job_id: JobId(7),
            array_task: None,
            name: "sim",
            owner: "alice",
            queue: "all.q",
            host: "node1",
        };
        let m = started(&about, "11/25/2026 17:00:00");
        assert_eq!(m.subject, "Job 7 (sim) Started");
        assert_eq!(
            m.body,
            "Job 7 (sim) Started\n User       = alice\n Queue      = all.q\n Host       = node1\n Start Time = 11/25/2026 17:00:00"
        );
        let task = About {
            array_task: Some(TaskId(3)),
            ..about
        };
        assert_eq!(
            started(&task, "x").subject,
            "Job-array task 7.3 (sim) Started"
        );
        let e = Ending {
            start: "s".into(),
            end: "e".into(),
            user_time: "00:00:01".into(),
            system_time: "00:00:00".into(),
            wallclock: "00:00:02".into(),
            cpu: "00:00:01".into(),
            max_vmem: "NA".into(),
            exit_status: 3,
            signal: "unknown signal".into(),
        };
        let m = completed(&about, &e);
        assert_eq!(m.subject, "Job 7 (sim) Complete");
        assert!(m
            .body
            .ends_with("\n Max vmem         = NA\n Exit Status      = 3"));
        let m = aborted(&about, &e, false, "assumedly before job", "no TMPDIR");
        assert_eq!(m.subject, "Job 7 (sim) Aborted");
        assert!(m
            .body
            .ends_with("failed assumedly before job because:\nno TMPDIR"));
        let m = aborted(
            &about,
            &e,
            true,
            "changing into working directory",
            "no such directory",
        );
        assert_eq!(m.subject, "Job 7 (sim) Set in error state");
        assert!(m.body.ends_with(
            "failed changing into working directory because:\nno such directory\nUse \"qmod -c <jobid>\" to clear job error state\nonce the problem is fixed."
        ));
        assert_eq!(
            suspension(&about, true, "a", "b").subject,
            "Job 7 (sim) Suspended"
        );
    }
}

/// What an advance reservation's mail tells (`qrsub -m b|e|a`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArEvent {
    /// `b`: its window opened.
    Started,
    /// `e`: its window closed.
    Finished,
    /// `e`: it was deleted.
    Deleted,
    /// `a`: it went into error.
    Error,
    /// `a`: it came out of error.
    ErrorResolved,
}

impl ArEvent {
    /// The `-m` letter that asks for it.
    pub fn letter(self) -> char {
        match self {
            ArEvent::Started => 'b',
            ArEvent::Finished | ArEvent::Deleted => 'e',
            ArEvent::Error | ArEvent::ErrorResolved => 'a',
        }
    }
}

/// An advance reservation's mail as SGE's qmaster writes it (`msg_qmaster.h`):
/// `Advance Reservation 7 (myar) Started`, the owner and the time; `none` for a
/// reservation without a name.
pub fn reservation(
    id: gantry_proto::ArId,
    name: Option<&str>,
    owner: &str,
    event: ArEvent,
    time: &str,
) -> Mail {
    let (what, label) = match event {
        ArEvent::Started => ("Started", "Start Time"),
        ArEvent::Finished => ("Finished", "End Time"),
        ArEvent::Deleted => ("Deleted", "Delete Time"),
        ArEvent::Error => ("Error", "Error Time"),
        ArEvent::ErrorResolved => ("Error resolved", "Error resolved Time"),
    };
    let subject = format!(
        "Advance Reservation {id} ({}) {what}",
        name.unwrap_or("none")
    );
    let body = format!("{subject}\n User       = {owner}\n {label} = {time}");
    Mail { subject, body }
}
