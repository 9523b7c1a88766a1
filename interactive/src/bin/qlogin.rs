fn main() {
    std::process::exit(gantry_interactive::main(
        gantry_proto::InteractiveKind::Qlogin,
    ));
}
