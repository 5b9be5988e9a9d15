//! `https://` with rustls over the workers' non-blocking sockets.
//!
//! Owns the client configuration (ring provider, TLS 1.2 and 1.3 or the one
//! `-f` names, the `-Z` cipher suites, the `-E` client certificate, ALPN
//! `http/1.1`, or `h2` for `--http2`, CA roots from a `--cacert` file or the system store via
//! `rustls-native-certs`, or no verification with `insecure`) and a per-connection session that
//! encrypts request bytes and decrypts response bytes. It never blocks: a
//! `WouldBlock` from the socket is handed back to the worker, which waits for
//! the next epoll edge.
//!
//! System roots rather than a compiled-in bundle (webpki-roots): both are
//! light, but a load test usually targets a server whose certificate comes
//! from a local or corporate CA that the machine already trusts.

use std::io::{self, Read, Write};
use std::os::fd::RawFd;
use std::sync::Arc;

use kurabe_tls::AcceptAnyCertificate;
use rustls::client::WantsClientCert;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, ConfigBuilder};

use super::setup::{rustls_suite, TlsOptions, TlsProtocol};
use crate::client::LoadError;

/// Shared client configuration for one run.
#[derive(Clone)]
pub(crate) struct TlsSetup {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    /// `name` when it is a host name: rustls sends SNI for those only.
    sni: Option<Arc<str>>,
}

impl TlsSetup {
    /// Build the configuration for `host`; `insecure` skips certificate
    /// verification; `http2` offers ALPN `h2` instead of `http/1.1`.
    pub fn new(
        host: &str,
        opts: &TlsOptions,
        insecure: bool,
        http2: bool,
    ) -> Result<TlsSetup, LoadError> {
        let versions: &[&rustls::SupportedProtocolVersion] = match opts.protocol {
            TlsProtocol::All => rustls::DEFAULT_VERSIONS,
            TlsProtocol::Tls12 => &[&rustls::version::TLS12],
            TlsProtocol::Tls13 => &[&rustls::version::TLS13],
        };
        let mut config = client_config((provider(opts), versions), opts, insecure, |e| {
            format!("{e}: the -Z cipher suites do not fit the -f protocol")
        })?;
        config.alpn_protocols = vec![if http2 {
            b"h2".to_vec()
        } else {
            b"http/1.1".to_vec()
        }];
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| LoadError::Tls(format!("'{host}' is not a valid TLS server name: {e}")))?;
        let sni = match &name {
            ServerName::DnsName(d) => Some(Arc::from(d.as_ref())),
            _ => None,
        };
        Ok(TlsSetup {
            config: Arc::new(config),
            name,
            sni,
        })
    }

    /// A new client session (one per connection).
    pub fn session(&self) -> io::Result<TlsSession> {
        let conn = ClientConnection::new(self.config.clone(), self.name.clone())
            .map_err(io::Error::other)?;
        Ok(TlsSession {
            conn,
            sni: self.sni.clone(),
        })
    }
}

/// The ring provider, with only the `-Z` suites when some are given.
pub(crate) fn provider(opts: &TlsOptions) -> CryptoProvider {
    let mut provider = rustls::crypto::ring::default_provider();
    if !opts.ciphers.is_empty() {
        provider.cipher_suites = opts
            .ciphers
            .iter()
            .filter_map(|n| rustls_suite(n))
            .collect();
    }
    provider
}

/// A client configuration over `provider` for `versions` (`versions_error`:
/// what to say when they do not fit its suites), trusting what `--cacert`
/// or the system store holds (nothing is checked when `insecure`), with
/// the `-E` certificate; no ALPN (each protocol sets its own). TCP's and
/// QUIC's TLS are both built here, so they trust and authenticate alike.
pub(crate) fn client_config(
    (provider, versions): (CryptoProvider, &[&'static rustls::SupportedProtocolVersion]),
    opts: &TlsOptions,
    insecure: bool,
    versions_error: impl FnOnce(rustls::Error) -> String,
) -> Result<ClientConfig, LoadError> {
    let provider = Arc::new(provider);
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| LoadError::Tls(versions_error(e)))?;
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(AcceptAnyCertificate::new(provider))
    } else {
        builder.with_root_certificates(roots(opts.ca_file.as_deref())?)
    };
    client_auth(builder, opts)
}

/// The certificates to trust: those of `ca_file` (`--cacert`), else the
/// system store's.
fn roots(ca_file: Option<&std::path::Path>) -> Result<rustls::RootCertStore, LoadError> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(path) = ca_file {
        let shown = path.display();
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .and_then(|c| c.collect::<Result<_, _>>())
            .map_err(|e| {
                LoadError::Tls(format!("--cacert {shown}: cannot read certificates: {e}"))
            })?;
        let (added, _) = roots.add_parsable_certificates(certs);
        if added == 0 {
            return Err(LoadError::Tls(format!(
                "--cacert {shown}: no usable CERTIFICATE in it; give a PEM file"
            )));
        }
        return Ok(roots);
    }
    let found = rustls_native_certs::load_native_certs();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(LoadError::Tls(
            "no CA certificates found in the system store (install ca-certificates, \
             give a CA file with --cacert, or skip verification with --insecure)"
                .into(),
        ));
    }
    Ok(roots)
}

