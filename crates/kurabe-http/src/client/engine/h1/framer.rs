//! Incremental HTTP/1.1 response framing.
//!
//! Owns turning a byte stream into complete responses: the status line and
//! headers (parsed with `httparse` once the whole head is buffered) and the
//! body framing (Content-Length, chunked with extensions and trailers,
//! close-delimited, and the responses that never have a body: HEAD, 1xx, 204,
//! 304). Bodies are counted and skipped, never copied or kept, so a caller's
//! buffer only ever has to hold one response head; only when responses are
//! checked (`--check`) does a framer keep a copy of each head and of the
//! first bytes of each body ([`Keep`], bounded).
//!
//! It does no I/O and reads no clock: the worker feeds it bytes and acts on
//! what it returns.

/// Most headers a response may carry (servers behind several proxies and
/// cookie-heavy apps exceed 64); more counts in `exceptions`, named.
const MAX_HEADERS: usize = 256;
/// Longest chunk-size or trailer line accepted before the response counts as garbage.
const MAX_LINE: usize = 8 * 1024;

/// A response head or body the framer cannot make sense of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// Status line or headers are not valid HTTP/1.x.
    Head,
    /// Content-Length is not a number, or appears twice with different values.
    Length,
    /// A chunk-size line or chunk terminator is malformed.
    Chunk,
    /// More than [`MAX_HEADERS`] response headers.
    TooManyHeaders,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FrameError::Head => "the status line or headers are not valid HTTP/1.x",
            FrameError::Length => "the Content-Length header is not one number",
            FrameError::Chunk => "a chunk-size line or chunk terminator is malformed",
            FrameError::TooManyHeaders => "more than 256 response headers",
        })
    }
}

/// One complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Response {
    /// Final status code (interim 1xx responses are skipped).
    pub status: u16,
    /// Body payload bytes (chunk framing excluded).
    pub body_bytes: u64,
    /// The connection may carry another request after this response.
    pub reusable: bool,
}

/// What one call to [`Framer::advance`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    /// Bytes of the input consumed; the caller drops them from its buffer.
    pub used: usize,
    /// A response finished with the last consumed byte.
    pub done: Option<Response>,
}

/// How the stream ended when the peer closed the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eof {
    /// Between responses: nothing was lost.
    Clean,
    /// A close-delimited body ended: the response is complete.
    Complete(Response),
    /// The head was incomplete (ab's "receive" failure).
    TruncatedHead,
    /// The body was shorter than announced (ab's "length" failure).
    TruncatedBody,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for (the rest of) a status line and headers.
    Head,
    /// Content-Length body with this many bytes still to come.
    Fixed(u64),
    /// Expecting a chunk-size line.
    ChunkSize,
    /// Inside a chunk with this many bytes still to come.
    ChunkData(u64),
    /// Expecting the CRLF that ends a chunk's data.
    ChunkEnd,
    /// After the last chunk: trailer lines until an empty line.
    Trailers,
    /// Body ends when the server closes the connection.
    UntilClose,
}

/// Incremental response framer for one connection.
#[derive(Debug, Clone)]
pub(crate) struct Framer {
    state: State,
    status: u16,
    body: u64,
    reusable: bool,
    /// Bytes of the current response seen so far (0 = between responses).
    seen: u64,
    /// Value of the `Server:` header of the last head parsed, when asked for.
    pub server: Option<String>,
    /// The last final head's bytes and what they parsed to (empty: none),
    /// and whether it answered a HEAD request (a set mixes HEAD and GET:
    /// the same head bytes then frame differently).
    last_head: Vec<u8>,
    last_parsed: Parsed,
    last_head_request: bool,
    /// The current response's head and body prefix, when responses are checked.
    pub keep: Option<Box<Keep>>,
}

/// What a framer (or an HTTP/2 stream, see `h2::conn`) keeps of the
/// current response for the response checks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Keep {
    /// The final head as received (status line, headers, blank line).
    pub head: Vec<u8>,
    /// The body's first bytes, at most `limit`.
    pub body: Vec<u8>,
    limit: usize,
}

impl Keep {
    /// Keep heads and at most `limit` body bytes of each response.
    pub fn new(limit: usize) -> Box<Keep> {
        Box::new(Keep {
            head: Vec::new(),
            body: Vec::with_capacity(limit.min(4096)),
            limit,
        })
    }

    /// Keep what fits of `b`, the next bytes of the body.
    pub fn body_bytes(&mut self, b: &[u8]) {
        let room = self.limit.saturating_sub(self.body.len());
        self.body.extend_from_slice(&b[..b.len().min(room)]);
    }
}

