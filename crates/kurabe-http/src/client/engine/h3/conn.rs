//! The HTTP/3 state of one client connection over a `quinn-proto`
//! connection, without I/O: the driver feeds datagrams to the QUIC
//! connection and sends what it produces; this module acts on the QUIC
//! connection's events — opens the control stream, reads the server's
//! control, QPACK and unknown streams, opens request streams and writes
//! each request's pre-encoded bytes, and reads each response through its
//! [`Response`]. Each stream's outcome is left in its [`StreamState`] for
//! the driver to settle.
//!
//! Owns the HTTP/3 connection rules: SETTINGS first on the control stream,
//! critical streams never closed, GOAWAY, no push, an encoder stream that
//! may only set a capacity of 0. Must not touch sockets or counters.

use bytes::Bytes;
use quinn_proto::{
    Connection, ConnectionError, Dir, Event, ReadError, StreamEvent, StreamId, VarInt,
};
use std::time::Instant;

use super::frame;
use super::response::{Fail, Response};
use super::session::Negotiated;
use super::varint;
use super::{Req, Setup};
use crate::client::engine::slot::Slot;
use crate::client::measure::tls_summary;
use kurabe_model::failures::FailureKind;
use kurabe_model::http::TlsSummary;
use rustls::pki_types::{CertificateDer, ServerName};

/// How one request stream ended, or that it has not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamState {
    /// Waiting for (the rest of) the response.
    Open,
    /// The response is complete.
    Done,
    /// The response failed (its bucket and reason).
    Failed(Fail),
    /// The server reset the stream (RESET_STREAM) or stopped reading the
    /// request before answering (STOP_SENDING, `stopped`), with `code`:
    /// a `receive` failure, counted by its code's name.
    Reset { code: u64, stopped: bool },
    /// At or past the id of the server's GOAWAY: never processed, send it again.
    Refused,
}

/// One request in flight on the connection.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    pub id: StreamId,
    pub slot: Slot,
    /// Where its request is.
    pub req: Req,
    /// Request bytes written so far (of [`Setup::request`]).
    written: usize,
    /// FIN sent after the last request byte.
    finished: bool,
    pub response: Response,
    pub state: StreamState,
    /// When the first response byte arrived (0: none yet).
    pub first_byte: u64,
}

/// A stream the server opened: its type once read, and the bytes of its
/// frames not parsed yet (control stream only).
struct Uni {
    id: StreamId,
    kind: Option<u64>,
    buf: Vec<u8>,
}

/// The HTTP/3 state of one connection.
pub(crate) struct H3Conn {
    pub quic: Connection,
    /// The handshake finished with ALPN `h3`.
    pub connected: bool,
    /// Our control stream and how much of its opening is written.
    control: Option<(StreamId, usize)>,
    control_bytes: Vec<u8>,
    peer: Vec<Uni>,
    /// The server's SETTINGS arrived.
    pub settings_seen: bool,
    /// The stream id of the server's last GOAWAY.
    pub goaway: Option<u64>,
    pub streams: Vec<Stream>,
    /// Responses completed here.
    pub served: u64,
    /// Response stream bytes read since the worker last took them.
    pub received: u64,
    /// The connection failed or ended: why (None while it is up).
    pub lost: Option<Fail>,
    /// `server` of the first response read with `want_server`.
    pub server: Option<String>,
    /// What the handshake settled on, once connected.
    negotiated: Option<Negotiated>,
}

impl H3Conn {
    /// HTTP/3 over `quic`, a connection being set up.
    pub(crate) fn new(quic: Connection) -> H3Conn {
        H3Conn {
            quic,
            connected: false,
            control: None,
            control_bytes: frame::control_stream(),
            peer: Vec::new(),
            settings_seen: false,
            goaway: None,
            streams: Vec::new(),
            served: 0,
            received: 0,
            lost: None,
            server: None,
            negotiated: None,
        }
    }

