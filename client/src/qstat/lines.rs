//! `qstat`'s job lines: the default listing's as the master wrote them, read off the
//! socket and written out as they come; those of the other forms (`-r`, `-f`, `-s z`)
//! written column by column from rows as they are decoded.

use gantry_proto::{JobLineRef, JobViewRef};

use crate::dates::{local_zone, time_in};
pub(super) use gantry_common::joblines::prior;
use gantry_common::joblines::{push_head, push_tail, PriorColumn};

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
    prior: PriorColumn,
    when: When,
}

/// The time column (`submit/start at`) in the local zone (taken once), that of the
/// line before kept.
struct When {
    zone: jiff::tz::TimeZone,
    last: Option<(i64, String)>,
}

impl Default for When {
    fn default() -> Self {
        When {
            zone: local_zone(),
            last: None,
        }
    }
}

impl When {
    fn of(&mut self, t: i64) -> &str {
        if self.last.as_ref().is_none_or(|(u, _)| *u != t) {
            self.last = Some((t, time_in(&self.zone, t, "%m/%d/%Y %H:%M:%S")));
        }
        self.last.as_ref().map_or("", |(_, text)| text)
    }
}

/// The listing's two header lines.
pub(super) fn header() -> String {
    format!("job-ID  prior   name       user         state submit/start at     queue                          slots ja-task-ID \n{}\n", "-".repeat(113))
}

/// The pieces a long listing is written in.
const PIECE: usize = 64 * 1024;

impl Rows {
    /// A job line's columns up to and with its time.
    fn push_head(&mut self, out: &mut String, j: &JobViewRef) {
        let prior = self.prior.of(j.prio);
        push_head(out, j.job_id, prior, j.name, j.owner, j.state_letters());
        out.push_str(self.when.of(j.start_time.unwrap_or(j.submit_time)));
    }

    /// Append one job line to `out`: the columns of
    /// `"{:>7} {prior} {:<10.10} {:<12.12} {:<5} {when}[ {:<30}] {:>5} {tasks}"`, written
    /// field by field (the formatting machinery's padding was most of a long listing's
    /// time).
    pub(super) fn push(&mut self, out: &mut String, j: &JobViewRef, with_queue: bool) {
        self.push_head(out, j);
        let queue = [j.queue.unwrap_or("")];
        push_tail(out, with_queue.then_some(&queue[..]), j.slots, j.tasks);
    }
}

/// `qstat -g t`: the default listing with a running task's line per granted slot,
/// `MASTER` then `SLAVE` (see [`gantry_proto::TaskLines`]) in the `master` column.
/// `qstat -t`: the lines of `qstat -g t` under a wider header, the master task's line
/// followed by what it has used (state, cpu, mem, io) once its execd measured it.
pub fn render_qstat_t(jobs: &[JobViewRef], tasks: &[gantry_proto::TaskLines]) -> String {
    lines_per_grant(jobs, tasks, true)
}

pub fn render_qstat_gt(jobs: &[JobViewRef], tasks: &[gantry_proto::TaskLines]) -> String {
    lines_per_grant(jobs, tasks, false)
}

