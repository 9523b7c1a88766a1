fn main() -> std::process::ExitCode {
    gantry_client::alter::qmod(&gantry_client::args()).emit()
}
