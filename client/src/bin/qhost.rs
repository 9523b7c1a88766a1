fn main() -> std::process::ExitCode {
    gantry_client::qhost::run(&gantry_client::args()).emit()
}
