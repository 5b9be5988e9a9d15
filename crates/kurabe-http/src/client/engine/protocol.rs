//! How a load's requests travel on a connection: the protocol a run
//! speaks ([`Protocol`], resolved from the spec's `keep_alive`, `pipeline`,
//! `http2`, `http3` and `streams`) and what its workers share of it once
//! the run starts ([`Framing`]: HTTP/1.1's settings, HTTP/2's and HTTP/3's
//! encoded requests).
//!
//! Owns the one place where the protocols differ before a worker runs:
//! [`Framing::new`] prepares each protocol's part, and the engine's
//! `make_workers` picks each protocol's worker by one `match` on it; each
//! protocol's framing is its own module (`h2`, `h3`). Must not frame or
//! parse anything itself.

use kurabe_model::load::LoadSpec;

/// The protocol a load speaks, checked (pipelining only with keep-alive,
/// streams only with HTTP/2: see `load::resolve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// HTTP/1.1: `keep_alive` reuses connections (`-k`; without it every
    /// request opens a new one, as ab does); `pipeline` requests in flight
    /// per connection (1 = no pipelining). Closed model: a batch of
    /// `pipeline` goes out in one send, the next when all of it is answered
    /// (wrk's pipelining).
    H1 {
        /// Reuse connections.
        keep_alive: bool,
        /// Requests in flight per connection.
        pipeline: u32,
    },
    /// HTTP/2 (`--http2`): h2c with prior knowledge for `http://`, ALPN
    /// `h2` for `https://`; connections are always reused.
    H2 {
        /// Streams in flight per connection (`--streams`, h2load's `-m`).
        streams: u32,
    },
    /// HTTP/3 (`--http3`): QUIC v1 with ALPN `h3`, `https://` only;
    /// connections are always reused.
    H3 {
        /// Streams in flight per connection (`--streams`).
        streams: u32,
    },
}

impl Protocol {
    /// The protocol `spec` asks for (its combinations checked elsewhere).
    pub(crate) fn of_spec(spec: &LoadSpec) -> Protocol {
        let streams = spec.streams.unwrap_or(1).max(1);
        match (spec.http2, spec.http3) {
            (_, true) => Protocol::H3 { streams },
            (true, false) => Protocol::H2 { streams },
            (false, false) => Protocol::H1 {
                keep_alive: spec.keep_alive,
                pipeline: spec.pipeline.max(1),
            },
        }
    }

    /// The same protocol with connections reused (a replay's; HTTP/2's always are).
    pub(crate) fn kept_alive(self) -> Protocol {
        match self {
            Protocol::H1 { pipeline, .. } => Protocol::H1 {
                keep_alive: true,
                pipeline,
            },
            multiplexed @ (Protocol::H2 { .. } | Protocol::H3 { .. }) => multiplexed,
        }
    }

    /// Connections carry more than one request.
    pub(crate) fn reuses_connections(self) -> bool {
        match self {
            Protocol::H1 { keep_alive, .. } => keep_alive,
            Protocol::H2 { .. } | Protocol::H3 { .. } => true,
        }
    }

    /// HTTP/1.1 requests in flight per connection: `pipeline` with
    /// keep-alive, else 1 (HTTP/2's streams are not pipelining).
    pub(crate) fn pipeline(self) -> usize {
        match self {
            Protocol::H1 {
                keep_alive: true,
                pipeline,
            } => pipeline.max(1) as usize,
            _ => 1,
        }
    }

    /// Only the HTTP/1.1 worker drives io_uring (`--engine`).
    pub(crate) fn is_h1(self) -> bool {
        matches!(self, Protocol::H1 { .. })
    }

