//! The built-in server's HTTP/3 responses, built once per server as the
//! HTTP/1.1 ones are: HEADERS (QPACK with the static table and literals,
//! as the client's requests are encoded) then DATA, in a `Bytes` each
//! stream shares without copying.
//!
//! Owns the response bytes and reading a request's stream. Must not hold
//! connection state ([`super::conn`] does).

use bytes::Bytes;

use super::super::response::{bodiless, body_bytes};
use super::super::{ServeConfig, STATS_PATH};
use crate::client::engine::h3::{frame, qpack};

/// The answer to every request but the stats one: for GET and the rest,
/// and for HEAD (the same HEADERS, no DATA).
pub(super) struct Responses {
    full: Bytes,
    head: Bytes,
}

impl Responses {
    pub(super) fn new(cfg: &ServeConfig) -> Responses {
        let body = match bodiless(cfg.status) {
            true => None,
            false => Some(body_bytes(cfg.body_bytes)),
        };
        let status = cfg.status.to_string();
        let full = message(&status, "text/plain", body.as_deref(), false);
        let head = message(&status, "text/plain", body.as_deref(), true);
        Responses {
            full: full.into(),
            head: head.into(),
        }
    }

    /// The response to a request, HEAD or not.
    pub(super) fn get(&self, head: bool) -> Bytes {
        match head {
            true => self.head.clone(),
            false => self.full.clone(),
        }
    }
}

/// The response carrying the server's counters as JSON.
pub(super) fn stats(json: &str) -> Bytes {
    message("200", "application/json", Some(json.as_bytes()), false).into()
}

/// HEADERS of `status` (with `content-length` unless the status has no
/// `body`), then DATA with `body` unless `head_only`.
fn message(status: &str, kind: &str, body: Option<&[u8]>, head_only: bool) -> Vec<u8> {
    let server = concat!("kurabe/", env!("CARGO_PKG_VERSION"));
    let length = body.map(|b| b.len().to_string());
    let fields = [
        (":status", status),
        ("server", server),
        ("content-type", kind),
    ];
    let length = length.as_deref().map(|n| ("content-length", n));
    let block = qpack::encode(fields.into_iter().chain(length));
    let sent = body.filter(|_| !head_only).unwrap_or_default();
    frame::message(&block, sent, false)
}

/// What a request stream said, once read to its end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Request {
    /// `:method` HEAD.
    pub head: bool,
    /// `:path` is [`STATS_PATH`].
    pub stats: bool,
    /// Bytes of its DATA frames.
    pub body_bytes: u64,
}

/// Largest HEADERS frame read (a request head of 64 KiB, as HTTP/1.1's).
const MAX_HEADERS: u64 = 64 * 1024;

/// One request stream being read: frames parsed as their bytes come,
/// DATA counted and skipped, HEADERS decoded for the method and path.
#[derive(Debug, Default)]
pub(super) struct Reader {
    /// Bytes of a frame header or a HEADERS frame not complete yet.
    buf: Vec<u8>,
    /// Payload bytes of the current DATA or unknown frame still to skip.
    skip: u64,
    /// The skipped payload is DATA (counted as body).
    data: bool,
    /// What the request said so far (`None` before its HEADERS).
    request: Option<Request>,
}

impl Reader {
    /// Take the next bytes of the stream; `Err(code)`: the request is
    /// malformed (an HTTP/3 error code to reset the stream with).
    pub(super) fn input(&mut self, bytes: &[u8]) -> Result<(), u64> {
        let mut owned;
        let mut bytes = bytes;
        loop {
            bytes = self.skipped(bytes);
            if bytes.is_empty() {
                return Ok(());
            }
            self.buf.extend_from_slice(bytes);
            match self.frames()? {
                Some(tail) => {
                    owned = tail;
                    bytes = &owned;
                }
                None => return Ok(()),
            }
        }
    }