    /// The report's TLS block from this connection's handshake (QUIC is
    /// TLS 1.3), which sent `server_name` as SNI unless it is an address.
    pub(crate) fn tls_summary(&self, server_name: &str) -> Option<TlsSummary> {
        let n = self.negotiated.as_ref()?;
        let certs = self.quic.crypto_session().peer_identity();
        let certs = certs.and_then(|c| c.downcast::<Vec<CertificateDer<'static>>>().ok());
        let cert = certs.as_ref().and_then(|c| c.first()).map(|c| c.as_ref());
        let sni = matches!(
            ServerName::try_from(server_name),
            Ok(ServerName::DnsName(_))
        );
        let sni = sni.then_some(server_name);
        Some(tls_summary::of("TLSv1.3", n.suite?, n.group, cert, sni))
    }

    /// Open a request stream for `slot` and write its request (`req`, of
    /// `setup`) on it; `keep_body`: keep the response for the checks (see
    /// [`Response::keeping`]). Gives the request back when the server's
    /// stream limit allows no stream now.
    pub(crate) fn open(
        &mut self,
        (slot, req): (Slot, Req),
        setup: &Setup,
        keep_body: Option<usize>,
    ) -> Result<(), (Slot, Req)> {
        let Some(id) = self.quic.streams().open(Dir::Bi) else {
            return Err((slot, req));
        };
        let head_request = setup.is_head(slot.target, &req);
        self.streams.push(Stream {
            id,
            slot,
            req,
            written: 0,
            finished: false,
            response: Response::keeping(head_request, keep_body),
            state: StreamState::Open,
            first_byte: 0,
        });
        let i = self.streams.len() - 1;
        let req = self.streams[i].req.clone();
        self.write_request(i, setup.request(slot.target, &req));
        Ok(())
    }

    /// Write what the stream's flow control takes of its request (its
    /// frames, then a body sent apart), and FIN after it.
    fn write_request(&mut self, i: usize, request: [&[u8]; 2]) {
        let s = &mut self.streams[i];
        if s.finished {
            return;
        }
        let mut send = self.quic.send_stream(s.id);
        let [frames, body] = request;
        while s.written < frames.len() + body.len() {
            let rest = match s.written.checked_sub(frames.len()) {
                Some(at) => &body[at..],
                None => &frames[s.written..],
            };
            match send.write(rest) {
                Ok(n) => s.written += n,
                Err(_) => return, // blocked: Writable comes back; stopped: Stopped does
            }
        }
        s.finished = send.finish().is_ok();
    }

    /// Cancel stream `i` (timed out): reset our side, stop the server's, drop it.
    pub(crate) fn cancel(&mut self, i: usize) -> Stream {
        let s = self.streams.swap_remove(i);
        let code = VarInt::from_u64(frame::H3_REQUEST_CANCELLED).expect("a small code");
        let _ = self.quic.send_stream(s.id).reset(code);
        let _ = self.quic.recv_stream(s.id).stop(code);
        s
    }

    /// Close the connection with an HTTP/3 error `code` (H3_NO_ERROR at the end of a run).
    pub(crate) fn close(&mut self, now: Instant, code: u64) {
        let code = VarInt::from_u64(code).unwrap_or(VarInt::MAX);
        self.quic.close(now, code, Bytes::new());
    }

    /// Act on every event the QUIC connection has: `setup` gives a
    /// stream's request bytes back (to continue a blocked write).
    pub(crate) fn on_events(&mut self, now: u64, want_server: bool, setup: &Setup) {
        while let Some(ev) = self.quic.poll() {
            match ev {
                Event::Connected => self.on_connected(),
                Event::ConnectionLost { reason } => self.on_lost(reason),
                Event::Stream(StreamEvent::Readable { id }) => {
                    self.on_readable(id, now, want_server)
                }
                Event::Stream(StreamEvent::Writable { id }) => self.on_writable(id, setup),
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => self.accept_uni(),
                Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                    self.on_stopped(id, error_code.into_inner());
                }
                _ => {}
            }
            if self.lost.is_some() {
                return;
            }
        }
    }

