fn main() -> std::process::ExitCode {
    gantry_client::alter::qrls(&gantry_client::args()).emit()
}
