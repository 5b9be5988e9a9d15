//! HTTP/2 for the load generator (`--http2`): h2c with prior knowledge for
//! `http://`, ALPN `h2` over TLS for `https://`, `--streams` concurrent
//! streams per connection (h2load's `-m`).
//!
//! Why our own framing over the epoll engine rather than the `h2` crate:
//! `h2` is built on tokio (a runtime, a task and a waker per connection,
//! `Bytes` and `http::Request` allocations per request). A load generator's
//! figure of merit is client CPU per request, and the work HTTP/2 actually
//! needs here is small: the request's header block is the same for every
//! request, so it is HPACK-encoded once per run ([`hpack`]); a response is
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
//! The hook into the rest of the client is [`Setup`] in the shared run
//! state and [`worker::Worker`] in place of the HTTP/1.1 worker; counting
//! ([`crate::client::record`]), the turn loop and its core (budget,
//! schedule, pace, failures, stop), TLS and the
//! syscalls are shared.

pub(crate) mod conn;
pub(crate) mod frame;
pub(crate) mod hpack;
pub(crate) mod worker;

#[cfg(test)]
mod tests;

use super::LoadConfig;
use super::Target;

/// What every HTTP/2 worker of a run shares, built once.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    /// The request's header blocks; of a set, one per target (by the slot's `target`).
    pub blocks: Vec<hpack::RequestBlocks>,
    /// The request bodies, likewise (empty: none, HEADERS ends the stream).
    pub bodies: Vec<Vec<u8>>,
    /// Some request has a body.
    pub any_body: bool,
    /// Dynamic table bytes the indexed header blocks need.
    pub table_need: usize,
    /// Streams in flight per connection (`--streams`).
    pub streams: usize,
}

impl Setup {
    /// Encode the request of `cfg` (or each of its set's, or of its replay's) for HTTP/2.
    pub fn new(cfg: &LoadConfig) -> Setup {
        let scheme = if cfg.target.tls { "https" } else { "http" };
        let encode = |method: &str, target: &Target, headers: &[(String, String)], body| {
            let headers = request_headers(headers, body);
            let host = target.host_header();
            hpack::encode(&hpack::header_list(
                method,
                scheme,
                &host,
                &target.path,
                &headers,
            ))
        };
        let body = |b: &Option<Vec<u8>>| b.clone().unwrap_or_default();
        let (blocks, bodies): (Vec<_>, Vec<_>) = match (&cfg.set, &cfg.replay) {
            (Some(set), _) => set
                .targets
                .iter()
                .map(|t| {
                    let b = encode(&t.method, &t.target, &t.headers, t.body.as_deref());
                    (plain(b), body(&t.body))
                })
                .unzip(),
            (None, Some(replay)) => replay
                .requests
                .iter()
                .map(|q| {
                    let target = super::replay_target(cfg, q);
                    let b = encode(&q.method, &target, &q.headers, q.body.as_deref());
                    (plain(b), body(&q.body))
                })
                .unzip(),
            (None, None) => {
                let b = encode(&cfg.method, &cfg.target, &cfg.headers, cfg.body.as_deref());
                (vec![b], vec![body(&cfg.body)])
            }
        };
        Setup {
            table_need: blocks.iter().map(|b| b.table_need).max().unwrap_or(0),
            any_body: bodies.iter().any(|b| !b.is_empty()),
            blocks,
            bodies,
            streams: cfg.streams.max(1) as usize,
        }
    }
}

/// One of many requests' blocks (a set's target, a replayed request): the
/// requests differ, so literals that leave the server's table alone.
fn plain(mut b: hpack::RequestBlocks) -> hpack::RequestBlocks {
    b.first = b.plain.clone();
    b.repeat = b.plain.clone();
    b.table_need = 0;
    b
}

/// The user's headers, after a default `user-agent` and `accept` unless
/// given, and `content-length` for a body.
fn request_headers(given: &[(String, String)], body: Option<&[u8]>) -> Vec<(String, String)> {
    let has = |name: &str| given.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let mut headers = Vec::new();
    if !has("user-agent") {
        headers.push((
            "user-agent".to_owned(),
            concat!("kurabe/", env!("CARGO_PKG_VERSION")).to_owned(),
        ));
    }
    if !has("accept") {
        headers.push(("accept".to_owned(), "*/*".to_owned()));
    }
    headers.extend(given.iter().cloned());
    if let Some(body) = body {
        if !has("content-length") {
            headers.push(("content-length".to_owned(), body.len().to_string()));
        }
    }
    headers
}