    /// The handshake is done: check ALPN, open the control stream.
    fn on_connected(&mut self) {
        let data = self.quic.crypto_session().handshake_data();
        let negotiated = data.and_then(|d| d.downcast::<Negotiated>().ok());
        let alpn = negotiated.as_ref().and_then(|n| n.alpn.clone());
        self.negotiated = negotiated.map(|n| *n);
        if alpn.as_deref() != Some(b"h3") {
            let chose = alpn.map_or("nothing".into(), |p| {
                String::from_utf8_lossy(&p).into_owned()
            });
            return self.fail_handshake(format!(
                "the server did not agree to HTTP/3 (ALPN offered h3, it chose {chose})"
            ));
        }
        self.connected = true;
        self.open_control();
    }

    fn fail_handshake(&mut self, why: String) {
        self.lost = Some(Fail {
            kind: FailureKind::Connect,
            code: frame::H3_GENERAL_PROTOCOL_ERROR,
            conn: true,
            why,
        });
    }

    /// Open our control stream and write its SETTINGS (the rest on Writable).
    fn open_control(&mut self) {
        if self.control.is_none() {
            if let Some(id) = self.quic.streams().open(Dir::Uni) {
                self.control = Some((id, 0));
            }
        }
        if let Some((id, off)) = &mut self.control {
            if let Ok(n) = self
                .quic
                .send_stream(*id)
                .write(&self.control_bytes[*off..])
            {
                *off += n;
            }
        }
    }

    fn on_writable(&mut self, id: StreamId, setup: &Setup) {
        if self.control.is_some_and(|(c, _)| c == id) {
            return self.open_control();
        }
        if let Some(i) = self.streams.iter().position(|s| s.id == id) {
            let (target, req) = (self.streams[i].slot.target, self.streams[i].req.clone());
            self.write_request(i, setup.request(target, &req));
        }
    }

    /// The connection is gone: why, as a failure of the streams on it.
    fn on_lost(&mut self, reason: ConnectionError) {
        if self.lost.is_some() {
            return;
        }
        self.lost = Some(lost_reason(&reason, self.connected));
    }

    /// The server stopped reading a request: before it answered, the
    /// request failed (unless the server said H3_NO_ERROR: it answers
    /// without the rest of the request, RFC 9114 §4.1).
    fn on_stopped(&mut self, id: StreamId, code: u64) {
        if code == frame::H3_NO_ERROR {
            return;
        }
        if let Some(s) = self
            .streams
            .iter_mut()
            .find(|s| s.id == id && s.state == StreamState::Open)
        {
            s.state = StreamState::Reset {
                code,
                stopped: true,
            };
            // Whatever of the response comes is discarded, its credit returned.
            let stop = VarInt::from_u64(frame::H3_REQUEST_CANCELLED).expect("a small code");
            let _ = self.quic.recv_stream(id).stop(stop);
        }
    }

