//! `gantry-shepherd DIR`: the supervisor of one job task, started by the execd. A small
//! binary of its own, so that starting one per task costs as little as possible.

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: gantry-shepherd JOB_DIR (started by gantry-execd)");
        std::process::exit(2);
    };
    std::process::exit(gantry_execd::shepherd::run(std::path::Path::new(&dir)));
}