impl Default for Framer {
    fn default() -> Self {
        Framer {
            state: State::Head,
            status: 0,
            body: 0,
            reusable: true,
            seen: 0,
            server: None,
            last_head: Vec::new(),
            last_parsed: Parsed {
                used: 0,
                status: 0,
                reusable: false,
                next: Next::Done,
            },
            last_head_request: false,
            keep: None,
        }
    }
}

impl Framer {
    /// Forget any partial response (the connection was replaced).
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.body = 0;
        self.seen = 0;
    }

    /// True while the next bytes are (part of) a response head.
    pub fn in_head(&self) -> bool {
        self.state == State::Head
    }

    /// True when no byte of a response has been consumed since the last one completed.
    pub fn between_responses(&self) -> bool {
        self.state == State::Head && self.seen == 0
    }

    /// Consume as much of `data` as forms progress on the current response.
    ///
    /// `head_request` says whether the request this response answers was a
    /// HEAD (no body whatever the headers say); `want_server` asks for the
    /// `Server:` header to be kept in [`Framer::server`]. Returns `used == 0`
    /// and no `done` when more bytes are needed.
    pub fn advance(
        &mut self,
        data: &[u8],
        head_request: bool,
        want_server: bool,
    ) -> Result<Step, FrameError> {
        let step = match self.state {
            State::Head => self.head(data, head_request, want_server)?,
            State::Fixed(rem) => {
                let n = rem.min(data.len() as u64);
                self.body += n;
                if let Some(k) = &mut self.keep {
                    k.body_bytes(&data[..n as usize]);
                }
                if n == rem {
                    self.finish(n as usize)
                } else {
                    self.state = State::Fixed(rem - n);
                    more(n as usize)
                }
            }
            State::UntilClose => {
                self.body += data.len() as u64;
                if let Some(k) = &mut self.keep {
                    k.body_bytes(data);
                }
                more(data.len())
            }
            State::ChunkSize => match line(data)? {
                None => more(0),
                Some((len, content)) => {
                    let size = chunk_size(content)?;
                    self.state = if size == 0 {
                        State::Trailers
                    } else {
                        State::ChunkData(size)
                    };
                    more(len)
                }
            },
            State::ChunkData(rem) => {
                let n = rem.min(data.len() as u64);
                self.body += n;
                if let Some(k) = &mut self.keep {
                    k.body_bytes(&data[..n as usize]);
                }
                self.state = if n == rem {
                    State::ChunkEnd
                } else {
                    State::ChunkData(rem - n)
                };
                more(n as usize)
            }
            State::ChunkEnd => match line(data)? {
                None => more(0),
                Some((len, [])) => {
                    self.state = State::ChunkSize;
                    more(len)
                }
                Some(_) => return Err(FrameError::Chunk),
            },
            State::Trailers => match line(data)? {
                None => more(0),
                Some((len, [])) => self.finish(len),
                Some((len, _trailer)) => more(len),
            },
        };
        // `finish` resets `seen`; only count bytes of an unfinished response.
        if step.done.is_none() {
            self.seen += step.used as u64;
        }
        Ok(step)
    }

    /// The peer closed the connection: decide what that means for the response
    /// in progress. `buffered` = bytes the caller holds that were not consumed yet.
    pub fn eof(&mut self, buffered: usize) -> Eof {
        let out = match self.state {
            State::Head if self.seen == 0 && buffered == 0 => Eof::Clean,
            State::Head => Eof::TruncatedHead,
            State::UntilClose => Eof::Complete(Response {
                status: self.status,
                body_bytes: self.body,
                reusable: false,
            }),
            _ => Eof::TruncatedBody,
        };
        self.reset();
        out
    }

    fn finish(&mut self, used: usize) -> Step {
        let done = Response {
            status: self.status,
            body_bytes: self.body,
            reusable: self.reusable,
        };
        self.reset();
        Step {
            used,
            done: Some(done),
        }
    }

    fn head(
        &mut self,
        data: &[u8],
        head_request: bool,
        want_server: bool,
    ) -> Result<Step, FrameError> {
        if !want_server
            && head_request == self.last_head_request
            && !self.last_head.is_empty()
            && data.starts_with(&self.last_head)
        {
            // The same bytes as the last head parse to the same thing.
            self.keep_head(&data[..self.last_parsed.used], self.last_parsed);
            return Ok(self.apply(self.last_parsed));
        }
        let Some(parsed) = self.parse_head(data, head_request, want_server)? else {
            return Ok(more(0));
        };
        self.keep_head(&data[..parsed.used], parsed);
        self.last_head.clear();
        if parsed.next != Next::Interim && parsed.used <= MAX_CACHED_HEAD {
            self.last_head.extend_from_slice(&data[..parsed.used]);
            self.last_parsed = parsed;
            self.last_head_request = head_request;
        }
        Ok(self.apply(parsed))
    }

    /// Keep a final head (and start a new body) when responses are checked.
    fn keep_head(&mut self, head: &[u8], p: Parsed) {
        if let Some(k) = &mut self.keep {
            if p.next != Next::Interim {
                k.head.clear();
                k.head.extend_from_slice(head);
                k.body.clear();
            }
        }
    }

    /// What was kept of the response that just completed: (head, body
    /// prefix), both empty when nothing is kept.
    pub fn kept(&self) -> (&[u8], &[u8]) {
        match &self.keep {
            Some(k) => (&k.head, &k.body),
            None => (&[], &[]),
        }
    }

    /// Parse a complete head at the start of `data` (None: not complete yet).
    fn parse_head(
        &mut self,
        data: &[u8],
        head_request: bool,
        want_server: bool,
    ) -> Result<Option<Parsed>, FrameError> {
        // Uninitialised header slots: zeroing 256 of them per response costs more than parsing.
        let mut headers =
            [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let used = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut resp,
            data,
            &mut headers,
        ) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(FrameError::TooManyHeaders),
            Err(_) => return Err(FrameError::Head),
        };
        let status = resp.code.ok_or(FrameError::Head)?;
        let mut f = HeadFields {
            close: resp.version == Some(0),
            ..HeadFields::default()
        };
        for h in resp.headers.iter() {
            self.header(&mut f, h, want_server)?;
        }
        Ok(Some(Parsed {
            used,
            status,
            // 101 switches protocols: nothing more we can parse on this connection.
            reusable: !f.close && status != 101,
            next: next_after_head(status, head_request, f),
        }))
    }

    /// Note what header `h` says about the body and the connection.
    fn header(
        &mut self,
        f: &mut HeadFields,
        h: &httparse::Header<'_>,
        want_server: bool,
    ) -> Result<(), FrameError> {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let v = parse_decimal(h.value).ok_or(FrameError::Length)?;
            if f.length.is_some_and(|old| old != v) {
                return Err(FrameError::Length);
            }
            f.length = Some(v);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // Chunked only counts as the final coding (RFC 9112 §6.3).
            f.chunked = last_token(h.value).eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    f.close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    f.close = false;
                }
            }
        } else if want_server && name.eq_ignore_ascii_case(b"server") {
            self.server = Some(String::from_utf8_lossy(h.value).into_owned());
        }
        Ok(())
    }

    /// Enter the state a parsed head leads to.
    fn apply(&mut self, p: Parsed) -> Step {
        self.status = p.status;
        self.body = 0;
        self.reusable = p.reusable;
        match p.next {
            // Interim response (100 Continue, 103 Early Hints): the real one follows.
            Next::Interim => more(p.used),
            Next::Done => self.finish(p.used),
            Next::Chunked => {
                self.state = State::ChunkSize;
                more(p.used)
            }
            Next::Fixed(n) => {
                self.state = State::Fixed(n);
                more(p.used)
            }
            Next::UntilClose => {
                self.state = State::UntilClose;
                self.reusable = false;
                more(p.used)
            }
        }
    }
}

