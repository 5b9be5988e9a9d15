//! One response as it arrives on its request stream (RFC 9114 §4.1):
//! HEADERS (after any interim 1xx ones), DATA counted and skipped, never
//! copied, optional trailers; unknown frame types skipped; the body
//! checked against `content-length` as it comes and at the stream's end.
//!
//! Owns the framing of one request stream. Must not know QUIC, clocks or
//! counters: the connection feeds bytes in ([`Response::input`]) and
//! reads the outcome ([`Response::end`]).

use super::frame::{self, Head};
use super::qpack;
use kurabe_model::failures::FailureKind;

/// Largest response field section accepted.
pub(crate) const MAX_BLOCK: u64 = 64 * 1024;

/// Why a response failed: its bucket, the HTTP/3 error code to close the
/// stream (or the connection) with, and a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fail {
    pub kind: FailureKind,
    pub code: u64,
    /// The error is the connection's (RFC 9114 §8): every stream on it fails.
    pub conn: bool,
    pub why: String,
}

impl Fail {
    /// A connection error of the peer's framing (an `exceptions` failure).
    pub(crate) fn conn(code: u64, why: impl Into<String>) -> Fail {
        Fail {
            kind: FailureKind::Exception,
            code,
            conn: true,
            why: format!("{} ({})", why.into(), frame::error_name(code)),
        }
    }

    fn length(why: String) -> Fail {
        Fail {
            kind: FailureKind::Length,
            code: frame::H3_MESSAGE_ERROR,
            conn: false,
            why,
        }
    }
}

/// What a checked response keeps for [`crate::response_check`]: its head
/// in the form an HTTP/1.1 head has (`HTTP/3 STATUS`, the fields, a blank
/// line) and the first `limit` bytes of its body.
#[derive(Debug, Clone, Default)]
pub(crate) struct Kept {
    pub head: Vec<u8>,
    pub body: Vec<u8>,
    limit: usize,
}

/// Where the response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the final HEADERS.
    Head,
    /// After it: DATA, or trailers.
    Body,
    /// After the trailers: nothing more may come.
    Trailers,
}

/// The state of one response.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    /// Final status (0 until its HEADERS).
    pub status: u16,
    /// Body bytes so far.
    pub body: u64,
    /// The final head's `content-length`.
    pub length: Option<u64>,
    /// `server` of the head, when it was wanted.
    pub server: Option<String>,
    /// When responses are checked: the head and the body's first bytes.
    pub kept: Option<Box<Kept>>,
    /// A HEAD request: the body is empty whatever `content-length` says.
    head_request: bool,
    phase: Phase,
    /// The start of a frame header cut by a chunk boundary.
    partial: Vec<u8>,
    /// Payload bytes still to skip, and whether they are DATA.
    skip: u64,
    skip_data: bool,
    /// A HEADERS payload being gathered: its length, and its bytes so far in `block`.
    block_len: Option<usize>,
    block: Vec<u8>,
}

impl Response {
    /// A response to a request (`head_request`: to HEAD, no body follows)
    /// that keeps the head and the first `keep_body` body bytes (when
    /// given: responses are checked).
    pub(crate) fn keeping(head_request: bool, keep_body: Option<usize>) -> Response {
        Response {
            status: 0,
            body: 0,
            length: None,
            server: None,
            kept: keep_body.map(|limit| {
                Box::new(Kept {
                    limit,
                    ..Kept::default()
                })
            }),
            head_request,
            phase: Phase::Head,
            partial: Vec::new(),
            skip: 0,
            skip_data: false,
            block_len: None,
            block: Vec::new(),
        }
    }

    /// Take the next bytes of the stream. `want_server`: keep the head's `server`.
    pub(crate) fn input(&mut self, mut b: &[u8], want_server: bool) -> Result<(), Fail> {
        while !b.is_empty() {
            if self.skip > 0 {
                b = self.skip_payload(b)?;
            } else if let Some(need) = self.block_len {
                let n = (need - self.block.len()).min(b.len());
                self.block.extend_from_slice(&b[..n]);
                b = &b[n..];
                if self.block.len() == need {
                    self.block_len = None;
                    let block = std::mem::take(&mut self.block);
                    let r = self.on_block(&block, want_server);
                    self.block = block;
                    self.block.clear();
                    r?;
                }
            } else {
                let Some((h, used)) = self.frame_head(b) else {
                    return Ok(());
                };
                b = &b[used..];
                self.on_frame(h)?;
            }
        }
        Ok(())
    }

