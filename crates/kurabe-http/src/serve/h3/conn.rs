//! One HTTP/3 connection of the built-in server over a `quinn-proto`
//! connection, without I/O: it opens the control stream with SETTINGS
//! (no QPACK dynamic table, as the client's), reads each request stream
//! through its [`Reader`] and writes the response it is given, and reads
//! and drops what the client's own streams (control, QPACK) carry.
//!
//! Owns the streams' state. Must not touch sockets, counters or the
//! per-request costs: requests read to their end are handed to the loop
//! ([`super::serve_loop`]), which answers them through [`Conn::answer`].

use std::time::Instant;

use bytes::Bytes;
use quinn_proto::{Connection, Dir, Event, ReadError, StreamEvent, StreamId, VarInt};

use super::response::{Reader, Request};
use crate::client::engine::h3::frame;

/// One request stream: being read, waiting for its answer, or writing it.
struct Stream {
    id: StreamId,
    reader: Reader,
    /// Read to its end and handed to the loop.
    complete: bool,
    /// What is left to write of its response (`None`: not answered yet).
    out: Option<Bytes>,
}

/// The HTTP/3 state of one connection.
pub(super) struct Conn {
    pub quic: Connection,
    /// Our control stream and how much of its opening is written.
    control: Option<(StreamId, usize)>,
    control_bytes: Vec<u8>,
    streams: Vec<Stream>,
    /// Its next QUIC timer, as of the last time it was driven.
    pub timer: Option<Instant>,
    /// Among the connections to drive at the end of this turn.
    pub dirty: bool,
    /// Which connection this is, of all the server accepted.
    pub serial: u64,
}

impl Conn {
    pub(super) fn new(quic: Connection, serial: u64) -> Conn {
        Conn {
            quic,
            control: None,
            control_bytes: frame::control_stream(),
            streams: Vec::new(),
            timer: None,
            dirty: true,
            serial,
        }
    }

    /// Act on every event the QUIC connection has; requests read to their
    /// end are pushed on `done` with their stream, to be answered.
    pub(super) fn on_events(&mut self, done: &mut Vec<(StreamId, Request)>) {
        while let Some(ev) = self.quic.poll() {
            match ev {
                Event::Connected => self.open_control(),
                Event::Stream(StreamEvent::Opened { dir }) => {
                    while let Some(id) = self.quic.streams().accept(dir) {
                        if dir == Dir::Bi {
                            self.streams.push(Stream {
                                id,
                                reader: Reader::default(),
                                complete: false,
                                out: None,
                            });
                        }
                        self.on_readable(id, done);
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => self.on_readable(id, done),
                Event::Stream(StreamEvent::Writable { id }) => self.on_writable(id),
                Event::Stream(StreamEvent::Stopped { id, .. }) => self.forget(id),
                _ => {}
            }
        }
    }

    /// Write `response` on the request stream `id` (FIN after it), if its
    /// request was read to its end and is not answered yet.
    pub(super) fn answer(&mut self, id: StreamId, response: Bytes) {
        let waiting = |s: &&mut Stream| s.id == id && s.complete && s.out.is_none();
        if let Some(s) = self.streams.iter_mut().find(waiting) {
            s.out = Some(response);
            self.on_writable(id);
        }
    }

    /// Close the connection (the server stops): H3_NO_ERROR.
    pub(super) fn close(&mut self, now: Instant) {
        let code = VarInt::from_u64(frame::H3_NO_ERROR).expect("a small code");
        self.quic.close(now, code, Bytes::new());
    }

    /// Open our control stream and write its SETTINGS (the rest on Writable).
    fn open_control(&mut self) {
        if self.control.is_none() {
            self.control = self.quic.streams().open(Dir::Uni).map(|id| (id, 0));
        }
        if let Some((id, off)) = &mut self.control {
            let rest = &self.control_bytes[*off..];
            if let Ok(n) = self.quic.send_stream(*id).write(rest) {
                *off += n;
            }
        }
    }

    fn on_writable(&mut self, id: StreamId) {
        if self.control.is_some_and(|(c, _)| c == id) {
            return self.open_control();
        }
        let Some(i) = self.streams.iter().position(|s| s.id == id) else {
            return;
        };
        let Some(out) = self.streams[i].out.as_mut() else {
            return;
        };
        let mut send = self.quic.send_stream(id);
        while !out.is_empty() {
            if send.write_chunks(std::slice::from_mut(out)).is_err() {
                break; // blocked: Writable comes back; stopped: Stopped does
            }
        }
        if out.is_empty() {
            let _ = send.finish();
            self.streams.swap_remove(i);
        }
    }

    /// Read what stream `id` has: a request's frames, or a client stream
    /// (control, QPACK, unknown) whose bytes are dropped.
    fn on_readable(&mut self, id: StreamId, done: &mut Vec<(StreamId, Request)>) {
        let i = self.streams.iter().position(|s| s.id == id);
        let mut fin = false;
        let mut bad = None;
        if let Ok(mut chunks) = self.quic.recv_stream(id).read(true) {
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(c)) => {
                        let Some(s) = i.map(|i| &mut self.streams[i]) else {
                            continue;
                        };
                        if let Err(code) = s.reader.input(&c.bytes) {
                            break bad = Some(code);
                        }
                    }
                    Ok(None) => break fin = true,
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(_)) => break bad = Some(frame::H3_REQUEST_CANCELLED),
                }
            }
            let _ = chunks.finalize();
        }
        let Some(i) = i else { return };
        if let Some(code) = bad {
            return self.refuse(i, code);
        }
        if fin && !self.streams[i].complete {
            match self.streams[i].reader.end() {
                Ok(request) => {
                    self.streams[i].complete = true;
                    done.push((id, request));
                }
                Err(code) => self.refuse(i, code),
            }
        }
    }

    /// Reset request stream `i` with `code` and forget it.
    fn refuse(&mut self, i: usize, code: u64) {
        let s = self.streams.swap_remove(i);
        let code = VarInt::from_u64(code).unwrap_or(VarInt::MAX);
        let _ = self.quic.recv_stream(s.id).stop(code);
        let _ = self.quic.send_stream(s.id).reset(code);
    }

    /// The client stopped reading stream `id`'s response: nothing more to send.
    fn forget(&mut self, id: StreamId) {
        if let Some(i) = self.streams.iter().position(|s| s.id == id) {
            self.streams.swap_remove(i);
        }
    }
}
