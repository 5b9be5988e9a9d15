//! What every worker thread of one run shares, whatever the protocol: the
//! resolved [`Load`], read-only, and what the run made of it before it
//! started (the address, the requests on the wire, the clock, the budget,
//! the protocol's setup), with the few atomics the workers meet in (the
//! first body length, the first `Server:` and TLS summary, the abort
//! flag); and opening a connection's socket the way every protocol does
//! (TCP, or UDP for HTTP/3).
//!
//! Owns the run-wide runtime state and the connect. Must not copy a
//! setting of the load (read it through [`Shared::load`]), nor hold
//! per-connection or per-request state, nor know any protocol's framing.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, OnceLock};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::schedule::Budget;
use super::Load;
use kurabe_model::failures::FailureKind;

/// What all workers share, read-only after start except the atomics.
pub(crate) struct Shared {
    /// The load the run runs (its threads the run's own, at least 1 and
    /// at most one per connection).
    pub load: Arc<Load>,
    /// Where connections go (the proxy's with `-X`), resolved.
    pub addr: SockAddr,
    /// What is sent, ready on the wire: one request, a held or streamed
    /// set, a replay's.
    pub wire: crate::source::wire::Prepared,
    /// Length of one serialised request (of a set or a replay: the
    /// longest), from `wire`: the unit of the HTTP/1.1 worker's
    /// per-send count of what is written.
    pub request_len: usize,
    /// The per-request timeout in the clock's nanoseconds (at least 1 ms).
    pub timeout_ns: u64,
    /// `-n`'s requests, claimed by all workers.
    pub budget: Budget,
    /// Monotonic start of the run and of the measured phase; end of the run (u64::MAX = none).
    pub start_ns: u64,
    pub measure_ns: u64,
    pub end_ns: u64,
    /// Wall clock (µs since the epoch) at `start_ns`, for `-g`.
    pub start_unix_us: u64,
    /// Body length of the first complete response (u64::MAX = none yet).
    pub doc_len: AtomicU64,
    pub server: OnceLock<String>,
    /// What the first finished TLS handshake settled on (`https://`).
    pub tls_summary: OnceLock<kurabe_model::http::TlsSummary>,
    /// The per-second series every worker cuts into.
    pub series: super::measure::series::Collector,
    /// Set by the first failure when the load aborts on errors.
    pub aborted: AtomicBool,
    pub tls: Option<super::engine::tls::TlsSetup>,
    pub buf_size: usize,
    /// `-B`: local address (port 0) to bind before connecting.
    pub bind: Option<SockAddr>,
    /// Drive sockets with io_uring (else epoll); resolved before the run.
    pub uring: bool,
    /// The protocol's part: HTTP/1.1's keep-alive and pipelining, or
    /// HTTP/2's and HTTP/3's encoded requests and streams.
    pub framing: super::engine::protocol::Framing,
    /// Some request is checked: responses are judged (and their heads kept).
    pub checking: bool,
    /// Body bytes a connection keeps of each response for the checks and
    /// the first failure's summary (0 without checks).
    pub keep_body: usize,
}

impl Shared {
    /// The run's client threads.
    #[inline]
    pub(crate) fn threads(&self) -> u64 {
        u64::from(self.load.threads)
    }

    /// `-n`, when given.
    pub(crate) fn limit(&self) -> Option<u64> {
        self.load.stop.limits().0
    }
}

impl Shared {
    /// A non-blocking TCP socket with `-b` and `-B` applied, its connect
    /// started (both protocols' workers open connections here).
    pub(crate) fn connect_socket(&self) -> io::Result<Socket> {
        let sock = Socket::new(
            Domain::for_address(self.addr.as_socket().expect("resolved address")),
            Type::STREAM.nonblocking().cloexec(),
            Some(Protocol::TCP),
        )?;
        sock.set_nodelay(true)?;
        if let Some(size) = self.load.setup.socket_buffer {
            sock.set_send_buffer_size(size as usize)?;
            sock.set_recv_buffer_size(size as usize)?;
        }
        if let Some(local) = &self.bind {
            sock.bind(local)?;
        }
        match sock.connect(&self.addr) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        Ok(sock)
    }
}

impl Shared {
    /// A non-blocking UDP socket with `-b` and `-B` applied (else bound to
    /// any address of the server's family), connected to the server: an
    /// HTTP/3 connection's own socket.
    pub(crate) fn udp_socket(&self) -> io::Result<Socket> {
        let addr = self.addr.as_socket().expect("resolved address");
        let sock = Socket::new(
            Domain::for_address(addr),
            Type::DGRAM.nonblocking().cloexec(),
            Some(Protocol::UDP),
        )?;
        if let Some(size) = self.load.setup.socket_buffer {
            sock.set_send_buffer_size(size as usize)?;
            sock.set_recv_buffer_size(size as usize)?;
        }
        let any: std::net::SocketAddr = match addr {
            std::net::SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
            std::net::SocketAddr::V6(_) => ([0u16; 8], 0).into(),
        };
        sock.bind(self.bind.as_ref().unwrap_or(&any.into()))?;
        sock.connect(&self.addr)?;
        Ok(sock)
    }
}

/// The bucket a failure to open a connection counts in: running out of file
/// descriptors is kurabe's own failure, not the server's refusal.
pub(crate) fn socket_failure_kind(e: &io::Error) -> FailureKind {
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE) => FailureKind::Client,
        _ => FailureKind::Connect,
    }
}

#[cfg(test)]
mod socket_failure_tests {
    use super::*;

    #[test]
    fn out_of_descriptors_is_the_clients_failure() {
        let kind = |errno| socket_failure_kind(&io::Error::from_raw_os_error(errno));
        assert_eq!(kind(libc::EMFILE), FailureKind::Client);
        assert_eq!(kind(libc::ENFILE), FailureKind::Client);
        assert_eq!(kind(libc::ECONNREFUSED), FailureKind::Connect);
    }
}
