//! Transcripts recorded from a real SGE 8.1.9 (`tests/fixtures/sge/`), read into their
//! steps for the tests that replay them.

#![allow(clippy::unwrap_used)]

pub struct Step {
    pub user: String,
    pub command: String,
    pub stdout: String,
    pub stderr: String,
    pub exit: i32,
}

/// The transcript's steps: `=== [user] $ cmd`, `--- stdout`, `--- stderr`, `--- exit N`.
pub fn steps(text: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("=== [") else {
            continue;
        };
        let (user, command) = rest.split_once("] $ ").unwrap();
        let mut section = "";
        let (mut stdout, mut stderr, mut exit) = (String::new(), String::new(), 0);
        while let Some(l) = lines.peek() {
            if l.starts_with("=== [") {
                break;
            }
            let l = lines.next().unwrap();
            match l {
                "--- stdout" => section = "out",
                "--- stderr" => section = "err",
                _ if l.starts_with("--- exit ") => {
                    exit = l["--- exit ".len()..].parse().unwrap();
                    section = "";
                }
                _ if section == "out" => stdout.push_str(&format!("{l}\n")),
                _ if section == "err" => stderr.push_str(&format!("{l}\n")),
                _ => {}
            }
        }
        out.push(Step {
            user: user.to_string(),
            command: command.to_string(),
            stdout,
            stderr,
            exit,
        });
    }
    out
}

/// The step of `text` whose command is `command`.
pub fn step<'a>(all: &'a [Step], command: &str) -> &'a Step {
    all.iter()
        .find(|s| s.command == command)
        .unwrap_or_else(|| panic!("no step `{command}` in the transcript"))
}
