//! Fuzz every object file format `qconf -A*`/`-M*` reads (`common/src/*.rs`): the first
//! byte picks the format, the rest is the file. For any input each reader returns
//! (never panics), and where the object has a printer, reading what it prints returns
//! too. (That the printed file reads back as the same object is not asserted yet: a
//! list element ending in a backslash, `a \,`, prints as a line that continues into the
//! next; see the closing note of 2026-12-04.)
//!
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run -s none object_files /tmp/c fuzz/corpus/object_files`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    use gantry_common::*;
    match kind % 13 {
        0 => {
            if let Ok(q) = queue::parse_queue(&text) {
                let _ = queue::parse_queue(&queue::print_queue(&q));
            }
        }
        1 => {
            if let Ok(p) = pe::parse_pe(&text) {
                let _ = pe::parse_pe(&pe::print_pe(&p));
            }
        }
        2 => {
            let _ = exechost::parse_exechost(&text);
        }
        3 => {
            let _ = hostgroup::parse_hostgroup(&text);
        }
        4 => {
            let _ = userset::parse_userset(&text);
        }
        5 => {
            let _ = project::parse_project(&text);
        }
        6 => {
            let _ = user::parse_user(&text);
        }
        7 => {
            let _ = ckpt::parse_ckpt(&text);
        }
        8 => {
            if let Ok(c) = config::parse_config("global", &text) {
                let _ = config::parse_config("global", &config::print_config(&c));
            }
        }
        9 => {
            let _ = schedconf::parse_schedconf(&text);
        }
        10 => {
            let _ = sharetree::parse_share_tree(&text);
        }
        11 => {
            let _ = groups::parse_groups(&text);
        }
        _ => {
            if let Ok(list) = complex::read_complexes(&text) {
                let _ = complex::check_complexes(&list, &complex::default_complexes());
            }
        }
    }
});
