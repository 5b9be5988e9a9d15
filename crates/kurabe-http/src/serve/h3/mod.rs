//! HTTP/3 for the built-in server (`kurabe serve --http3`): QUIC v1 with
//! TLS 1.3 and ALPN `h3` on a UDP socket bound to the TCP listener's port
//! number (as Caddy does), answering every request as the HTTP/1.1 side
//! does, counted in the same [`ServeStats`].
//!
//! The QUIC stack is the client's, `quinn-proto`, driven by one thread
//! (`serve_loop`) over one socket; the HTTP/3 framing and QPACK are the
//! client's too (`client::engine::h3`'s `frame` and `qpack`), so both ends
//! of kurabe speak one HTTP/3. The certificate is the user's PEM files or
//! a self-signed one made at start (`kurabe_tls::self_signed`), whose PEM
//! a client trusts.
//!
//! The knobs that apply: `body_bytes`, `status`, `work_us` (on the one
//! HTTP/3 thread), `alloc_kb`, `leak_bytes`, `service_us` (the same
//! resource the HTTP/1.1 workers queue at) and `latency_ms` (held back,
//! never slept), and `idle_timeout` as QUIC's idle timeout. `threads`,
//! `chunked`, `close` and `header_timeout` are HTTP/1.1's.
//!
//! Owns the HTTP/3 side's setup. Must not print.

mod conn;
mod response;
mod serve_loop;
mod tls;

use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use quinn_proto::ServerConfig;

use super::work::Work;
use super::ServeStats;
pub use kurabe_tls::self_signed::CertError;
use kurabe_tls::self_signed::SelfSigned;

/// Where the server's certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Certificate {
    /// A fresh self-signed certificate for `localhost`, 127.0.0.1 and ::1.
    SelfSigned,
    /// PEM files: the certificate chain (`--tls-cert`) and its private key (`--tls-key`).
    Files {
        /// The chain, leaf first.
        cert: PathBuf,
        /// The private key (PKCS#8, PKCS#1 or SEC1).
        key: PathBuf,
    },
}

/// Why the HTTP/3 side could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum Http3Error {
    /// The UDP port is taken.
    #[error("cannot listen on UDP {addr} for HTTP/3 ({source}); pick another --port (0 = any free port)")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: io::Error,
    },
    /// A PEM file that cannot be read or holds nothing usable.
    #[error("cannot read {flag} {}: {why}", path.display())]
    Pem {
        /// `--tls-cert` or `--tls-key`.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// rustls or QUIC refused the certificate or key.
    #[error("TLS for HTTP/3: {0}")]
    Tls(String),
    /// No self-signed certificate could be made.
    #[error(transparent)]
    SelfSigned(#[from] CertError),
}

/// The HTTP/3 side of a server, ready to serve: its UDP socket, its QUIC
/// configuration and, with a self-signed certificate, that certificate.
pub struct Http3 {
    socket: UdpSocket,
    config: Arc<ServerConfig>,
    self_signed: Option<String>,
}

impl Http3 {
    /// Set up `cert` and bind UDP on `tcp`, the TCP listener's bound
    /// address (bind TCP first: its port 0 has become a number); a
    /// connection with nothing moving for `idle` is closed.
    pub fn bind(tcp: SocketAddr, cert: &Certificate, idle: Duration) -> Result<Http3, Http3Error> {
        let (chain, key, self_signed) = match cert {
            Certificate::SelfSigned => {
                let made = SelfSigned::localhost()?;
                let key = rustls::pki_types::PrivatePkcs8KeyDer::from(made.key.clone());
                (vec![made.cert.clone().into()], key.into(), Some(made.pem()))
            }
            Certificate::Files { cert, key } => {
                let (chain, key) = tls::read_pem(cert, key)?;
                (chain, key, None)
            }
        };
        let config = tls::server_config(chain, key, idle)?;
        let socket = udp(tcp).map_err(|source| Http3Error::Bind { addr: tcp, source })?;
        Ok(Http3 {
            socket,
            config,
            self_signed,
        })
    }

    /// The URL a client uses: `https://localhost:PORT/` on 127.0.0.1 (the
    /// name the self-signed certificate carries, sent as SNI), else
    /// `https://ADDR:PORT/`.
    pub fn url(&self) -> io::Result<String> {
        let addr = self.socket.local_addr()?;
        Ok(match addr.ip() {
            IpAddr::V4(Ipv4Addr::LOCALHOST) => format!("https://localhost:{}/", addr.port()),
            _ => format!("https://{addr}/"),
        })
    }

    /// Write the self-signed certificate's PEM to a new file in `dir` (what
    /// a client trusts with `--cacert`), removed when the returned guard
    /// drops; `None` with the user's own certificate.
    pub fn write_ca(&self, dir: &Path) -> io::Result<Option<CaFile>> {
        let Some(pem) = &self.self_signed else {
            return Ok(None);
        };
        let port = self.socket.local_addr()?.port();
        let path = dir.join(format!("kurabe-serve-{port}-{}.pem", std::process::id()));
        let mut f = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&path)?;
        let file = CaFile(path);
        f.write_all(pem.as_bytes())?;
        Ok(Some(file))
    }
}

