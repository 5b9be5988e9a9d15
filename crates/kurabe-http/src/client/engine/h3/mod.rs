//! HTTP/3 for the load generator: QUIC v1 with TLS 1.3 (rustls, ALPN
//! `h3`), `-c` connections each carrying `--streams` concurrent requests.
//!
//! Why `quinn-proto`: it is QUIC as a state machine without I/O (datagrams
//! in, datagrams and timers out), so kurabe drives it from its own epoll
//! loop the way it drives its own HTTP/2 framing (`client::engine::h2`),
//! with no async runtime, task or waker per connection; and it is built on
//! rustls 0.23 with ring, the TLS stack and crypto provider kurabe already
//! has, so no second provider comes in. (quiche brings BoringSSL, ngtcp2
//! is C; s2n-quic and quinn itself bring tokio.)
//!
//! The HTTP/3 layer is ours and small, as HTTP/2's is: `frame` and
//! `varint` the wire, `qpack` the static table and literals (the client
//! allows no dynamic table, so decoding needs no state and refuses any
//! dynamic reference), `response` one request stream's response framing
//! (DATA counted and skipped, content-length checked), `conn` one
//! connection's streams and rules over `quinn-proto`, `tls` the QUIC
//! client configuration, `session` its TLS session with the suite and
//! group noted for the report, `worker` the engine's worker over all of it.
//! Requests are encoded once per target ([`Setup`]).
//!
//! The hook into the rest of the client is [`Setup`], the run's
//! `Framing::H3` (`client::protocol`), and [`worker::Worker`] in place of
//! the HTTP/1.1 worker: the turn loop and its core (budget, schedule,
//! pace, failures, stop), counting ([`crate::client::measure::record`]) and the
//! syscalls are shared, as HTTP/2's are.

pub(crate) mod conn;
pub(crate) mod frame;
pub(crate) mod qpack;
pub(crate) mod response;
mod session;
mod tls;
pub(crate) mod varint;
pub(crate) mod worker;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::client::{Load, LoadError, Requests};
use crate::request::Body;
use crate::source::set::feed::Chunk;
use crate::source::set::{SetTarget, Span};
use crate::target::Target;

/// What every HTTP/3 worker of a run shares, built once: each target's
/// request as it goes on its stream (HEADERS, then DATA with the body),
/// whether it is a HEAD request, the QUIC client configuration and the
/// server name it verifies and sends (SNI).
pub(crate) struct Setup {
    /// Per target (of a set or a replay; one otherwise), in order.
    pub requests: Vec<Encoded>,
    /// Streams in flight per connection (`--streams`).
    pub streams: usize,
    pub config: quinn_proto::ClientConfig,
    /// The URL's host: SNI and the certificate's name.
    pub server_name: String,
}

/// One request ready for its stream.
pub(crate) struct Encoded {
    /// HEADERS, then DATA with the body (its head only when the body is
    /// sent apart).
    pub bytes: Vec<u8>,
    /// The body when it is over `SPLIT_BODY`: written after `bytes` from
    /// its one shared copy, never copied per request.
    pub apart: Option<Body>,
    /// A HEAD request (its response has no body).
    pub head: bool,
    /// Body bytes among them.
    pub body_len: u64,
}

/// Where a stream's request is: among the [`Setup`]'s, or in a streamed
/// set's chunk, which the stream keeps alive until it is settled.
#[derive(Debug, Clone, Default)]
pub(crate) enum Req {
    /// The setup's bytes, by the slot's target.
    #[default]
    Held,
    /// Target `.1` of the chunk ([`render`]).
    Streamed(Arc<Chunk>, u32),
}

/// One request to encode: method, scheme, authority, path, the user's headers, body.
pub(crate) struct Request<'r> {
    pub method: &'r str,
    pub scheme: &'r str,
    pub authority: &'r str,
    pub path: &'r str,
    pub headers: &'r [(String, String)],
    pub body: &'r [u8],
}

impl<'r> Request<'r> {
    /// Method, target, the user's headers and body as one request.
    fn of(
        method: &'r str,
        target: &'r Target,
        authority: &'r str,
        headers: &'r [(String, String)],
        body: Option<&'r [u8]>,
    ) -> Request<'r> {
        Request {
            method,
            scheme: "https",
            authority,
            path: &target.path,
            headers,
            body: body.unwrap_or_default(),
        }
    }
}