fn lines_per_grant(
    jobs: &[JobViewRef],
    tasks: &[gantry_proto::TaskLines],
    sub_tasks: bool,
) -> String {
    if jobs.is_empty() {
        return String::new();
    }
    let by: std::collections::HashMap<(gantry_proto::JobId, &str), &gantry_proto::TaskLines> =
        tasks
            .iter()
            .map(|t| ((t.job_id, t.tasks.as_str()), t))
            .collect();
    let mut out = match sub_tasks {
        false => format!(
            "job-ID  prior   name       user         state submit/start at     queue                          master ja-task-ID \n{}\n",
            "-".repeat(114)
        ),
        true => format!(
            "job-ID  prior   name       user         state submit/start at     queue                          master ja-task-ID task-ID state cpu        mem     io      stat failed \n{}\n",
            "-".repeat(167)
        ),
    };
    let mut rows = Rows::default();
    for j in jobs {
        match by.get(&(j.job_id, j.tasks)) {
            Some(t) if j.queue.is_some() && !t.lines.is_empty() => {
                rows.push_head(&mut out, j);
                for (i, (queue, master)) in t.lines.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&" ".repeat(65));
                    }
                    let role = if *master { "MASTER" } else { "SLAVE " };
                    let task = if i == 0 && !j.tasks.is_empty() {
                        j.tasks
                    } else {
                        "       "
                    };
                    out.push_str(&format!(" {queue:<30} {role} {task}"));
                    if let Some(u) = t.usage.as_ref().filter(|_| sub_tasks && *master) {
                        // The task itself as its own sub-task: no task id, its state
                        // and usage (mem in GB s, io in GB), as SGE's qstat -t.
                        out.push_str(&format!(
                            "   {:<12} {:<5.5} {} {:.5} {:.5} ",
                            "",
                            j.state_letters(),
                            gantry_common::value::format_time_hms(u.cpu),
                            u.mem,
                            u.io
                        ));
                    }
                    out.push('\n');
                }
            }
            // A job without slots (pending, held): blank queue and master columns, then
            // its tasks, as SGE's -g t (no slots column).
            _ => {
                rows.push_head(&mut out, j);
                let tasks = if j.tasks.is_empty() {
                    "       "
                } else {
                    j.tasks
                };
                out.push_str(&format!(
                    " {:<30} {:<7}{tasks}\n",
                    j.queue.unwrap_or(""),
                    ""
                ));
            }
        }
    }
    out
}

