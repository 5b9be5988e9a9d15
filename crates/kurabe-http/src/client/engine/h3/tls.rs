//! The QUIC client configuration: rustls with ring (the provider the
//! rest of kurabe uses), TLS 1.3 only (QUIC has no other), ALPN `h3`,
//! trust from a CA file, the system store, or none (`--insecure`); and
//! quinn's transport settings for a load.
//!
//! Owns building `quinn_proto::ClientConfig`. Must not open sockets.
//! (The TCP side's configuration is [`crate::client::engine::tls`]; a CA file
//! for it is part of what issue 35 leaves to do.)

use std::path::Path;
use std::sync::Arc;

use kurabe_tls::AcceptAnyCertificate;
use quinn_proto::crypto::rustls::QuicClientConfig;
use quinn_proto::{ClientConfig, TransportConfig, VarInt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;

use crate::client::LoadError;

/// Receive window of one response stream, and of the connection per stream in flight.
const STREAM_WINDOW: u32 = 1 << 24;

/// The configuration every connection of a run shares. `insecure`: no
/// certificate verification; `ca_file`: trust the PEM certificates in it
/// (instead of the system store); `streams`: requests in flight per connection.
pub(crate) fn client_config(
    insecure: bool,
    ca_file: Option<&Path>,
    streams: usize,
) -> Result<ClientConfig, LoadError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| LoadError::Tls(format!("TLS 1.3 for QUIC: {e}")))?;
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(AcceptAnyCertificate::new(provider))
    } else {
        builder.with_root_certificates(roots(ca_file)?)
    };
    let mut tls = builder.with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = QuicClientConfig::try_from(tls)
        .map_err(|e| LoadError::Tls(format!("QUIC needs a TLS 1.3 suite: {e}")))?;
    let mut config = ClientConfig::new(Arc::new(quic));
    config.transport_config(Arc::new(transport(streams)));
    Ok(config)
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

/// The certificates to trust: `ca_file`'s, else the system store's.
fn roots(ca_file: Option<&Path>) -> Result<RootCertStore, LoadError> {
    let mut roots = RootCertStore::empty();
    if let Some(path) = ca_file {
        let shown = path.display();
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .and_then(|c| c.collect::<Result<_, _>>())
            .map_err(|e| {
                LoadError::Tls(format!("CA file {shown}: cannot read certificates: {e}"))
            })?;
        let (added, _) = roots.add_parsable_certificates(certs);
        if added == 0 {
            return Err(LoadError::Tls(format!(
                "CA file {shown}: no usable CERTIFICATE in it; give a PEM file"
            )));
        }
        return Ok(roots);
    }
    let found = rustls_native_certs::load_native_certs();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(LoadError::Tls(
            "no CA certificates found in the system store (install ca-certificates, \
             give a CA file, or skip verification with --insecure)"
                .into(),
        ));
    }
    Ok(roots)
}
