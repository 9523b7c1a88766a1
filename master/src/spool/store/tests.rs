use super::*;
use crate::core::state::initial_objects;

fn record(job_id: u64, task_id: Option<u32>) -> Op {
    let (job_id, task_id) = (JobId(job_id), task_id.map(TaskId));
    let report = gantry_proto::JobReport {
        job_id,
        task_id: task_id.unwrap_or(TaskId(1)),
        host: "n1".into(),
        queue: "all.q".into(),
        exit_status: 0,
        signal: None,
        failed: 0,
        failure: String::new(),
        start_time: 1,
        end_time: 2,
        utime_us: 0,
        stime_us: 0,
        maxrss_kb: 0,
        accounted: Default::default(),
        checkpointed: false,
        pe_task: None,
    };
    Op::Account(Box::new(gantry_proto::AccountingRecord {
        job_id,
        task_id,
        job_name: "j".into(),
        owner: "alice".into(),
        group: "users".into(),
        account: "sge".into(),
        project: None,
        priority: 0,
        slots: 1,
        submit_time: 0,
        attempt: 0,
        ar: None,
        granted_pe: None,
        category: String::new(),
        report,
    }))
}

fn host(name: &str) -> Op {
    Op::Put(Object::ExecHost(gantry_proto::ExecHost::new(name)))
}

fn keys(store: &Store) -> Vec<String> {
    store.load().unwrap().iter().map(Object::key).collect()
}

fn accounted(store: &Store) -> Vec<(u64, Option<u32>)> {
    store
        .accounting(|_| true)
        .unwrap()
        .iter()
        .map(|r| (r.job_id.get(), r.task_id.map(TaskId::get)))
        .collect()
}

#[test]
fn objects_survive_reopening_and_deletes_stick() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool.redb");
    let objects = initial_objects(&["root".into()]);
    {
        let mut store = Store::create(&path, &objects).unwrap();
        store
            .commit(&[host("n1"), Op::Delete("managers".into())])
            .unwrap();
    }
    let store = Store::open(&path, false).unwrap();
    let loaded = store.load().unwrap();
    assert!(loaded.iter().any(|o| o.key() == "exechost/n1"));
    assert!(!loaded.iter().any(|o| o.key() == "managers"));
    assert_eq!(loaded.len(), objects.len());
}

#[test]
fn changes_not_yet_checkpointed_are_read_and_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool.redb");
    {
        let mut store = Store::create(&path, &[]).unwrap();
        store
            .commit(&[host("n1"), Op::NextJobId(JobId(7))])
            .unwrap();
        store
            .commit(&[record(5, None), record(6, Some(2))])
            .unwrap();
        store
            .commit(&[host("n2"), Op::Delete("exechost/n1".into())])
            .unwrap();
        // Reads see the journaled changes before any checkpoint.
        assert_eq!(keys(&store), ["exechost/n2"]);
        assert_eq!(store.next_job_id().unwrap(), JobId(7));
        assert!(store.has_accounting(JobId(6), TaskId(2)).unwrap());
        assert!(!store.has_accounting(JobId(6), TaskId(3)).unwrap());
        assert_eq!(accounted(&store), [(5, None), (6, Some(2))]);
        // Dropped without a checkpoint: a kill -9.
    }
    let mut store = Store::open(&path, false).unwrap();
    assert_eq!(keys(&store), ["exechost/n2"]);
    assert_eq!(store.next_job_id().unwrap(), JobId(7));
    assert_eq!(accounted(&store), [(5, None), (6, Some(2))]);
    // Opening applied the journal: a second crash replays nothing twice.
    assert!(store.unapplied.is_empty());
    store.commit(&[record(8, None)]).unwrap();
    drop(store);
    let store = Store::open(&path, false).unwrap();
    assert_eq!(accounted(&store), [(5, None), (6, Some(2)), (8, None)]);
    assert_eq!(keys(&store), ["exechost/n2"]);
}

#[test]
fn checkpoints_move_changes_into_the_database_and_restart_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool.redb");
    {
        let mut store = Store::create(&path, &[]).unwrap();
        for i in 0..(CHECKPOINT_OPS as u64 + 10) {
            store.commit(&[record(i + 1, None)]).unwrap();
            // The owner checkpoints when one is due, as the Cluster actor does.
            if store.checkpoint_due() {
                store.checkpoint_now();
            }
        }
        // One checkpoint happened at CHECKPOINT_OPS changes; ten wait in the journal.
        assert_eq!(store.unapplied.len(), 10);
        assert_eq!(store.journal.last_seq(), CHECKPOINT_OPS as u64 + 10);
    }
    let store = Store::open(&path, false).unwrap();
    let all = accounted(&store);
    assert_eq!(all.len(), CHECKPOINT_OPS + 10);
    assert_eq!(all.last(), Some(&(CHECKPOINT_OPS as u64 + 10, None)));
}

/// Start a checkpoint on its thread; the receiver hears when its transaction ended.
fn start(store: &mut Store) -> std::sync::mpsc::Receiver<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    assert!(store.start_checkpoint(move || {
        let _ = tx.send(());
    }));
    rx
}

