//! Pre-built response bytes and request-head parsing for the built-in server.
//!
//! Everything here is pure: responses are built once per server from
//! [`ServeConfig`] (so answering a request is a `memcpy`), and request heads are
//! parsed into the few facts the server acts on.

use super::ServeConfig;

/// Path that answers with the server's own counters instead of the configured response.
pub const STATS_PATH: &str = "/__kurabe/stats";

/// How the response speaks about the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ConnMode {
    /// HTTP/1.1 persistent connection: no `Connection` header needed.
    Persistent,
    /// HTTP/1.0 client asked for keep-alive: say `Connection: keep-alive`.
    KeepAlive10,
    /// Close after this response: say `Connection: close`.
    Close,
}

/// Which pre-built response a request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Kind {
    /// HEAD: headers only.
    pub head: bool,
    /// Connection handling.
    pub mode: ConnMode,
    /// The client speaks HTTP/1.1, so a chunked body is allowed.
    pub chunked_ok: bool,
}

/// All response variants for one configuration, built once.
pub(super) struct Responses {
    variants: Vec<Vec<u8>>,
}

impl Responses {
    /// Build every variant for `cfg`.
    pub(super) fn new(cfg: &ServeConfig) -> Self {
        let mut variants = Vec::with_capacity(12);
        for head in [false, true] {
            for mode in [ConnMode::Persistent, ConnMode::KeepAlive10, ConnMode::Close] {
                for chunked_ok in [false, true] {
                    variants.push(build(
                        cfg,
                        Kind {
                            head,
                            mode,
                            chunked_ok,
                        },
                    ));
                }
            }
        }
        Self { variants }
    }

    /// The bytes to send for `kind`.
    pub(super) fn get(&self, kind: Kind) -> &[u8] {
        let mode = match kind.mode {
            ConnMode::Persistent => 0,
            ConnMode::KeepAlive10 => 1,
            ConnMode::Close => 2,
        };
        &self.variants[usize::from(kind.head) * 6 + mode * 2 + usize::from(kind.chunked_ok)]
    }
}

/// Statuses that never carry a body (RFC 9110 §6.4.1).
pub(super) fn bodiless(status: u16) -> bool {
    (100..200).contains(&status) || status == 204 || status == 304
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn connection_header(mode: ConnMode) -> &'static str {
    match mode {
        ConnMode::Persistent => "",
        ConnMode::KeepAlive10 => "Connection: keep-alive\r\n",
        ConnMode::Close => "Connection: close\r\n",
    }
}

/// Response head and body for one variant.
fn build(cfg: &ServeConfig, kind: Kind) -> Vec<u8> {
    let status = cfg.status;
    let no_body = bodiless(status);
    let chunked = cfg.chunked && kind.chunked_ok && !no_body;
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\nServer: kurabe/{}\r\nContent-Type: text/plain\r\n",
        reason(status),
        env!("CARGO_PKG_VERSION")
    );
    if chunked {
        out.push_str("Transfer-Encoding: chunked\r\n");
    } else if !no_body {
        out.push_str(&format!("Content-Length: {}\r\n", cfg.body_bytes));
    }
    out.push_str(connection_header(kind.mode));
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    if kind.head || no_body {
        return out;
    }
    let body = body_bytes(cfg.body_bytes);
    if chunked {
        // 8 KiB chunks: several chunks for big bodies, so clients' chunk parsers get exercised.
        for chunk in body.chunks(8192) {
            out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            out.extend_from_slice(chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        out.extend_from_slice(&body);
    }
    out
}

/// `n` bytes of printable filler ending in a newline.
pub(super) fn body_bytes(n: usize) -> Vec<u8> {
    let mut body = vec![b'x'; n];
    if let Some(last) = body.last_mut() {
        *last = b'\n';
    }
    body
}

/// A complete response carrying the server's counters as JSON.
pub(super) fn stats_response(json: &str, mode: ConnMode) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nServer: kurabe/{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}\r\n{json}",
        env!("CARGO_PKG_VERSION"),
        json.len(),
        connection_header(mode),
    )
    .into_bytes()
}

/// Interim response that tells an `Expect: 100-continue` client to send its body.
pub(super) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Answer to a request the server cannot parse; the connection closes after it.
pub(super) const BAD_REQUEST: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// How the request's body is framed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Framing {
    /// No body.
    #[default]
    None,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// The facts of a request head the server acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Head {
    /// Bytes of the head including the blank line.
    pub len: usize,
    /// Which response to send (before `--close` is applied).
    pub kind: Kind,
    /// The request asked for [`STATS_PATH`].
    pub stats: bool,
    /// How the body is framed.
    pub framing: Framing,
    /// The client sent `Expect: 100-continue` and waits for an interim response before the body.
    pub expect_continue: bool,
}

/// The request head is malformed; answer 400 and close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BadRequest;

/// Parse a request head from the start of `buf`; `Ok(None)` while it is incomplete.
pub(super) fn parse_head(buf: &[u8]) -> Result<Option<Head>, BadRequest> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(BadRequest),
    };
    let http10 = req.version == Some(0);
    let facts = HeaderFacts::of(req.headers)?;
    let path = req.path.unwrap_or("/");
    Ok(Some(Head {
        len,
        kind: Kind {
            head: req.method == Some("HEAD"),
            mode: facts.mode(http10),
            chunked_ok: !http10,
        },
        stats: path == STATS_PATH,
        framing: facts.framing,
        expect_continue: facts.expect_continue && !http10,
    }))
}

