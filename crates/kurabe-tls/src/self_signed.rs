//! The built-in server's self-signed certificate (`kurabe serve --http3`,
//! `kurabe demo --http3`): a fresh ECDSA P-256 key
//! (ring, the crypto rustls and QUIC already use) and an X.509 v3
//! certificate for `localhost`, 127.0.0.1 and ::1, written in DER here.
//!
//! Why written by hand: the certificate is one fixed shape with three
//! variable parts (serial, validity, key), and a certificate library
//! (rcgen, x509-cert's builder) would cost the release binary more than
//! these lines. It is its own trust anchor (no CA flag, so WebPKI accepts
//! it as the end entity too): a client trusts it with `--cacert` on its
//! PEM, [`SelfSigned::pem`].
//!
//! Owns the key and the DER. Must not read or write files or build TLS
//! configurations ([`crate::server`] does).

use std::time::{Duration, SystemTime};

use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING};

/// A certificate and its private key.
pub struct SelfSigned {
    /// The certificate, DER.
    pub cert: Vec<u8>,
    /// Its private key, PKCS#8 DER.
    pub key: Vec<u8>,
}

/// Why no certificate could be made (ring's key generation or signing failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CertError;

impl std::fmt::Display for CertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cannot make a self-signed certificate (key generation failed)")
    }
}

impl std::error::Error for CertError {}

/// How long the certificate is valid before and after it is made (a
/// client's clock a little behind; a server left running).
const BEFORE: Duration = Duration::from_secs(3600);
const AFTER: Duration = Duration::from_secs(365 * 86_400);

// Encoded object identifiers.
const ECDSA_WITH_SHA256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
const EC_PUBLIC_KEY: &[u8] = &[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const PRIME256V1: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const COMMON_NAME: &[u8] = &[0x06, 0x03, 0x55, 0x04, 0x03];
const SUBJECT_ALT_NAME: &[u8] = &[0x06, 0x03, 0x55, 0x1d, 0x11];
const EXT_KEY_USAGE: &[u8] = &[0x06, 0x03, 0x55, 0x1d, 0x25];
const SERVER_AUTH: &[u8] = &[0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];

impl SelfSigned {
    /// A new key and a certificate for `localhost`, 127.0.0.1 and ::1,
    /// valid from an hour ago for a year.
    pub fn localhost() -> Result<SelfSigned, CertError> {
        let rng = SystemRandom::new();
        let alg = &ECDSA_P256_SHA256_ASN1_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(|_| CertError)?;
        let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).map_err(|_| CertError)?;
        let mut serial = [0u8; 16];
        rng.fill(&mut serial).map_err(|_| CertError)?;
        let now = SystemTime::now();
        let tbs = tbs(
            serial,
            (now - BEFORE, now + AFTER),
            pair.public_key().as_ref(),
        );
        let sig = pair.sign(&rng, &tbs).map_err(|_| CertError)?;
        let cert = seq(&[&tbs, &seq(&[ECDSA_WITH_SHA256]), &bit_string(sig.as_ref())]);
        Ok(SelfSigned {
            cert,
            key: pkcs8.as_ref().to_vec(),
        })
    }

    /// The certificate as PEM: the file a client trusts (`--cacert`).
    pub fn pem(&self) -> String {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&self.cert);
        let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
        for line in b64.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
        out
    }
}

/// The TBSCertificate (RFC 5280 §4.1): v3, `serial`, ECDSA with SHA-256,
/// issuer and subject CN=localhost, `validity`, the P-256 `point`, and the
/// names and purpose.
fn tbs(serial: [u8; 16], validity: (SystemTime, SystemTime), point: &[u8]) -> Vec<u8> {
    let name = seq(&[&tlv(0x31, &seq(&[COMMON_NAME, &tlv(0x0c, b"localhost")]))]);
    let mut serial = serial;
    // A positive INTEGER of 16 bytes (no sign bit, no leading zero byte).
    serial[0] = (serial[0] & 0x7f) | 0x40;
    let spki = seq(&[&seq(&[EC_PUBLIC_KEY, PRIME256V1]), &bit_string(point)]);
    seq(&[
        &tlv(0xa0, &tlv(0x02, &[2])),
        &tlv(0x02, &serial),
        &seq(&[ECDSA_WITH_SHA256]),
        &name,
        &seq(&[&time(validity.0), &time(validity.1)]),
        &name,
        &spki,
        &tlv(0xa3, &seq(&[&alt_names(), &server_auth()])),
    ])
}