/// `qhost -j`: the job lines of the tasks with slots on `host`, indented under it, a
/// line per slot granted there (`MASTER`, then `SLAVE`), as SGE's qhost prints them;
/// nothing when none runs there.
/// The tasks on `host`: each running row of `jobs` with a queue instance of its
/// `tasks` lines there, and whether that is its master queue.
fn tasks_on<'j, 'a>(
    host: &'a str,
    jobs: &'j [JobViewRef<'j>],
    tasks: &'a [gantry_proto::TaskLines],
) -> impl Iterator<Item = (&'j JobViewRef<'j>, &'a str, bool)> + 'a
where
    'j: 'a,
{
    jobs.iter()
        .filter(|j| j.queue.is_some())
        .flat_map(move |j| {
            tasks
                .iter()
                .find(|t| t.job_id == j.job_id && t.tasks == j.tasks)
                .into_iter()
                .flat_map(|t| t.lines.iter())
                .filter(move |(queue, _)| queue.split_once('@').map(|(_, h)| h) == Some(host))
                .map(move |(queue, master)| (j, queue.as_str(), *master))
        })
}

/// The tasks on `host` as `qhost -j -json` lists them (the rows `host_job_lines`
/// prints).
pub fn host_jobs(
    host: &str,
    jobs: &[JobViewRef],
    tasks: &[gantry_proto::TaskLines],
) -> Vec<gantry_common::output::HostJob> {
    tasks_on(host, jobs, tasks)
        .map(|(j, queue, master)| gantry_common::output::HostJob {
            job_id: j.job_id.get(),
            name: j.name.to_string(),
            owner: j.owner.to_string(),
            state: j.state_letters().to_string(),
            tasks: j.tasks.to_string(),
            queue: queue.to_string(),
            master,
        })
        .collect()
}

pub fn host_job_lines(
    host: &str,
    jobs: &[JobViewRef],
    tasks: &[gantry_proto::TaskLines],
) -> String {
    let mut out = String::new();
    let mut rows = Rows::default();
    for (j, queue, master) in tasks_on(host, jobs, tasks) {
        if out.is_empty() {
            out.push_str(&format!(
                "   job-ID  prior   name       user         state submit/start at     queue      master ja-task-ID \n   {}\n",
                "-".repeat(94)
            ));
        }
        let prior = rows.prior.of(j.prio);
        out.push_str("   ");
        push_head(
            &mut out,
            j.job_id,
            prior,
            j.name,
            j.owner,
            j.state_letters(),
        );
        out.push_str(rows.when.of(j.start_time.unwrap_or(j.submit_time)));
        let role = if master { "MASTER" } else { "SLAVE " };
        out.push_str(&format!(" {queue:<10.10} {role} {:<7}\n", j.tasks));
    }
    out
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
            out.push_str(&header());
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

/// Writes the default listing's job lines as the master wrote them, each with its time
/// written here, to `w` in pieces of about 64 KiB; the header before the first.
pub struct LineWriter<'w, W: std::io::Write> {
    w: &'w mut W,
    out: Vec<u8>,
    when: When,
    any: bool,
}

impl<'w, W: std::io::Write> LineWriter<'w, W> {
    pub fn new(w: &'w mut W) -> Self {
        LineWriter {
            w,
            out: Vec::with_capacity(PIECE + 1024),
            when: When::default(),
            any: false,
        }
    }

    pub fn line(&mut self, line: JobLineRef<'_>) {
        if !self.any {
            self.any = true;
            self.out.extend_from_slice(header().as_bytes());
        }
        self.out.extend_from_slice(line.head);
        self.out
            .extend_from_slice(self.when.of(line.when).as_bytes());
        self.out.extend_from_slice(line.tail);
        if self.out.len() >= PIECE {
            let _ = self.w.write_all(&self.out);
            self.out.clear();
        }
    }

    /// Write what is left. Errors writing are ignored, as for every command's output
    /// (see [`crate::Output::print`]).
    pub fn finish(self) {
        let _ = self.w.write_all(&self.out);
        let _ = self.w.flush();
    }
}

/// The pieces a listing's answer is read in.
pub(super) const READ: usize = 256 * 1024;

/// The job lines of the master's answer, its `len` bytes read from `answer` a piece at
/// a time, each line given to `each` once it is whole, and the pieces read into again.
/// When standard output may hold up its writer (a pipe to a pager, a terminal), a
/// thread of its own reads the socket as fast as the master writes: the master's writer
/// never waits for the command's reader, and the answer is in memory at once only when
/// standard output holds it up. Any other answer (a refusal) is read whole and reported
/// as the command reports it; so is an answer that ends in the middle of a line (after
/// the lines before it).
pub fn read_job_lines(
    answer: impl std::io::Read + Send,
    len: usize,
    each: impl FnMut(JobLineRef<'_>),
) -> Result<(), crate::Output> {
    read_in_pieces(answer, len, READ, stdout_may_wait(), each)
}

/// May standard output hold up its writer for long: anything but a file or a device
/// such as `/dev/null`, which take what they are given (a terminal may be stopped)?
fn stdout_may_wait() -> bool {
    use std::io::IsTerminal;
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let out = std::io::stdout();
    if out.is_terminal() {
        return true;
    }
    let kind = out
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|f| f.metadata())
        .map(|m| m.file_type());
    !kind.is_ok_and(|k| k.is_file() || k.is_char_device())
}

/// The same in pieces of `piece` bytes, read on a thread of their own when `apart`.
pub(super) fn read_in_pieces(
    answer: impl std::io::Read + Send,
    len: usize,
    piece: usize,
    apart: bool,
    each: impl FnMut(JobLineRef<'_>),
) -> Result<(), crate::Output> {
    let piece = piece.max(1);
    if !apart {
        let direct = Direct {
            answer,
            left: len,
            piece,
            spare: None,
        };
        return take_lines(direct, len, each);
    }
    let (pieces, read) = std::sync::mpsc::channel();
    let (spent, spare) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(move || read_all(answer, len, piece, &pieces, &spare));
        // The pieces' receiver goes with `take_lines`: once it has what it takes (or
        // fails), the reader stops at its next piece rather than read on.
        take_lines(Apart { read, spent }, len, each)
    })
}

/// Where an answer's pieces come from, and go back to once spent.
trait Pieces {
    fn next(&mut self) -> std::io::Result<Vec<u8>>;
    fn spent(&mut self, piece: Vec<u8>);
}

/// Pieces read as they are taken.
struct Direct<R> {
    answer: R,
    left: usize,
    piece: usize,
    spare: Option<Vec<u8>>,
}

impl<R: std::io::Read> Pieces for Direct<R> {
    fn next(&mut self) -> std::io::Result<Vec<u8>> {
        if self.left == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let mut buf = self.spare.take().unwrap_or_default();
        buf.resize(self.piece.min(self.left), 0);
        self.answer.read_exact(&mut buf)?;
        self.left -= buf.len();
        Ok(buf)
    }

    fn spent(&mut self, piece: Vec<u8>) {
        self.spare = Some(piece);
    }
}

