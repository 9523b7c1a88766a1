//! `qstat`'s job lines: written column by column into a listing, as its rows are
//! decoded.

use gantry_proto::JobViewRef;

use crate::dates::local_time;

/// SGE's normalized priority column for a POSIX priority in -1023..1024.
pub(super) fn prior(p: i32) -> String {
    format!("{:.5}", (f64::from(p) + 1024.0) / 2048.0)
}

#[cfg(test)]
pub(super) fn job_line(j: &JobViewRef, with_queue: bool) -> String {
    let mut out = String::new();
    Rows::default().push(&mut out, j, with_queue);
    out
}

/// Job lines written one after another into a listing: the priority and the time
/// column of the line before are kept, as listings of jobs submitted in bulk repeat
/// them row after row (formatting them was a third of a long `qstat`'s time).
#[derive(Default)]
pub(super) struct Rows {
    prior: Option<(i32, String)>,
    when: Option<(i64, String)>,
}

impl Rows {
    /// Append one job line to `out`: the columns of
    /// `"{:>7} {prior} {:<10.10} {:<12.12} {:<5} {when}[ {:<30}] {:>5} {tasks}"`, written
    /// field by field (the formatting machinery's padding was most of a long listing's
    /// time).
    pub(super) fn push(&mut self, out: &mut String, j: &JobViewRef, with_queue: bool) {
        let p = j.priority;
        if self.prior.as_ref().is_none_or(|(q, _)| *q != p) {
            self.prior = Some((p, prior(p)));
        }
        let t = j.start_time.unwrap_or(j.submit_time);
        if self.when.as_ref().is_none_or(|(u, _)| *u != t) {
            self.when = Some((t, local_time(t, "%m/%d/%Y %H:%M:%S")));
        }
        let (Some((_, prior)), Some((_, when))) = (&self.prior, &self.when) else {
            return;
        };
        let tasks = if j.tasks.is_empty() {
            "       "
        } else {
            j.tasks
        };
        let mut digits = [0u8; 20];
        pad_left(out, decimal(j.job_id, &mut digits), 7);
        out.push(' ');
        out.push_str(prior);
        out.push(' ');
        pad_right(out, j.name, 10, true);
        out.push(' ');
        pad_right(out, j.owner, 12, true);
        out.push(' ');
        pad_right(out, j.state_letters(), 5, false);
        out.push(' ');
        out.push_str(when);
        if with_queue {
            out.push(' ');
            pad_right(out, j.queue.unwrap_or(""), 30, false);
        }
        out.push(' ');
        pad_left(out, decimal(u64::from(j.slots), &mut digits), 5);
        out.push(' ');
        out.push_str(tasks);
        out.push('\n');
    }
}

/// `n` in decimal, written at the end of `buf`.
pub(super) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[at..]).unwrap_or("")
}

/// `s` right-aligned in `width` columns (`{:>width}`): never cut.
pub(super) fn pad_left(out: &mut String, s: &str, width: usize) {
    spaces(out, width.saturating_sub(columns(s)));
    out.push_str(s);
}

/// `s` left-aligned in `width` columns (`{:<width}`), cut at `width` characters when
/// `cut` (`{:<width.width}`).
pub(super) fn pad_right(out: &mut String, s: &str, width: usize, cut: bool) {
    let (shown, chars) = match s.is_ascii() {
        true if cut && s.len() > width => (&s[..width], width),
        true => (s, s.len()),
        false => match s.char_indices().nth(width) {
            Some((end, _)) if cut => (&s[..end], width),
            _ => (s, s.chars().count()),
        },
    };
    out.push_str(shown);
    spaces(out, width.saturating_sub(chars));
}

/// How many characters `s` has (as `format!` counts them for padding).
pub(super) fn columns(s: &str) -> usize {
    match s.is_ascii() {
        true => s.len(),
        false => s.chars().count(),
    }
}

/// Append `n` spaces.
pub(super) fn spaces(out: &mut String, n: usize) {
    const SPACES: &str = "                                ";
    let mut left = n;
    while left > 0 {
        let now = left.min(SPACES.len());
        out.push_str(&SPACES[..now]);
        left -= now;
    }
}

/// The default listing of `rows` (those `shown`) written to `w` as they come, in
/// pieces of about 64 KiB: nothing when none is shown. A row that cannot be decoded
/// ends it with the error (what was written before stays). Errors writing are
/// ignored, as for every command's output (see [`crate::Output::print`]).
pub fn write_qstat<'a>(
    rows: impl Iterator<Item = Result<JobViewRef<'a>, gantry_proto::ProtoError>>,
    shown: impl Fn(&JobViewRef) -> bool,
    w: &mut impl std::io::Write,
) -> Result<(), gantry_proto::ProtoError> {
    const PIECE: usize = 64 * 1024;
    let mut out = String::with_capacity(PIECE + 1024);
    let mut lines = Rows::default();
    let mut any = false;
    let mut ended = Ok(());
    for row in rows {
        let j = match row {
            Ok(j) => j,
            Err(e) => {
                ended = Err(e);
                break;
            }
        };
        if !shown(&j) {
            continue;
        }
        if !any {
            any = true;
            out.push_str("job-ID  prior   name       user         state submit/start at     queue                          slots ja-task-ID \n");
            out.push_str(&"-".repeat(113));
            out.push('\n');
        }
        lines.push(&mut out, &j, true);
        if out.len() >= PIECE {
            let _ = w.write_all(out.as_bytes());
            out.clear();
        }
    }
    let _ = w.write_all(out.as_bytes());
    let _ = w.flush();
    ended
}
