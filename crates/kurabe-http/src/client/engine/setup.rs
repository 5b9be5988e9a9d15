//! How connections are set up, beyond the target: ab's socket buffer
//! (`-b`), local address (`-B`), HTTP proxy and its Basic credentials
//! (`-X`, `-P`), TLS client certificate, protocol and cipher suites (`-E`,
//! `-f`, `-Z`), and a tap on response heads for ab's `-v` log.
//!
//! Owns these types and their validation from ab's spellings. Must not
//! print, and must never show the proxy password: [`Proxy`]'s `Debug`
//! masks it and no error repeats it.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// Connection setup options; the default is ab's default (none of them).
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// `SO_SNDBUF` and `SO_RCVBUF` of every connection, bytes (ab's `-b`).
    pub socket_buffer: Option<u32>,
    /// Local address every connection binds to before connecting (ab's `-B`).
    pub bind: Option<IpAddr>,
    /// Send every request through this HTTP proxy (ab's `-X`, `-P`).
    pub proxy: Option<Proxy>,
    /// TLS choices for `https://` targets.
    pub tls: TlsOptions,
    /// Called with each response head as received (ab's `-v 2` log).
    pub trace: Option<HeadTrace>,
}

/// An HTTP proxy: requests go to it in absolute form (`GET http://host/path`).
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    /// Proxy host (name or address, IPv6 without brackets).
    pub host: String,
    /// Proxy port.
    pub port: u16,
    /// `Proxy-Authorization` value (`Basic …`), never shown.
    authorization: Option<String>,
}

impl Proxy {
    /// A proxy at `host:port`, with Basic credentials `user:password` if given.
    pub fn new(host: &str, port: u16, credentials: Option<&str>) -> Proxy {
        Proxy {
            host: host.to_owned(),
            port,
            authorization: credentials.map(crate::auth::basic),
        }
    }

    /// The `Proxy-Authorization` header value, for the request only.
    pub(crate) fn authorization(&self) -> Option<&str> {
        self.authorization.as_deref()
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxy")
            .field("host", &self.host)
            .field("port", &self.port)
            .field(
                "authorization",
                &self.authorization.as_ref().map(|_| "[masked]"),
            )
            .finish()
    }
}

/// Which TLS versions may be negotiated (ab's `-f`, as far as rustls goes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TlsProtocol {
    /// TLS 1.2 and 1.3 (ab's `ALL`, the default).
    #[default]
    All,
    /// TLS 1.2 only.
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

/// A `-f`/`-Z` value kurabe's TLS library cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsOptionError {
    /// A protocol rustls does not implement (SSL 3, TLS 1.0, TLS 1.1) or an unknown name.
    #[error("-f {0}: {1}; use TLS1.2, TLS1.3 or ALL")]
    Protocol(String, &'static str),
    /// A cipher suite name that is not one rustls offers.
    #[error("-Z: unknown or unsupported cipher suite '{0}'; rustls offers {list}", list = CIPHER_NAMES.join(", "))]
    Cipher(String),
}

impl TlsProtocol {
    /// ab's `-f` spelling (case-insensitive): SSL2, SSL3, TLS1, TLS1.1, TLS1.2, TLS1.3 or ALL.
    pub fn from_ab(name: &str) -> Result<TlsProtocol, TlsOptionError> {
        let old = "rustls implements TLS 1.2 and 1.3 only: older protocols are insecure and not supported";
        match name.to_ascii_uppercase().as_str() {
            "ALL" => Ok(TlsProtocol::All),
            "TLS1.2" => Ok(TlsProtocol::Tls12),
            "TLS1.3" => Ok(TlsProtocol::Tls13),
            "SSL2" | "SSL3" | "TLS1" | "TLS1.0" | "TLS1.1" => {
                Err(TlsOptionError::Protocol(name.to_owned(), old))
            }
            _ => Err(TlsOptionError::Protocol(
                name.to_owned(),
                "unknown protocol",
            )),
        }
    }
}

/// OpenSSL's names of the suites rustls offers (TLS 1.3 names are IANA's).
pub(crate) const CIPHER_NAMES: [&str; 9] = [
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-RSA-CHACHA20-POLY1305",
];

