//! Framing of an interactive session's [`SessionFrame`]s over any blocking stream
//! (`qrsh` and the task's shepherd write and read them; the daemons between them only
//! copy bytes): a 4-byte big-endian length, then postcard, as every Gantry frame.

use std::io::{Read, Write};

use gantry_proto::frame::{length_prefix, payload_len};

/// What one read of a stream gives at most, and so a frame's payload.
pub const CHUNK: usize = 64 * 1024;

/// The largest frame a session carries: a chunk and room for its encoding.
pub const MAX_FRAME: usize = 2 * CHUNK;

/// Write one frame (in one write, so that frames from several threads sharing a
/// locked stream never interleave).
pub fn write_frame<T: serde::Serialize>(w: &mut impl Write, frame: &T) -> std::io::Result<()> {
    // Encoded after room for its length, which is filled in: one copy of the bytes.
    let mut out = Vec::with_capacity(CHUNK + 16);
    out.extend_from_slice(&[0; 4]);
    let mut out = gantry_proto::encode_after(frame, out).map_err(std::io::Error::other)?;
    let len = out.len() - 4;
    out[..4].copy_from_slice(&length_prefix(len));
    w.write_all(&out)
}

/// Read one frame of at most `max` bytes; `None` at the end of the stream.
pub fn read_frame<T: serde::de::DeserializeOwned>(
    r: &mut impl Read,
    max: usize,
) -> std::io::Result<Option<T>> {
    let mut prefix = [0u8; 4];
    match r.read_exact(&mut prefix) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = payload_len(prefix).map_err(std::io::Error::other)?;
    if len > max {
        return Err(std::io::Error::other(format!(
            "a session frame of {len} bytes, more than {max}"
        )));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    gantry_proto::decode(&body)
        .map(Some)
        .map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_proto::SessionFrame;

    #[test]
    fn frames_go_and_come_back_and_a_cut_stream_ends() {
        let frames = [
            SessionFrame::Stdin(b"echo hi\n".to_vec()),
            SessionFrame::StdinClosed,
            SessionFrame::Stdout(vec![0; CHUNK]),
            SessionFrame::Stderr(b"oops".to_vec()),
            SessionFrame::WindowSize { rows: 24, cols: 80 },
            SessionFrame::Signal(2),
            SessionFrame::Exit { status: 130 },
            SessionFrame::Failed("why".into()),
        ];
        let mut bytes = Vec::new();
        for f in &frames {
            write_frame(&mut bytes, f).unwrap();
        }
        let mut r = &bytes[..];
        for f in &frames {
            assert_eq!(
                read_frame::<SessionFrame>(&mut r, MAX_FRAME)
                    .unwrap()
                    .as_ref(),
                Some(f)
            );
        }
        assert_eq!(read_frame::<SessionFrame>(&mut r, MAX_FRAME).unwrap(), None);
        // A frame larger than allowed is refused, not read.
        let mut big = Vec::new();
        write_frame(&mut big, &SessionFrame::Stdout(vec![1; 100])).unwrap();
        assert!(read_frame::<SessionFrame>(&mut &big[..], 50).is_err());
        // Cut inside a frame: an error, not a frame.
        assert!(read_frame::<SessionFrame>(&mut &bytes[..6], MAX_FRAME).is_err());
    }
}
