//! Fuzz the value and date readers (`common/src/value.rs`, `dates.rs`, `path_list.rs`,
//! `binding.rs`, `pe.rs`, `context.rs`, `mail.rs`): the first byte picks the reader.
//! Each returns for any input; a time or a memory amount it accepts prints (as SGE
//! prints it) to a text it reads back within rounding.
//!
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run -s none values /tmp/c fuzz/corpus/values`

#![no_main]

use gantry_common::value;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match kind % 10 {
        0 => {
            if let Ok(t) = value::parse_time(&text) {
                if t.is_finite() && (0.0..1e12).contains(&t) {
                    let printed = value::format_time_hms(t);
                    let again = value::parse_time(&printed)
                        .unwrap_or_else(|e| panic!("{printed} refused: {e}"));
                    assert!((again - t.floor()).abs() < 1.0, "{text:?} -> {printed} -> {again}");
                }
            }
        }
        1 => {
            let _ = value::parse_memory(&text);
        }
        2 => {
            let _ = value::parse_int(&text);
            let _ = value::parse_double(&text);
            let _ = value::parse_bool(&text);
        }
        3 => {
            let now = jiff::Timestamp::from_second(1_764_806_400)
                .expect("a time")
                .to_zoned(jiff::tz::TimeZone::UTC);
            let _ = gantry_common::dates::parse_date_time(&text, now);
        }
        4 => {
            let _ = gantry_common::path_list::parse(&text);
        }
        5 => {
            let _ = gantry_common::binding::parse(&text);
        }
        6 => {
            let _ = gantry_common::pe::parse_slot_range(&text);
        }
        7 => {
            let _ = gantry_common::context::parse_pairs(&text);
            let _ = gantry_common::context::parse_names(&text);
        }
        8 => {
            let _ = gantry_common::mail::parse_options(&text);
            let _ = gantry_common::mail::parse_list(&text);
        }
        _ => {
            let _ = gantry_common::rqs::parse_rule(&text);
        }
    }
});
