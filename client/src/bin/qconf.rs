fn main() -> std::process::ExitCode {
    gantry_client::qconf::run(&gantry_client::args()).emit()
}
