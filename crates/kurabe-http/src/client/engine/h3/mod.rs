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
//! client configuration. Requests are encoded once per target
//! (`Setup`).
//!
//! `run` drives it all for a plain closed-model load (N requests over
//! C connections × S streams) and returns the engine's `Stats`
//! (kurabe-model's `load_stats`): the piece that runs until the engine's `Protocol` enum takes HTTP/3 as its
//! third variant (issue 35), when a worker over the engine's core replaces
//! the driver's own loop and accounting (`driver`).

pub(crate) mod conn;
mod driver;
pub(crate) mod frame;
pub(crate) mod qpack;
pub(crate) mod response;
mod tls;
pub(crate) mod varint;

#[cfg(test)]
mod tests;

pub use driver::{run, H3Load, H3Run, QuicFacts};

/// What every HTTP/3 connection of a run shares, built once: each
/// target's request as it goes on its stream (HEADERS, then DATA with the
/// body), and whether it is a HEAD request.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub requests: Vec<Vec<u8>>,
    pub head: Vec<bool>,
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

impl Setup {
    /// Encode each request once.
    pub(crate) fn new<'r>(requests: impl IntoIterator<Item = Request<'r>>) -> Setup {
        let (requests, head) = requests
            .into_iter()
            .map(|r| (encode(&r), r.method == "HEAD"))
            .unzip();
        Setup { requests, head }
    }

    /// The bytes of the request of `target` on its stream.
    pub(crate) fn request(&self, target: u32) -> &[u8] {
        &self.requests[target as usize]
    }
}

/// A request's stream bytes: its field section (the pseudo-headers, a
/// default `user-agent` and `accept` unless given, the user's headers
/// without HTTP/1.1's connection-specific ones, `content-length` for a
/// body) in a HEADERS frame, then its body in a DATA frame.
fn encode(r: &Request<'_>) -> Vec<u8> {
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
    frame::request(&block, r.body)
}