/// Longest head kept for the byte-identical fast path in [`Framer::head`].
const MAX_CACHED_HEAD: usize = 1024;

/// What the headers of one head said.
#[derive(Debug, Default, Clone, Copy)]
struct HeadFields {
    length: Option<u64>,
    chunked: bool,
    close: bool,
}

/// Where a response goes after its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// A 1xx other than 101: another head follows.
    Interim,
    /// No body: the response is complete.
    Done,
    Chunked,
    Fixed(u64),
    /// Body ends when the server closes the connection.
    UntilClose,
}

/// A parsed head: its length, status, whether the connection stays usable, what follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parsed {
    used: usize,
    status: u16,
    reusable: bool,
    next: Next,
}

/// The body framing of a response with `status` and headers `f` (RFC 9112 §6.3).
fn next_after_head(status: u16, head_request: bool, f: HeadFields) -> Next {
    if (100..200).contains(&status) && status != 101 {
        return Next::Interim;
    }
    if status == 101 || head_request || status == 204 || status == 304 {
        return Next::Done;
    }
    if f.chunked {
        return Next::Chunked;
    }
    match f.length {
        Some(0) => Next::Done,
        Some(n) => Next::Fixed(n),
        None => Next::UntilClose,
    }
}

fn more(used: usize) -> Step {
    Step { used, done: None }
}

