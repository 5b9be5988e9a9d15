//! HTTP/2 for the load generator (`--http2`): h2c with prior knowledge for
//! `http://`, ALPN `h2` over TLS for `https://`, `--streams` concurrent
//! streams per connection (h2load's `-m`).
//!
//! Why our own framing over the epoll engine rather than the `h2` crate:
//! `h2` is built on tokio (a runtime, a task and a waker per connection,
//! `Bytes` and `http::Request` allocations per request). A load generator's
//! figure of merit is client CPU per request, and the work HTTP/2 actually
//! needs here is small: the request's header block is the same for every
//! request, so it is HPACK-encoded once per run ([`hpack`]) (a set's, once
//! per target: before the run, or by the feeder into a streamed set's
//! chunks, which the streams keep, see [`Req`]); a response is
//! a HEADERS frame to decode and DATA frames to count and skip, never to
//! copy. So the frames are parsed in place from the worker's read buffer
//! ([`conn`]) by the same kind of single-threaded epoll loop as the
//! HTTP/1.1 engine ([`worker`]). HPACK decoding is ours too, reading only
//! `:status` (and `server` once) while following the server's dynamic
//! table; only the Huffman code table comes from a crate, `httlib-huffman`
//! (see [`hpack`] for why, with the figures, and why not `hpack`). Only
//! when responses are checked (`--check`, a target's `# @check`) does a
//! connection decode every field (`httlib-hpack`) and each stream keep its
//! head and its body's first bytes for [`crate::response_check`] ([`conn`]).
//!
//! The hook into the rest of the client is [`Setup`], the run's
//! `Framing::H2` (`client::engine::protocol`), and [`worker::Worker`] in place of the HTTP/1.1 worker; counting
//! ([`crate::client::measure::record`]), the turn loop and its core (budget,
//! schedule, pace, failures, stop), TLS and the
//! syscalls are shared.

pub(crate) mod conn;
pub(crate) mod frame;
pub(crate) mod hpack;
pub(crate) mod worker;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::client::{Load, Requests};
use crate::request::Body;
use crate::source::set::feed::Chunk;
use crate::source::set::{SetTarget, Span};
use crate::target::Target;

/// What every HTTP/2 worker of a run shares, built once.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    /// The request's header blocks; of a set, one per target (by the slot's `target`).
    pub blocks: Vec<hpack::RequestBlocks>,
    /// The request bodies, likewise (empty: none, HEADERS ends the stream).
    pub bodies: Vec<Body>,
    /// Some request has a body.
    pub any_body: bool,
    /// Dynamic table bytes the indexed header blocks need.
    pub table_need: usize,
    /// Streams in flight per connection (`--streams`).
    pub streams: usize,
}

/// Where a stream's request is: among the [`Setup`]'s, or in a streamed
/// set's chunk, which the stream keeps alive until it is settled (a
/// request refused by a GOAWAY and sent again later still has its bytes).
#[derive(Debug, Clone, Default)]
pub(crate) enum Req {
    /// The setup's blocks and body, by the slot's target.
    #[default]
    Held,
    /// Target `.1` of the chunk: its header block, then its body ([`render`]).
    Streamed(Arc<Chunk>, u32),
}

/// A request's header block in its three forms (see [`hpack::RequestBlocks`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Blocks<'b> {
    pub first: &'b [u8],
    pub repeat: &'b [u8],
    pub plain: &'b [u8],
}

impl Setup {
    /// Encode the request of `cfg` (or each of its set's, or of its
    /// replay's) for HTTP/2, `streams` in flight per connection.
    pub fn new(cfg: &Load, streams: u32) -> Setup {
        let encode = |method: &str, target: &Target, headers: &[(String, String)], body| {
            hpack::encode(&header_list(cfg, (method, target, headers, body)))
        };
        let (blocks, bodies): (Vec<_>, Vec<_>) = match &cfg.requests {
            Requests::Set(set) | Requests::Streamed(set, _) => set
                .targets
                .iter()
                .map(|t| {
                    let b = encode(&t.method, &t.target, &t.headers, t.body.as_deref());
                    // The target's own body, shared: not copied per target.
                    (plain(b), t.body.clone().unwrap_or_default())
                })
                .unzip(),
            Requests::Replay(replay) => replay
                .requests
                .iter()
                .map(|q| {
                    let target = crate::client::replay_target(cfg, q);
                    let b = encode(&q.method, &target, &q.headers, q.body.as_deref());
                    (plain(b), q.body.clone().unwrap_or_default())
                })
                .unzip(),
            Requests::One {
                method,
                headers,
                body,
            } => {
                let b = encode(method, &cfg.target, headers, body.as_deref());
                (vec![b], vec![body.clone().unwrap_or_default()])
            }
        };
        // A streamed set's bodies are met as it is read.
        let streamed = matches!(cfg.requests, Requests::Streamed(..));
        Setup {
            table_need: blocks.iter().map(|b| b.table_need).max().unwrap_or(0),
            any_body: streamed || bodies.iter().any(|b| !b.is_empty()),
            blocks,
            bodies,
            streams: streams.max(1) as usize,
        }
    }
}

