//! Fuzz qsub's reading of a submission (`client/src/qsub.rs`, as the HTTP API calls it:
//! no file read, no defaults file): the input is the options as words (split at NUL
//! bytes) up to the first 0xFF byte, then the script, whose `#$` lines are read as qsub
//! reads them. It returns a job or SGE's refusal for any input, never panics.
//!
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run -s none qsub_options /tmp/c fuzz/corpus/qsub_options`

#![no_main]

use gantry_client::qsub::{remote_spec, Origin};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (words, script) = match data.iter().position(|&b| b == 0xff) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let args: Vec<String> = words
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    let origin = Origin {
        home: "/home/fuzz".to_string(),
        logname: "fuzz".to_string(),
        host: "node1".to_string(),
    };
    let _ = remote_spec(&args, script, &origin);
});
