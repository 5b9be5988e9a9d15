//! The QUIC client configuration: rustls with ring (the provider the
//! rest of kurabe uses), TLS 1.3 only (QUIC has no other; of `-Z`, its
//! TLS 1.3 suites), ALPN `h3`, trust from `--cacert`, the system store,
//! or none (`--insecure`), the `-E` client certificate; and quinn's
//! transport settings for a load.
//!
//! Owns building `quinn_proto::ClientConfig`. Must not open sockets.
//! Trust and client certificates are the TCP side's
//! ([`crate::client::engine::tls`]), so both protocols read them alike.

use std::sync::Arc;

use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{ClientConfig, TransportConfig, VarInt};

use super::session;
use crate::client::engine::setup::TlsOptions;
use crate::client::engine::tls::{self, provider};
use crate::client::LoadError;

/// Receive window of one response stream, and of the connection per stream in flight.
const STREAM_WINDOW: u32 = 1 << 24;

/// The configuration every connection of a run shares. `insecure`: no
/// certificate verification; `streams`: requests in flight per connection.
pub(crate) fn client_config(
    opts: &TlsOptions,
    insecure: bool,
    streams: usize,
) -> Result<ClientConfig, LoadError> {
    let mut provider = provider(opts);
    provider
        .cipher_suites
        .retain(|s| matches!(s, rustls::SupportedCipherSuite::Tls13(_)));
    if provider.cipher_suites.is_empty() {
        return Err(LoadError::Tls(
            "-Z names no TLS 1.3 suite, and QUIC is TLS 1.3 only: add one (e.g. TLS_AES_128_GCM_SHA256)".into(),
        ));
    }
    // Each suite notes when it is the one negotiated (for the TLS block).
    provider.cipher_suites = session::noting(std::mem::take(&mut provider.cipher_suites));
    let tls13: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];
    let mut tls = tls::client_config((provider, tls13), opts, insecure, |e| {
        format!("TLS 1.3 for QUIC: {e}")
    })?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let mut config = ClientConfig::new(quic_crypto(tls)?);
    config.transport_config(Arc::new(transport(streams)));
    Ok(config)
}

/// QUIC's crypto over `tls`: its sessions note the suite and group they
/// settle on ([`session`]); Initial packets are always AES-128-GCM (RFC
/// 9001 §5.2), whichever suites `-Z` offers for the rest.
fn quic_crypto(mut tls: rustls::ClientConfig) -> Result<Arc<session::Config>, LoadError> {
    tls.resumption = rustls::client::Resumption::store(session::NotingStore::new());
    let initial = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|s| s.quic_suite())
        .expect("ring's AES-128-GCM suite has QUIC keys");
    let quic = QuicClientConfig::with_initial(Arc::new(tls), initial)
        .map_err(|e| LoadError::Tls(format!("QUIC's Initial packets: {e}")))?;
    Ok(Arc::new(session::Config(Arc::new(quic))))
}

/// Flow-control windows large enough that `streams` bodies of up to 16 MiB
/// flow at once; the server's own streams (control, QPACK) are allowed.
fn transport(streams: usize) -> TransportConfig {
    let mut t = TransportConfig::default();
    let conn = u64::from(STREAM_WINDOW) * streams.max(1) as u64;
    t.stream_receive_window(VarInt::from_u32(STREAM_WINDOW));
    t.receive_window(VarInt::from_u64(conn.min(VarInt::MAX.into_inner())).unwrap_or(VarInt::MAX));
    t.max_concurrent_uni_streams(VarInt::from_u32(16));
    // The client opens request streams; the server opens none of its own.
    t.max_concurrent_bidi_streams(VarInt::from_u32(0));
    t
}
