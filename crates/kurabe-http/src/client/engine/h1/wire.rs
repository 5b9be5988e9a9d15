//! HTTP/1.1 requests as they go on the wire: the run's one request (repeated
//! for pipelining), a held set's or a replay's requests one after another
//! with where each is, and a streamed set's chunk; a body over
//! [`SPLIT_BODY`] is sent apart from its head, from its one shared copy.
//!
//! Owns the serialisation of a request (request line, the headers kurabe
//! adds, the body). Must not send anything: the worker writes these bytes.

use crate::client::{replay_target, set, Load, Requests, SPLIT_BODY};
use crate::request::Body;
use crate::target::Target;

/// The run's one request, to serialise (a set's or a replay's have their own).
pub(crate) fn the_request(cfg: &Load) -> Wire<'_> {
    let (method, headers, body) = match &cfg.requests {
        Requests::One {
            method,
            headers,
            body,
        } => (method.as_str(), headers.as_slice(), body.as_deref()),
        _ => ("GET", &[][..], None),
    };
    Wire {
        method,
        target: &cfg.target,
        headers,
        body,
    }
}

/// A set's target, to serialise.
pub(crate) fn target_wire(t: &set::SetTarget) -> Wire<'_> {
    Wire {
        method: &t.method,
        target: &t.target,
        headers: &t.headers,
        body: t.body.as_deref(),
    }
}

/// A recorded request going to `target`, to serialise.
pub(crate) fn recorded_wire<'a>(
    rec: &'a crate::source::replay::Recorded,
    target: &'a Target,
) -> Wire<'a> {
    Wire {
        method: &rec.method,
        target,
        headers: &rec.headers,
        body: rec.body.as_deref(),
    }
}

/// The one request's HTTP/1.1 bytes, repeated for pipelining; of a body
/// over [`SPLIT_BODY`], its head once and the body apart (by reference).
pub(crate) fn one_request(cfg: &Load, body: Option<&Body>) -> (Vec<u8>, usize, Option<Body>) {
    let one = the_request(cfg);
    let mut r = Vec::with_capacity(256);
    match body.filter(|b| b.len() > SPLIT_BODY) {
        Some(body) => {
            one.write_head(cfg, &mut r);
            let len = r.len() + body.len();
            (r, len, Some(body.clone()))
        }
        None => {
            one.write(cfg, &mut r);
            (r.repeat(cfg.protocol.pipeline() + 1), r.len(), None)
        }
    }
}

/// One request to serialise for HTTP/1.1.
pub(crate) struct Wire<'a> {
    method: &'a str,
    target: &'a Target,
    headers: &'a [(String, String)],
    body: Option<&'a [u8]>,
}

impl Wire<'_> {
    /// Append the request's bytes, with the run's keep-alive and proxy, to `r`.
    pub(crate) fn write(&self, cfg: &Load, r: &mut Vec<u8>) {
        self.write_head(cfg, r);
        if let Some(body) = self.body {
            r.extend_from_slice(body);
        }
    }

    /// Append the request's head (through its blank line), to `r`.
    pub(crate) fn write_head(&self, cfg: &Load, r: &mut Vec<u8>) {
        r.extend_from_slice(self.method.as_bytes());
        r.push(b' ');
        match &cfg.setup.proxy {
            // A proxy needs the absolute form (RFC 9112 §3.2.2).
            Some(_) => r.extend_from_slice(self.target.url().as_bytes()),
            None => r.extend_from_slice(self.target.path.as_bytes()),
        }
        r.extend_from_slice(b" HTTP/1.1\r\n");
        let has = |name: &str| {
            self.headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(name))
        };
        if !has("host") {
            r.extend_from_slice(format!("Host: {}\r\n", self.target.host_header()).as_bytes());
        }
        if !has("user-agent") {
            r.extend_from_slice(
                concat!("User-Agent: kurabe/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
            );
        }
        if !has("accept") {
            r.extend_from_slice(b"Accept: */*\r\n");
        }
        for (k, v) in self.headers {
            r.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
        }
        if let Some(auth) = cfg.setup.proxy.as_ref().and_then(|p| p.authorization()) {
            r.extend_from_slice(format!("Proxy-Authorization: {auth}\r\n").as_bytes());
        }
        if !cfg.protocol.reuses_connections() && !has("connection") {
            r.extend_from_slice(b"Connection: close\r\n");
        }
        if let Some(body) = self.body {
            if !has("content-length") {
                r.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
            }
        }
        r.extend_from_slice(b"\r\n");
    }
}

