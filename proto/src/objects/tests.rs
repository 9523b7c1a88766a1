use super::*;

/// SGE's numbers (`sge_shepherd`'s states), and which failures leave the queue
/// instance alone.
#[test]
fn shepherd_failures_carry_sge_numbers() {
    let table = [
        (ShepherdFailure::BeforeJob, 1, false),
        (ShepherdFailure::OpenOutput, 26, true),
        (ShepherdFailure::NoShell, 27, true),
        (ShepherdFailure::NoCwd, 28, true),
        (ShepherdFailure::Migrate, 24, false),
        (ShepherdFailure::EnforcedLimit, 37, false),
        (ShepherdFailure::AfterJob, 100, false),
    ];
    for (failure, code, job_error) in table {
        assert_eq!(failure.code(), code);
        assert_ne!(failure.description(), "invalid execution state");
        assert_eq!(ShepherdFailure::from_code(code), Some(failure));
        assert_eq!(failure.is_job_error(), job_error);
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
        (37, "qmaster enforced h_rt, h_cpu, or h_vmem limit"),
        (100, "assumedly after job"),
        (99, "invalid execution state"),
    ];
    for (code, text) in table {
        assert_eq!(failure_description(code), text, "{code}");
    }
}
