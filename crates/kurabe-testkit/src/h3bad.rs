//! HTTP/3 servers that misbehave on purpose, one way each, for the
//! client's failure tests: a handshake that never completes, version
//! negotiation to a version no one speaks, a stateless reset mid-run, a
//! CONNECTION_CLOSE with an application error, GOAWAY, a reset per
//! request, a QPACK dynamic-table reference the client did not allow, a
//! frame on the wrong stream, a body shorter or longer than its
//! `content-length`, a body that never ends.
//!
//! Each server is a thread with a UDP socket on 127.0.0.1 port 0 and
//! `quinn-proto`'s server side (the QUIC stack the client uses, with a
//! self-signed certificate for `localhost`: clients skip verification),
//! and just enough HTTP/3 to misbehave: its control stream with an empty
//! SETTINGS, each request read to its end and answered as
//! [`Misbehaviour`] says. It counts the requests it read to their end.
//! Stopped on drop.
//!
//! Owns these servers. Must not be used by product code.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{
    Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig, EndpointEvent,
    Event, ServerConfig, StreamEvent, StreamId, VarInt,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// How a server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehaviour {
    /// Does not: answers each request with a 200 (for the tests of what
    /// the client sends, which count the bytes it read).
    Answers,
    /// Reads the client's packets and never answers: the handshake never completes.
    Silent,
    /// Answers each Initial with Version Negotiation offering only a
    /// version no one speaks.
    UnknownVersion,
    /// Answers the first request of each connection, then forgets the
    /// connection at the next: the client's next packet gets a stateless reset.
    StatelessReset,
    /// Closes the connection with H3_INTERNAL_ERROR when a request arrives.
    CloseWithError,
    /// Answers the first request of each connection, then sends GOAWAY
    /// and leaves every later request on it unprocessed.
    Goaway,
    /// Resets each request stream with H3_REQUEST_REJECTED.
    ResetStream,
    /// Answers with a field section that refers to a QPACK dynamic table
    /// (the client allowed none).
    DynamicQpack,
    /// Sends a DATA frame on its control stream when a request arrives.
    FrameOnControlStream,
    /// Announces `content-length: 10` and sends 5 bytes.
    ShortBody,
    /// Announces `content-length: 2` and sends 5 bytes.
    LongBody,
    /// Sends a head and 5 bytes of a body of 100, and never the rest.
    EndlessBody,
}

/// A running misbehaving server.
#[derive(Debug)]
pub struct BadH3 {
    port: u16,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl BadH3 {
    /// A server misbehaving as `how`, on a UDP port of 127.0.0.1.
    pub fn start(how: Misbehaviour) -> BadH3 {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind a UDP port");
        let port = sock.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let bytes = Arc::new(AtomicU64::new(0));
        let (s, r, b) = (Arc::clone(&stop), Arc::clone(&requests), Arc::clone(&bytes));
        let thread = std::thread::spawn(move || Server::new(sock, how, (r, b)).run(&s));
        BadH3 {
            port,
            stop,
            requests,
            bytes,
            thread: Some(thread),
        }
    }

    /// Its UDP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Requests it read to their end (answered or misanswered).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Bytes it read on request streams (frames and bodies).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::SeqCst)
    }
}

