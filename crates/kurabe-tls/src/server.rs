//! The built-in server's rustls configuration (`kurabe serve --http3`):
//! ring, TLS 1.3 only (QUIC has no other), one certificate chain and its
//! key, no client certificates, the ALPN protocol given.
//!
//! Owns that configuration. Must not read files (the caller reads the
//! user's PEM files or makes a [`crate::self_signed::SelfSigned`]) or know
//! QUIC's transport.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A TLS 1.3 server configuration presenting `chain` (signed with `key`)
/// and speaking `alpn`; `Err` when rustls refuses the key or its match
/// with the chain.
pub fn tls13(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    alpn: &[u8],
) -> Result<rustls::ServerConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    tls.alpn_protocols = vec![alpn.to_vec()];
    Ok(tls)
}