    /// Count or ignore payload bytes at the start of `b`; the rest of `b`.
    fn skip_payload<'b>(&mut self, b: &'b [u8]) -> Result<&'b [u8], Fail> {
        let n = self.skip.min(b.len() as u64);
        self.skip -= n;
        if self.skip_data {
            if let Some(k) = &mut self.kept {
                let room = k.limit.saturating_sub(k.body.len()).min(n as usize);
                k.body.extend_from_slice(&b[..room]);
            }
            self.body += n;
            self.check_not_longer()?;
        }
        Ok(&b[n as usize..])
    }

    /// A body past its `content-length` fails as soon as it is seen.
    fn check_not_longer(&self) -> Result<(), Fail> {
        match self.expected() {
            Some(l) if self.body > l => Err(Fail::length(format!(
                "a body longer than its content-length ({} bytes and more, {l} announced)",
                self.body
            ))),
            _ => Ok(()),
        }
    }

    /// The body length the head announced, when it binds (not for HEAD, 204, 304).
    fn expected(&self) -> Option<u64> {
        let bodiless = self.head_request || self.status == 204 || self.status == 304;
        self.length.filter(|_| !bodiless)
    }

    /// The frame header at the start of `b` (after any cut start kept from
    /// the last chunk) and how many bytes of `b` it took; None: all of `b`
    /// is kept as a cut start.
    fn frame_head(&mut self, b: &[u8]) -> Option<(Head, usize)> {
        if self.partial.is_empty() {
            if let Some(h) = frame::head(b) {
                return Some((h, h.size));
            }
        }
        let had = self.partial.len();
        let take = (16 - had).min(b.len());
        self.partial.extend_from_slice(&b[..take]);
        match frame::head(&self.partial) {
            Some(h) => {
                self.partial.clear();
                Some((h, h.size - had))
            }
            // Still cut (then all of `b` was taken: a header is at most 16 bytes).
            None => None,
        }
    }

    /// A frame header on the request stream.
    fn on_frame(&mut self, h: Head) -> Result<(), Fail> {
        match h.kind {
            frame::DATA if self.phase == Phase::Body => {
                (self.skip, self.skip_data) = (h.len, true);
                Ok(())
            }
            frame::HEADERS if self.phase != Phase::Trailers => {
                if h.len > MAX_BLOCK {
                    return Err(Fail::conn(
                        frame::H3_FRAME_ERROR,
                        format!("a response field section of {} bytes, over 64 KiB", h.len),
                    ));
                }
                self.block_len = Some(h.len as usize);
                if h.len == 0 {
                    return self.on_block(&[], false);
                }
                Ok(())
            }
            frame::DATA | frame::HEADERS => Err(Fail::conn(
                frame::H3_FRAME_UNEXPECTED,
                format!("a {} frame out of order on a request stream", name(h.kind)),
            )),
            frame::PUSH_PROMISE => Err(Fail::conn(
                frame::H3_ID_ERROR,
                "a PUSH_PROMISE, though the client allowed no push (no MAX_PUSH_ID)",
            )),
            k if k == frame::SETTINGS
                || k == frame::GOAWAY
                || k == frame::MAX_PUSH_ID
                || k == frame::CANCEL_PUSH
                || frame::is_reserved_h2(k) =>
            {
                Err(Fail::conn(
                    frame::H3_FRAME_UNEXPECTED,
                    format!("a frame of type 0x{k:x} on a request stream"),
                ))
            }
            _ => {
                // Unknown and reserved (grease) types: skipped (§9).
                (self.skip, self.skip_data) = (h.len, false);
                Ok(())
            }
        }
    }

    /// A complete field section: an interim head is passed over, the final
    /// one sets status and length, trailers are decoded and dropped.
    fn on_block(&mut self, block: &[u8], want_server: bool) -> Result<(), Fail> {
        self.block_len = None;
        let want = want_server && self.phase == Phase::Head;
        let mut lines = Vec::new();
        let keep = self.kept.is_some() && self.phase == Phase::Head;
        let head =
            qpack::decode(block, want, keep.then_some(&mut lines)).map_err(|e| match e.code {
                frame::H3_MESSAGE_ERROR => Fail {
                    kind: FailureKind::Exception,
                    code: e.code,
                    conn: false,
                    why: e.why,
                },
                code => Fail::conn(code, e.why),
            })?;
        match self.phase {
            Phase::Head if (100..200).contains(&head.status) => Ok(()),
            Phase::Head if head.status == 0 => Err(Fail {
                kind: FailureKind::Exception,
                code: frame::H3_MESSAGE_ERROR,
                conn: false,
                why: "a response head without :status (H3_MESSAGE_ERROR)".into(),
            }),
            Phase::Head => {
                (self.status, self.length, self.server) =
                    (head.status, head.content_length, head.server);
                if let Some(k) = &mut self.kept {
                    use std::io::Write;
                    let _ = write!(k.head, "HTTP/3 {}\r\n", head.status);
                    k.head.extend_from_slice(&lines);
                    k.head.extend_from_slice(b"\r\n");
                }
                self.phase = Phase::Body;
                Ok(())
            }
            _ => {
                self.phase = Phase::Trailers;
                Ok(())
            }
        }
    }

    /// The stream ended (FIN): `Ok` when the response is complete, else why not.
    pub(crate) fn end(&self) -> Result<(), Fail> {
        if self.phase == Phase::Head {
            return Err(Fail {
                kind: FailureKind::Receive,
                code: frame::H3_GENERAL_PROTOCOL_ERROR,
                conn: false,
                why: "the server ended the stream before a complete response head".into(),
            });
        }
        if self.skip > 0 || self.block_len.is_some() || !self.partial.is_empty() {
            return Err(Fail::conn(
                frame::H3_FRAME_ERROR,
                "the server ended the stream inside a frame",
            ));
        }
        match self.expected() {
            Some(l) if self.body < l => Err(Fail::length(format!(
                "a body shorter than its content-length ({} of {l} bytes)",
                self.body
            ))),
            _ => Ok(()),
        }
    }
}