    fn on_readable(&mut self, id: StreamId, now: u64, want_server: bool) {
        if id.dir() == Dir::Uni {
            return self.read_uni(id);
        }
        let Some(i) = self.streams.iter().position(|s| s.id == id) else {
            return;
        };
        let want = want_server && self.server.is_none();
        let s = &mut self.streams[i];
        if let Ok(mut chunks) = self.quic.recv_stream(id).read(true) {
            while s.state == StreamState::Open {
                match chunks.next(usize::MAX) {
                    Ok(Some(c)) => {
                        self.received += c.bytes.len() as u64;
                        if s.first_byte == 0 {
                            s.first_byte = now;
                        }
                        if let Err(f) = s.response.input(&c.bytes, want) {
                            s.state = StreamState::Failed(f);
                        }
                    }
                    Ok(None) => {
                        s.state = match s.response.end() {
                            Ok(()) => StreamState::Done,
                            Err(f) => StreamState::Failed(f),
                        };
                    }
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(code)) => {
                        s.state = StreamState::Reset {
                            code: code.into_inner(),
                            stopped: false,
                        };
                    }
                }
            }
            let _ = chunks.finalize();
        }
        if let StreamState::Failed(f) = &s.state {
            // Whatever more comes on it is discarded, and its credit returned.
            let code = VarInt::from_u64(f.code).unwrap_or(VarInt::MAX);
            let _ = self.quic.recv_stream(id).stop(code);
        }
        self.settled_stream(i);
    }

    /// After a stream's read: count it served, pass a connection error on.
    fn settled_stream(&mut self, i: usize) {
        let s = &mut self.streams[i];
        if self.server.is_none() {
            self.server = s.response.server.take();
        }
        match &s.state {
            StreamState::Done => self.served += 1,
            StreamState::Failed(f) if f.conn => self.lost = Some(f.clone()),
            _ => {}
        }
    }

    fn accept_uni(&mut self) {
        while let Some(id) = self.quic.streams().accept(Dir::Uni) {
            self.peer.push(Uni {
                id,
                kind: None,
                buf: Vec::new(),
            });
            self.read_uni(id);
        }
    }

    /// Read a server-opened stream: its type, then its content by type.
    fn read_uni(&mut self, id: StreamId) {
        let Some(u) = self.peer.iter().position(|u| u.id == id) else {
            return;
        };
        let mut fin = false;
        let mut reset = None;
        if let Ok(mut chunks) = self.quic.recv_stream(id).read(true) {
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(c)) => self.peer[u].buf.extend_from_slice(&c.bytes),
                    Ok(None) => break fin = true,
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(code)) => break reset = Some(code.into_inner()),
                }
            }
            let _ = chunks.finalize();
        }
        if let Err(f) = self.uni_content(u) {
            self.lost = Some(f);
            return;
        }
        let critical = matches!(
            self.peer[u].kind,
            Some(frame::STREAM_CONTROL | frame::STREAM_QPACK_ENCODER | frame::STREAM_QPACK_DECODER)
        );
        if critical && (fin || reset.is_some()) {
            self.lost = Some(Fail::conn(
                frame::H3_CLOSED_CRITICAL_STREAM,
                "the server closed its control or QPACK stream",
            ));
        }
    }

    /// Act on the bytes gathered on server stream `u`.
    fn uni_content(&mut self, u: usize) -> Result<(), Fail> {
        let p = &mut self.peer[u];
        if p.kind.is_none() {
            let Some((kind, n)) = varint::read(&p.buf) else {
                return Ok(());
            };
            p.kind = Some(kind);
            p.buf.drain(..n);
            self.check_uni_kind(u, kind)?;
        }
        let p = &mut self.peer[u];
        match p.kind {
            Some(frame::STREAM_CONTROL) => {
                let mut buf = std::mem::take(&mut p.buf);
                let r = self.control_frames(&mut buf);
                self.peer[u].buf = buf;
                r
            }
            Some(frame::STREAM_QPACK_ENCODER) => {
                // Set Dynamic Table Capacity 0 (0x20) is all a server may
                // send with a table of 0 bytes; an insert is an error.
                let bad = p.buf.iter().any(|&b| b != 0x20);
                p.buf.clear();
                match bad {
                    true => Err(Fail::conn(
                        frame::QPACK_ENCODER_STREAM_ERROR,
                        "the server's QPACK encoder stream went past the table of 0 bytes the client allowed",
                    )),
                    false => Ok(()),
                }
            }
            _ => {
                p.buf.clear();
                Ok(())
            }
        }
    }

    /// A server stream's type: control, QPACK or unknown are fine (the
    /// unknown one is stopped), a second control stream or a push is not.
    fn check_uni_kind(&mut self, u: usize, kind: u64) -> Result<(), Fail> {
        let id = self.peer[u].id;
        let seen = |k| self.peer.iter().filter(|p| p.kind == Some(k)).count();
        match kind {
            frame::STREAM_PUSH => Err(Fail::conn(
                frame::H3_ID_ERROR,
                "a push stream, though the client allowed no push",
            )),
            frame::STREAM_CONTROL | frame::STREAM_QPACK_ENCODER | frame::STREAM_QPACK_DECODER
                if seen(kind) > 1 =>
            {
                Err(Fail::conn(
                    frame::H3_STREAM_CREATION_ERROR,
                    format!("a second server stream of type 0x{kind:x}"),
                ))
            }
            frame::STREAM_CONTROL | frame::STREAM_QPACK_ENCODER | frame::STREAM_QPACK_DECODER => {
                Ok(())
            }
            _ => {
                let code = VarInt::from_u64(frame::H3_STREAM_CREATION_ERROR).expect("a small code");
                let _ = self.quic.recv_stream(id).stop(code);
                Ok(())
            }
        }
    }

    /// Parse the complete frames at the start of `buf` (the server's
    /// control stream) and drop them from it.
    fn control_frames(&mut self, buf: &mut Vec<u8>) -> Result<(), Fail> {
        let mut pos = 0;
        while let Some(h) = frame::head(&buf[pos..]) {
            if h.len > 64 * 1024 {
                return Err(Fail::conn(
                    frame::H3_EXCESSIVE_LOAD,
                    "a control frame over 64 KiB",
                ));
            }
            let end = pos + h.size + h.len as usize;
            if buf.len() < end {
                break;
            }
            self.control_frame(h.kind, &buf[pos + h.size..end])?;
            pos = end;
        }
        buf.drain(..pos);
        Ok(())
    }

    fn control_frame(&mut self, kind: u64, p: &[u8]) -> Result<(), Fail> {
        if !self.settings_seen && kind != frame::SETTINGS {
            return Err(Fail::conn(
                frame::H3_MISSING_SETTINGS,
                format!(
                    "the server's control stream began with frame type 0x{kind:x}, not SETTINGS"
                ),
            ));
        }
        match kind {
            frame::SETTINGS if self.settings_seen => Err(Fail::conn(
                frame::H3_FRAME_UNEXPECTED,
                "a second SETTINGS on the server's control stream",
            )),
            frame::SETTINGS => {
                frame::settings(p).map_err(|code| Fail::conn(code, "the server's SETTINGS"))?;
                self.settings_seen = true;
                Ok(())
            }
            frame::GOAWAY => self.on_goaway(p),
            frame::CANCEL_PUSH => Err(Fail::conn(
                frame::H3_ID_ERROR,
                "a CANCEL_PUSH, though the client allowed no push",
            )),
            k if k == frame::DATA
                || k == frame::HEADERS
                || k == frame::PUSH_PROMISE
                || k == frame::MAX_PUSH_ID
                || frame::is_reserved_h2(k) =>
            {
                Err(Fail::conn(
                    frame::H3_FRAME_UNEXPECTED,
                    format!("a frame of type 0x{k:x} on the server's control stream"),
                ))
            }
            _ => Ok(()),
        }
    }

    /// GOAWAY: requests at or past its stream id were not processed (RFC 9114 §5.2).
    fn on_goaway(&mut self, p: &[u8]) -> Result<(), Fail> {
        let id = match varint::read(p) {
            Some((id, n)) if n == p.len() => id,
            _ => return Err(Fail::conn(frame::H3_FRAME_ERROR, "a malformed GOAWAY")),
        };
        if id % 4 != 0 || self.goaway.is_some_and(|last| id > last) {
            return Err(Fail::conn(
                frame::H3_ID_ERROR,
                format!("a GOAWAY with stream id {id}"),
            ));
        }
        self.goaway = Some(id);
        for s in &mut self.streams {
            if VarInt::from(s.id).into_inner() >= id && s.state == StreamState::Open {
                s.state = StreamState::Refused;
            }
        }
        Ok(())
    }
}

/// Why a lost connection failed its streams: `connect` before the
/// handshake finished, `receive` after.
fn lost_reason(reason: &ConnectionError, connected: bool) -> Fail {
    let kind = if connected {
        FailureKind::Receive
    } else {
        FailureKind::Connect
    };
    let why = match reason {
        ConnectionError::ApplicationClosed(c) => format!(
            "the server closed the connection with {}",
            frame::error_name(c.error_code.into_inner())
        ),
        ConnectionError::ConnectionClosed(c) => {
            format!("the server's QUIC stack closed the connection: {c}")
        }
        ConnectionError::TimedOut if !connected => {
            "no answer to the QUIC handshake (idle timeout)".into()
        }
        ConnectionError::VersionMismatch => {
            "the server speaks no QUIC version the client does (version negotiation)".into()
        }
        ConnectionError::Reset => "the server reset the connection (stateless reset)".into(),
        other => format!("QUIC: {other}"),
    };
    Fail {
        kind,
        code: frame::H3_NO_ERROR,
        conn: true,
        why,
    }
}
