//! What a finished TLS handshake settled on, in the words ab prints:
//! OpenSSL's protocol and cipher names, the server key's size and the key
//! exchange ("X25519 253 bits").
//!
//! Owns those names and sizes. Must not touch a socket or change the
//! session: it only reads what rustls reports after the handshake.

use kurabe_model::http::TlsSummary;
use rustls::{CipherSuite, ClientConnection, NamedGroup, ProtocolVersion};
use x509_cert::der::asn1::{ObjectIdentifier, UintRef};
use x509_cert::der::{Decode, Reader, SliceReader};

use crate::client::engine::setup::{rustls_suite, CIPHER_NAMES};

/// The summary of `conn`'s handshake, which sent `server_name` (SNI);
/// `None` while it is still under way.
pub(crate) fn summary(conn: &ClientConnection, server_name: Option<&str>) -> Option<TlsSummary> {
    if conn.is_handshaking() {
        return None;
    }
    let protocol = match conn.protocol_version()? {
        ProtocolVersion::TLSv1_3 => "TLSv1.3",
        ProtocolVersion::TLSv1_2 => "TLSv1.2",
        _ => return None,
    };
    let cert = conn.peer_certificates().and_then(|chain| chain.first());
    Some(of(
        protocol,
        conn.negotiated_cipher_suite()?.suite(),
        conn.negotiated_key_exchange_group().map(|g| g.name()),
        cert.map(|c| c.as_ref()),
        server_name,
    ))
}

/// The summary of a handshake of `protocol` (`TLSv1.3`) that settled on `suite` and
/// `group`, with the server's certificate `cert` (DER), which sent
/// `server_name` (SNI): the TCP side's and QUIC's alike.
pub(crate) fn of(
    protocol: &str,
    suite: CipherSuite,
    group: Option<NamedGroup>,
    cert: Option<&[u8]>,
    server_name: Option<&str>,
) -> TlsSummary {
    let cipher = openssl_name(suite);
    TlsSummary {
        protocol: protocol.to_owned(),
        cipher_bits: if cipher.contains("AES128") || cipher.contains("AES_128") {
            128
        } else {
            256
        },
        cipher,
        server_key_bits: cert.and_then(key_bits),
        key_exchange: group.map(key_exchange),
        server_name: server_name.map(str::to_owned),
    }
}

/// OpenSSL's name of a suite rustls negotiated (rustls' own when OpenSSL has none listed).
fn openssl_name(suite: CipherSuite) -> String {
    CIPHER_NAMES
        .iter()
        .find(|n| rustls_suite(n).is_some_and(|s| s.suite() == suite))
        .map_or_else(|| format!("{suite:?}"), |n| n.to_string())
}

/// The key exchange group as ab prints OpenSSL's temporary key.
fn key_exchange(group: NamedGroup) -> String {
    match group {
        NamedGroup::X25519 => "X25519 253 bits".to_owned(),
        NamedGroup::X448 => "X448 448 bits".to_owned(),
        NamedGroup::secp256r1 => "ECDH prime256v1 256 bits".to_owned(),
        NamedGroup::secp384r1 => "ECDH secp384r1 384 bits".to_owned(),
        NamedGroup::secp521r1 => "ECDH secp521r1 521 bits".to_owned(),
        other => format!("{other:?}"),
    }
}

const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const RSA_PSS: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.10");
const EC: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const ED448: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.113");

/// Bits of a certificate's public key as OpenSSL counts them (`EVP_PKEY_bits`).
fn key_bits(cert_der: &[u8]) -> Option<u32> {
    let cert = x509_cert::Certificate::from_der(cert_der).ok()?;
    let spki = cert.tbs_certificate.subject_public_key_info;
    match spki.algorithm.oid {
        RSA | RSA_PSS => rsa_modulus_bits(spki.subject_public_key.as_bytes()?),
        EC => {
            let curve: ObjectIdentifier = spki.algorithm.parameters?.decode_as().ok()?;
            curve_bits(curve)
        }
        ED25519 => Some(253),
        ED448 => Some(456),
        _ => None,
    }
}

/// Bits of the named curve of an EC key.
fn curve_bits(curve: ObjectIdentifier) -> Option<u32> {
    const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
    const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
    const P521: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.35");
    match curve {
        P256 => Some(256),
        P384 => Some(384),
        P521 => Some(521),
        _ => None,
    }
}

/// Bits of the modulus of a DER `RSAPublicKey ::= SEQUENCE { n INTEGER, e INTEGER }`.
fn rsa_modulus_bits(der: &[u8]) -> Option<u32> {
    let mut reader = SliceReader::new(der).ok()?;
    let n = reader
        .sequence(|r| {
            let n = UintRef::decode(r)?;
            UintRef::decode(r)?;
            Ok(n)
        })
        .ok()?;
    let bytes = n.as_bytes();
    let first = *bytes.first()?;
    Some(bytes.len() as u32 * 8 - first.leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsa_modulus_bits_count_from_the_top_bit() {
        // SEQUENCE { INTEGER 0x00 0xC1 0x02 (16 bits, top bit set), INTEGER 3 }
        let der = [
            0x30, 0x09, 0x02, 0x03, 0x00, 0xc1, 0x02, 0x02, 0x01, 0x03, 0x00,
        ];
        assert_eq!(rsa_modulus_bits(&der[..10]), None, "truncated");
        let der = [0x30, 0x08, 0x02, 0x03, 0x00, 0xc1, 0x02, 0x02, 0x01, 0x03];
        assert_eq!(rsa_modulus_bits(&der), Some(16));
        let der = [0x30, 0x07, 0x02, 0x02, 0x01, 0x02, 0x02, 0x01, 0x03];
        assert_eq!(rsa_modulus_bits(&der), Some(9));
    }

    #[test]
    fn names_are_openssls() {
        let suite = rustls_suite("ECDHE-RSA-AES256-GCM-SHA384").unwrap();
        assert_eq!(openssl_name(suite.suite()), "ECDHE-RSA-AES256-GCM-SHA384");
        assert_eq!(
            key_exchange(NamedGroup::secp384r1),
            "ECDH secp384r1 384 bits"
        );
        assert_eq!(
            curve_bits(ObjectIdentifier::new_unwrap("1.3.132.0.34")),
            Some(384)
        );
    }
}
