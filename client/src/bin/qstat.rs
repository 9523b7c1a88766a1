fn main() -> std::process::ExitCode {
    gantry_client::jobs_cmds::qstat(&gantry_client::args()).emit()
}
