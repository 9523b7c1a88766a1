//! Byte buffers (de)serialized as bytes, not as a sequence of numbers: the same
//! postcard encoding (a length, then the bytes), written and read with one copy rather
//! than a call per byte (a session's output went through serde byte by byte: a fifth of
//! a `qrsh cat`'s CPU). For `#[serde(with = "crate::bytes")]` on a `Vec<u8>`.

use serde::{Deserializer, Serializer};

pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(bytes)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    struct Bytes;
    impl<'de> serde::de::Visitor<'de> for Bytes {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("bytes")
        }
        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }
        fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
            while let Some(b) = seq.next_element()? {
                out.push(b);
            }
            Ok(out)
        }
    }
    d.deserialize_byte_buf(Bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::SessionFrame;

    /// The encoding is a `Vec<u8>`'s as serde's default writes it: the wire is the same.
    #[test]
    fn session_bytes_encode_as_a_sequence_of_u8_does() {
        #[derive(serde::Serialize)]
        enum Plain {
            _Stdin(Vec<u8>),
            _StdinClosed,
            Stdout(Vec<u8>),
        }
        let data: Vec<u8> = (0..=255).collect();
        let ours = crate::encode(&SessionFrame::Stdout(data.clone())).unwrap();
        assert_eq!(ours, crate::encode(&Plain::Stdout(data.clone())).unwrap());
        assert_eq!(
            crate::decode::<SessionFrame>(&ours).unwrap(),
            SessionFrame::Stdout(data)
        );
        assert_eq!(
            crate::encode(&SessionFrame::Stdin(vec![7, 8])).unwrap(),
            [0, 2, 7, 8]
        );
    }
}
