#![cfg_attr(not(test), no_main)]
gantry_client::command_main!(gantry_client::jobs_cmds::qacct);