/// A complete line: (bytes including the line end, content without CR/LF).
fn line(data: &[u8]) -> Result<Option<(usize, &[u8])>, FrameError> {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => {
            let content = &data[..i];
            let content = content.strip_suffix(b"\r").unwrap_or(content);
            Ok(Some((i + 1, content)))
        }
        None if data.len() > MAX_LINE => Err(FrameError::Chunk),
        None => Ok(None),
    }
}

/// Hex chunk size, ignoring chunk extensions (`;name=value`) and spaces before them.
fn chunk_size(line: &[u8]) -> Result<u64, FrameError> {
    let mut size: u64 = 0;
    let mut digits = 0;
    for &b in line {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            b';' | b' ' | b'\t' => break,
            _ => return Err(FrameError::Chunk),
        };
        size = size
            .checked_mul(16)
            .and_then(|s| s.checked_add(u64::from(d)))
            .ok_or(FrameError::Chunk)?;
        digits += 1;
    }
    if digits == 0 {
        return Err(FrameError::Chunk);
    }
    Ok(size)
}

fn parse_decimal(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() {
        return None;
    }
    v.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

fn last_token(v: &[u8]) -> &[u8] {
    v.rsplit(|&b| b == b',').next().unwrap_or(v).trim_ascii()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `chunks` in order, as a connection would (unconsumed bytes stay buffered).
    fn run(chunks: &[&[u8]], head: bool) -> Result<(Vec<Response>, Framer, usize), FrameError> {
        let mut f = Framer::default();
        let mut buf: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        for c in chunks {
            buf.extend_from_slice(c);
            let mut pos = 0;
            loop {
                let s = f.advance(&buf[pos..], head, true)?;
                pos += s.used;
                if let Some(r) = s.done {
                    out.push(r);
                } else if s.used == 0 {
                    break;
                }
                if pos == buf.len() {
                    break;
                }
            }
            buf.drain(..pos);
        }
        Ok((out, f, buf.len()))
    }

    /// Every way of splitting `input` in two gives the same responses as feeding it whole.
    fn split_everywhere(input: &[u8], head: bool) -> Vec<Response> {
        let (whole, _, _) = run(&[input], head).unwrap();
        for i in 0..=input.len() {
            let (split, _, _) = run(&[&input[..i], &input[i..]], head).unwrap();
            assert_eq!(split, whole, "split at byte {i}");
        }
        // And one byte at a time.
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(run(&bytes, head).unwrap().0, whole);
        whole
    }

    fn resp(status: u16, body: u64, reusable: bool) -> Response {
        Response {
            status,
            body_bytes: body,
            reusable,
        }
    }

    #[test]
    fn content_length_responses_back_to_back() {
        let input = b"HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(
            split_everywhere(input, false),
            vec![resp(200, 5, true), resp(404, 0, true)]
        );
    }

    /// Frame `input` (whole) without asking for the Server header, so
    /// repeated heads take the byte-identical fast path.
    fn frame_all(input: &[u8], head: bool) -> Vec<Response> {
        let mut f = Framer::default();
        let (mut pos, mut out) = (0, Vec::new());
        while pos < input.len() {
            let s = f.advance(&input[pos..], head, false).unwrap();
            pos += s.used;
            out.extend(s.done);
            assert!(s.used > 0 || s.done.is_some(), "stuck at {pos}");
        }
        assert!(!f.last_head.is_empty());
        out
    }

    #[test]
    fn a_repeated_head_answering_a_head_request_has_no_body() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
        let mut f = Framer::default();
        let mut get = head.to_vec();
        get.extend_from_slice(b"hello");
        let s = f.advance(&get, false, false).unwrap();
        assert_eq!((s.used, s.done.is_some()), (head.len(), false));
        assert!(f
            .advance(&get[s.used..], false, false)
            .unwrap()
            .done
            .is_some());
        // The same head bytes, now for a HEAD request of a set: done at once.
        let s = f.advance(head, true, false).unwrap();
        assert_eq!(s.done, Some(resp(200, 0, true)));
    }

    #[test]
    fn repeated_heads_frame_like_the_first_and_changed_ones_are_parsed() {
        // The second and third heads take the fast path; the fourth shares
        // the cached bytes' first line but differs after it.
        let same: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let mut input = same.repeat(3);
        input.extend_from_slice(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno",
        );
        let ok = resp(200, 2, true);
        assert_eq!(
            frame_all(&input, false),
            vec![ok, ok, ok, resp(200, 2, false)]
        );
        // HEAD: the cached head still announces no body to skip.
        let heads = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n".repeat(2);
        assert_eq!(frame_all(&heads, true), vec![resp(200, 0, true); 2]);
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: yes\r\nY: z\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";
        assert_eq!(
            split_everywhere(input, false),
            vec![resp(200, 15, true), resp(200, 1, true)]
        );
    }

    #[test]
    fn many_headers_parse_and_too_many_are_named() {
        let with = |n: usize| {
            let mut r = String::from("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n");
            for i in 0..n {
                r.push_str(&format!("X-H{i}: v\r\n"));
            }
            r + "\r\n"
        };
        let (ok, _, _) = run(&[with(100).as_bytes()], false).unwrap();
        assert_eq!(ok, vec![resp(200, 0, true)]);
        let err = run(&[with(MAX_HEADERS).as_bytes()], false).unwrap_err();
        assert_eq!(err, FrameError::TooManyHeaders);
        assert_eq!(
            err.to_string(),
            format!("more than {MAX_HEADERS} response headers")
        );
    }

    #[test]
    fn head_request_ignores_content_length() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Length: 381\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 381\r\n\r\n";
        assert_eq!(
            split_everywhere(input, true),
            vec![resp(200, 0, true), resp(200, 0, true)]
        );
    }

    #[test]
    fn interim_1xx_is_skipped() {
        let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(split_everywhere(input, false), vec![resp(201, 2, true)]);
    }

    #[test]
    fn no_body_for_204_and_304() {
        let input = b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n";
        assert_eq!(
            split_everywhere(input, false),
            vec![resp(204, 0, true), resp(304, 0, true)]
        );
    }

    #[test]
    fn close_delimited_body_completes_at_eof() {
        let (done, mut f, left) = run(&[b"HTTP/1.1 200 OK\r\n\r\nabc", b"def"], false).unwrap();
        assert!(done.is_empty());
        assert_eq!(f.eof(left), Eof::Complete(resp(200, 6, false)));
    }

    #[test]
    fn connection_close_and_http10_are_not_reusable() {
        let input = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(split_everywhere(input, false), vec![resp(200, 0, false)]);
        let input = b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(split_everywhere(input, false), vec![resp(200, 0, false)]);
        let input = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(split_everywhere(input, false), vec![resp(200, 0, true)]);
    }

    #[test]
    fn eof_outcomes() {
        let (_, mut f, left) =
            run(&[b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"], false).unwrap();
        assert_eq!(f.eof(left), Eof::Clean);
        let (_, mut f, left) = run(&[b"HTTP/1.1 200 OK\r\nConte"], false).unwrap();
        assert_eq!(f.eof(left), Eof::TruncatedHead);
        let (_, mut f, left) =
            run(&[b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab"], false).unwrap();
        assert_eq!(f.eof(left), Eof::TruncatedBody);
        let (_, mut f, left) = run(
            &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab"],
            false,
        )
        .unwrap();
        assert_eq!(f.eof(left), Eof::TruncatedBody);
    }

    #[test]
    fn garbage_is_an_error() {
        assert_eq!(
            run(&[b"garbage garbage\r\n\r\n"], false).unwrap_err(),
            FrameError::Head
        );
        assert_eq!(
            run(&[b"HTTP/1.1 200 OK\r\nContent-Length: x1\r\n\r\n"], false).unwrap_err(),
            FrameError::Length
        );
        assert_eq!(
            run(
                &[b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"],
                false
            )
            .unwrap_err(),
            FrameError::Length
        );
        assert_eq!(
            run(
                &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],
                false
            )
            .unwrap_err(),
            FrameError::Chunk
        );
        assert_eq!(
            run(
                &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc\r\n"],
                false
            )
            .unwrap_err(),
            FrameError::Chunk
        );
    }

    #[test]
    fn server_header_is_kept_when_asked() {
        let (_, f, _) = run(
            &[b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Length: 0\r\n\r\n"],
            false,
        )
        .unwrap();
        assert_eq!(f.server.as_deref(), Some("nginx/1.22.1"));
    }

    #[test]
    fn chunk_size_parsing() {
        assert_eq!(chunk_size(b"ff"), Ok(255));
        assert_eq!(chunk_size(b"1A;foo=bar"), Ok(26));
        assert_eq!(chunk_size(b"0 "), Ok(0));
        assert!(chunk_size(b"").is_err());
        assert!(chunk_size(b"fffffffffffffffff").is_err());
    }
}