impl Setup {
    /// The header blocks of the request of `target` and `req`.
    pub fn blocks<'b>(&'b self, target: u32, req: &'b Req) -> Blocks<'b> {
        match req {
            Req::Held => {
                let b = &self.blocks[target as usize];
                Blocks {
                    first: &b.first,
                    repeat: &b.repeat,
                    plain: &b.plain,
                }
            }
            Req::Streamed(chunk, i) => {
                let s = &chunk.spans[*i as usize];
                let plain = &chunk.bytes[s.off..s.off + s.len];
                Blocks {
                    first: plain,
                    repeat: plain,
                    plain,
                }
            }
        }
    }

    /// The body of the request of `target` and `req` (empty: none).
    pub fn body<'b>(&'b self, target: u32, req: &'b Req) -> &'b [u8] {
        match req {
            Req::Held => &self.bodies[target as usize],
            Req::Streamed(chunk, i) => {
                if let Some(Some(body)) = chunk.split.get(*i as usize) {
                    return body;
                }
                let s = &chunk.spans[*i as usize];
                let from = s.off + s.len;
                &chunk.bytes[from..from + s.body_len as usize]
            }
        }
    }
}

/// A streamed set's target for HTTP/2, appended to a chunk's bytes: its
/// header block (literals that leave the server's table alone, as a held
/// set's), then its body, or the body returned to be sent from its one
/// shared copy when it is over `SPLIT_BODY`; the span's `len` is the
/// block's. Written field by field (the feeder renders every request of
/// the run).
pub(crate) fn render(cfg: &Load, t: &SetTarget, out: &mut Vec<u8>) -> (Span, Option<Body>) {
    let off = out.len();
    let body = t.body.as_deref();
    each_field(cfg, (&t.method, &t.target, &t.headers, body), |k, v| {
        hpack::plain_field(out, k, v);
    });
    let len = out.len() - off;
    let apart = t
        .body
        .as_ref()
        .filter(|b| b.len() > crate::client::SPLIT_BODY);
    if apart.is_none() {
        out.extend_from_slice(body.unwrap_or_default());
    }
    let span = Span {
        off,
        len,
        body_len: body.map_or(0, |b| b.len() as u64),
        head: t.method == "HEAD",
        tag: t.tag,
    };
    (span, apart.cloned())
}

/// A request: method, target, the user's headers, body.
type Request<'r> = (
    &'r str,
    &'r Target,
    &'r [(String, String)],
    Option<&'r [u8]>,
);

/// A request's header list for HTTP/2.
fn header_list(cfg: &Load, req: Request<'_>) -> Vec<(String, String)> {
    let mut list = Vec::with_capacity(req.2.len() + 6);
    each_field(cfg, req, |k, v| {
        list.push((k.to_ascii_lowercase(), v.to_owned()));
    });
    list
}

/// Each field of a request's header list ([`hpack::each_field`]): the
/// user's headers after a default `user-agent` and `accept` unless given,
/// and `content-length` for a body.
fn each_field(cfg: &Load, req: Request<'_>, f: impl FnMut(&str, &str)) {
    let (method, target, given, body) = req;
    let has = |name: &str| given.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let agent = concat!("kurabe/", env!("CARGO_PKG_VERSION"));
    let defaults = [("user-agent", agent), ("accept", "*/*")];
    let length = body
        .filter(|_| !has("content-length"))
        .map(|b| b.len().to_string());
    let headers = (defaults.into_iter().filter(|(k, _)| !has(k)))
        .chain(given.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .chain(length.as_deref().map(|n| ("content-length", n)));
    let scheme = if cfg.target.tls { "https" } else { "http" };
    let host = target.host_header();
    hpack::each_field([method, scheme, &host, &target.path], headers, f);
}

/// One of many requests' blocks (a set's target, a replayed request): the
/// requests differ, so literals that leave the server's table alone.
fn plain(mut b: hpack::RequestBlocks) -> hpack::RequestBlocks {
    b.first = b.plain.clone();
    b.repeat = b.plain.clone();
    b.table_need = 0;
    b
}
