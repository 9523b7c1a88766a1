use super::*;

/// A listing decoded in place is the listing decoded whole, row for row; any other
/// answer comes back whole.
#[test]
fn a_jobs_answer_decodes_in_place() {
    let view = |n: u64, queue: Option<&str>, res: usize| JobView {
        job_id: JobId(n),
        name: format!("job{n}"),
        owner: "ünï".into(),
        priority: -5,
        state: JobState::pending(n.is_multiple_of(2)),
        submit_time: 10,
        start_time: queue.map(|_| 20),
        queue: queue.map(str::to_string),
        slots: 4,
        tasks: if n > 1 { "1-9:2".into() } else { String::new() },
        hard_resources: (0..res)
            .map(|r| (format!("attr{r}"), format!("{r}G")))
            .collect(),
        hold_jids: (0..res).map(|r| r.to_string()).collect(),
        is_array: n > 1,
        restarted: n == 3,
        prio: 50_000,
    };
    let views: Vec<JobView> = (0..200)
        .map(|n| view(n, (n % 3 == 0).then_some("all.q@h1"), n as usize % 3))
        .collect();
    let bytes = encode(&FromMaster::Jobs(views.clone())).unwrap();
    let Ok(Ok(rows)) = decode_jobs_answer(&bytes) else {
        panic!("not a listing");
    };
    let rows: Vec<JobViewRef<'_>> = rows.collect::<Result<_, _>>().unwrap();
    assert_eq!(rows.len(), views.len());
    // Cut short: the row cut is an error, the rows before it are whole.
    let Ok(Ok(cut)) = decode_jobs_answer(&bytes[..bytes.len() - 3]) else {
        panic!("not a listing");
    };
    let decoded: Vec<_> = cut.collect();
    assert_eq!(decoded.len(), views.len());
    assert!(decoded[..views.len() - 1].iter().all(Result::is_ok));
    assert!(decoded[views.len() - 1].is_err());
    for (row, view) in rows.iter().zip(&views) {
        assert_eq!(
            (row.job_id, row.name, row.owner, row.priority, row.state),
            (
                view.job_id,
                view.name.as_str(),
                view.owner.as_str(),
                view.priority,
                view.state
            )
        );
        assert_eq!(
            (row.submit_time, row.start_time, row.slots, row.tasks),
            (
                view.submit_time,
                view.start_time,
                view.slots,
                view.tasks.as_str()
            )
        );
        assert_eq!(
            (row.is_array, row.restarted),
            (view.is_array, view.restarted)
        );
        assert_eq!(row.queue, view.queue.as_deref());
        let pairs: Vec<(&str, &str)> = view
            .hard_resources
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(row.hard_resources, pairs);
        assert_eq!(
            row.hold_jids,
            view.hold_jids
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        );
        assert_eq!(row.state_letters(), view.state_letters());
    }
    let refused = FromMaster::Refused(Refusal {
        kind: RefusalKind::Denied,
        message: "no".into(),
    });
    match decode_jobs_answer(&encode(&refused).unwrap()) {
        Ok(Err(answer)) => assert_eq!(answer, refused),
        other => panic!("{other:?}"),
    }
}

/// A listing encoded row by row is the listing encoded whole, however many rows
/// (the list's length takes one byte up to 127, more after).
#[test]
fn jobs_encoded_row_by_row_are_the_jobs_answer() {
    for count in [0usize, 1, 127, 128, 300] {
        let rows: Vec<JobRow<'_>> = (0..count)
            .map(|n| JobRow {
                job_id: JobId(n as u64 + 1),
                name: "job",
                owner: "user1",
                priority: 0,
                state: JobState::Running,
                submit_time: 10,
                start_time: Some(20),
                queue: Some(QueueAt {
                    queue: "all.q",
                    host: "h1",
                }),
                slots: 1,
                tasks: RowTasks::One(TaskId(n as u32)),
                hard_resources: &[],
                hold_jids: &[],
                is_array: true,
                restarted: false,
                prio: 0,
            })
            .collect();
        let mut encoded = Vec::new();
        for row in &rows {
            encoded = encode_job_row(row, encoded).unwrap();
        }
        let whole = FromMaster::Jobs(rows.iter().map(JobRow::to_view).collect());
        assert_eq!(
            encode_jobs_answer(count, &encoded).unwrap(),
            encode(&whole).unwrap(),
            "{count} rows"
        );
    }
}

/// A listing of lines encoded line by line is the message with the lines made
/// first, whatever their count (the count's varint grows), and decodes to them; an
/// answer cut short ends with an error after the whole lines before the cut.
#[test]
fn job_lines_encoded_one_by_one_are_the_message() {
    for count in [0usize, 1, 2, 127, 128, 300] {
        let lines: Vec<JobLine> = (0..count)
            .map(|n| JobLine {
                state: match n % 3 {
                    0 => JobState::Running,
                    1 => JobState::pending(true),
                    _ => JobState::pending(false),
                },
                head: format!("{n:>7} 0.50000 sleep      user1        r     "),
                when: 1_700_000_000 + n as i64,
                tail: format!(" all.q@h{n:<24}     1 {n}\n"),
            })
            .collect();
        let mut encoded = Vec::new();
        for l in &lines {
            let out = JobLineOut {
                state: l.state,
                head: &l.head,
                when: l.when,
                tail: &l.tail,
            };
            encoded = encode_job_line(&out, encoded).unwrap();
        }
        let answer = encode_job_lines_answer(count, &encoded).unwrap();
        assert_eq!(
            answer,
            encode(&FromMaster::JobLines(lines.clone())).unwrap()
        );
        let Ok(Ok(read)) = decode_job_lines_answer(&answer) else {
            panic!("not a listing of lines");
        };
        let read: Vec<JobLineRef<'_>> = read.collect::<Result<_, _>>().unwrap();
        assert_eq!(read.len(), count);
        for (r, l) in read.iter().zip(&lines) {
            assert_eq!(
                (r.state, r.head, r.when, r.tail),
                (l.state, l.head.as_bytes(), l.when, l.tail.as_bytes())
            );
        }
        if count > 0 {
            let Ok(Ok(cut)) = decode_job_lines_answer(&answer[..answer.len() - 1]) else {
                panic!("not a listing of lines");
            };
            let cut: Vec<_> = cut.collect();
            assert_eq!(cut.len(), count);
            assert!(cut[count - 1].is_err() && cut[..count - 1].iter().all(Result::is_ok));
        }
        // Another answer is decoded whole.
        let refused = encode(&FromMaster::Names(vec!["x".into()])).unwrap();
        assert!(matches!(
            decode_job_lines_answer(&refused),
            Ok(Err(FromMaster::Names(_)))
        ));
    }
}