/// Parse ab's `-Z` list (OpenSSL syntax: names separated by `:`, `,` or
/// spaces) into the OpenSSL names rustls offers, in the order given.
pub fn parse_ciphers(list: &str) -> Result<Vec<String>, TlsOptionError> {
    let names: Vec<&str> = list
        .split([':', ',', ' '])
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        return Err(TlsOptionError::Cipher(list.to_owned()));
    }
    names
        .into_iter()
        .map(|n| {
            CIPHER_NAMES
                .iter()
                .find(|c| c.eq_ignore_ascii_case(n))
                .map(|c| c.to_string())
                .ok_or_else(|| TlsOptionError::Cipher(n.to_owned()))
        })
        .collect()
}

/// The rustls suite (ring provider) of an OpenSSL name from [`CIPHER_NAMES`].
pub(crate) fn rustls_suite(name: &str) -> Option<rustls::SupportedCipherSuite> {
    use rustls::crypto::ring::cipher_suite as cs;
    let suite = match name {
        "TLS_AES_128_GCM_SHA256" => cs::TLS13_AES_128_GCM_SHA256,
        "TLS_AES_256_GCM_SHA384" => cs::TLS13_AES_256_GCM_SHA384,
        "TLS_CHACHA20_POLY1305_SHA256" => cs::TLS13_CHACHA20_POLY1305_SHA256,
        "ECDHE-ECDSA-AES128-GCM-SHA256" => cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        "ECDHE-ECDSA-AES256-GCM-SHA384" => cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        "ECDHE-ECDSA-CHACHA20-POLY1305" => cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        "ECDHE-RSA-AES128-GCM-SHA256" => cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        "ECDHE-RSA-AES256-GCM-SHA384" => cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        "ECDHE-RSA-CHACHA20-POLY1305" => cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        _ => return None,
    };
    Some(suite)
}

/// TLS choices for `https://` targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// PEM file with the client certificate chain and its private key (ab's `-E`).
    pub client_cert: Option<PathBuf>,
    /// PEM file of the CA certificates to trust instead of the system
    /// store's (`--cacert`).
    pub ca_file: Option<PathBuf>,
    /// Versions allowed (ab's `-f`).
    pub protocol: TlsProtocol,
    /// Cipher suites allowed, OpenSSL names from [`parse_ciphers`] (ab's `-Z`); empty: rustls' defaults.
    pub ciphers: Vec<String>,
}

/// A tap on response heads: called on a worker thread with the head and
/// whatever of the body arrived with it (at most 8 KiB, as ab's log shows).
#[derive(Clone)]
pub struct HeadTrace(pub Arc<HeadFn>);

/// What a [`HeadTrace`] calls.
pub type HeadFn = dyn Fn(&[u8]) + Send + Sync;

impl fmt::Debug for HeadTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HeadTrace")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_rustls_lacks_are_refused_by_name() {
        assert_eq!(TlsProtocol::from_ab("tls1.2"), Ok(TlsProtocol::Tls12));
        assert_eq!(TlsProtocol::from_ab("ALL"), Ok(TlsProtocol::All));
        let e = TlsProtocol::from_ab("TLS1.1").unwrap_err().to_string();
        assert!(
            e.starts_with("-f TLS1.1: rustls implements TLS 1.2 and 1.3 only"),
            "{e}"
        );
        assert!(TlsProtocol::from_ab("SSL3").is_err());
        assert!(TlsProtocol::from_ab("bogus")
            .unwrap_err()
            .to_string()
            .contains("unknown"));
    }

    #[test]
    fn cipher_lists_map_openssl_names_and_name_the_unknown_one() {
        let got = parse_ciphers("ECDHE-RSA-AES128-GCM-SHA256:tls_aes_256_gcm_sha384").unwrap();
        assert_eq!(
            got,
            ["ECDHE-RSA-AES128-GCM-SHA256", "TLS_AES_256_GCM_SHA384"]
        );
        for n in CIPHER_NAMES {
            assert!(rustls_suite(n).is_some(), "{n}");
        }
        let e = parse_ciphers("AES128-SHA:ECDHE-RSA-AES128-GCM-SHA256").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("-Z: unknown or unsupported cipher suite 'AES128-SHA'"));
    }

    #[test]
    fn proxy_debug_masks_the_credentials() {
        let p = Proxy::new("127.0.0.1", 3128, Some("user:s3cret"));
        let shown = format!("{p:?}");
        assert!(!shown.contains("s3cret") && !shown.contains(&crate::auth::base64(b"user:s3cret")));
        assert!(shown.contains("[masked]"));
    }
}
