use super::*;

/// SGE's numbers (`sge_shepherd`'s states), and which failures leave the queue
/// instance alone.
#[test]
fn shepherd_failures_carry_sge_numbers() {
    // (failure, code, job in error, queue instance in error, task runs again after it)
    let table = [
        (ShepherdFailure::BeforeJob, 1, false, true, true),
        (ShepherdFailure::OpenOutput, 26, true, false, false),
        (ShepherdFailure::NoShell, 27, true, false, false),
        (ShepherdFailure::NoCwd, 28, true, false, false),
        (ShepherdFailure::Migrate, 24, false, false, false),
        (ShepherdFailure::EnforcedLimit, 37, false, false, false),
        (ShepherdFailure::AfterJob, 100, false, false, false),
        (ShepherdFailure::BeforeProlog, 7, false, true, true),
        (ShepherdFailure::InProlog, 8, false, true, true),
        (ShepherdFailure::BeforePeStart, 9, false, true, true),
        (ShepherdFailure::InPeStart, 10, false, true, true),
        (ShepherdFailure::BeforePeStop, 12, false, true, false),
        (ShepherdFailure::InPeStop, 13, false, true, false),
        (ShepherdFailure::BeforeEpilog, 14, false, true, true),
        (ShepherdFailure::InEpilog, 15, false, true, true),
        (ShepherdFailure::Reschedule, 25, false, false, false),
        (ShepherdFailure::ApplicationError, 30, true, false, false),
    ];
    assert_eq!(table.len(), ShepherdFailure::ALL.len());
    for (failure, code, job_error, queue_error, again) in table {
        assert_eq!(failure.code(), code);
        assert_ne!(failure.description(), "invalid execution state");
        assert_eq!(ShepherdFailure::from_code(code), Some(failure));
        assert_eq!(failure.is_job_error(), job_error, "{failure:?}");
        assert_eq!(failure.is_queue_error(), queue_error, "{failure:?}");
        assert_eq!(failure.runs_again(), again, "{failure:?}");
    }
    assert_eq!(ShepherdFailure::from_code(0), None);
    assert_eq!(ShepherdFailure::from_code(17), None);
}

/// `failed` as SGE 8.1.9's qacct names it (`execution_states.c`, and the reference
/// output for 37).
#[test]
fn failure_codes_read_as_sges() {
    let table = [
        (0, ""),
        (19, "before writing exit_status"),
        (24, "migrating"),
        (25, "rescheduling"),
        (8, "in prolog"),
        (13, "in pestop"),
        (30, "application error returned"),
        (37, "qmaster enforced h_rt, h_cpu, or h_vmem limit"),
        (100, "assumedly after job"),
        (99, "invalid execution state"),
    ];
    for (code, text) in table {
        assert_eq!(failure_description(code), text, "{code}");
    }
}
