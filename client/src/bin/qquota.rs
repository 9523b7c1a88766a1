fn main() -> std::process::ExitCode {
    gantry_client::qquota::run(&gantry_client::args()).emit()
}
