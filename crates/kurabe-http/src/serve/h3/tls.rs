//! The built-in server's QUIC configuration: rustls' (TLS 1.3, ALPN `h3`,
//! one certificate chain: the user's PEM files or a
//! [`kurabe_tls::self_signed::SelfSigned`]; built by `kurabe_tls::server`)
//! and quinn's transport settings for a benchmark target.
//!
//! Owns building `quinn_proto::ServerConfig` and reading the PEM files.
//! Must not open sockets.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{IdleTimeout, ServerConfig, TransportConfig, VarInt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::Http3Error;

/// Request streams a client may have open at once on one connection.
const STREAMS: u32 = 1024;

/// The chain and key of `--tls-cert FILE --tls-key FILE`.
pub(super) fn read_pem(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), Http3Error> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| unreadable("--tls-cert", cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(unreadable(
            "--tls-cert",
            cert,
            "no CERTIFICATE in it".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| unreadable("--tls-key", key, e.to_string()))?;
    Ok((chain, key))
}

fn unreadable(flag: &'static str, path: &Path, why: String) -> Http3Error {
    Http3Error::Pem {
        flag,
        path: path.to_owned(),
        why,
    }
}

/// The configuration every connection shares; `idle`: a connection with
/// nothing moving for this long is closed (`--idle-timeout`).
pub(super) fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    idle: Duration,
) -> Result<Arc<ServerConfig>, Http3Error> {
    let mut tls = kurabe_tls::server::tls13(chain, key, b"h3")
        .map_err(|e| Http3Error::Tls(format!("the certificate and key: {e}")))?;
    tls.max_early_data_size = 0;
    let quic = QuicServerConfig::try_from(tls).map_err(|e| Http3Error::Tls(e.to_string()))?;
    let mut config = ServerConfig::with_crypto(Arc::new(quic));
    config.transport_config(Arc::new(transport(idle)));
    Ok(Arc::new(config))
}

/// Many request streams per connection, the client's control and QPACK
/// streams, none of the server's own but its control stream, and the
/// idle timeout.
fn transport(idle: Duration) -> TransportConfig {
    let mut t = TransportConfig::default();
    t.max_concurrent_bidi_streams(VarInt::from_u32(STREAMS));
    t.max_concurrent_uni_streams(VarInt::from_u32(16));
    let ms = VarInt::from_u64(idle.as_millis() as u64).unwrap_or(VarInt::MAX);
    t.max_idle_timeout(Some(IdleTimeout::from(ms)));
    t
}