#[test]
fn a_checkpoint_on_its_thread_leaves_every_change_readable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool.redb");
    {
        let mut store = Store::create(&path, &[]).unwrap();
        store
            .commit(&[host("n1"), Op::NextJobId(JobId(4))])
            .unwrap();
        store.commit(&[record(1, None), host("n2")]).unwrap();
        let done = start(&mut store);
        // One at a time.
        assert!(!store.start_checkpoint(|| {}));
        // Changes go on while it runs, and reads see both.
        store
            .commit(&[Op::Delete("exechost/n1".into()), record(2, Some(3))])
            .unwrap();
        store.commit(&[Op::NextJobId(JobId(9))]).unwrap();
        let check = |store: &Store| {
            assert_eq!(keys(store), ["exechost/n2"]);
            assert_eq!(accounted(store), [(1, None), (2, Some(3))]);
            assert!(store.has_accounting(JobId(1), TaskId(0)).unwrap());
            assert!(store.has_accounting(JobId(2), TaskId(3)).unwrap());
            assert_eq!(store.next_job_id().unwrap(), JobId(9));
        };
        check(&store);
        done.recv().unwrap();
        // Done but not yet finished: the database holds the first changes twice over.
        check(&store);
        store.finish_checkpoint().unwrap();
        check(&store);
        // Changes came meanwhile: the journal names the new generation, keeps its
        // records, and the two later changes wait for the next checkpoint.
        assert_eq!(store.journal.header().generation, 2);
        assert_eq!(store.unapplied.len(), 3);
        assert!(store.journal.len() > 0);
        drop(store); // kill -9
        let mut store = Store::open(&path, false).unwrap();
        check(&store);
        // Nothing waits: a checkpoint finished with nothing new restarts the journal.
        store.commit(&[host("n3")]).unwrap();
        let done = start(&mut store);
        done.recv().unwrap();
        store.finish_checkpoint().unwrap();
        assert_eq!(store.journal.len(), 0);
        assert!(!store.checkpoint_running());
    }
    let store = Store::open(&path, false).unwrap();
    assert_eq!(keys(&store), ["exechost/n2", "exechost/n3"]);
    assert_eq!(accounted(&store), [(1, None), (2, Some(3))]);
}

#[test]
fn a_crash_after_the_checkpoints_transaction_replays_only_what_came_after() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool.redb");
    {
        let mut store = Store::create(&path, &[]).unwrap();
        store.commit(&[record(1, None), host("n1")]).unwrap();
        let done = start(&mut store);
        store.commit(&[record(2, None)]).unwrap();
        done.recv().unwrap();
        // The transaction is durable, the journal's header not yet rewritten.
        let flight = store.in_flight.take().unwrap();
        flight.thread.join().unwrap().unwrap();
        assert_eq!(store.journal.header().generation, 1);
    }
    let store = Store::open(&path, false).unwrap();
    assert_eq!(accounted(&store), [(1, None), (2, None)]);
    assert_eq!(keys(&store), ["exechost/n1"]);
}

#[test]
fn the_journal_starts_over_although_changes_come_during_every_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool.redb");
    let big = |job_id: u64| {
        let mut op = record(job_id, None);
        if let Op::Account(r) = &mut op {
            r.job_name = "x".repeat(1 << 20);
        }
        op
    };
    let mut store = Store::create(&path, &[]).unwrap();
    let mut most = 0;
    for i in 0..40 {
        store.commit(&[big(2 * i + 1)]).unwrap();
        let done = start(&mut store);
        store.commit(&[big(2 * i + 2)]).unwrap();
        done.recv().unwrap();
        store.finish_checkpoint().unwrap();
        most = most.max(store.journal.len());
    }
    assert!(
        most < CHECKPOINT_BYTES * FORCED_CHECKPOINT as u64 + (2 << 20),
        "the journal grew to {most} bytes"
    );
    drop(store);
    let store = Store::open(&path, false).unwrap();
    assert_eq!(accounted(&store).len(), 80);
}

#[test]
fn a_torn_last_record_loses_only_the_unacknowledged_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool.redb");
    {
        let mut store = Store::create(&path, &[]).unwrap();
        store.commit(&[host("n1")]).unwrap();
        store.commit(&[host("n2")]).unwrap();
    }
    // The second record's last byte never reached the disk.
    let journal = journal_path(&path);
    let bytes = std::fs::read(&journal).unwrap();
    let first =
        crate::spool::journal::encode_record(1, &gantry_proto::encode(&vec![host("n1")]).unwrap());
    let second =
        crate::spool::journal::encode_record(2, &gantry_proto::encode(&vec![host("n2")]).unwrap());
    let at = crate::spool::journal::FILE_HEADER;
    assert_eq!(
        &bytes[at..at + first.len() + second.len()],
        [first.clone(), second.clone()].concat()
    );
    let mut torn = bytes.clone();
    torn[at + first.len() + second.len() - 1] ^= 0xff;
    std::fs::write(&journal, torn).unwrap();
    let store = Store::open(&path, false).unwrap();
    assert_eq!(keys(&store), ["exechost/n1"]);
    // Its job id (had it been a submission) is not handed out again.
    assert_eq!(store.next_job_id().unwrap(), JobId(2));
}