/// Finish the config with the `-E` certificate chain and key (one PEM file, as ab reads it), or none.
fn client_auth(
    builder: ConfigBuilder<ClientConfig, WantsClientCert>,
    opts: &TlsOptions,
) -> Result<ClientConfig, LoadError> {
    let Some(path) = &opts.client_cert else {
        return Ok(builder.with_no_client_auth());
    };
    let shown = path.display();
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| LoadError::Tls(format!("-E {shown}: cannot read certificates: {e}")))?;
    if chain.is_empty() {
        return Err(LoadError::Tls(format!(
            "-E {shown}: no CERTIFICATE in the file; give one PEM file with the certificate chain and its private key"
        )));
    }
    let key = PrivateKeyDer::from_pem_file(path).map_err(|e| {
        LoadError::Tls(format!(
            "-E {shown}: no usable private key ({e}); append the PEM key to the certificate file"
        ))
    })?;
    builder
        .with_client_auth_cert(chain, key)
        .map_err(|e| LoadError::Tls(format!("-E {shown}: {e}")))
}

/// One connection's TLS state.
pub(crate) struct TlsSession {
    conn: ClientConnection,
    /// The host name sent as SNI (None for an IP address), for the summary.
    sni: Option<Arc<str>>,
}

/// `Read`/`Write` over a raw non-blocking descriptor, for rustls' `read_tls`/`write_tls`.
struct Fd(RawFd);

impl Read for Fd {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        super::sys::recv(self.0, buf)
    }
}

impl Write for Fd {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        super::sys::send(self.0, buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TlsSession {
    /// Encrypt `bytes` and send as much as the socket takes. Returns how many
    /// plaintext bytes were accepted (buffered ciphertext is sent on later calls).
    pub fn write(&mut self, fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
        self.flush_tls(fd)?;
        let n = self.conn.writer().write(bytes)?;
        self.flush_tls(fd)?;
        if n == 0 && !bytes.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    /// The handshake has not finished (a failure now is a connect failure).
    pub fn handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// What the handshake settled on (ab's "SSL/TLS Protocol" line), once it is done.
    pub fn summary(&self) -> Option<kurabe_model::http::TlsSummary> {
        crate::client::measure::tls_summary::summary(&self.conn, self.sni.as_deref())
    }

    /// The protocol the server chose by ALPN, once the handshake is done.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    /// Ciphertext (handshake or data) is waiting for the socket.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Send buffered ciphertext until done or the socket is full.
    pub fn flush_tls(&mut self, fd: RawFd) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut Fd(fd)) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Decrypted response bytes; `Ok(0)` when the peer closed, `WouldBlock` when nothing is there yet.
    pub fn read(&mut self, fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // Peer closed without close_notify: an EOF for the framer to judge.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            let got = self.conn.read_tls(&mut Fd(fd))?;
            let state = self
                .conn
                .process_new_packets()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, explain(e)))?;
            self.flush_tls(fd)?;
            if got == 0 && state.plaintext_bytes_to_read() == 0 {
                return Ok(0);
            }
        }
    }
}

/// A rustls error as a sentence, with the likely cause when it is a common mistake.
fn explain(e: rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(c) => format!(
            "the server's certificate was refused: {}; --insecure skips the check (ab never checks)",
            certificate_problem(&c)
        ),
        rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => {
            format!("{e} (the server answered without TLS: is it a plain http:// port?)")
        }
        rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol) => {
            format!("{e} (the server speaks none of the protocols offered by ALPN: for h2, drop --http2 or enable HTTP/2 on the server)")
        }
        e => e.to_string(),
    }
}

/// Why a certificate was refused, in words: rustls prints some reasons as
/// Rust identifiers (`Other(OtherError(CaUsedAsEndEntity))`).
fn certificate_problem(c: &rustls::CertificateError) -> String {
    use rustls::CertificateError as C;
    match c {
        C::UnknownIssuer => {
            "its issuer is not among this machine's trusted authorities (self-signed?)".into()
        }
        C::NotValidForName => "it is not valid for this host name".into(),
        C::Expired => "it has expired".into(),
        C::NotValidYet => "it is not valid yet".into(),
        C::Revoked => "it has been revoked".into(),
        C::BadSignature => "its signature does not verify".into(),
        C::BadEncoding => "it is not a well-formed certificate".into(),
        C::Other(o) if o.to_string() == "CaUsedAsEndEntity" => {
            "it is a CA certificate, not a server's".into()
        }
        c => identifier_words(&c.to_string()),
    }
}

/// `Other(OtherError(UnsupportedCertVersion))` -> `unsupported cert version`;
/// a text that is already a sentence is returned as it is.
fn identifier_words(s: &str) -> String {
    if s.contains(' ') {
        return s.to_owned();
    }
    let inner = s.trim_end_matches(')').rsplit('(').next().unwrap_or(s);
    let mut out = String::new();
    for (i, ch) in inner.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push(' ');
        }
        out.extend(ch.to_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::CertificateError;

    #[test]
    fn refused_certificates_are_explained_in_words_with_the_way_out() {
        let ca = rustls::OtherError(Arc::new(webpki_error("CaUsedAsEndEntity")));
        let text = explain(CertificateError::Other(ca).into());
        assert_eq!(
            text,
            "the server's certificate was refused: it is a CA certificate, not a server's; \
             --insecure skips the check (ab never checks)"
        );
        let text = explain(CertificateError::UnknownIssuer.into());
        assert!(
            text.contains("trusted authorities") && text.contains("--insecure"),
            "{text}"
        );
    }

    #[test]
    fn identifiers_become_words_and_sentences_stay() {
        assert_eq!(
            identifier_words("Other(OtherError(UnsupportedCertVersion))"),
            "unsupported cert version"
        );
        assert_eq!(identifier_words("InvalidPurpose"), "invalid purpose");
        assert_eq!(
            identifier_words("certificate expired: x"),
            "certificate expired: x"
        );
    }

    /// An error whose Display is an identifier, as rustls-webpki's are.
    fn webpki_error(name: &'static str) -> impl std::error::Error + Send + Sync {
        #[derive(Debug)]
        struct E(&'static str);
        impl std::fmt::Display for E {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for E {}
        E(name)
    }
}
