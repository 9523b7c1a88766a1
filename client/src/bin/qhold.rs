fn main() -> std::process::ExitCode {
    gantry_client::alter::qhold(&gantry_client::args()).emit()
}
