//! HTTP/3 frames and stream types (RFC 9114 §6–7): the constants, the
//! frames the client writes (its control stream's SETTINGS, a request's
//! HEADERS and DATA; the built-in server writes the same for its
//! responses) and the frame header it reads.
//!
//! Owns the wire layout. Must not hold stream or connection state
//! ([`super::response`] and [`super::conn`] do).

use super::varint;

pub(crate) const DATA: u64 = 0x0;
pub(crate) const HEADERS: u64 = 0x1;
pub(crate) const CANCEL_PUSH: u64 = 0x3;
pub(crate) const SETTINGS: u64 = 0x4;
pub(crate) const PUSH_PROMISE: u64 = 0x5;
pub(crate) const GOAWAY: u64 = 0x7;
pub(crate) const MAX_PUSH_ID: u64 = 0xd;

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub(crate) const STREAM_CONTROL: u64 = 0x0;
pub(crate) const STREAM_PUSH: u64 = 0x1;
pub(crate) const STREAM_QPACK_ENCODER: u64 = 0x2;
pub(crate) const STREAM_QPACK_DECODER: u64 = 0x3;

/// SETTINGS identifiers the client sends or checks.
pub(crate) const SETTINGS_QPACK_MAX_TABLE_CAPACITY: u64 = 0x1;
pub(crate) const SETTINGS_QPACK_BLOCKED_STREAMS: u64 = 0x7;

/// Error codes (RFC 9114 §8.1, RFC 9204 §6).
pub(crate) const H3_NO_ERROR: u64 = 0x100;
pub(crate) const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
pub(crate) const H3_STREAM_CREATION_ERROR: u64 = 0x103;
pub(crate) const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub(crate) const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub(crate) const H3_FRAME_ERROR: u64 = 0x106;
pub(crate) const H3_EXCESSIVE_LOAD: u64 = 0x107;
pub(crate) const H3_ID_ERROR: u64 = 0x108;
pub(crate) const H3_SETTINGS_ERROR: u64 = 0x109;
pub(crate) const H3_MISSING_SETTINGS: u64 = 0x10a;
pub(crate) const H3_REQUEST_CANCELLED: u64 = 0x10c;
pub(crate) const H3_MESSAGE_ERROR: u64 = 0x10e;
pub(crate) const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
pub(crate) const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;

/// The name of an HTTP/3 or QPACK error code, for failure reasons.
pub(crate) fn error_name(code: u64) -> String {
    let name = match code {
        H3_NO_ERROR => "H3_NO_ERROR",
        H3_GENERAL_PROTOCOL_ERROR => "H3_GENERAL_PROTOCOL_ERROR",
        0x102 => "H3_INTERNAL_ERROR",
        H3_STREAM_CREATION_ERROR => "H3_STREAM_CREATION_ERROR",
        H3_CLOSED_CRITICAL_STREAM => "H3_CLOSED_CRITICAL_STREAM",
        H3_FRAME_UNEXPECTED => "H3_FRAME_UNEXPECTED",
        H3_FRAME_ERROR => "H3_FRAME_ERROR",
        H3_EXCESSIVE_LOAD => "H3_EXCESSIVE_LOAD",
        H3_ID_ERROR => "H3_ID_ERROR",
        H3_SETTINGS_ERROR => "H3_SETTINGS_ERROR",
        H3_MISSING_SETTINGS => "H3_MISSING_SETTINGS",
        0x10b => "H3_REQUEST_REJECTED",
        H3_REQUEST_CANCELLED => "H3_REQUEST_CANCELLED",
        0x10d => "H3_REQUEST_INCOMPLETE",
        H3_MESSAGE_ERROR => "H3_MESSAGE_ERROR",
        0x10f => "H3_CONNECT_ERROR",
        0x110 => "H3_VERSION_FALLBACK",
        QPACK_DECOMPRESSION_FAILED => "QPACK_DECOMPRESSION_FAILED",
        QPACK_ENCODER_STREAM_ERROR => "QPACK_ENCODER_STREAM_ERROR",
        0x202 => "QPACK_DECODER_STREAM_ERROR",
        _ => return format!("0x{code:x}"),
    };
    name.to_owned()
}

/// HTTP/2 frame types HTTP/3 reserves: receiving one is H3_FRAME_UNEXPECTED (§7.2.8).
pub(crate) fn is_reserved_h2(kind: u64) -> bool {
    matches!(kind, 0x2 | 0x6 | 0x8 | 0x9)
}

/// A frame header: its type and payload length, and the header's own length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub kind: u64,
    pub len: u64,
    pub size: usize,
}

