//! Why a task could not be started or did not end as a job ends: SGE's failure codes.

/// SGE's failure codes (`failed` in `qacct`, the shepherd's state) that Gantry reports:
/// stated by the shepherd and the execd, acted on by the master. A report carries the
/// number, 0 when the task could be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShepherdFailure {
    /// 1, "assumedly before job": the host could not set the task up (the owner unknown
    /// there, no TMPDIR, no control group). The queue instance goes into error state
    /// and the task back to pending.
    BeforeJob,
    /// 26, "opening input/output file" (or taking the owner's identity to open them).
    OpenOutput,
    /// 27, "searching requested shell": the job's command could not be started, or not
    /// waited for.
    NoShell,
    /// 28, "changing into working directory".
    NoCwd,
    /// 24, "migrating": a checkpointing job was stopped to run again (suspended with
    /// `when` x, or its execd shut down with `when` s); it goes back to pending.
    Migrate,
    /// 37: the job was killed at its `h_rt` limit.
    EnforcedLimit,
    /// 100, "assumedly after job": the shepherd ended without a report.
    AfterJob,
    /// 7, 9, 12, 14: "before prolog", "before pestart", "before pestop", "before
    /// epilog": the procedure's command line could not be made (an unknown variable, an
    /// unknown user): the queue instance goes into error state.
    BeforeProlog,
    BeforePeStart,
    BeforePeStop,
    BeforeEpilog,
    /// 8, 10, 13, 15: "in prolog", ...: the procedure could not be started or ended with
    /// a status other than 0, 99 and 100: the queue instance goes into error state, the
    /// task back to pending (after a parallel environment's stop procedure, the job
    /// has run: it ends).
    InProlog,
    InPeStart,
    InPeStop,
    InEpilog,
    /// 25, "rescheduling": a procedure ended with 99: the task runs again.
    Reschedule,
    /// 30, "application error returned": a procedure ended with 100: the task waits
    /// in error state.
    ApplicationError,
}

impl ShepherdFailure {
    pub const ALL: [ShepherdFailure; 17] = [
        ShepherdFailure::BeforeJob,
        ShepherdFailure::OpenOutput,
        ShepherdFailure::NoShell,
        ShepherdFailure::NoCwd,
        ShepherdFailure::Migrate,
        ShepherdFailure::EnforcedLimit,
        ShepherdFailure::AfterJob,
        ShepherdFailure::BeforeProlog,
        ShepherdFailure::BeforePeStart,
        ShepherdFailure::BeforePeStop,
        ShepherdFailure::BeforeEpilog,
        ShepherdFailure::InProlog,
        ShepherdFailure::InPeStart,
        ShepherdFailure::InPeStop,
        ShepherdFailure::InEpilog,
        ShepherdFailure::Reschedule,
        ShepherdFailure::ApplicationError,
    ];

    /// The number in reports and accounting records.
    pub const fn code(self) -> u32 {
        match self {
            ShepherdFailure::BeforeJob => 1,
            ShepherdFailure::OpenOutput => 26,
            ShepherdFailure::NoShell => 27,
            ShepherdFailure::NoCwd => 28,
            ShepherdFailure::Migrate => 24,
            ShepherdFailure::EnforcedLimit => 37,
            ShepherdFailure::AfterJob => 100,
            ShepherdFailure::BeforeProlog => 7,
            ShepherdFailure::InProlog => 8,
            ShepherdFailure::BeforePeStart => 9,
            ShepherdFailure::InPeStart => 10,
            ShepherdFailure::BeforePeStop => 12,
            ShepherdFailure::InPeStop => 13,
            ShepherdFailure::BeforeEpilog => 14,
            ShepherdFailure::InEpilog => 15,
            ShepherdFailure::Reschedule => 25,
            ShepherdFailure::ApplicationError => 30,
        }
    }

    /// The failure a report's number states (None: 0, or a code Gantry does not give).
    pub fn from_code(code: u32) -> Option<ShepherdFailure> {
        ShepherdFailure::ALL.into_iter().find(|f| f.code() == code)
    }

    /// How SGE describes the state the shepherd failed in (`failed ... because:` in
    /// an abort mail).
    pub fn description(self) -> &'static str {
        failure_description(self.code())
    }

    /// The job itself could not be started (its output files, its command, its working
    /// directory): it waits in error state (`Eqw`); the queue instance is not at fault.
    pub fn is_job_error(self) -> bool {
        matches!(
            self,
            ShepherdFailure::OpenOutput
                | ShepherdFailure::NoShell
                | ShepherdFailure::NoCwd
                | ShepherdFailure::ApplicationError
        )
    }

    /// The host could not run the task (its setup or one of its procedures failed):
    /// the queue instance goes into error state (`E`), as SGE's does.
    pub fn is_queue_error(self) -> bool {
        matches!(
            self,
            ShepherdFailure::BeforeJob
                | ShepherdFailure::BeforeProlog
                | ShepherdFailure::InProlog
                | ShepherdFailure::BeforePeStart
                | ShepherdFailure::InPeStart
                | ShepherdFailure::BeforePeStop
                | ShepherdFailure::InPeStop
                | ShepherdFailure::BeforeEpilog
                | ShepherdFailure::InEpilog
        )
    }

    /// After a queue error the task runs again elsewhere, unless the job had run
    /// whole (a parallel environment's stop procedure failed).
    pub fn runs_again(self) -> bool {
        self.is_queue_error()
            && !matches!(
                self,
                ShepherdFailure::BeforePeStop | ShepherdFailure::InPeStop
            )
    }
}

/// How SGE 8.1.9 names each of its failure codes (`failed` in `qacct`, the reason in an
/// abort mail): every code an accounting record may carry, Gantry's or an imported
/// SGE record's.
pub fn failure_description(code: u32) -> &'static str {
    match code {
        0 => "",
        1 => "assumedly before job",
        3 => "before writing config",
        4 => "before writing pid",
        5 => "on reading config file",
        6 => "setting processor set",
        7 => "before prolog",
        8 => "in prolog",
        9 => "before pestart",
        10 => "in pestart",
        11 => "before job",
        12 => "before pestop",
        13 => "in pestop",
        14 => "before epilog",
        15 => "in epilog",
        16 => "releasing processor set",
        17 => "through signal",
        18 => "shepherd returned error",
        19 => "before writing exit_status",
        20 => "found unexpected error file",
        21 => "in recognizing job",
        22 => "removed manually",
        24 => "migrating",
        25 => "rescheduling",
        26 => "opening input/output file",
        27 => "searching requested shell",
        28 => "changing into working directory",
        30 => "application error returned",
        31 => "accessing sgepasswd file",
        32 => "entry is missing in password file",
        33 => "wrong password",
        34 => "communicating with Sun Grid Engine Helper Service",
        35 => "before job in Sun Grid Engine Helper Service",
        36 => "checking configured daemons",
        37 => "qmaster enforced h_rt, h_cpu, or h_vmem limit",
        100 => "assumedly after job",
        _ => "invalid execution state",
    }
}
