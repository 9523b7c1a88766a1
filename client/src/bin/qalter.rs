fn main() -> std::process::ExitCode {
    gantry_client::alter::qalter(&gantry_client::args()).emit()
}
