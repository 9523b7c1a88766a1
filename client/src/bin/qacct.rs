fn main() -> std::process::ExitCode {
    gantry_client::jobs_cmds::qacct(&gantry_client::args()).emit()
}