/// Pieces read by a thread of their own (see [`read_all`]).
struct Apart {
    read: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    spent: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Pieces for Apart {
    fn next(&mut self) -> std::io::Result<Vec<u8>> {
        self.read
            .recv()
            .unwrap_or_else(|_| Err(std::io::ErrorKind::UnexpectedEof.into()))
    }

    fn spent(&mut self, piece: Vec<u8>) {
        let _ = self.spent.send(piece);
    }
}

/// Read `len` bytes from `answer` in pieces, each sent on once read, into the pieces
/// sent back when they are spent (else new ones); the first error ends it. Stops when
/// the pieces are no longer taken.
fn read_all(
    mut answer: impl std::io::Read,
    len: usize,
    piece: usize,
    pieces: &std::sync::mpsc::Sender<std::io::Result<Vec<u8>>>,
    spare: &std::sync::mpsc::Receiver<Vec<u8>>,
) {
    let mut left = len;
    while left > 0 {
        let mut buf = spare.try_recv().unwrap_or_default();
        buf.resize(piece.min(left), 0);
        let read = answer.read_exact(&mut buf).map(|()| buf);
        let failed = read.is_err();
        if pieces.send(read).is_err() || failed {
            return;
        }
        left -= piece.min(left);
    }
}

/// The lines of an answer of `len` bytes in `pieces`, each piece given back once its
/// lines are taken.
fn take_lines(
    mut pieces: impl Pieces,
    len: usize,
    mut each: impl FnMut(JobLineRef<'_>),
) -> Result<(), crate::Output> {
    let failed = |e: std::io::Error| {
        crate::Output::fail(
            crate::conn::ConnError::Io(e).to_string(),
            crate::exit::FAILURE,
        )
    };
    let mut work = if len == 0 {
        Vec::new()
    } else {
        pieces.next().map_err(failed)?
    };
    let mut unread = len - work.len();
    let (mut left, first) = match gantry_proto::job_lines_start(&work) {
        Ok(Some(start)) => start,
        Ok(None) | Err(_) => {
            // Another answer, whole: as long as any other frame may be.
            if len > gantry_proto::frame::MAX_FRAME {
                let e =
                    gantry_proto::ProtoError::FrameTooLarge(len, gantry_proto::frame::MAX_FRAME);
                return Err(crate::undecodable(e));
            }
            while unread > 0 {
                let piece = pieces.next().map_err(failed)?;
                unread -= piece.len();
                work.extend_from_slice(&piece);
            }
            for line in crate::job_lines_in(&work)? {
                each(line.map_err(crate::undecodable)?);
            }
            return Ok(());
        }
    };
    // Lines are taken where they lie in each piece; only a line cut at a piece's end
    // is put together (in `cut`) from its parts.
    let (mut piece, mut at) = (work, first);
    let mut cut: Vec<u8> = Vec::new();
    while left > 0 {
        if !cut.is_empty() {
            // The rest of the cut line is at the start of this piece: take as much of
            // it as the line may need, more while it is still cut.
            let mut took = 0;
            loop {
                let more = (piece.len() - took).min(cut.len().max(256));
                cut.extend_from_slice(&piece[took..took + more]);
                took += more;
                match JobLineRef::take_from(&cut) {
                    Ok((line, rest)) => {
                        each(line);
                        left -= 1;
                        at = took - rest.len();
                        cut.clear();
                        break;
                    }
                    Err(e) if took == piece.len() && unread == 0 => {
                        return Err(crate::undecodable(e.into()))
                    }
                    Err(_) if took == piece.len() => {
                        at = took;
                        break;
                    }
                    Err(_) => {}
                }
            }
        }
        while left > 0 {
            match JobLineRef::take_from(&piece[at..]) {
                Ok((line, rest)) => {
                    each(line);
                    left -= 1;
                    at = piece.len() - rest.len();
                }
                Err(e) if unread == 0 => return Err(crate::undecodable(e.into())),
                Err(_) => {
                    // Cut at the piece's end (or the piece ends with a line).
                    cut.extend_from_slice(&piece[at..]);
                    at = piece.len();
                    break;
                }
            }
        }
        if left > 0 {
            let spent = std::mem::replace(&mut piece, pieces.next().map_err(failed)?);
            pieces.spent(spent);
            unread -= piece.len();
            at = 0;
        }
    }
    Ok(())
}
