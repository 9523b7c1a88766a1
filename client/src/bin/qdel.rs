fn main() -> std::process::ExitCode {
    gantry_client::jobs_cmds::qdel(&gantry_client::args()).emit()
}