/// What a request's headers say about its connection and its body.
#[derive(Debug, Default)]
struct HeaderFacts {
    /// `Connection: close`.
    close: bool,
    /// `Connection: keep-alive` (matters for HTTP/1.0 only).
    keep_alive: bool,
    framing: Framing,
    /// `Expect: 100-continue`.
    expect_continue: bool,
}

impl HeaderFacts {
    fn of(headers: &[httparse::Header<'_>]) -> Result<Self, BadRequest> {
        let mut facts = HeaderFacts::default();
        for h in headers {
            facts.note(h)?;
        }
        Ok(facts)
    }

    /// Take in one header; a framing the server cannot read is a bad request.
    fn note(&mut self, h: &httparse::Header<'_>) -> Result<(), BadRequest> {
        if h.name.eq_ignore_ascii_case("connection") {
            for token in String::from_utf8_lossy(h.value).split(',') {
                let token = token.trim();
                self.close |= token.eq_ignore_ascii_case("close");
                self.keep_alive |= token.eq_ignore_ascii_case("keep-alive");
            }
        } else if h.name.eq_ignore_ascii_case("expect") {
            self.expect_continue = h.value.eq_ignore_ascii_case(b"100-continue");
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let value = String::from_utf8_lossy(h.value);
            if !value.trim().to_ascii_lowercase().ends_with("chunked") {
                return Err(BadRequest);
            }
            self.framing = Framing::Chunked;
        } else if h.name.eq_ignore_ascii_case("content-length") && self.framing != Framing::Chunked
        {
            self.framing = content_length(h.value)?;
        }
        Ok(())
    }

    /// How the connection goes on after the response.
    fn mode(&self, http10: bool) -> ConnMode {
        if self.close || (http10 && !self.keep_alive) {
            ConnMode::Close
        } else if http10 {
            ConnMode::KeepAlive10
        } else {
            ConnMode::Persistent
        }
    }
}

/// A `Content-Length` value as a framing (0 is no body).
fn content_length(value: &[u8]) -> Result<Framing, BadRequest> {
    let n = std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .ok_or(BadRequest)?;
    Ok(if n == 0 {
        Framing::None
    } else {
        Framing::Length(n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ServeConfig {
        ServeConfig {
            body_bytes: 5,
            ..ServeConfig::default()
        }
    }

    #[test]
    fn plain_response_has_length_and_body() {
        let r = Responses::new(&cfg());
        let kind = Kind {
            head: false,
            mode: ConnMode::Persistent,
            chunked_ok: true,
        };
        let text = String::from_utf8(r.get(kind).to_vec()).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("Content-Length: 5\r\n"));
        assert!(!text.contains("Connection:"));
        assert!(text.ends_with("\r\n\r\nxxxx\n"));
    }

    #[test]
    fn head_and_close_variants() {
        let r = Responses::new(&cfg());
        let kind = Kind {
            head: true,
            mode: ConnMode::Close,
            chunked_ok: true,
        };
        let text = String::from_utf8(r.get(kind).to_vec()).unwrap();
        assert!(text.contains("Content-Length: 5\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
    }

    #[test]
    fn chunked_only_for_http11_and_never_for_204() {
        let mut c = ServeConfig {
            body_bytes: 20000,
            chunked: true,
            ..ServeConfig::default()
        };
        let r = Responses::new(&c);
        let k11 = Kind {
            head: false,
            mode: ConnMode::Persistent,
            chunked_ok: true,
        };
        let text = String::from_utf8(r.get(k11).to_vec()).unwrap();
        assert!(text.contains("Transfer-Encoding: chunked\r\n"));
        assert!(text.contains("\r\n2000\r\n"), "8 KiB chunks");
        assert!(text.ends_with("\r\n0\r\n\r\n"));
        let k10 = Kind {
            chunked_ok: false,
            mode: ConnMode::KeepAlive10,
            ..k11
        };
        let text = String::from_utf8(r.get(k10).to_vec()).unwrap();
        assert!(text.contains("Content-Length: 20000\r\nConnection: keep-alive\r\n"));
        c.status = 204;
        let text = String::from_utf8(Responses::new(&c).get(k11).to_vec()).unwrap();
        assert!(text.starts_with("HTTP/1.1 204 No Content\r\n"));
        assert!(!text.contains("Content-Length") && !text.contains("Transfer-Encoding"));
    }

    #[test]
    fn parses_connection_semantics() {
        let h = parse_head(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.kind.mode, ConnMode::Persistent);
        let h = parse_head(b"GET / HTTP/1.1\r\nConnection: Close\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.kind.mode, ConnMode::Close);
        let h = parse_head(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert_eq!(h.kind.mode, ConnMode::Close);
        let h = parse_head(b"HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.kind.mode, ConnMode::KeepAlive10);
        assert!(h.kind.head && !h.kind.chunked_ok);
    }

    #[test]
    fn parses_framing_and_stats_path() {
        let h = parse_head(b"POST /__kurabe/stats HTTP/1.1\r\nContent-Length: 12\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.stats);
        assert_eq!(h.framing, Framing::Length(12));
        let h = parse_head(b"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, Framing::Chunked);
        assert!(!h.expect_continue);
        let h = parse_head(b"PUT / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.expect_continue);
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nHost"), Ok(None));
        assert_eq!(parse_head(b"\x01\x02 garbage\r\n\r\n"), Err(BadRequest));
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
            Err(BadRequest)
        );
    }
}
