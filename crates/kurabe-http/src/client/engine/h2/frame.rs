//! HTTP/2 frames on the wire (RFC 9113 §4, §6): the 9-byte header, the
//! frames the client writes, and the names of error codes.
//!
//! Owns byte layout only. Must not know about streams, windows or requests.

/// Frame types the client reads or writes.
pub(crate) const DATA: u8 = 0;
pub(crate) const HEADERS: u8 = 1;
pub(crate) const RST_STREAM: u8 = 3;
pub(crate) const SETTINGS: u8 = 4;
pub(crate) const PUSH_PROMISE: u8 = 5;
pub(crate) const PING: u8 = 6;
pub(crate) const GOAWAY: u8 = 7;
pub(crate) const WINDOW_UPDATE: u8 = 8;
pub(crate) const CONTINUATION: u8 = 9;

/// Flags.
pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;
pub(crate) const PADDED: u8 = 0x8;
pub(crate) const PRIORITY: u8 = 0x20;

/// SETTINGS identifiers.
pub(crate) const SETTINGS_HEADER_TABLE_SIZE: u16 = 1;
pub(crate) const SETTINGS_ENABLE_PUSH: u16 = 2;
pub(crate) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 3;
pub(crate) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 4;
pub(crate) const SETTINGS_MAX_FRAME_SIZE: u16 = 5;

/// Error codes the client sends.
pub(crate) const PROTOCOL_ERROR: u32 = 1;
pub(crate) const FLOW_CONTROL_ERROR: u32 = 3;
pub(crate) const FRAME_SIZE_ERROR: u32 = 6;
pub(crate) const CANCEL: u32 = 8;
pub(crate) const COMPRESSION_ERROR: u32 = 9;

/// The client connection preface.
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Frame header length.
pub(crate) const HEADER_LEN: usize = 9;
/// The largest frame payload before SETTINGS_MAX_FRAME_SIZE says otherwise.
pub(crate) const DEFAULT_MAX_FRAME: u32 = 16_384;
/// The initial flow-control window of a connection and of every stream.
pub(crate) const DEFAULT_WINDOW: u32 = 65_535;
/// The largest window allowed (2^31 - 1).
pub(crate) const MAX_WINDOW: u32 = 0x7fff_ffff;

/// A parsed frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    /// Parse the 9-byte header at the start of `b` (which must be that long).
    pub fn parse(b: &[u8]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & MAX_WINDOW,
        }
    }
}

/// Append a frame header.
pub(crate) fn head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// Append a SETTINGS frame with these (id, value) pairs.
pub(crate) fn settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    head(out, pairs.len() * 6, SETTINGS, 0, 0);
    for (id, v) in pairs {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Append an empty SETTINGS frame with the ACK flag.
pub(crate) fn settings_ack(out: &mut Vec<u8>) {
    head(out, 0, SETTINGS, ACK, 0);
}

/// Append a WINDOW_UPDATE granting `n` more bytes on `stream` (0 = the connection).
pub(crate) fn window_update(out: &mut Vec<u8>, stream: u32, n: u32) {
    head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&n.to_be_bytes());
}

/// Append a PING with the ACK flag echoing `payload`.
pub(crate) fn ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    head(out, 8, PING, ACK, 0);
    out.extend_from_slice(payload);
}

/// Append an RST_STREAM.
pub(crate) fn rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Append a GOAWAY with no debug data.
pub(crate) fn goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// A big-endian u32 at `b[i..i + 4]`.
pub(crate) fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// RFC 9113 §7's name of an error code; codes it does not define are "0x…".
pub(crate) fn error_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    match NAMES.get(code as usize) {
        Some(n) => (*n).to_owned(),
        None => format!("0x{code:x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_ignores_the_reserved_bit() {
        let mut out = Vec::new();
        head(&mut out, 0x01_0203, HEADERS, END_HEADERS | END_STREAM, 7);
        assert_eq!(out, [1, 2, 3, 1, 5, 0, 0, 0, 7]);
        out[5] |= 0x80;
        let h = Head::parse(&out);
        assert_eq!((h.len, h.kind, h.flags, h.stream), (0x01_0203, 1, 5, 7));
    }

    #[test]
    fn control_frames_have_their_fixed_layout() {
        let mut out = Vec::new();
        settings(&mut out, &[(SETTINGS_ENABLE_PUSH, 0)]);
        assert_eq!(out, [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0]);
        out.clear();
        window_update(&mut out, 3, 1000);
        assert_eq!(Head::parse(&out).len, 4);
        assert_eq!(be32(&out, 9), 1000);
        out.clear();
        goaway(&mut out, 5, PROTOCOL_ERROR);
        assert_eq!((be32(&out, 9), be32(&out, 13)), (5, 1));
    }

    #[test]
    fn error_codes_have_names() {
        assert_eq!(error_name(7), "REFUSED_STREAM");
        assert_eq!(error_name(13), "HTTP_1_1_REQUIRED");
        assert_eq!(error_name(99), "0x63");
    }
}