/// The frame header at the start of `b`; `None` while it is cut short.
pub(crate) fn head(b: &[u8]) -> Option<Head> {
    let (kind, a) = varint::read(b)?;
    let (len, c) = varint::read(&b[a..])?;
    Some(Head {
        kind,
        len,
        size: a + c,
    })
}

/// Append a frame header.
pub(crate) fn write_head(out: &mut Vec<u8>, kind: u64, len: usize) {
    varint::write(out, kind);
    varint::write(out, len as u64);
}

/// The client's control stream opening: its type, then SETTINGS with a
/// QPACK dynamic table of 0 bytes and no blocked streams (the client
/// decodes static-table and literal fields only, see [`super::qpack`]).
pub(crate) fn control_stream() -> Vec<u8> {
    let mut settings = Vec::new();
    for (id, v) in [
        (SETTINGS_QPACK_MAX_TABLE_CAPACITY, 0),
        (SETTINGS_QPACK_BLOCKED_STREAMS, 0),
    ] {
        varint::write(&mut settings, id);
        varint::write(&mut settings, v);
    }
    let mut out = Vec::with_capacity(settings.len() + 3);
    varint::write(&mut out, STREAM_CONTROL);
    write_head(&mut out, SETTINGS, settings.len());
    out.extend_from_slice(&settings);
    out
}

/// One message's bytes on its stream (a request's, or the built-in
/// server's response): HEADERS with `block`, then DATA with `body` when it
/// has one; only the DATA frame's head when `apart` (the body is then
/// written after these bytes from its one shared copy).
pub(crate) fn message(block: &[u8], body: &[u8], apart: bool) -> Vec<u8> {
    let held = if apart { 0 } else { body.len() };
    let mut out = Vec::with_capacity(block.len() + held + 16);
    write_head(&mut out, HEADERS, block.len());
    out.extend_from_slice(block);
    if !body.is_empty() {
        write_head(&mut out, DATA, body.len());
        out.extend_from_slice(&body[..held]);
    }
    out
}

/// The settings in a SETTINGS payload, in order; `Err` (with the error
/// code) for a malformed payload or an HTTP/2 setting HTTP/3 forbids.
pub(crate) fn settings(mut p: &[u8]) -> Result<Vec<(u64, u64)>, u64> {
    let mut all = Vec::new();
    while !p.is_empty() {
        let (id, a) = varint::read(p).ok_or(H3_FRAME_ERROR)?;
        let (v, b) = varint::read(&p[a..]).ok_or(H3_FRAME_ERROR)?;
        // RFC 9114 §7.2.4.1: HTTP/2's 0x02..0x05 have no meaning here.
        if (0x2..=0x5).contains(&id) {
            return Err(H3_SETTINGS_ERROR);
        }
        if all.iter().any(|&(seen, _)| seen == id) {
            return Err(H3_SETTINGS_ERROR);
        }
        all.push((id, v));
        p = &p[a + b..];
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_stream_opens_with_settings_of_a_zero_table() {
        let b = control_stream();
        assert_eq!(b[0], 0x00, "stream type: control");
        let h = head(&b[1..]).unwrap();
        assert_eq!((h.kind, h.len), (SETTINGS, 4));
        let payload = &b[1 + h.size..];
        assert_eq!(settings(payload).unwrap(), vec![(0x1, 0), (0x7, 0)]);
    }

    #[test]
    fn a_message_is_headers_then_data() {
        let b = message(b"abc", b"hello", false);
        assert_eq!(
            b,
            [&[0x01, 0x03][..], b"abc", &[0x00, 0x05], b"hello"].concat()
        );
        // Sent apart: the DATA frame's head, the body written after it.
        let head = message(b"abc", b"hello", true);
        assert_eq!(head, [&[0x01, 0x03][..], b"abc", &[0x00, 0x05]].concat());
        assert_eq!(
            message(b"abc", b"", false),
            [&[0x01, 0x03][..], b"abc"].concat()
        );
    }

    #[test]
    fn http2_settings_and_repeats_are_refused() {
        assert_eq!(settings(&[0x02, 0x00]), Err(H3_SETTINGS_ERROR));
        assert_eq!(settings(&[0x06, 0x01, 0x06, 0x02]), Err(H3_SETTINGS_ERROR));
        assert_eq!(settings(&[0x06]), Err(H3_FRAME_ERROR));
        // Unknown (e.g. reserved 0x1f*N+0x21) settings are kept, to be ignored.
        assert_eq!(settings(&[0x21, 0x00]).unwrap(), vec![(0x21, 0)]);
    }
}