/// A certificate file written by [`Http3::write_ca`]; removed on drop.
#[derive(Debug)]
pub struct CaFile(PathBuf);

impl CaFile {
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for CaFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A UDP socket on `addr` with room for bursts of datagrams (as far as
/// the kernel's limits allow); IPv6 only on an IPv6 address, as the TCP
/// listener.
fn udp(addr: SocketAddr) -> io::Result<UdpSocket> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    let _ = socket.set_recv_buffer_size(4 << 20);
    let _ = socket.set_send_buffer_size(4 << 20);
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// Serve HTTP/3 on `h3` until `work`'s shutdown flag is set.
pub(super) fn run(h3: Http3, work: &Work<'_>, stats: &ServeStats) -> io::Result<()> {
    serve_loop::Loop::new(h3.socket, h3.config, work, stats)?.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `name`'s PEM of `der` in `dir`.
    fn pem(dir: &Path, name: &str, label: &str, der: &[u8]) -> PathBuf {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!("-----BEGIN {label}-----\n{b64}\n-----END {label}-----\n"),
        )
        .unwrap();
        path
    }

    /// The user's PEM files set up (and no file is written for them to
    /// trust); a key of another certificate, a file that is not there and
    /// a key file without a key are refused, naming the flag.
    #[test]
    fn pem_files_of_a_certificate_and_its_key_set_up_and_others_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            SelfSigned::localhost().unwrap(),
            SelfSigned::localhost().unwrap(),
        );
        let cert_a = pem(dir.path(), "a.pem", "CERTIFICATE", &a.cert);
        let key_a = pem(dir.path(), "a.key", "PRIVATE KEY", &a.key);
        let key_b = pem(dir.path(), "b.key", "PRIVATE KEY", &b.key);
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = tcp.local_addr().unwrap();
        let idle = Duration::from_secs(60);
        let files = |cert: &Path, key: &Path| Certificate::Files {
            cert: cert.to_owned(),
            key: key.to_owned(),
        };
        let h3 = Http3::bind(addr, &files(&cert_a, &key_a), idle).unwrap();
        assert_eq!(
            h3.url().unwrap(),
            format!("https://localhost:{}/", addr.port())
        );
        assert!(h3.write_ca(dir.path()).unwrap().is_none());
        drop(h3);
        let mismatch = Http3::bind(addr, &files(&cert_a, &key_b), idle);
        assert!(
            matches!(mismatch, Err(Http3Error::Tls(_))),
            "{:?}",
            mismatch.err()
        );
        let missing = Http3::bind(addr, &files(&dir.path().join("no.pem"), &key_a), idle);
        let e = missing.err().unwrap().to_string();
        assert!(e.starts_with("cannot read --tls-cert "), "{e}");
        let no_key = Http3::bind(addr, &files(&cert_a, &cert_a), idle);
        let e = no_key.err().unwrap().to_string();
        assert!(e.starts_with("cannot read --tls-key "), "{e}");
    }

    /// The self-signed certificate's file holds its PEM and goes with its guard.
    #[test]
    fn the_self_signed_certificate_is_written_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = tcp.local_addr().unwrap();
        let h3 = Http3::bind(addr, &Certificate::SelfSigned, Duration::from_secs(60)).unwrap();
        let file = h3.write_ca(dir.path()).unwrap().unwrap();
        let text = std::fs::read_to_string(file.path()).unwrap();
        assert!(text.starts_with("-----BEGIN CERTIFICATE-----\n"), "{text}");
        let path = file.path().to_owned();
        drop(file);
        assert!(!path.exists());
    }
}
