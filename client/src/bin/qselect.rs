#![cfg_attr(not(test), no_main)]
gantry_client::command_main!(gantry_client::qselect::run);