fn name(kind: u64) -> &'static str {
    match kind {
        frame::DATA => "DATA",
        _ => "HEADERS",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        frame::write_head(&mut out, kind, payload.len());
        out.extend_from_slice(payload);
        out
    }

    fn head(fields: &[(&str, &str)]) -> Vec<u8> {
        frame(frame::HEADERS, &qpack::encode(fields.iter().copied()))
    }

    /// A response's bytes fed whole, and fed one byte at a time: the same outcome.
    fn outcome(bytes: &[u8], head_request: bool) -> (Result<(), Fail>, u16, u64) {
        let mut whole = Response::keeping(head_request, None);
        let a = whole.input(bytes, true).and_then(|()| whole.end());
        let mut bytewise = Response::keeping(head_request, None);
        let b = bytes
            .chunks(1)
            .try_for_each(|c| bytewise.input(c, true))
            .and_then(|()| bytewise.end());
        assert_eq!(a, b, "whole and byte by byte differ");
        assert_eq!((whole.status, whole.body), (bytewise.status, bytewise.body));
        (a, whole.status, whole.body)
    }

    #[test]
    fn a_checked_response_keeps_its_final_head_and_its_bodys_first_bytes() {
        let bytes = [
            head(&[(":status", "103"), ("link", "</a>")]),
            head(&[(":status", "200"), ("content-type", "text/html")]),
            frame(frame::DATA, b"abc"),
            frame(frame::DATA, b"defgh"),
        ]
        .concat();
        for chunk in [bytes.len(), 1] {
            let mut r = Response::keeping(false, Some(5));
            bytes.chunks(chunk).for_each(|c| r.input(c, false).unwrap());
            r.end().unwrap();
            let k = r.kept.as_ref().unwrap();
            let head = String::from_utf8_lossy(&k.head);
            assert_eq!(head, "HTTP/3 200\r\ncontent-type: text/html\r\n\r\n");
            assert_eq!((k.body.as_slice(), r.body), (&b"abcde"[..], 8));
        }
        assert!(Response::keeping(false, None).kept.is_none());
    }

    #[test]
    fn a_response_is_counted_through_interim_heads_unknown_frames_and_trailers() {
        let bytes = [
            head(&[(":status", "103"), ("link", "</a>")]),
            frame(0x21, b"grease"),
            head(&[(":status", "200"), ("content-length", "8"), ("server", "t")]),
            frame(frame::DATA, b"abc"),
            frame(0x1f * 7 + 0x21, b""),
            frame(frame::DATA, b"defgh"),
            head(&[("x-trailer", "1")]),
        ]
        .concat();
        assert_eq!(outcome(&bytes, false), (Ok(()), 200, 8));
    }

    #[test]
    fn a_body_shorter_or_longer_than_its_length_is_a_length_failure() {
        let short = [
            head(&[(":status", "200"), ("content-length", "5")]),
            frame(0, b"abc"),
        ]
        .concat();
        let (r, ..) = outcome(&short, false);
        let e = r.unwrap_err();
        assert_eq!((e.kind, e.conn), (FailureKind::Length, false));
        assert!(e.why.contains("shorter"), "{}", e.why);
        let long = [
            head(&[(":status", "200"), ("content-length", "2")]),
            frame(0, b"abc"),
        ]
        .concat();
        let e = outcome(&long, false).0.unwrap_err();
        assert_eq!(e.kind, FailureKind::Length);
        assert!(e.why.contains("longer"), "{}", e.why);
    }

    #[test]
    fn head_204_and_304_carry_no_body_whatever_their_length() {
        let h = head(&[(":status", "200"), ("content-length", "100")]);
        assert_eq!(outcome(&h, true), (Ok(()), 200, 0));
        let h = head(&[(":status", "304"), ("content-length", "100")]);
        assert_eq!(outcome(&h, false), (Ok(()), 304, 0));
        // Without a length, a body of any size is complete at the stream's end.
        let h = [head(&[(":status", "200")]), frame(0, b"xyz")].concat();
        assert_eq!(outcome(&h, false), (Ok(()), 200, 3));
    }

    #[test]
    fn misplaced_frames_fail_the_connection() {
        let data_first = frame(frame::DATA, b"x");
        let e = outcome(&data_first, false).0.unwrap_err();
        assert_eq!((e.code, e.conn), (frame::H3_FRAME_UNEXPECTED, true));
        for kind in [frame::SETTINGS, frame::GOAWAY, 0x2, 0x6, 0x8, 0x9] {
            let b = [head(&[(":status", "200")]), frame(kind, b"\0")].concat();
            let e = outcome(&b, false).0.unwrap_err();
            assert_eq!(e.code, frame::H3_FRAME_UNEXPECTED, "type {kind}");
        }
        let after_trailers = [head(&[(":status", "200")]), head(&[]), frame(0, b"x")].concat();
        assert!(outcome(&after_trailers, false).0.unwrap_err().conn);
    }

    #[test]
    fn an_early_end_is_told_apart() {
        let e = outcome(b"", false).0.unwrap_err();
        assert_eq!(e.kind, FailureKind::Receive);
        // Cut inside the head: the head never arrived, as over HTTP/1.1.
        let cut = head(&[(":status", "200")]);
        let e = outcome(&cut[..cut.len() - 1], false).0.unwrap_err();
        assert_eq!(e.kind, FailureKind::Receive);
        // Cut inside a DATA frame of a body without a length: a framing error.
        let cut = [head(&[(":status", "200")]), frame(0, b"abcd")].concat();
        let e = outcome(&cut[..cut.len() - 1], false).0.unwrap_err();
        assert_eq!(
            (e.kind, e.code),
            (FailureKind::Exception, frame::H3_FRAME_ERROR)
        );
        let dynamic = frame(frame::HEADERS, &[0x00, 0x00, 0x80]);
        let e = outcome(&dynamic, false).0.unwrap_err();
        assert_eq!((e.code, e.conn), (frame::QPACK_DECOMPRESSION_FAILED, true));
    }

    #[test]
    fn random_streams_never_panic() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let real = [
            head(&[(":status", "200"), ("content-length", "3")]),
            frame(0, b"abc"),
        ]
        .concat();
        for round in 0..20_000 {
            let mut b: Vec<u8> = if round % 2 == 0 {
                real.clone()
            } else {
                (0..next() % 64).map(|_| next() as u8).collect()
            };
            if !b.is_empty() {
                let i = next() as usize % b.len();
                b[i] ^= next() as u8;
            }
            let mut r = Response::keeping(round % 5 == 0, None);
            let cut = if b.is_empty() {
                0
            } else {
                next() as usize % b.len()
            };
            let _ = r
                .input(&b[..cut], true)
                .and_then(|()| r.input(&b[cut..], false))
                .and_then(|()| r.end());
        }
    }
}
