//! Fuzz the resource quota set language (`common/src/rqs.rs`).
//!
//! For any input, `parse_sets` must return (never panic). For every set it accepts:
//! - `print_set` is canonical: parsing the printed set gives back exactly that set, and
//!   printing it again gives the same text;
//! - `check_set` against the default complexes returns (never panics), and
//!   `parse_dynamic` on every limit value returns.
//!
//! Run from the repository root, new inputs going to a scratch corpus (as `.ci/run` does):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run -s none rqs_parse /tmp/rqs-corpus fuzz/corpus/rqs_parse -- -dict=fuzz/rqs.dict`

#![no_main]

use std::sync::OnceLock;

use gantry_common::complex::default_complexes;
use gantry_common::rqs::{check_set, parse_dynamic, parse_sets, print_set};
use gantry_proto::ComplexAttr;
use libfuzzer_sys::fuzz_target;

fn complexes() -> &'static [ComplexAttr] {
    static C: OnceLock<Vec<ComplexAttr>> = OnceLock::new();
    C.get_or_init(default_complexes)
}

fuzz_target!(|data: &[u8]| {
    // Lossy, so that every input reaches the parser (invalid bytes become U+FFFD).
    let text = String::from_utf8_lossy(data);
    let Ok(sets) = parse_sets(&text) else {
        return;
    };
    for s in &sets {
        let _ = check_set(s, complexes());
        for r in &s.rules {
            for l in &r.limits {
                let _ = parse_dynamic(&l.value);
            }
        }
        let printed = print_set(s);
        match parse_sets(&printed) {
            Ok(again) => {
                assert_eq!(
                    again.as_slice(),
                    std::slice::from_ref(s),
                    "round trip changed the set\ninput: {text:?}\nprinted: {printed:?}"
                );
                assert_eq!(print_set(&again[0]), printed, "printing is not stable");
            }
            Err(e) => {
                panic!("the printed set is refused: {e}\ninput: {text:?}\nprinted: {printed:?}")
            }
        }
    }
});
