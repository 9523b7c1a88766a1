//! Fuzz the wire messages' decoding (postcard, `proto/src/lib.rs`): the first byte picks
//! the message type, the rest is a frame's body as a peer could send it. Decoding
//! returns (never panics); a message that decodes encodes to bytes that decode to a
//! message encoding to those same bytes (compared as bytes: a float may be NaN).
//!
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run -s none wire_frames /tmp/c fuzz/corpus/wire_frames`

#![no_main]

use gantry_proto::{decode, encode, FromExecd, FromMaster, ToExecd, ToMaster};
use libfuzzer_sys::fuzz_target;
use serde::{de::DeserializeOwned, Serialize};

fn round_trip<T: Serialize + DeserializeOwned + std::fmt::Debug>(bytes: &[u8]) {
    let Ok(msg) = decode::<T>(bytes) else {
        return;
    };
    let encoded = encode(&msg).expect("a decoded message encodes");
    let again: T = decode(&encoded).expect("an encoded message decodes");
    let twice = encode(&again).expect("a decoded message encodes");
    assert_eq!(twice, encoded, "the round trip changed the message: {msg:?} -> {again:?}");
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    match kind % 4 {
        0 => round_trip::<ToMaster>(rest),
        1 => round_trip::<FromMaster>(rest),
        2 => round_trip::<FromExecd>(rest),
        _ => round_trip::<ToExecd>(rest),
    }
});
