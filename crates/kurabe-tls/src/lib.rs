//! kurabe's relaxed TLS certificate verifiers, in one place; and the
//! built-in server's TLS ([`server`], [`self_signed`]).
//!
//! Owns the two ways kurabe loosens rustls' certificate checks:
//! [`AcceptAnyCertificate`] (`kurabe http --insecure`, as ab does, and the
//! store's `sslmode=require`, libpq's meaning) and [`ChainOnly`] (the store's
//! `sslmode=verify-ca`: the chain must verify, the name need not match).
//! Both still check the handshake signatures, so the session is encrypted
//! with the key of the certificate presented.
//!
//! Must not build client configurations, load trust stores or know who uses
//! it: callers (`kurabe-http`, `kurabe-store`) pick the verifier.
//!
//! The built-in server's TLS lives here, built for size with the rest of
//! this crate (issue 27: it runs once per connection at most).

pub mod self_signed;
pub mod server;

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

/// Accepts any server certificate; handshake signatures are still checked
/// with `provider`'s algorithms.
#[derive(Debug)]
pub struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl AcceptAnyCertificate {
    /// The verifier, ready for `dangerous().with_custom_certificate_verifier`.
    pub fn new(provider: Arc<CryptoProvider>) -> Arc<AcceptAnyCertificate> {
        Arc::new(AcceptAnyCertificate(provider))
    }
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Verifies the chain with a WebPKI verifier but accepts a certificate
/// whose name does not match the server's.
#[derive(Debug)]
pub struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ChainOnly {
    /// Wrap `webpki`, which holds the trusted roots.
    pub fn new(webpki: Arc<WebPkiServerVerifier>) -> Arc<ChainOnly> {
        Arc::new(ChainOnly(webpki))
    }
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let verdict =
            self.0
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verdict {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests;
