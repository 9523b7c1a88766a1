//! The columns of `qstat`'s job lines (SGE's default listing and the job lines of
//! `-f` and `-r`), written field by field: the master writes those of the default
//! listing for a client (see `gantry_proto::JobLine`), the client those it makes from
//! rows itself. A line is its head (the columns before the time), the time, and its
//! tail (the columns after it): the time is the client's to write, in its own zone.

/// The head: `"{:>7} {prior} {:<10.10} {:<12.12} {:<5} "` of the job id, the
/// normalized priority (see [`prior`]), the name, the owner and the state's letters.
pub fn push_head(
    out: &mut String,
    job_id: gantry_proto::JobId,
    prior: &str,
    name: &str,
    owner: &str,
    state: &str,
) {
    let mut digits = [0u8; 20];
    pad_left(out, decimal(job_id.get(), &mut digits), 7);
    out.push(' ');
    out.push_str(prior);
    out.push(' ');
    pad_right(out, name, 10, true);
    out.push(' ');
    pad_right(out, owner, 12, true);
    out.push(' ');
    pad_right(out, state, 5, false);
    out.push(' ');
}

/// The tail: `"[ {:<30}] {:>5} {tasks}\n"`, the queue column (the queue instance, in
/// `parts` written one after another: `["all.q", "@", "node1"]`) only where the
/// listing has one (`Some`), the task ids (seven spaces when there are none).
pub fn push_tail(out: &mut String, queue: Option<&[&str]>, slots: u32, tasks: &str) {
    if let Some(parts) = queue {
        out.push(' ');
        let mut width = 0;
        for part in parts {
            out.push_str(part);
            width += columns(part);
        }
        spaces(out, 30usize.saturating_sub(width));
    }
    out.push(' ');
    let mut digits = [0u8; 20];
    pad_left(out, decimal(u64::from(slots), &mut digits), 5);
    out.push(' ');
    out.push_str(if tasks.is_empty() { "       " } else { tasks });
    out.push('\n');
}

/// The priority column of one line after another, that of the line before kept (jobs
/// submitted together share it, and formatting it is dear).
#[derive(Debug, Default, Clone)]
pub struct PriorColumn(Option<(i64, String)>);

impl PriorColumn {
    /// The column of a priority in hundred-thousandths.
    pub fn of(&mut self, p: i64) -> &str {
        if self.0.as_ref().is_none_or(|(q, _)| *q != p) {
            self.0 = Some((p, prior(p)));
        }
        self.0.as_ref().map_or("", |(_, text)| text)
    }
}

/// SGE's `prior` column of a priority given in hundred-thousandths (`%7.5f`).
pub fn prior(p: i64) -> String {
    let sign = if p < 0 { "-" } else { "" };
    let a = p.unsigned_abs();
    format!("{sign}{}.{:05}", a / 100_000, a % 100_000)
}

/// `n` in decimal, written at the end of `buf`.
pub fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &str {
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
pub fn pad_left(out: &mut String, s: &str, width: usize) {
    spaces(out, width.saturating_sub(columns(s)));
    out.push_str(s);
}

/// `s` left-aligned in `width` columns (`{:<width}`), cut at `width` characters when
/// `cut` (`{:<width.width}`).
pub fn pad_right(out: &mut String, s: &str, width: usize, cut: bool) {
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
pub fn columns(s: &str) -> usize {
    match s.is_ascii() {
        true => s.len(),
        false => s.chars().count(),
    }
}

/// Append `n` spaces.
pub fn spaces(out: &mut String, n: usize) {
    const SPACES: &str = "                                ";
    let mut left = n;
    while left > 0 {
        let now = left.min(SPACES.len());
        out.push_str(&SPACES[..now]);
        left -= now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Head and tail are the format's columns, whatever the names' characters and
        /// lengths, the numbers' sizes and the queue's parts.
        #[test]
        fn head_and_tail_are_the_formats_columns(
            job_id in any::<u64>(),
            priority in -10_000i64..1_000_000,
            name in ".{0,14}",
            owner in "[a-zé]{0,15}",
            state in "[a-zA-Z]{1,4}",
            queue in proptest::option::of(("[a-z.]{0,20}", "[a-zü0-9]{0,20}")),
            slots in any::<u32>(),
            tasks in "[0-9:,-]{0,12}",
        ) {
            let prior = prior(priority);
            let mut head = String::new();
            push_head(&mut head, gantry_proto::JobId(job_id), &prior, &name, &owner, &state);
            prop_assert_eq!(head, format!("{job_id:>7} {prior} {name:<10.10} {owner:<12.12} {state:<5} "));
            let mut tail = String::new();
            let shown = if tasks.is_empty() { "       " } else { tasks.as_str() };
            match &queue {
                Some((q, h)) => {
                    push_tail(&mut tail, Some(&[q, "@", h]), slots, &tasks);
                    prop_assert_eq!(tail, format!(" {:<30} {slots:>5} {shown}\n", format!("{q}@{h}")));
                }
                None => {
                    push_tail(&mut tail, None, slots, &tasks);
                    prop_assert_eq!(tail, format!(" {slots:>5} {shown}\n"));
                }
            }
        }
    }

    #[test]
    fn prior_has_five_decimals() {
        for (p, want) in [
            (0, "0.00000"),
            (50_000, "0.50000"),
            (49, "0.00049"),
            (155_500, "1.55500"),
            (-25_586, "-0.25586"),
        ] {
            assert_eq!(prior(p), want);
        }
    }
}