/// subjectAltName: DNS localhost, IP 127.0.0.1, IP ::1.
fn alt_names() -> Vec<u8> {
    let names = seq(&[
        &tlv(0x82, b"localhost"),
        &tlv(0x87, &[127, 0, 0, 1]),
        &tlv(0x87, &std::net::Ipv6Addr::LOCALHOST.octets()),
    ]);
    seq(&[SUBJECT_ALT_NAME, &tlv(0x04, &names)])
}

/// extKeyUsage: TLS server authentication.
fn server_auth() -> Vec<u8> {
    seq(&[EXT_KEY_USAGE, &tlv(0x04, &seq(&[SERVER_AUTH]))])
}

/// UTCTime through 2049, GeneralizedTime after (RFC 5280 §4.1.2.5).
fn time(t: SystemTime) -> Vec<u8> {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, mo, d) = kurabe_model::time::civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    let hms = format!("{:02}{:02}{:02}Z", s / 3600, s / 60 % 60, s % 60);
    if y < 2050 {
        tlv(0x17, format!("{:02}{mo:02}{d:02}{hms}", y % 100).as_bytes())
    } else {
        tlv(0x18, format!("{y:04}{mo:02}{d:02}{hms}").as_bytes())
    }
}

/// A BIT STRING of whole bytes.
fn bit_string(bytes: &[u8]) -> Vec<u8> {
    tlv(0x03, &[&[0u8][..], bytes].concat())
}

/// A SEQUENCE of `parts`.
fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// One DER element: `tag`, the definite length, `content`.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let len = content.len();
    let mut out = vec![tag];
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use std::sync::Arc;

    #[test]
    fn der_lengths_use_the_short_and_long_forms() {
        assert_eq!(tlv(0x04, &[1, 2]), [0x04, 0x02, 1, 2]);
        let long = tlv(0x04, &[0; 200]);
        assert_eq!(&long[..3], [0x04, 0x81, 200]);
        assert_eq!(&tlv(0x04, &[0; 300])[..4], [0x04, 0x82, 0x01, 0x2c]);
    }

    #[test]
    fn times_switch_to_generalized_time_in_2050() {
        let at = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(time(at(1_796_691_723)), tlv(0x17, b"261208010203Z"));
        assert_eq!(time(at(2_524_608_000)), tlv(0x18, b"20500101000000Z"));
    }

    /// WebPKI, as `kurabe http --cacert` runs it, with the certificate as
    /// its one root: every name it carries verifies, another does not.
    #[test]
    fn webpki_verifies_it_for_its_names_as_its_own_root() {
        let made = SelfSigned::localhost().unwrap();
        let der = CertificateDer::from(made.cert.clone());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(der.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        let verify = |name: &str| {
            let name = ServerName::try_from(name.to_owned()).unwrap();
            verifier.verify_server_cert(&der, &[], &name, &[], UnixTime::now())
        };
        for name in ["localhost", "127.0.0.1", "::1"] {
            assert!(verify(name).is_ok(), "{name}: {:?}", verify(name));
        }
        assert!(verify("example.com").is_err());
        // The PEM reads back to the same DER, and the key is one rustls takes.
        let pem = made.pem();
        let back = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        assert_eq!(back.as_ref(), made.cert.as_slice());
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.key.clone().into());
        assert!(rustls::crypto::ring::sign::any_supported_type(&key).is_ok());
    }
}
