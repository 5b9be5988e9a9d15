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
    /// Encode the request of `cfg` (or each of its set's) for HTTP/2.
    pub fn new(cfg: &LoadConfig) -> Setup {
        let scheme = if cfg.target.tls { "https" } else { "http" };
        let (blocks, bodies): (Vec<_>, Vec<_>) = match &cfg.set {
            None => {
                let list = hpack::header_list(
                    &cfg.method,
                    scheme,
                    &cfg.target.host_header(),
                    &cfg.target.path,
                    &request_headers(&cfg.headers, cfg.body.as_deref()),
                );
                let body = cfg.body.clone().unwrap_or_default();
                (vec![hpack::encode(&list)], vec![body])
            }
            Some(set) => set
                .targets
                .iter()
                .map(|t| {
                    let list = hpack::header_list(
                        &t.method,
                        scheme,
                        &t.target.host_header(),
                        &t.target.path,
                        &request_headers(&t.headers, t.body.as_deref()),
                    );
                    // Targets differ: literals that leave the server's table alone.
                    let mut b = hpack::encode(&list);
                    b.first = b.plain.clone();
                    b.repeat = b.plain.clone();
                    b.table_need = 0;
                    (b, t.body.clone().unwrap_or_default())
                })
                .unzip(),
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