    /// The protocol as the record names it.
    pub(crate) fn name(self, tls: bool) -> &'static str {
        match (self, tls) {
            (Protocol::H1 { .. }, _) => "http/1.1",
            (Protocol::H2 { .. }, false) => "h2c",
            (Protocol::H2 { .. }, true) => "h2",
            (Protocol::H3 { .. }, _) => "h3",
        }
    }

    /// The record's HTTP/2 block (`None`: not HTTP/2).
    pub(crate) fn http2_summary(self) -> Option<kurabe_model::http::Http2Summary> {
        match self {
            Protocol::H2 { streams } => Some(kurabe_model::http::Http2Summary {
                streams,
                ..Default::default()
            }),
            Protocol::H1 { .. } | Protocol::H3 { .. } => None,
        }
    }

    /// The record's HTTP/3 block (`None`: not HTTP/3).
    pub(crate) fn http3_summary(self) -> Option<kurabe_model::http::Http3Summary> {
        match self {
            Protocol::H3 { streams } => Some(kurabe_model::http::Http3Summary {
                streams,
                ..Default::default()
            }),
            Protocol::H1 { .. } | Protocol::H2 { .. } => None,
        }
    }
}

/// What every worker of a run shares of its protocol, prepared once
/// before the workers start.
pub(crate) enum Framing {
    /// HTTP/1.1: how connections are used (the requests are the run's
    /// serialised bytes).
    H1(H1),
    /// HTTP/2: the requests encoded (HPACK blocks, bodies) and `--streams`.
    H2(super::h2::Setup),
    /// HTTP/3: the requests encoded (QPACK blocks and bodies, framed), the
    /// QUIC client configuration and `--streams`.
    H3(super::h3::Setup),
}

/// How an HTTP/1.1 run uses its connections; its worker reads these per
/// request, from a copy of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct H1 {
    /// Reuse connections (`-k`).
    pub keep_alive: bool,
    /// Requests in flight per connection (1 without keep-alive).
    pub pipeline: usize,
}

impl Framing {
    /// `protocol`'s part of the run `cfg` describes (`Err`: HTTP/3's TLS
    /// configuration cannot be built).
    pub(crate) fn new(
        protocol: Protocol,
        cfg: &crate::client::Load,
    ) -> Result<Framing, crate::client::LoadError> {
        Ok(match protocol {
            Protocol::H1 { keep_alive, .. } => Framing::H1(H1 {
                keep_alive,
                pipeline: protocol.pipeline(),
            }),
            Protocol::H2 { streams } => Framing::H2(super::h2::Setup::new(cfg, streams)),
            Protocol::H3 { streams } => Framing::H3(super::h3::Setup::new(cfg, streams)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_resolves_to_one_protocol() {
        let mut spec = LoadSpec::for_url("http://h/");
        assert_eq!(
            Protocol::of_spec(&spec),
            Protocol::H1 {
                keep_alive: false,
                pipeline: 1
            }
        );
        spec.keep_alive = true;
        spec.pipeline = 4;
        let h1 = Protocol::of_spec(&spec);
        assert_eq!((h1.pipeline(), h1.reuses_connections()), (4, true));
        assert_eq!(h1.name(true), "http/1.1");
        spec.pipeline = 1;
        spec.http2 = true;
        spec.streams = Some(8);
        let h2 = Protocol::of_spec(&spec);
        assert_eq!(h2, Protocol::H2 { streams: 8 });
        assert_eq!((h2.pipeline(), h2.reuses_connections()), (1, true));
        assert_eq!((h2.name(false), h2.name(true)), ("h2c", "h2"));
        assert_eq!(h2.http2_summary().map(|s| s.streams), Some(8));
        spec.http2 = false;
        spec.http3 = true;
        let h3 = Protocol::of_spec(&spec);
        assert_eq!(h3, Protocol::H3 { streams: 8 });
        assert_eq!((h3.pipeline(), h3.reuses_connections()), (1, true));
        assert_eq!((h3.name(true), h3.is_h1()), ("h3", false));
        assert_eq!(h3.http3_summary().map(|s| s.streams), Some(8));
        assert_eq!(h3.http2_summary(), None);
    }

    #[test]
    fn without_keep_alive_nothing_is_pipelined() {
        let p = Protocol::H1 {
            keep_alive: false,
            pipeline: 4,
        };
        assert_eq!(p.pipeline(), 1);
        assert_eq!(p.kept_alive().pipeline(), 4);
        let h2 = Protocol::H2 { streams: 3 };
        assert_eq!(h2.kept_alive(), h2);
    }
}
