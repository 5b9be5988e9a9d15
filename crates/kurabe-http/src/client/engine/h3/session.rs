//! The QUIC client's TLS session: `quinn-proto`'s rustls session, and
//! beside it what the report's TLS block needs and `quinn-proto` does not
//! expose — the cipher suite and key exchange group the handshake settled
//! on.
//!
//! How they are learnt, exactly and per connection: each TLS 1.3 suite the
//! client offers carries a QUIC algorithm that notes, on this thread, that
//! rustls made packet keys with it ([`Noting`]), and the session store
//! notes the group rustls remembers for the server ([`NotingStore`]); the
//! session ([`Session`]) clears the note before it hands rustls a flight
//! and reads it after, so a note is always its own connection's (the keys
//! of the Initial packets, made with a fixed suite outside rustls' flights,
//! are not taken for the negotiated suite).
//!
//! Owns [`Negotiated`], what [`Session::handshake_data`] gives the
//! connection. Must not change a byte on the wire: every call goes to
//! `quinn-proto`'s session.

use std::any::Any;
use std::cell::Cell;
use std::sync::{Arc, Mutex, OnceLock};

use quinn_proto::crypto::rustls::{HandshakeData, QuicClientConfig};
use quinn_proto::crypto::{self, ExportKeyingMaterialError, KeyPair, Keys};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::{ConnectError, ConnectionId, Side, TransportError};
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::crypto::cipher::{AeadKey, Iv};
use rustls::pki_types::ServerName;
use rustls::{CipherSuite, NamedGroup, SupportedCipherSuite, Tls13CipherSuite};

thread_local! {
    /// The suite rustls last made QUIC packet keys with on this thread.
    static SUITE: Cell<Option<CipherSuite>> = const { Cell::new(None) };
    /// The key exchange group rustls last remembered on this thread.
    static GROUP: Cell<Option<NamedGroup>> = const { Cell::new(None) };
}

/// What a connection's handshake settled on: the server's ALPN choice,
/// the cipher suite and the key exchange group (None until known).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Negotiated {
    pub alpn: Option<Vec<u8>>,
    pub suite: Option<CipherSuite>,
    pub group: Option<NamedGroup>,
}

/// `suites` with each TLS 1.3 suite's QUIC algorithm [`Noting`] it.
pub(crate) fn noting(suites: Vec<SupportedCipherSuite>) -> Vec<SupportedCipherSuite> {
    let map = |s| match s {
        SupportedCipherSuite::Tls13(t) => SupportedCipherSuite::Tls13(noting_suite(t)),
        other => other,
    };
    suites.into_iter().map(map).collect()
}

/// `t` with a [`Noting`] QUIC algorithm, made once per suite for the process.
fn noting_suite(t: &'static Tls13CipherSuite) -> &'static Tls13CipherSuite {
    static MADE: OnceLock<Mutex<Vec<&'static Tls13CipherSuite>>> = OnceLock::new();
    let Some(quic) = t.quic else {
        return t;
    };
    let mut made = MADE
        .get_or_init(Mutex::default)
        .lock()
        .expect("not poisoned");
    let id = t.common.suite;
    if let Some(s) = made.iter().find(|s| s.common.suite == id) {
        return s;
    }
    let noting: &'static Noting = Box::leak(Box::new(Noting { inner: quic, id }));
    let suite = Box::leak(Box::new(Tls13CipherSuite {
        common: rustls::crypto::CipherSuiteCommon { ..t.common },
        hkdf_provider: t.hkdf_provider,
        aead_alg: t.aead_alg,
        quic: Some(noting),
    }));
    made.push(suite);
    suite
}

/// A suite's QUIC algorithm that notes its suite when packet keys are made.
struct Noting {
    inner: &'static dyn rustls::quic::Algorithm,
    id: CipherSuite,
}

impl rustls::quic::Algorithm for Noting {
    fn packet_key(&self, key: AeadKey, iv: Iv) -> Box<dyn rustls::quic::PacketKey> {
        SUITE.set(Some(self.id));
        self.inner.packet_key(key, iv)
    }

    fn header_protection_key(&self, key: AeadKey) -> Box<dyn rustls::quic::HeaderProtectionKey> {
        self.inner.header_protection_key(key)
    }

    fn aead_key_len(&self) -> usize {
        self.inner.aead_key_len()
    }

    fn fips(&self) -> bool {
        self.inner.fips()
    }
}

/// rustls' session store, noting the group it is told the server chose.
#[derive(Debug)]
pub(crate) struct NotingStore(rustls::client::ClientSessionMemoryCache);

impl NotingStore {
    /// A store of rustls' default size.
    pub(crate) fn new() -> Arc<NotingStore> {
        Arc::new(NotingStore(rustls::client::ClientSessionMemoryCache::new(
            256,
        )))
    }
}

impl ClientSessionStore for NotingStore {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        GROUP.set(Some(group));
        self.0.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.0.kx_hint(server_name)
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, v: Tls12ClientSessionValue) {
        self.0.set_tls12_session(server_name, v);
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.0.tls12_session(server_name)
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.0.remove_tls12_session(server_name);
    }

    fn insert_tls13_ticket(&self, server_name: ServerName<'static>, v: Tls13ClientSessionValue) {
        self.0.insert_tls13_ticket(server_name, v);
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        self.0.take_tls13_ticket(server_name)
    }
}

/// The client configuration: `quinn-proto`'s, starting [`Session`]s.
pub(crate) struct Config(pub Arc<QuicClientConfig>);

impl crypto::ClientConfig for Config {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn crypto::Session>, ConnectError> {
        let inner = Arc::clone(&self.0).start_session(version, server_name, params)?;
        Ok(Box::new(Session {
            inner,
            suite: None,
            group: None,
        }))
    }
}

/// `quinn-proto`'s session, with the suite and group noted in its flights.
struct Session {
    inner: Box<dyn crypto::Session>,
    suite: Option<CipherSuite>,
    group: Option<NamedGroup>,
}

impl crypto::Session for Session {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        self.inner.initial_keys(dst_cid, side)
    }

    /// [`Negotiated`], once the server's ALPN choice is known.
    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        let data = self.inner.handshake_data()?;
        let alpn = data
            .downcast::<HandshakeData>()
            .ok()
            .and_then(|d| d.protocol);
        Some(Box::new(Negotiated {
            alpn,
            suite: self.suite,
            group: self.group,
        }))
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.inner.peer_identity()
    }

    fn early_crypto(&self) -> Option<(Box<dyn crypto::HeaderKey>, Box<dyn crypto::PacketKey>)> {
        self.inner.early_crypto()
    }

    fn early_data_accepted(&self) -> Option<bool> {
        self.inner.early_data_accepted()
    }

    fn is_handshaking(&self) -> bool {
        self.inner.is_handshaking()
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        GROUP.set(None);
        let r = self.inner.read_handshake(buf);
        self.group = GROUP.take().or(self.group);
        r
    }

    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        self.inner.transport_parameters()
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        SUITE.set(None);
        let keys = self.inner.write_handshake(buf);
        self.suite = SUITE.take().or(self.suite);
        keys
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn crypto::PacketKey>>> {
        self.inner.next_1rtt_keys()
    }

    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        self.inner.is_valid_retry(orig_dst_cid, header, payload)
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.inner.export_keying_material(output, label, context)
    }
}
