//! Advance reservations end to end (`qrsub`, `qrstat`, `qrdel`, `qsub -ar`), against a
//! real master and execd: SGE 8.1.9's errors from `05_advance_reservation.txt` (message,
//! stream, exit status, nothing booked), and a reservation's life: it holds its slots
//! against ordinary jobs before its window, its job starts when the window opens, it
//! survives a master restart, goes to `e` while its host's execd is away and back, and
//! at its end its job is killed and accounted, the reservation removed and its slot
//! given back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use gantry_tests::{ensure_user, need_root, wait_until, Cluster, Out};

/// `[[CC]YY]MMDDhhmm[.SS]` for a Unix time, in local time as the commands read it.
fn date_time(ts: i64) -> String {
    let out = Command::new("date")
        .args([&format!("-d@{ts}"), "+%Y%m%d%H%M.%S"])
        .output()
        .expect("date");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn expect(out: &Out, stdout: &str, stderr: &str, code: i32, what: &str) {
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str(), out.code),
        (stdout, stderr, code),
        "{what}"
    );
}

/// A one-host cluster with four slots and no load thresholds, `ar_u1`..`ar_u3` in
/// `arusers`.
fn cluster() -> Cluster {
    for u in ["ar_u1", "ar_u2", "ar_u3"] {
        ensure_user(u);
    }
    let c = Cluster::one_host();
    assert_eq!(c.qconf(&["-rattr", "queue", "slots", "4", "all.q"]).code, 0);
    assert_eq!(
        c.qconf(&["-rattr", "queue", "load_thresholds", "NONE", "all.q"])
            .code,
        0
    );
    for u in ["ar_u1", "ar_u2", "ar_u3"] {
        assert_eq!(c.qconf(&["-au", u, "arusers"]).code, 0);
    }
    c
}

