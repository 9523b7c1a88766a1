#![cfg_attr(not(test), no_main)]
gantry_client::command_main!(gantry_client::share_mon::share_mon);
