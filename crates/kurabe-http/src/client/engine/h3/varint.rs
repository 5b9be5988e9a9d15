//! QUIC variable-length integers (RFC 9000 §16), as HTTP/3 frames and
//! stream types carry them.
//!
//! Owns reading and writing one varint. Must not know frames.

/// Largest value a varint holds (2^62 - 1).
pub(crate) const MAX: u64 = (1 << 62) - 1;

/// The varint at the start of `b` and its length; `None` while it is cut short.
pub(crate) fn read(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &x in &bytes[1..] {
        v = (v << 8) | u64::from(x);
    }
    Some((v, len))
}

/// Append `v` (at most [`MAX`]) in its shortest form.
pub(crate) fn write(out: &mut Vec<u8>, v: u64) {
    debug_assert!(v <= MAX, "a varint over 2^62-1");
    match v {
        0..=0x3f => out.push(v as u8),
        0x40..=0x3fff => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        0x4000..=0x3fff_ffff => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_examples_read_and_write_back() {
        // RFC 9000 §A.1.
        let cases: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, v) in cases {
            assert_eq!(read(bytes), Some((v, bytes.len())));
            let mut out = Vec::new();
            write(&mut out, v);
            assert_eq!(out, bytes);
        }
        // A two-byte encoding of 37 is legal too.
        assert_eq!(read(&[0x40, 0x25]), Some((37, 2)));
    }

    #[test]
    fn a_cut_varint_is_incomplete_not_wrong() {
        assert_eq!(read(&[]), None);
        assert_eq!(read(&[0x9d, 0x7f, 0x3e]), None);
    }

    #[test]
    fn every_boundary_round_trips() {
        for v in [0, 63, 64, 16_383, 16_384, (1 << 30) - 1, 1 << 30, MAX] {
            let mut out = Vec::new();
            write(&mut out, v);
            assert_eq!(read(&out), Some((v, out.len())));
        }
    }
}