/// The ids of the running jobs (`qstat -u '*'`).
fn running(c: &Cluster) -> Vec<String> {
    c.client("qstat", &["-u", "*"])
        .stdout
        .lines()
        .filter(|l| l.contains(" r "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

fn qrstat_all(c: &Cluster) -> String {
    c.client("qrstat", &["-u", "*"]).stdout
}

#[test]
fn refused_reservations_say_what_sge_says_and_book_nothing() {
    if !need_root("refused_reservations_say_what_sge_says_and_book_nothing") {
        return;
    }
    let c = cluster();
    let u = |user: &str, program: &str, args: &[&str]| c.as_user(user, program, args);
    // Nothing yet: qrstat prints nothing at all.
    expect(&c.client("qrstat", &[]), "", "", 0, "qrstat, empty");
    let ok = u(
        "ar_u1",
        "qrsub",
        &["-d", "0:10:0", "-pe", "smp", "2", "-N", "myar"],
    );
    expect(
        &ok,
        "Your advance reservation 1 has been granted\n",
        "",
        0,
        "granted",
    );
    let before = qrstat_all(&c);
    assert!(
        before.contains("      1 myar       ar_u1        r     "),
        "{before}"
    );
    let future = date_time(now() + 3600);
    let cases: Vec<(&str, Vec<&str>, &str, i32)> = vec![
        (
            "ar_u1",
            vec!["-d", "0:5:0", "-pe", "smp", "20"],
            "advance_reservation: no suitable queues\n",
            1,
        ),
        (
            "ar_u1",
            vec!["-d", "0:5:0", "-l", "nosuch=1"],
            "unknown resource \"nosuch\"\n",
            1,
        ),
        (
            "ar_u1",
            vec!["-a", "202001010000", "-d", "0:5:0"],
            "start time is in the past\n",
            1,
        ),
        (
            "ar_u1",
            vec!["-a", &future],
            "missing value for \"end time or duration\" in advance reservation request\n",
            1,
        ),
        (
            "ar_u1",
            vec!["-d", "0:5:0", "-q", "nosuch.q"],
            "Job was rejected because job requests unknown queue \"nosuch.q\"\n",
            1,
        ),
        (
            "ar_u1",
            vec!["-d", "0:5:0", "-pe", "nosuchpe", "2"],
            "job rejected: the requested parallel environment \"nosuchpe\" does not exist\n",
            1,
        ),
    ];
    for (user, args, stdout, code) in &cases {
        let out = u(user, "qrsub", args);
        expect(&out, stdout, "", *code, &format!("qrsub {args:?}"));
        assert_eq!(qrstat_all(&c), before, "qrsub {args:?} booked nothing");
    }
    // -w v says whether it could be granted and books nothing.
    expect(
        &u(
            "ar_u1",
            "qrsub",
            &["-w", "v", "-d", "0:5:0", "-pe", "smp", "2"],
        ),
        "verification: found possible assignment with 2 slots\n",
        "",
        0,
        "qrsub -w v",
    );
    assert_eq!(qrstat_all(&c), before, "qrsub -w v booked nothing");
    // Without options: the usage, then the error, on standard error.
    let out = u("ar_u1", "qrsub", &[]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.starts_with("Gantry ") && out.stderr.ends_with("ERROR! no option argument\n"),
        "{}",
        out.stderr
    );
    // Only managers and arusers may reserve.
    assert_eq!(c.qconf(&["-du", "ar_u3", "arusers"]).code, 0);
    expect(
        &u("ar_u3", "qrsub", &["-d", "0:5:0"]),
        "denied: \"ar_u3\" must be manager or in userset \"arusers\"\n",
        "",
        1,
        "not in arusers",
    );
    // max_advance_reservations caps the reservations in the cluster (exit 25).
    let conf = c.qconf(&["-sconf", "global"]).stdout;
    let lowered = conf
        .lines()
        .map(|l| {
            if l.starts_with("max_advance_reservations") {
                "max_advance_reservations     1".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let dir = c.home().join("conf");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("global");
    std::fs::write(&file, lowered + "\n").unwrap();
    let m = c.qconf(&["-Mconf", file.to_str().unwrap()]);
    assert_eq!(m.code, 0, "{m:?}");
    expect(
        &u("ar_u1", "qrsub", &["-d", "0:5:0", "-N", "toomany"]),
        "rejected: only 1 advance reservations are allowed per cluster\n",
        "",
        25,
        "max_advance_reservations",
    );
    assert_eq!(qrstat_all(&c), before);
    // qrstat -ar with an id that does not exist.
    expect(
        &c.client("qrstat", &["-ar", "999"]),
        "Following advance reservations do not exist:\n999\n",
        "",
        1,
        "qrstat -ar 999",
    );
    // Jobs into reservations: checked at submission.
    expect(
        &u("ar_u1", "qsub", &["-ar", "999", "-b", "y", "sleep", "30"]),
        "",
        "Unable to run job: the advance reservation id 999 is invalid\nExiting.\n",
        1,
        "qsub -ar 999",
    );
    expect(
        &u(
            "ar_u1",
            "qsub",
            &["-ar", "1", "-pe", "smp", "4", "-b", "y", "sleep", "30"],
        ),
        "",
        "Unable to run job: error: no suitable queues\nExiting.\n",
        1,
        "more slots than reserved",
    );
    expect(
        &u("ar_u1", "qsub", &["-ar", "1", "-l", "h_rt=1:0:0", "-b", "y", "sleep", "30"]),
        "",
        "Unable to run job: the job duration is longer than duration of the advance reservation id 1\nExiting.\n",
        1,
        "h_rt beyond the window",
    );
    expect(
        &u("ar_u2", "qsub", &["-ar", "1", "-b", "y", "sleep", "30"]),
        "",
        "Unable to run job: error: no suitable queues\nExiting.\n",
        1,
        "not in the reservation's access list",
    );
    // qalter -ar binds a pending job, with the same checks.
    let held = c.submit("ar_u1", &["-h", "-b", "y", "sleep", "30"]);
    let out = u("ar_u1", "qalter", &["-ar", "1", &held]);
    assert!(
        out.code == 0
            && out
                .stdout
                .contains(&format!("sets job advance reservation of job {held} to 1")),
        "{out:?}"
    );
    let detail = c.client("qstat", &["-j", &held]).stdout;
    assert!(
        detail.contains("ar_id:                      1\n"),
        "{detail}"
    );
    // SGE's qalter prints the master's answer on stdout, refusals included.
    let out = u("ar_u1", "qalter", &["-ar", "999", &held]);
    assert_eq!(
        (out.stdout.as_str(), out.code),
        ("the advance reservation id 999 is invalid\n", 1),
        "{out:?}"
    );
    assert_eq!(c.client("qdel", &[&held]).code, 0);
    // qrdel: only the owner (or a manager), and only what exists.
    expect(
        &u("ar_u2", "qrdel", &["1"]),
        "ar_u2 - you do not have the necessary privileges to delete the advance_reservation \"1\"\n",
        "",
        1,
        "qrdel by another user",
    );
    expect(
        &u("ar_u1", "qrdel", &["999"]),
        "denied: advance_reservation \"999\" does not exist\n",
        "",
        1,
        "qrdel 999",
    );
    assert_eq!(qrstat_all(&c), before);
    // A job of the reservation runs inside it; deleting the reservation deletes it.
    let id = c.submit(
        "ar_u1",
        &["-ar", "1", "-pe", "smp", "2", "-b", "y", "sleep", "300"],
    );
    wait_until(
        "the reservation's job runs",
        Duration::from_secs(20),
        || running(&c).contains(&id),
    );
    let f = c.client("qstat", &["-f"]).stdout;
    assert!(f.contains("2/2/4"), "resv/used/tot: {f}");
    // A wallclock of a second at least: qacct's summary below has no row for jobs whose
    // wallclock adds up to nothing (as SGE's). Time itself is the condition here.
    std::thread::sleep(Duration::from_millis(1100));
    expect(
        &u("ar_u1", "qrdel", &["myar"]),
        "ar_u1 has registered the advance_reservation 1 for deletion\n",
        "",
        0,
        "qrdel by name",
    );
    wait_until(
        "the reservation and its job are gone",
        Duration::from_secs(20),
        || qrstat_all(&c).is_empty() && !c.client("qstat", &["-u", "*"]).stdout.contains("sleep"),
    );
    let acct = c.client("qacct", &["-j", &id]).stdout;
    assert!(acct.contains("arid         1 "), "{acct}");
    // Mail (-m be): as the owner, through the mailer, when the window opens and ends.
    let dir = c.home().join("mail");
    std::fs::create_dir_all(&dir).unwrap();
    let mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(m))
    };
    mode(&dir, 0o777).unwrap();
    let mailer = dir.join("mailer.sh");
    std::fs::write(
        &mailer,
        format!(
            "#!/bin/sh\nout={}/mail.$$\n{{ id -un; printf '%s\\n' \"$@\"; echo ---; cat; }} > \"$out.tmp\" && mv \"$out.tmp\" \"$out\"\n",
            dir.display()
        ),
    )
    .unwrap();
    mode(&mailer, 0o755).unwrap();
    for p in [c.home(), c.home().parent().unwrap().to_path_buf()] {
        let _ = mode(&p, 0o755);
    }
    let conf = c.qconf(&["-sconf", "global"]).stdout;
    let with_mailer: String = conf
        .lines()
        .map(|l| {
            if l.starts_with("mailer") {
                format!("mailer                       {}", mailer.display())
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&file, with_mailer + "\n").unwrap();
    assert_eq!(c.qconf(&["-Mconf", file.to_str().unwrap()]).code, 0);
    let out = u(
        "ar_u1",
        "qrsub",
        &["-d", "3", "-m", "be", "-M", "ops@site", "-N", "mailme"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let ar_id = out.stdout.split_whitespace().nth(3).unwrap().to_string();
    let mails = || gantry_tests::recorded_mails(&dir);
    wait_until("the start and end mails", Duration::from_secs(20), || {
        mails().len() == 2
    });
    let all = mails().join("");
    for what in ["Started", "Finished"] {
        let subject = format!("Advance Reservation {ar_id} (mailme) {what}");
        assert!(
            all.contains(&format!(
                "ar_u1\n-s\n{subject}\nops@site\n---\n{subject}\n User       = ar_u1\n"
            )),
            "{all}"
        );
    }
    // qacct -ar: the usage of the reservation's jobs, by reservation.
    let by_ar = c.client("qacct", &["-ar", "1"]);
    let lines: Vec<&str> = by_ar.stdout.lines().collect();
    assert!(
        by_ar.code == 0
            && lines.len() == 3
            && lines[0].starts_with("AR ")
            && lines[2].starts_with("    1 "),
        "{by_ar:?}"
    );
}

#[test]
fn a_reservation_holds_its_slots_runs_its_job_in_its_window_and_gives_them_back() {
    if !need_root("a_reservation_holds_its_slots_runs_its_job_in_its_window_and_gives_them_back") {
        return;
    }
    let mut c = cluster();
    // Two of the four slots from 20 s from now, for 30 s.
    let start = now() + 20;
    let out = c.as_user(
        "ar_u1",
        "qrsub",
        &[
            "-a",
            &date_time(start),
            "-d",
            "30",
            "-pe",
            "smp",
            "2",
            "-N",
            "window",
        ],
    );
    expect(
        &out,
        "Your advance reservation 1 has been granted\n",
        "",
        0,
        "qrsub",
    );
    let listed = c.client("qrstat", &["-ar", "1"]).stdout;
    assert!(
        listed.contains("state                          w\n"),
        "{listed}"
    );
    assert!(
        listed.contains("granted_slots_list             all.q@node1=2\n"),
        "{listed}"
    );
    // The job of the reservation waits for its window.
    let ar_job = c.submit(
        "ar_u1",
        &["-ar", "1", "-pe", "smp", "2", "-b", "y", "sleep", "300"],
    );
    // A flood of ordinary jobs without a run time: only two slots are theirs.
    let flood: Vec<String> = (0..6)
        .map(|_| c.submit("ar_u2", &["-b", "y", "sleep", "300"]))
        .collect();
    wait_until("two ordinary jobs run", Duration::from_secs(15), || {
        let n = running(&c).len();
        if n != 2 {
            eprintln!("{}", c.client("qstat", &["-u", "*"]).stdout);
            eprintln!("{}", c.client("qstat", &["-j", &flood[0]]).stdout);
        }
        n == 2
    });
    eprintln!("{}", c.client("qstat", &["-u", "*"]).stdout);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(running(&c).len(), 2, "no more than two before the window");
    let why = c.client("qstat", &["-j", &ar_job]).stdout;
    assert!(why.contains("execution time not reached"), "{why}");
    // The window opens: the reservation's job starts within a second (its start time
    // as the master recorded it, in whole seconds).
    wait_until(
        "the reservation's job runs",
        Duration::from_secs(30),
        || running(&c).contains(&ar_job),
    );
    let started = started_at(&c, &ar_job).expect("a start time");
    let late = epoch(&started) - start;
    assert!(
        (0..=1).contains(&late),
        "started {late} s after the window opened"
    );
    assert!(c.client("qrstat", &[]).stdout.is_empty(), "root owns none");
    assert!(qrstat_all(&c).contains(" window     ar_u1        r     "));
    // A master restart keeps the reservation and its job.
    let before = c.client("qrstat", &["-ar", "1"]).stdout;
    c.stop_master(nix::sys::signal::Signal::SIGTERM);
    c.start_master();
    wait_until("the master answers", Duration::from_secs(20), || {
        c.client("qrstat", &["-ar", "1"]).stdout == before
    });
    wait_until("the job runs on", Duration::from_secs(20), || {
        running(&c).contains(&ar_job)
    });
    // Its host's execd goes away: the reservation is in error, and back when it returns.
    c.execds[0].stop(nix::sys::signal::Signal::SIGKILL);
    wait_until(
        "the reservation is in error",
        Duration::from_secs(20),
        || {
            c.client("qrstat", &["-ar", "1"])
                .stdout
                .contains("state                          e\n")
        },
    );
    let explained = c.client("qrstat", &["-u", "*", "-explain"]).stdout;
    assert!(
        explained.contains("queue instance \"all.q@node1\" is not usable"),
        "{explained}"
    );
    let token = c.token();
    c.start_execd("node1", "127.0.0.1", Some(&token), None);
    wait_until("the reservation is back", Duration::from_secs(30), || {
        c.client("qrstat", &["-ar", "1"])
            .stdout
            .contains("state                          r\n")
    });
    // At its end its job is killed and accounted, the reservation removed, and the two
    // slots go to the waiting ordinary jobs.
    let deadline = Instant::now() + Duration::from_secs(60);
    wait_until("the reservation ends", Duration::from_secs(60), || {
        qrstat_all(&c).is_empty() && !running(&c).contains(&ar_job)
    });
    assert!(Instant::now() < deadline);
    let four = || running(&c).iter().filter(|j| flood.contains(j)).count() == 4;
    let ok = (0..40).any(|_| {
        std::thread::sleep(Duration::from_millis(500));
        four()
    });
    assert!(
        ok,
        "four ordinary jobs run:\n{}\n{}\n{}",
        c.client("qstat", &["-f", "-u", "*"]).stdout,
        c.client("qstat", &["-j", &flood[5]]).stdout,
        c.master_log()
    );
    let acct = c.client("qacct", &["-j", &ar_job]).stdout;
    assert!(acct.contains("arid         1 "), "{acct}");
}

/// A time as `date -d` reads it (`MM/DD/YYYY HH:MM:SS`), in Unix seconds.
fn epoch(t: &str) -> i64 {
    let out = Command::new("date")
        .args(["-d", t, "+%s"])
        .output()
        .expect("date");
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("date -d {t}"))
}

/// The start time `qstat` shows for a running job (as `MM/DD/YYYY HH:MM:SS`, sortable
/// within a day by its time), or None.
fn started_at(c: &Cluster, id: &str) -> Option<String> {
    c.client("qstat", &["-u", "*"])
        .stdout
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&id) && f.get(4).is_some_and(|s| s.contains('r')))
                .then(|| format!("{} {}", f[5], f[6]))
        })
}

#[test]
fn a_reserved_parallel_job_starts_as_the_calendar_says_while_short_jobs_backfill() {
    if !need_root("a_reserved_parallel_job_starts_as_the_calendar_says_while_short_jobs_backfill") {
        return;
    }
    let c = cluster();
    let conf = c.qconf(&["-ssconf"]).stdout;
    let changed: String = conf
        .lines()
        .map(|l| {
            let key = l.split_whitespace().next().unwrap_or("");
            match key {
                "max_reservation" => "max_reservation                   10".to_string(),
                "job_load_adjustments" => "job_load_adjustments              NONE".to_string(),
                _ => l.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let file = c.home().join("sched_conf");
    std::fs::write(&file, changed + "\n").unwrap();
    let m = c.qconf(&["-Msconf", file.to_str().unwrap()]);
    assert_eq!(m.code, 0, "{m:?}");
    // Four slots busy, freed one after another; each job says it runs at most 20 s.
    let first: Vec<String> = [2, 4, 6, 8]
        .iter()
        .map(|s| {
            c.submit(
                "ar_u2",
                &["-l", "h_rt=0:0:20", "-b", "y", "sleep", &s.to_string()],
            )
        })
        .collect();
    wait_until("four jobs run", Duration::from_secs(15), || {
        first.iter().all(|j| started_at(&c, j).is_some())
    });
    // The big job asks for all four slots and a reservation; short jobs follow it, at a
    // lower priority.
    let big = c.submit(
        "ar_u1",
        &[
            "-R",
            "y",
            "-pe",
            "smp",
            "4",
            "-l",
            "h_rt=0:0:20",
            "-b",
            "y",
            "sleep",
            "2",
        ],
    );
    let short: Vec<String> = (0..16)
        .map(|_| {
            c.submit(
                "ar_u3",
                &["-p", "-10", "-l", "h_rt=0:0:3", "-b", "y", "sleep", "2"],
            )
        })
        .collect();
    wait_until("the big job is reserved", Duration::from_secs(10), || {
        c.client("qstat", &["-j", &big])
            .stdout
            .contains("reserved: task 1 to start at")
    });
    wait_until("the big job runs", Duration::from_secs(40), || {
        started_at(&c, &big).is_some()
    });
    // Short jobs ran in the gaps before it (backfilling), and it did not wait for all
    // of them: some start after it.
    let mut starts = Vec::new();
    wait_until("every short job has run", Duration::from_secs(90), || {
        let out = c.client("qacct", &["-o", "ar_u3", "-j"]).stdout;
        starts = out
            .lines()
            .filter(|l| l.starts_with("start_time"))
            .map(|l| l["start_time".len()..].trim().to_string())
            .collect();
        starts.len() == short.len()
    });
    let mut big_started = String::new();
    wait_until("the big job is accounted", Duration::from_secs(30), || {
        let acct = c.client("qacct", &["-j", &big]).stdout;
        big_started = acct
            .lines()
            .find(|l| l.starts_with("start_time"))
            .map(|l| l["start_time".len()..].trim().to_string())
            .unwrap_or_default();
        !big_started.is_empty()
    });
    let b = epoch(&big_started);
    let before = starts.iter().filter(|t| epoch(t) < b).count();
    let after = starts.iter().filter(|t| epoch(t) >= b).count();
    assert!(
        before >= 1,
        "no short job backfilled before the big one: {starts:?} / {big_started}"
    );
    assert!(
        after >= 1,
        "the big job waited for every short job: {starts:?} / {big_started}"
    );
}

/// The options not covered above reach the reservation and decide where it goes:
/// `-a` with `-e` (the duration from both), `-masterq`, `-he y`, `-ckpt`, `-now y`
/// (interactive instances only); and `qrdel -f` by a manager deletes a reservation with
/// a running job at once.
#[test]
fn reservation_options_reach_the_reservation_and_qrdel_f_forces() {
    if !need_root("reservation_options_reach_the_reservation_and_qrdel_f_forces") {
        return;
    }
    let c = cluster();
    let u = |user: &str, cmd: &str, args: &[&str]| c.as_user(user, cmd, args);
    let granted = |n: u32| format!("Your advance reservation {n} has been granted\n");
    let detail = |id: &str| c.client("qrstat", &["-ar", id]).stdout;
    let has = |text: &str, k: &str, v: &str| text.contains(&format!("{k:<30} {v}\n"));

    // -a and -e: a window of 15 minutes, ten minutes ahead.
    let start = now() + 600;
    let (a, e) = (date_time(start), date_time(start + 900));
    expect(
        &u("ar_u1", "qrsub", &["-a", &a, "-e", &e, "-N", "ewin"]),
        &granted(1),
        "",
        0,
        "qrsub -a -e",
    );
    let d = detail("1");
    assert!(has(&d, "duration", "00:15:00"), "{d}");
    assert!(has(&d, "name", "ewin"), "{d}");

    // -masterq and -he y, for a parallel reservation open from now.
    expect(
        &u(
            "ar_u1",
            "qrsub",
            &[
                "-d",
                "0:10:0",
                "-pe",
                "smp",
                "2",
                "-masterq",
                "all.q@node1",
                "-he",
                "y",
                "-N",
                "mq",
            ],
        ),
        &granted(2),
        "",
        0,
        "qrsub -masterq -he y",
    );
    let d = detail("2");
    for (k, v) in [
        ("master hard queue_list", "all.q@node1"),
        ("error_handling", "true"),
        ("granted_slots_list", "all.q@node1=2"),
        ("granted_parallel_environment", "smp slots 2"),
    ] {
        assert!(has(&d, k, v), "{k}: {d}");
    }
    // A master queue is for parallel requests only, as with qsub.
    expect(
        &u("ar_u1", "qrsub", &["-d", "0:10:0", "-masterq", "all.q"]),
        "job rejected: specification of master queue is not allowed for non-parallel jobs\n",
        "",
        1,
        "qrsub -masterq without -pe",
    );

    // -ckpt: only where the queue lists the environment.
    let file = c.home().join("check.ckpt");
    std::fs::write(
        &file,
        "ckpt_name check\ninterface application-level\nwhen sx\n",
    )
    .unwrap();
    assert_eq!(c.qconf(&["-Ackpt", file.to_str().unwrap()]).code, 0);
    let ckpt = ["-d", "0:5:0", "-ckpt", "check", "-N", "ck"];
    expect(
        &u("ar_u1", "qrsub", &ckpt),
        "advance_reservation: no suitable queues\n",
        "",
        1,
        "qrsub -ckpt outside the ckpt_list",
    );
    assert_eq!(
        c.qconf(&["-mattr", "queue", "ckpt_list", "check", "all.q"])
            .code,
        0
    );
    expect(
        &u("ar_u1", "qrsub", &ckpt),
        &granted(3),
        "",
        0,
        "qrsub -ckpt",
    );
    assert!(has(&detail("ck"), "checkpoint_name", "check"));

    // -now y: interactive instances only.
    let now_y = ["-d", "0:5:0", "-now", "y"];
    expect(
        &u("ar_u1", "qrsub", &now_y),
        &granted(4),
        "",
        0,
        "qrsub -now y",
    );
    assert_eq!(
        c.qconf(&["-mattr", "queue", "qtype", "BATCH", "all.q"])
            .code,
        0
    );
    expect(
        &u("ar_u1", "qrsub", &now_y),
        "advance_reservation: no suitable queues\n",
        "",
        1,
        "qrsub -now y without interactive queues",
    );
    let ids: Vec<String> = qrstat_all(&c)
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert_eq!(ids, ["1", "2", "3", "4"], "nothing else was booked");

    // qrdel -f by a manager: the reservation and its running job go at once.
    let job = c.submit(
        "ar_u1",
        &["-ar", "2", "-pe", "smp", "2", "-b", "y", "sleep", "300"],
    );
    wait_until(
        "the reservation's job runs",
        Duration::from_secs(20),
        || running(&c).contains(&job),
    );
    let out = c.client("qrdel", &["-f", "mq"]);
    expect(
        &out,
        "root has deleted advance_reservation 2\n",
        "",
        0,
        "qrdel -f",
    );
    assert!(!qrstat_all(&c)
        .lines()
        .any(|l| l.trim_start().starts_with("2 ")));
    assert!(
        !c.client("qstat", &["-u", "*"]).stdout.contains("sleep"),
        "the job went with it"
    );
}
