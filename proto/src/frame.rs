//! Length-prefixed framing: a 4-byte big-endian length, then that many bytes of postcard.

/// The largest frame a peer accepts (16 MiB); a longer length prefix is refused before
/// anything is allocated.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

/// The length prefix of a frame of `len` bytes.
pub fn length_prefix(len: usize) -> [u8; 4] {
    (len as u32).to_be_bytes()
}

/// The payload length announced by a prefix, or an error if it exceeds [`MAX_FRAME`].
pub fn payload_len(prefix: [u8; 4]) -> Result<usize, crate::ProtoError> {
    let len = u32::from_be_bytes(prefix) as usize;
    if len > MAX_FRAME {
        return Err(crate::ProtoError::FrameTooLarge(len, MAX_FRAME));
    }
    Ok(len)
}