/// A set's targets serialised one after another, and where each one is.
pub(crate) fn set_bytes(cfg: &Load, set: &set::RequestSet) -> Held {
    let mut held = Held::default();
    for t in &set.targets {
        held.push(cfg, target_wire(t), t.body.as_ref(), t.tag);
    }
    held
}

/// Append target `t`'s request to `bytes` (a streamed set's chunk);
/// where it is, and its body when that is sent apart ([`apart`]).
pub(crate) fn set_span(
    cfg: &Load,
    t: &set::SetTarget,
    bytes: &mut Vec<u8>,
) -> (set::Span, Option<Body>) {
    apart(cfg, target_wire(t), t.body.as_ref(), t.tag, bytes)
}

/// Append request `one` (its body `body`, shared, when it has one) to
/// `bytes`: whole, or its head alone when its body is over
/// [`SPLIT_BODY`], which is then sent after the head from its one shared
/// copy (returned). The span's `len` counts the body either way.
pub(crate) fn apart(
    cfg: &Load,
    one: Wire<'_>,
    body: Option<&Body>,
    tag: crate::tags::Tag,
    bytes: &mut Vec<u8>,
) -> (set::Span, Option<Body>) {
    let off = bytes.len();
    let apart = body.filter(|b| b.len() > SPLIT_BODY);
    match apart {
        Some(_) => one.write_head(cfg, bytes),
        None => one.write(cfg, bytes),
    }
    let body_len = body.map_or(0, |b| b.len());
    let span = set::Span {
        off,
        len: bytes.len() - off + apart.map_or(0, |_| body_len),
        body_len: body_len as u64,
        head: one.method == "HEAD",
        tag,
    };
    (span, apart.cloned())
}

/// A held set's or a replay's HTTP/1.1 requests: their bytes one after
/// another, where each is, and the bodies sent apart (over [`SPLIT_BODY`]).
#[derive(Default)]
pub(crate) struct Held {
    pub(crate) bytes: Vec<u8>,
    pub(crate) spans: Vec<set::Span>,
    pub(crate) split: Vec<Option<Body>>,
}

impl Held {
    /// Append request `one` (its body `body`, shared, when it has one).
    fn push(&mut self, cfg: &Load, one: Wire<'_>, body: Option<&Body>, tag: crate::tags::Tag) {
        let (span, split) = apart(cfg, one, body, tag, &mut self.bytes);
        self.spans.push(span);
        self.split.push(split);
    }
}

/// A replay's requests on the wire, one after another, and where each is
/// (`cfg.target.path` is the base URL's path, put before each recorded
/// path).
pub(crate) fn replay_bytes(cfg: &Load, replay: &crate::source::replay::Replay) -> Held {
    let mut held = Held::default();
    for (i, rec) in replay.requests.iter().enumerate() {
        let target = replay_target(cfg, rec);
        let one = recorded_wire(rec, &target);
        let tag = replay.tags.get(i).copied().unwrap_or_default();
        held.push(cfg, one, rec.body.as_ref(), tag);
    }
    held
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::client::{Arrival, Engine, Protocol, Setup, StopCondition};

    /// Serialise the request once; every send reuses these bytes.
    fn request_bytes(cfg: &Load) -> Vec<u8> {
        let mut r = Vec::with_capacity(256);
        the_request(cfg).write(cfg, &mut r);
        r
    }

    #[test]
    fn request_bytes_carry_method_host_and_headers() {
        let cfg = Load {
            target: Target::parse("http://[::1]:81/p?q").unwrap(),
            requests: Requests::One {
                method: "POST".into(),
                headers: vec![("X-A".into(), "1".into())],
                body: Some(b"hello".to_vec().into()),
            },
            concurrency: 1,
            threads: 1,
            protocol: Protocol::H1 {
                keep_alive: false,
                pipeline: 1,
            },
            stop: StopCondition::Requests(1),
            arrival: Arrival::Closed,
            warmup: None,
            timeout: Duration::from_secs(1),
            abort_on_error: false,
            check_length: true,
            insecure: false,
            gnuplot_file: None,
            setup: Setup::default(),
            engine: Engine::Auto,
            labels: Default::default(),
            thresholds: Vec::new(),
        };
        let text = String::from_utf8(request_bytes(&cfg)).unwrap();
        assert!(
            text.starts_with("POST /p?q HTTP/1.1\r\nHost: [::1]:81\r\n"),
            "{text}"
        );
        assert!(text.contains("X-A: 1\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("Content-Length: 5\r\n\r\nhello"));
    }
}