    /// What is left of `bytes` after the current frame's payload to skip.
    fn skipped<'b>(&mut self, bytes: &'b [u8]) -> &'b [u8] {
        let n = self.skip.min(bytes.len() as u64);
        self.skip -= n;
        if let Some(r) = self.request.as_mut().filter(|_| self.data) {
            r.body_bytes += n;
        }
        &bytes[n as usize..]
    }

    /// Parse the frames in `buf` up to the first DATA or unknown one, whose
    /// payload is then skipped: `Ok(Some(bytes after its header))`, or
    /// `Ok(None)` when the buffer keeps only an incomplete frame's start.
    fn frames(&mut self) -> Result<Option<Vec<u8>>, u64> {
        let mut pos = 0;
        while let Some(h) = frame::head(&self.buf[pos..]) {
            let start = pos + h.size;
            match h.kind {
                frame::HEADERS if h.len > MAX_HEADERS => return Err(frame::H3_EXCESSIVE_LOAD),
                frame::HEADERS => {
                    let Some(block) = self.buf.get(start..start + h.len as usize) else {
                        break;
                    };
                    // A second HEADERS is the trailers: nothing to act on.
                    if self.request.is_none() {
                        self.request = Some(request_of(block)?);
                    }
                    pos = start + h.len as usize;
                    continue;
                }
                frame::DATA if self.request.is_none() => return Err(frame::H3_FRAME_UNEXPECTED),
                frame::CANCEL_PUSH
                | frame::SETTINGS
                | frame::PUSH_PROMISE
                | frame::GOAWAY
                | frame::MAX_PUSH_ID => return Err(frame::H3_FRAME_UNEXPECTED),
                k if frame::is_reserved_h2(k) => return Err(frame::H3_FRAME_UNEXPECTED),
                _ => {}
            }
            (self.skip, self.data) = (h.len, h.kind == frame::DATA);
            let tail = self.buf.split_off(start);
            self.buf.clear();
            return Ok(Some(tail));
        }
        self.buf.drain(..pos);
        Ok(None)
    }

    /// The request, read to its end (`Err`: it never sent its HEADERS, or
    /// ended inside a frame).
    pub(super) fn end(&self) -> Result<Request, u64> {
        match self.request {
            Some(r) if self.skip == 0 && self.buf.is_empty() => Ok(r),
            _ => Err(frame::H3_MESSAGE_ERROR),
        }
    }
}

/// The method and path of a request's field section.
fn request_of(block: &[u8]) -> Result<Request, u64> {
    let mut r = Request::default();
    qpack::each_field(block, |name, value| {
        match name {
            b":method" => r.head = value == b"HEAD",
            b":path" => r.stats = value == STATS_PATH.as_bytes(),
            _ => {}
        }
        Ok(())
    })
    .map_err(|e| e.code)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, path: &str, body: &[u8]) -> Vec<u8> {
        let fields = [
            (":method", method),
            (":scheme", "https"),
            (":authority", "localhost"),
            (":path", path),
        ];
        frame::message(&qpack::encode(fields), body, false)
    }

    #[test]
    fn a_request_read_whole_or_byte_by_byte_says_the_same() {
        let mut bytes = request("POST", "/x", b"hello");
        // An unknown (reserved) frame type between the frames is skipped.
        bytes.extend_from_slice(&[0x21, 0x02, 0xaa, 0xbb]);
        bytes.extend_from_slice(&frame::message(&[], b"!!", false)[2..]);
        let want = Request {
            head: false,
            stats: false,
            body_bytes: 7,
        };
        let mut whole = Reader::default();
        whole.input(&bytes).unwrap();
        assert_eq!(whole.end(), Ok(want));
        let mut bytewise = Reader::default();
        for b in &bytes {
            bytewise.input(std::slice::from_ref(b)).unwrap();
        }
        assert_eq!(bytewise.end(), Ok(want));
        let mut head = Reader::default();
        head.input(&request("HEAD", STATS_PATH, b"")).unwrap();
        let r = head.end().unwrap();
        assert!(r.head && r.stats && r.body_bytes == 0);
    }

    #[test]
    fn malformed_requests_are_refused_with_their_codes() {
        let mut r = Reader::default();
        assert_eq!(
            r.input(&[0x00, 0x01, b'x']),
            Err(frame::H3_FRAME_UNEXPECTED)
        );
        let mut r = Reader::default();
        assert_eq!(r.input(&[0x04, 0x00]), Err(frame::H3_FRAME_UNEXPECTED));
        let mut r = Reader::default();
        r.input(&request("GET", "/", b"")[..3]).unwrap();
        assert_eq!(r.end(), Err(frame::H3_MESSAGE_ERROR), "cut short");
        let mut r = Reader::default();
        assert_eq!(
            r.input(&[0x01, 0x03, 0x01, 0x00, 0xd9]),
            Err(frame::QPACK_DECOMPRESSION_FAILED)
        );
    }

    #[test]
    fn responses_carry_status_length_and_body_once_built() {
        let cfg = ServeConfig {
            body_bytes: 5,
            status: 404,
            ..ServeConfig::default()
        };
        let r = Responses::new(&cfg);
        let full = r.get(false);
        let h = frame::head(&full).unwrap();
        assert_eq!(h.kind, frame::HEADERS);
        let block = &full[h.size..h.size + h.len as usize];
        let head = qpack::decode(block, true, None).unwrap();
        assert_eq!((head.status, head.content_length), (404, Some(5)));
        assert!(full.ends_with(&[0x00, 0x05, b'x', b'x', b'x', b'x', b'\n']));
        assert_eq!(r.get(true).len(), h.size + h.len as usize, "HEAD: no DATA");
        let none = Responses::new(&ServeConfig { status: 204, ..cfg });
        let bytes = none.get(false);
        let head = qpack::decode(&bytes[2..], false, None).unwrap();
        assert_eq!((head.status, head.content_length), (204, None));
    }
}
