fn main() -> std::process::ExitCode {
    gantry_client::qsub::run(&gantry_client::args()).emit()
}