impl Drop for BadH3 {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// HTTP/3 error codes it sends.
const H3_INTERNAL_ERROR: u32 = 0x102;
const H3_REQUEST_REJECTED: u32 = 0x10b;

/// Self-signed P-256 certificate for localhost / 127.0.0.1 (test only, valid to 2126).
const CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBnDCCAUGgAwIBAgIUXIqTQj0ow03n8MBt8rbYyRztvqkwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyOTIyNDgyOFoYDzIxMjYxMTA1
MjI0ODI4WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATyOBMGMHd48u8PdcCPZYQxs61XGF+3m2ePdTZL1atvh4WasiVyqTBM
tfTNXNBazKa6xS/20ea37ULeyMh/dQpdo28wbTAdBgNVHQ4EFgQU9scDguN8PylE
JjueKc1AnS8uBNkwHwYDVR0jBBgwFoAU9scDguN8PylEJjueKc1AnS8uBNkwDwYD
VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI
zj0EAwIDSQAwRgIhALQA8jPEsUHxtL1Q0egT/pdh6ASZtOAjBbDsA9PQXIqcAiEA
2GjxHhFxByRFgJiDaoM0eYDBcXWbQkGb0MulEciL4Ts=
-----END CERTIFICATE-----
";
const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgIRhM8blO28xVD17Y
k+pdr3aj4axZYwEESjSSVDObz/6hRANCAATyOBMGMHd48u8PdcCPZYQxs61XGF+3
m2ePdTZL1atvh4WasiVyqTBMtfTNXNBazKa6xS/20ea37ULeyMh/dQpd
-----END PRIVATE KEY-----
";

/// The QUIC server configuration: TLS 1.3 with the certificate above, ALPN `h3`.
fn server_config() -> Arc<ServerConfig> {
    let certs = vec![CertificateDer::from_pem_slice(CERT.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(KEY.as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = QuicServerConfig::try_from(tls).expect("TLS 1.3 with AES-128-GCM");
    Arc::new(ServerConfig::with_crypto(Arc::new(quic)))
}

/// One connection's HTTP/3 side.
struct Conn {
    quic: Connection,
    /// Our control stream, once open.
    control: Option<StreamId>,
    /// Requests answered on it.
    answered: u64,
    /// The stream id of our GOAWAY.
    goaway: Option<u64>,
    /// Forgotten (no state kept: its next packet gets a stateless reset).
    forget: bool,
}

/// The server's loop state.
struct Server {
    sock: UdpSocket,
    how: Misbehaviour,
    requests: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    endpoint: Endpoint,
    conns: HashMap<ConnectionHandle, Conn>,
    buf: Vec<u8>,
}

impl Server {
    fn new(sock: UdpSocket, how: Misbehaviour, counts: (Arc<AtomicU64>, Arc<AtomicU64>)) -> Server {
        let (requests, bytes) = counts;
        let endpoint = Endpoint::new(
            Arc::new(EndpointConfig::default()),
            Some(server_config()),
            false,
            None,
        );
        Server {
            sock,
            how,
            requests,
            bytes,
            endpoint,
            conns: HashMap::new(),
            buf: Vec::new(),
        }
    }

    /// Serve until `stop`.
    fn run(mut self, stop: &AtomicBool) {
        let mut rx = vec![0u8; 65_536];
        while !stop.load(Ordering::SeqCst) {
            let now = Instant::now();
            let next = self
                .conns
                .values_mut()
                .filter_map(|c| c.quic.poll_timeout());
            let wait = next.min().map_or(Duration::from_millis(50), |t| {
                t.saturating_duration_since(now)
            });
            let wait = wait.clamp(Duration::from_millis(1), Duration::from_millis(50));
            let _ = self.sock.set_read_timeout(Some(wait));
            match self.sock.recv_from(&mut rx) {
                Ok((n, from)) => self.datagram(&rx[..n], from),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return,
            }
            self.timers();
            let handles: Vec<ConnectionHandle> = self.conns.keys().copied().collect();
            for h in handles {
                self.drive(h);
            }
        }
    }

    fn datagram(&mut self, p: &[u8], from: SocketAddr) {
        match self.how {
            Misbehaviour::Silent => return,
            Misbehaviour::UnknownVersion => return self.negotiate(p, from),
            _ => {}
        }
        let now = Instant::now();
        self.buf.clear();
        let data = BytesMut::from(p);
        match self
            .endpoint
            .handle(now, from, None, None, data, &mut self.buf)
        {
            Some(DatagramEvent::NewConnection(incoming)) => {
                let mut out = Vec::new();
                match self.endpoint.accept(incoming, now, &mut out, None) {
                    Ok((h, quic)) => {
                        let c = Conn {
                            quic,
                            control: None,
                            answered: 0,
                            goaway: None,
                            forget: false,
                        };
                        self.conns.insert(h, c);
                    }
                    Err(e) => {
                        if let Some(t) = e.response {
                            let _ = self.sock.send_to(&out[..t.size], t.destination);
                        }
                    }
                }
            }
            Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                if let Some(c) = self.conns.get_mut(&h) {
                    c.quic.handle_event(ev);
                }
            }
            Some(DatagramEvent::Response(t)) => {
                let _ = self.sock.send_to(&self.buf[..t.size], t.destination);
            }
            None => {}
        }
    }

    /// Answer a long-header packet with Version Negotiation offering only 0x1a2a3a4a.
    fn negotiate(&self, p: &[u8], from: SocketAddr) {
        // Long header: flags, version, DCID length and DCID, SCID length and SCID.
        if p.len() < 7 || p[0] & 0x80 == 0 {
            return;
        }
        let dl = usize::from(p[5]);
        let Some(&sl) = p.get(6 + dl) else { return };
        let Some(scid) = p.get(7 + dl..7 + dl + usize::from(sl)) else {
            return;
        };
        let dcid = &p[6..6 + dl];
        let mut vn = vec![0x80, 0, 0, 0, 0, scid.len() as u8];
        vn.extend_from_slice(scid);
        vn.push(dcid.len() as u8);
        vn.extend_from_slice(dcid);
        vn.extend_from_slice(&[0x1a, 0x2a, 0x3a, 0x4a]);
        let _ = self.sock.send_to(&vn, from);
    }

    fn timers(&mut self) {
        let now = Instant::now();
        for c in self.conns.values_mut() {
            if c.quic.poll_timeout().is_some_and(|t| t <= now) {
                c.quic.handle_timeout(now);
            }
        }
    }

    /// Act on connection `h`'s events, send what it has, drop it when drained or forgotten.
    fn drive(&mut self, h: ConnectionHandle) {
        let Some(mut c) = self.conns.remove(&h) else {
            return;
        };
        while let Some(ev) = c.quic.poll() {
            self.event(&mut c, ev);
        }
        if c.forget {
            // No CONNECTION_CLOSE, no ACK of what it read: the endpoint no
            // longer knows the connection's ids and answers its next packet
            // with a stateless reset.
            self.endpoint.handle_event(h, EndpointEvent::drained());
            return;
        }
        let now = Instant::now();
        loop {
            self.buf.clear();
            let Some(t) = c.quic.poll_transmit(now, 1, &mut self.buf) else {
                break;
            };
            let _ = self.sock.send_to(&self.buf[..t.size], t.destination);
        }
        while let Some(ev) = c.quic.poll_endpoint_events() {
            let drained = ev.is_drained();
            if let Some(back) = self.endpoint.handle_event(h, ev) {
                c.quic.handle_event(back);
            }
            if drained {
                return;
            }
        }
        self.conns.insert(h, c);
    }

    fn event(&mut self, c: &mut Conn, ev: Event) {
        match ev {
            Event::Connected => {
                if let Some(id) = c.quic.streams().open(Dir::Uni) {
                    // Control stream: its type, then an empty SETTINGS.
                    let _ = c.quic.send_stream(id).write(&[0x00, 0x04, 0x00]);
                    c.control = Some(id);
                }
            }
            Event::Stream(StreamEvent::Opened { dir }) => {
                while let Some(id) = c.quic.streams().accept(dir) {
                    self.read(c, id);
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => self.read(c, id),
            _ => {}
        }
    }

    /// Read what stream `id` has; a request read to its end is answered.
    fn read(&mut self, c: &mut Conn, id: StreamId) {
        let mut fin = false;
        if let Ok(mut chunks) = c.quic.recv_stream(id).read(true) {
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(chunk)) if id.dir() == Dir::Bi => {
                        self.bytes
                            .fetch_add(chunk.bytes.len() as u64, Ordering::SeqCst);
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break fin = true,
                    Err(_) => break,
                }
            }
            let _ = chunks.finalize();
        }
        if fin && id.dir() == Dir::Bi && !c.forget {
            self.requests.fetch_add(1, Ordering::SeqCst);
            self.answer(c, id);
        }
    }

    /// Answer the request on stream `id` as the server misbehaves.
    fn answer(&mut self, c: &mut Conn, id: StreamId) {
        let n = VarInt::from(id).into_inner();
        match self.how {
            Misbehaviour::Silent | Misbehaviour::UnknownVersion => {}
            Misbehaviour::Answers => respond(c, id, &ok_response(), true),
            Misbehaviour::StatelessReset if c.answered > 0 => c.forget = true,
            Misbehaviour::StatelessReset => respond(c, id, &ok_response(), true),
            Misbehaviour::CloseWithError => {
                let code = VarInt::from_u32(H3_INTERNAL_ERROR);
                c.quic
                    .close(Instant::now(), code, Bytes::from_static(b"misbehaving"));
            }
            Misbehaviour::Goaway if c.goaway.is_some_and(|g| n >= g) => {}
            Misbehaviour::Goaway => {
                respond(c, id, &ok_response(), true);
                if c.goaway.is_none() {
                    c.goaway = Some(n + 4);
                    let mut f = vec![0x07];
                    f.push(varint_len(n + 4));
                    put_varint(&mut f, n + 4);
                    control(c, &f);
                }
            }
            Misbehaviour::ResetStream => {
                let _ = c
                    .quic
                    .send_stream(id)
                    .reset(VarInt::from_u32(H3_REQUEST_REJECTED));
            }
            // Required Insert Count 0, then an indexed field line of the dynamic table.
            Misbehaviour::DynamicQpack => respond(c, id, &[0x01, 0x03, 0x00, 0x00, 0x80], true),
            Misbehaviour::FrameOnControlStream => control(c, &[0x00, 0x01, b'x']),
            Misbehaviour::ShortBody => respond(c, id, &body_response(10, 5), true),
            Misbehaviour::LongBody => respond(c, id, &body_response(2, 5), true),
            Misbehaviour::EndlessBody => respond(c, id, &body_response(100, 5), false),
        }
    }
}

/// Write `bytes` on request stream `id`, and its end when `fin`.
fn respond(c: &mut Conn, id: StreamId, bytes: &[u8], fin: bool) {
    let mut send = c.quic.send_stream(id);
    let _ = send.write(bytes);
    if fin {
        let _ = send.finish();
    }
    c.answered += 1;
}

/// Write `bytes` on our control stream.
fn control(c: &mut Conn, bytes: &[u8]) {
    if let Some(id) = c.control {
        let _ = c.quic.send_stream(id).write(bytes);
    }
}

/// HEADERS of a 200 with `content-length: 2`, then DATA `ok`.
fn ok_response() -> Vec<u8> {
    body_response(2, 2)
}

/// HEADERS of a 200 announcing `length` bytes, then DATA of `sent` bytes.
fn body_response(length: u64, sent: usize) -> Vec<u8> {
    let length = length.to_string();
    // QPACK: no dynamic table; `:status: 200` is static entry 25,
    // `content-length` a literal value with static name 4.
    let mut block = vec![0x00, 0x00, 0xc0 | 25, 0x50 | 4, length.len() as u8];
    block.extend_from_slice(length.as_bytes());
    let mut out = vec![0x01, block.len() as u8];
    out.extend_from_slice(&block);
    out.extend_from_slice(&[0x00, sent as u8]);
    out.extend((0..sent).map(|i| b'a' + i as u8));
    out
}

/// The length of `v`'s QUIC varint encoding, as one byte.
fn varint_len(v: u64) -> u8 {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        _ => 4,
    }
}

/// Append `v` as a QUIC varint (values under 2^30).
fn put_varint(out: &mut Vec<u8>, v: u64) {
    match varint_len(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        _ => out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
    }
}
