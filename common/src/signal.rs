//! Linux's signal names and numbers (the numbering of x86-64 and AArch64), for what
//! users write (`signal` of a checkpointing environment) and what Gantry prints (`qsub
//! -sync y`'s "exit with signal").

const NAMES: [&str; 31] = [
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

/// The name of signal `number` (`SIGUSR1`).
pub fn name(number: i32) -> Option<&'static str> {
    usize::try_from(number)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| NAMES.get(i).copied())
}

/// The number of a signal named as SGE takes it: `USR1`, `SIGUSR1` (any case), or its
/// number.
pub fn number(text: &str) -> Option<i32> {
    let text = text.trim();
    if let Ok(n) = text.parse::<i32>() {
        return name(n).map(|_| n);
    }
    let upper = text.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    NAMES
        .iter()
        .position(|n| &n[3..] == bare)
        .map(|i| i as i32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_agree() {
        for n in 1..=31 {
            let full = name(n).unwrap();
            assert_eq!(number(full), Some(n));
            assert_eq!(number(&full[3..].to_lowercase()), Some(n));
            assert_eq!(number(&n.to_string()), Some(n));
        }
        for bad in ["0", "32", "-9", "", "SIG", "FOO", "USR 1"] {
            assert_eq!(number(bad), None, "{bad}");
        }
        assert_eq!(name(0), None);
        assert_eq!(name(32), None);
    }
}