impl Setup {
    /// Encode the request of `cfg` (or each of its set's, or of its
    /// replay's) for HTTP/3, `streams` in flight per connection, and build
    /// the QUIC client configuration (`Err`: a CA file or `-E` that
    /// cannot be used).
    pub(crate) fn new(cfg: &Load, streams: u32) -> Result<Setup, LoadError> {
        let streams = streams.max(1) as usize;
        let config = tls::client_config(&cfg.setup.tls, cfg.insecure, streams)?;
        let mut encoded = Vec::new();
        let mut add = |method: &str, t: &Target, headers: &[(String, String)], body| {
            let authority = t.host_header();
            let apart = split(body);
            let r = Request::of(method, t, &authority, headers, body.map(|b| &b[..]));
            encoded.push(Encoded {
                bytes: encode(&r, apart.is_some()),
                apart,
                head: method == "HEAD",
                body_len: r.body.len() as u64,
            });
        };
        match &cfg.requests {
            // A streamed set's targets are rendered by its feeder ([`render`]).
            Requests::Streamed(..) => {}
            Requests::Set(set) => {
                for t in &set.targets {
                    add(&t.method, &t.target, &t.headers, t.body.as_ref());
                }
            }
            Requests::Replay(replay) => {
                for q in &replay.requests {
                    let target = crate::client::replay_target(cfg, q);
                    add(&q.method, &target, &q.headers, q.body.as_ref());
                }
            }
            Requests::One {
                method,
                headers,
                body,
            } => add(method, &cfg.target, headers, body.as_ref()),
        }
        Ok(Setup {
            requests: encoded,
            streams,
            config,
            server_name: cfg.target.host.clone(),
        })
    }

    /// The bytes of the request of `target` and `req` on its stream: its
    /// frames, then its body when that is sent apart (else empty).
    pub(crate) fn request<'b>(&'b self, target: u32, req: &'b Req) -> [&'b [u8]; 2] {
        match req {
            Req::Held => {
                let e = &self.requests[target as usize];
                [&e.bytes, e.apart.as_deref().unwrap_or_default()]
            }
            Req::Streamed(chunk, i) => {
                let s = &chunk.spans[*i as usize];
                let apart = chunk.split[*i as usize].as_deref();
                [
                    &chunk.bytes[s.off..s.off + s.len],
                    apart.unwrap_or_default(),
                ]
            }
        }
    }

    /// Whether the request of `target` and `req` is a HEAD request.
    pub(crate) fn is_head(&self, target: u32, req: &Req) -> bool {
        match req {
            Req::Held => self.requests[target as usize].head,
            Req::Streamed(chunk, i) => chunk.spans[*i as usize].head,
        }
    }

    /// The body length of the request of `target` and `req`.
    pub(crate) fn body_len(&self, target: u32, req: &Req) -> u64 {
        match req {
            Req::Held => self.requests[target as usize].body_len,
            Req::Streamed(chunk, i) => chunk.spans[*i as usize].body_len,
        }
    }
}

/// A streamed set's target for HTTP/3, appended to a chunk's bytes: its
/// request stream (HEADERS, DATA), the span's `len` all of it; or, for a
/// body over `SPLIT_BODY`, the stream up to the body, which is returned
/// to be written from its one shared copy (as HTTP/1.1 and HTTP/2 do).
pub(crate) fn render(t: &SetTarget, out: &mut Vec<u8>) -> (Span, Option<Body>) {
    let off = out.len();
    let authority = t.target.host_header();
    let body = t.body.as_deref();
    let apart = split(t.body.as_ref());
    let r = Request::of(&t.method, &t.target, &authority, &t.headers, body);
    out.extend_from_slice(&encode(&r, apart.is_some()));
    let span = Span {
        off,
        len: out.len() - off,
        body_len: body.map_or(0, |b| b.len() as u64),
        head: t.method == "HEAD",
        tag: t.tag,
    };
    (span, apart)
}

/// A body sent apart from its request's frames: one over `SPLIT_BODY`.
fn split(body: Option<&Body>) -> Option<Body> {
    body.filter(|b| b.len() > crate::client::SPLIT_BODY)
        .cloned()
}

/// A request's stream bytes: its field section (the pseudo-headers, a
/// default `user-agent` and `accept` unless given, the user's headers
/// without HTTP/1.1's connection-specific ones, `content-length` for a
/// body) in a HEADERS frame, then its body in a DATA frame (only the
/// frame's head when the body is sent `apart`).
fn encode(r: &Request<'_>, apart: bool) -> Vec<u8> {
    let has = |name: &str| r.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let agent = concat!("kurabe/", env!("CARGO_PKG_VERSION"));
    let defaults = [("user-agent", agent), ("accept", "*/*")];
    let length = (!r.body.is_empty() && !has("content-length")).then(|| r.body.len().to_string());
    let given = (defaults.into_iter().filter(|(k, _)| !has(k)))
        .chain(r.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .chain(length.as_deref().map(|n| ("content-length", n)));
    let mut fields: Vec<(String, String)> = Vec::new();
    super::h2::hpack::each_field([r.method, r.scheme, r.authority, r.path], given, |k, v| {
        fields.push((k.to_owned(), v.to_owned()));
    });
    let block = qpack::encode(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    frame::message(&block, r.body, apart)
}