/// A spool with three journaled submissions (job ids 1..=3) after a crash.
fn crashed_spool(dir: &Path) -> (PathBuf, Vec<usize>) {
    let path = dir.join("spool.redb");
    let mut store = Store::create(&path, &[]).unwrap();
    let mut offsets = Vec::new();
    let mut at = crate::spool::journal::FILE_HEADER;
    for id in 1..=3u64 {
        let ops = vec![Op::NextJobId(JobId(id + 1)), host(&format!("n{id}"))];
        offsets.push(at);
        at += crate::spool::journal::encode_record(id, &gantry_proto::encode(&ops).unwrap()).len();
        store.commit(&ops).unwrap();
    }
    (path, offsets)
}

#[test]
fn damage_before_the_journals_end_stops_the_start_unless_recovering() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = crashed_spool(dir.path());
    let journal = journal_path(&path);
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes[offsets[1] + 20] ^= 0x01; // inside the second change
    std::fs::write(&journal, &bytes).unwrap();
    let err = Store::open(&path, false).err().expect("refused");
    let text = err.to_string();
    assert!(
        text.contains(&format!("is damaged at offset {}: changes 2 to 2 cannot be read, and 1 later changes follow them", offsets[1])),
        "{text}"
    );
    assert!(text.contains("--recover-spool"), "{text}");
    // Refusing changed nothing: the same refusal again.
    assert!(Store::open(&path, false).is_err());
    let store = Store::open(&path, true).unwrap();
    assert_eq!(keys(&store), ["exechost/n1", "exechost/n3"]);
    // The lost change may have been a submission: ids go on above every one seen.
    assert!(store.next_job_id().unwrap() >= JobId(5));
    drop(store);
    // Recovered for good: the next start needs no flag.
    assert!(Store::open(&path, false).is_ok());
}

#[test]
fn a_missing_empty_or_foreign_journal_after_a_crash_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let (foreign, _) = crashed_spool(other.path());
    for (damage, says) in [
        ("missing", "is missing"),
        ("empty", "is empty"),
        ("zeros", "is empty"),
        ("foreign", "is the journal of another spool"),
    ] {
        let sub = dir.path().join(damage);
        std::fs::create_dir(&sub).unwrap();
        let (path, _) = crashed_spool(&sub);
        let journal = journal_path(&path);
        match damage {
            "missing" => std::fs::remove_file(&journal).unwrap(),
            "empty" => std::fs::write(&journal, b"").unwrap(),
            "zeros" => std::fs::write(&journal, vec![0u8; 4096]).unwrap(),
            _ => std::fs::copy(journal_path(&foreign), &journal)
                .map(drop)
                .unwrap(),
        }
        let err = Store::open(&path, false)
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains(says), "{damage}: {err}");
        assert!(
            err.contains("the changes acknowledged since the database's last checkpoint (change 0) would be lost"),
            "{damage}: {err}"
        );
        let store = Store::open(&path, true).unwrap();
        assert!(keys(&store).is_empty(), "{damage}");
        // Three changes may have been submissions: none of their ids comes again.
        assert!(store.next_job_id().unwrap() >= JobId(4), "{damage}");
    }
}

#[test]
fn after_a_clean_shutdown_a_missing_journal_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = crashed_spool(dir.path());
    Store::open(&path, false).unwrap().close().unwrap();
    std::fs::remove_file(journal_path(&path)).unwrap();
    let store = Store::open(&path, false).unwrap();
    assert_eq!(keys(&store), ["exechost/n1", "exechost/n2", "exechost/n3"]);
    assert_eq!(store.next_job_id().unwrap(), JobId(4));
}

#[test]
fn job_ids_continue_above_every_id_the_spool_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool.redb");
    {
        let mut store = Store::create(&path, &[]).unwrap();
        // The recorded next id is behind an accounting record of job 41.
        store
            .commit(&[Op::NextJobId(JobId(7)), record(41, Some(3))])
            .unwrap();
        store.close().unwrap();
    }
    let store = Store::open(&path, false).unwrap();
    assert_eq!(store.next_job_id().unwrap(), JobId(42));
}

#[test]
fn a_journal_record_the_master_cannot_decode_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spool.redb");
    drop(Store::create(&path, &[]).unwrap());
    let garbage = crate::spool::journal::encode_record(1, &[0xff, 0xff, 0xff]);
    let journal = journal_path(&path);
    let mut bytes = std::fs::read(&journal).unwrap();
    let at = crate::spool::journal::FILE_HEADER;
    bytes[at..at + garbage.len()].copy_from_slice(&garbage);
    std::fs::write(&journal, bytes).unwrap();
    let err = Store::open(&path, false).err().expect("refused");
    assert!(
        err.to_string().contains("journal record 1 is corrupt"),
        "{err}"
    );
}
