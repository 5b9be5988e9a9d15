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
//! (see [`hpack`] for why, with the figures, and why not `hpack`).
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

/// What every HTTP/2 worker of a run shares, built once.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    /// The request's header blocks.
    pub blocks: hpack::RequestBlocks,
    /// The request body (empty: none, HEADERS ends the stream).
    pub body: Vec<u8>,
    /// Streams in flight per connection (`--streams`).
    pub streams: usize,
}

impl Setup {
    /// Encode the request of `cfg` for HTTP/2.
    pub fn new(cfg: &LoadConfig) -> Setup {
        let scheme = if cfg.target.tls { "https" } else { "http" };
        let list = hpack::header_list(
            &cfg.method,
            scheme,
            &cfg.target.host_header(),
            &cfg.target.path,
            &request_headers(cfg),
        );
        Setup {
            blocks: hpack::encode(&list),
            body: cfg.body.clone().unwrap_or_default(),
            streams: cfg.streams.max(1) as usize,
        }
    }
}

/// The user's headers, after a default `user-agent` and `accept` unless
/// given, and `content-length` for a body.
fn request_headers(cfg: &LoadConfig) -> Vec<(String, String)> {
    let has = |name: &str| {
        cfg.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(name))
    };
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
    headers.extend(cfg.headers.iter().cloned());
    if let Some(body) = &cfg.body {
        if !has("content-length") {
            headers.push(("content-length".to_owned(), body.len().to_string()));
        }
    }
    headers
}
