//! The HTTP/2 protocol state of one client connection, without I/O: bytes
//! read go in ([`Proto::input`]), frames to write accumulate in
//! [`Proto::out`], and each stream's outcome is left in its [`Stream::state`]
//! for the worker to settle.
//!
//! Owns framing rules, SETTINGS, flow control in both directions, HPACK
//! state, PING, GOAWAY and RST_STREAM. Must not touch sockets, clocks or
//! counters: the worker passes `now` in and reads the results out.
//!
//! DATA payloads are never buffered: their bytes are counted and skipped as
//! they arrive, so a connection's read buffer holds at most one control or
//! HEADERS frame however large the bodies are. Only when responses are
//! checked ([`Proto::keep_body`]) does each stream keep a copy of its head
//! (every field, decoded in full) and of its body's first bytes, bounded.

use super::frame::{self, Head};
use super::hpack::{self, FullDecoder, ResponseDecoder};
use super::{Blocks, Req, Setup};
use crate::client::engine::h1::framer::Keep;
use crate::client::engine::slot::Slot;
use kurabe_model::failures::FailureKind;

/// Receive window the client grants each stream (SETTINGS_INITIAL_WINDOW_SIZE).
pub(crate) const STREAM_WINDOW: u32 = 1 << 24;
/// Receive window of the whole connection (raised from 65535 by a WINDOW_UPDATE at start).
pub(crate) const CONN_WINDOW: u32 = (1 << 30) - 1;
/// Largest response header block accepted (HEADERS + CONTINUATION).
pub(crate) const MAX_BLOCK: usize = 64 * 1024;
/// Highest stream id a client may open; past it the connection is replaced.
const LAST_STREAM_ID: u32 = (1 << 31) - 1;
/// Request body bytes queued per turn (the rest follows once they are written).
const BODY_BATCH: usize = 64 * 1024;

/// How one stream ended, or that it has not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamState {
    /// Waiting for (the rest of) the response.
    Open,
    /// The response is complete.
    Done,
    /// The server reset the stream with this error code.
    Reset(u32),
    /// Above the last stream id of the server's GOAWAY: never processed, resend it.
    Refused,
}

/// One request in flight on the connection.
#[derive(Debug, Clone)]
pub(crate) struct Stream {
    pub id: u32,
    pub slot: Slot,
    /// Where its request's bytes are.
    pub req: Req,
    pub state: StreamState,
    /// Final `:status` (0 until the response head arrives).
    pub status: u16,
    /// Response body bytes so far.
    pub body: u64,
    /// When the first response byte for this stream arrived (0 = none yet).
    pub first_byte: u64,
    /// Request body bytes queued so far.
    pub body_sent: usize,
    /// The server's window for this stream's request body.
    pub send_window: i64,
    /// Response bytes not yet granted back by a WINDOW_UPDATE.
    recv_unacked: u32,
    /// The response's head and body prefix, when responses are checked.
    pub kept: Option<Box<Keep>>,
}

/// A connection error: every stream on it fails in this bucket, for this reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnError {
    pub kind: FailureKind,
    pub why: String,
}

fn protocol(why: impl Into<String>) -> ConnError {
    ConnError {
        kind: FailureKind::Exception,
        why: why.into(),
    }
}

/// The client's dynamic-table use towards the server (see [`hpack`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    /// Nothing sent yet: the next block inserts the headers.
    Fresh,
    /// Headers inserted: later blocks are indexes.
    Indexed,
    /// The server shrank its table below what the entries need: signal a
    /// size of 0 at the start of the next block, then send literals.
    ResetDue,
    /// Literals only.
    Plain,
}

/// The protocol state of one connection.
pub(crate) struct Proto {
    pub streams: Vec<Stream>,
    /// Frames waiting to be written.
    pub out: Vec<u8>,
    dec: ResponseDecoder,
    next_id: u32,
    /// The server's first SETTINGS arrived.
    pub settings_seen: bool,
    peer_max_streams: u32,
    peer_window: u32,
    peer_max_frame: u32,
    conn_send_window: i64,
    conn_recv_unacked: u32,
    table: Table,
    /// A new SETTINGS_HEADER_TABLE_SIZE not yet weighed by [`Proto::table_size`].
    peer_table: Option<usize>,
    /// DATA or ignored payload bytes still to skip, and the stream to end after it.
    skip: usize,
    skip_end: Option<u32>,
    /// A header block spread over CONTINUATION frames: its stream, END_STREAM, bytes.
    block: Vec<u8>,
    block_stream: Option<(u32, bool)>,
    /// The server's GOAWAY: last stream id it processes, error code.
    pub goaway: Option<(u32, u32)>,
    /// Responses completed on this connection.
    pub served: u64,
    /// `server` header of the first response decoded with `want_server`.
    pub server: Option<String>,
    /// Responses are checked: keep each stream's head and this many body
    /// bytes (kept across [`Proto::start`]; None: nothing is kept).
    pub keep_body: Option<usize>,
    /// With `keep_body`: decodes every field, in place of `dec`.
    full: Option<Box<FullDecoder>>,
    /// With `keep_body`: the last block's fields as head lines.
    lines: Vec<u8>,
    /// With `keep_body`: kept buffers of settled streams, to reuse (boxed
    /// as a stream holds them, so a [`Stream`] stays small when unchecked).
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Keep>>,
    /// With `keep_body`: body bytes still to keep of the DATA being
    /// skipped (its padding excluded), and its stream.
    skip_data: usize,
    skip_stream: u32,
}

impl Default for Proto {
    fn default() -> Self {
        Proto {
            streams: Vec::new(),
            out: Vec::new(),
            dec: ResponseDecoder::default(),
            next_id: 1,
            settings_seen: false,
            peer_max_streams: u32::MAX,
            peer_window: frame::DEFAULT_WINDOW,
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            conn_send_window: i64::from(frame::DEFAULT_WINDOW),
            conn_recv_unacked: 0,
            table: Table::Fresh,
            peer_table: None,
            skip: 0,
            skip_end: None,
            block: Vec::new(),
            block_stream: None,
            goaway: None,
            served: 0,
            server: None,
            keep_body: None,
            full: None,
            lines: Vec::new(),
            spare: Vec::new(),
            skip_data: 0,
            skip_stream: 0,
        }
    }
}

impl Proto {
    /// A closed connection's state; `keep_body`: see [`Proto::keep_body`].
    pub fn keeping(keep_body: Option<usize>) -> Proto {
        Proto {
            keep_body,
            ..Proto::default()
        }
    }

    /// Fresh state for a new connection, with the preface, our SETTINGS
    /// (push off, large stream window) and the connection window raise queued.
    pub fn start(&mut self) {
        let streams = std::mem::take(&mut self.streams);
        let mut out = std::mem::take(&mut self.out);
        let (keep_body, spare) = (self.keep_body, std::mem::take(&mut self.spare));
        *self = Proto::default();
        self.streams = streams;
        self.streams.clear();
        if keep_body.is_some() {
            (self.keep_body, self.spare) = (keep_body, spare);
            self.full = Some(Box::default());
        }
        out.clear();
        out.extend_from_slice(frame::PREFACE);
        frame::settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW),
            ],
        );
        frame::window_update(&mut out, 0, CONN_WINDOW - frame::DEFAULT_WINDOW);
        self.out = out;
    }

    /// How many more streams may be opened now, at most `want` in flight.
    pub fn capacity(&self, want: usize) -> usize {
        if self.goaway.is_some() || self.next_id > LAST_STREAM_ID {
            return 0;
        }
        let cap = want.min(self.peer_max_streams as usize);
        cap.saturating_sub(self.streams.len())
    }

    /// No stream can ever be opened here again (GOAWAY or ids used up).
    pub fn exhausted(&self) -> bool {
        self.goaway.is_some() || self.next_id > LAST_STREAM_ID
    }

    /// Open a stream for `slot`: queue its HEADERS (and END_STREAM without a body).
    pub fn open(&mut self, slot: Slot, req: Req, setup: &Setup) {
        let id = self.next_id;
        self.next_id += 2;
        let (prefix, block) = self.next_block(setup.blocks(slot.target, &req));
        let flags = if setup.body(slot.target, &req).is_empty() {
            frame::END_STREAM
        } else {
            0
        };
        self.headers(id, flags, prefix, block);
        let kept = self.keep_body.map(|limit| self.fresh_keep(limit));
        self.streams.push(Stream {
            id,
            slot,
            req,
            state: StreamState::Open,
            status: 0,
            body: 0,
            first_byte: 0,
            body_sent: 0,
            send_window: i64::from(self.peer_window),
            recv_unacked: 0,
            kept,
        });
    }

    /// An empty [`Keep`] for a new stream: a settled stream's, else new.
    fn fresh_keep(&mut self, limit: usize) -> Box<Keep> {
        match self.spare.pop() {
            Some(mut k) => {
                k.head.clear();
                k.body.clear();
                k
            }
            None => Keep::new(limit),
        }
    }

    /// Take back a settled stream's [`Keep`] for a later stream.
    pub fn recycle(&mut self, k: Box<Keep>) {
        if self.spare.len() < self.streams.len() + 1 {
            self.spare.push(k);
        }
    }

    /// The header block for the next request (and what must precede it),
    /// by what the server's dynamic table holds of ours.
    fn next_block<'b>(&mut self, blocks: Blocks<'b>) -> (&'static [u8], &'b [u8]) {
        match self.table {
            Table::Fresh => {
                self.table = Table::Indexed;
                (&[], blocks.first)
            }
            Table::Indexed => (&[], blocks.repeat),
            Table::ResetDue => {
                self.table = Table::Plain;
                (&[hpack::TABLE_RESET], blocks.plain)
            }
            Table::Plain => (&[], blocks.plain),
        }
    }

    /// Queue a header block as HEADERS and, past the server's frame size, CONTINUATION frames.
    fn headers(&mut self, id: u32, flags: u8, prefix: &[u8], block: &[u8]) {
        let max = self.peer_max_frame as usize;
        let total = prefix.len() + block.len();
        if total <= max {
            frame::head(
                &mut self.out,
                total,
                frame::HEADERS,
                flags | frame::END_HEADERS,
                id,
            );
            self.out.extend_from_slice(prefix);
            self.out.extend_from_slice(block);
            return;
        }
        let mut all = prefix.to_vec();
        all.extend_from_slice(block);
        self.continued(id, flags, &all, max);
    }

    /// A header block over `max` bytes: HEADERS, then CONTINUATION frames,
    /// the last with END_HEADERS.
    fn continued(&mut self, id: u32, flags: u8, all: &[u8], max: usize) {
        let mut chunks = all.chunks(max).peekable();
        let (mut kind, mut f) = (frame::HEADERS, flags);
        while let Some(c) = chunks.next() {
            let end = match chunks.peek() {
                None => frame::END_HEADERS,
                Some(_) => 0,
            };
            frame::head(&mut self.out, c.len(), kind, f | end, id);
            self.out.extend_from_slice(c);
            (kind, f) = (frame::CONTINUATION, 0);
        }
    }

    /// Queue request body DATA as far as the windows allow; true when some
    /// stream still has body bytes it could not send.
    /// Bodies are `setup`'s, or in a streamed set's chunks.
    pub fn pump_bodies(&mut self, setup: &Setup) -> bool {
        let mut blocked = false;
        let mut queued = 0;
        for i in 0..self.streams.len() {
            let s = &self.streams[i];
            if s.state != StreamState::Open
                || s.body_sent >= setup.body(s.slot.target, &s.req).len()
            {
                continue;
            }
            // A handle of its own (a chunk's is shared): the frames below change the stream.
            let (target, req) = (s.slot.target, s.req.clone());
            let body = setup.body(target, &req);
            while self.streams[i].body_sent < body.len() && queued < BODY_BATCH {
                match self.body_frame(i, body) {
                    0 => break,
                    n => queued += n,
                }
            }
            blocked |= self.streams[i].body_sent < body.len();
        }
        blocked
    }

    /// Queue one DATA frame of stream `i`'s body, as large as the windows
    /// and the frame size allow; its length (0: a window is closed).
    fn body_frame(&mut self, i: usize, body: &[u8]) -> usize {
        let s = &self.streams[i];
        let room = s.send_window.min(self.conn_send_window).max(0) as usize;
        let n = (body.len() - s.body_sent)
            .min(room)
            .min(self.peer_max_frame as usize);
        if n == 0 {
            return 0;
        }
        let (id, from) = (s.id, s.body_sent);
        let flags = if from + n == body.len() {
            frame::END_STREAM
        } else {
            0
        };
        frame::head(&mut self.out, n, frame::DATA, flags, id);
        self.out.extend_from_slice(&body[from..from + n]);
        let s = &mut self.streams[i];
        s.body_sent += n;
        s.send_window -= n as i64;
        self.conn_send_window -= n as i64;
        n
    }

    /// The windows that hold a request body back, for a timeout's explanation.
    pub fn windows(&self, id: u32) -> (i64, i64) {
        let s = self.streams.iter().find(|s| s.id == id);
        (s.map_or(0, |s| s.send_window), self.conn_send_window)
    }

    /// Grant the server more window once half of one has been used.
    pub fn replenish(&mut self) {
        if self.conn_recv_unacked >= CONN_WINDOW / 2 {
            frame::window_update(&mut self.out, 0, self.conn_recv_unacked);
            self.conn_recv_unacked = 0;
        }
        for s in &mut self.streams {
            if s.state == StreamState::Open && s.recv_unacked >= STREAM_WINDOW / 2 {
                frame::window_update(&mut self.out, s.id, s.recv_unacked);
                s.recv_unacked = 0;
            }
        }
    }

    /// Cancel stream `id` (timed out): queue RST_STREAM CANCEL; the worker drops the stream.
    pub fn cancel(&mut self, id: u32) {
        frame::rst_stream(&mut self.out, id, frame::CANCEL);
    }

    /// Queue a GOAWAY for a connection error we detected.
    pub fn fail_connection(&mut self, code: u32) {
        let last = self.next_id.saturating_sub(2);
        frame::goaway(&mut self.out, last, code);
    }

    /// Process frames in `buf`; returns how many bytes were used (the rest is
    /// an incomplete frame). `now` stamps first bytes and completions.
    pub fn input(&mut self, buf: &[u8], now: u64, want_server: bool) -> Result<usize, ConnError> {
        let mut pos = 0;
        loop {
            pos += self.skip_payload(&buf[pos..]);
            if self.skip > 0 {
                return Ok(pos);
            }
            if !self.settings_seen {
                check_first_frame(&buf[pos..])?;
            }
            if buf.len() - pos < frame::HEADER_LEN {
                return Ok(pos);
            }
            let h = frame_head(&buf[pos..])?;
            let rest = &buf[pos + frame::HEADER_LEN..];
            match self.frame(h, rest, now, want_server)? {
                Some(used) => pos += frame::HEADER_LEN + used,
                None => return Ok(pos),
            }
        }
    }

    /// Skip what is left of a DATA or ignored payload, at most `avail`'s
    /// bytes (keeping body bytes when responses are checked); once all of
    /// it is skipped, end the stream its END_STREAM named.
    fn skip_payload(&mut self, avail: &[u8]) -> usize {
        let n = self.skip.min(avail.len());
        if self.skip_data > 0 {
            let data = &avail[..n.min(self.skip_data)];
            self.skip_data -= data.len();
            let id = self.skip_stream;
            if let Some(k) = self.stream(id).and_then(|s| s.kept.as_mut()) {
                k.body_bytes(data);
            }
        }
        self.skip -= n;
        if self.skip == 0 {
            if let Some(id) = self.skip_end.take() {
                self.end_stream(id);
            }
        }
        n
    }

    /// One frame; `None` when its payload is not all in `rest` yet.
    fn frame(
        &mut self,
        h: Head,
        rest: &[u8],
        now: u64,
        want_server: bool,
    ) -> Result<Option<usize>, ConnError> {
        if self.block_stream.is_some() && h.kind != frame::CONTINUATION {
            return Err(protocol(
                "the server interrupted a header block with another frame (PROTOCOL_ERROR)",
            ));
        }
        if h.kind == frame::DATA {
            return self.data(h, rest, now);
        }
        let len = h.len as usize;
        if !handled(h.kind) {
            // PRIORITY and unknown types: ignored, as RFC 9113 §5.5 asks.
            self.skip = len;
            return Ok(Some(0));
        }
        if rest.len() < len {
            return Ok(None);
        }
        self.control(h, &rest[..len], now, want_server)?;
        Ok(Some(len))
    }

    /// A complete frame of a type [`handled`] names, other than DATA.
    fn control(&mut self, h: Head, p: &[u8], now: u64, want: bool) -> Result<(), ConnError> {
        match h.kind {
            frame::HEADERS => self.on_headers(h, p, now, want),
            frame::CONTINUATION => self.on_continuation(h, p, want),
            frame::RST_STREAM => self.on_rst(h, p),
            frame::SETTINGS => self.on_settings(h, p),
            frame::PING => self.on_ping(h, p),
            frame::GOAWAY => self.on_goaway(h, p),
            frame::WINDOW_UPDATE => self.on_window_update(h, p),
            _ => Err(protocol(
                "the server pushed a stream although the client disabled server push \
                 (SETTINGS_ENABLE_PUSH=0; PROTOCOL_ERROR)",
            )),
        }
    }

    fn stream(&mut self, id: u32) -> Option<&mut Stream> {
        self.streams
            .iter_mut()
            .find(|s| s.id == id && s.state == StreamState::Open)
    }

    fn data(&mut self, h: Head, rest: &[u8], now: u64) -> Result<Option<usize>, ConnError> {
        if h.stream == 0 {
            return Err(protocol(
                "the server sent DATA on stream 0 (PROTOCOL_ERROR)",
            ));
        }
        let Some((lead, pad)) = data_padding(h, rest)? else {
            return Ok(None);
        };
        let len = h.len as usize;
        self.conn_recv_unacked = self.conn_recv_unacked.saturating_add(h.len);
        if let Some(s) = self.stream(h.stream) {
            s.recv_unacked = s.recv_unacked.saturating_add(h.len);
            s.body += (len - lead - pad) as u64;
            if s.first_byte == 0 {
                s.first_byte = now;
            }
        }
        self.skip = len - lead;
        if self.keep_body.is_some() {
            (self.skip_data, self.skip_stream) = (len - lead - pad, h.stream);
        }
        if h.flags & frame::END_STREAM != 0 {
            self.skip_end = Some(h.stream);
        }
        Ok(Some(lead))
    }

    fn end_stream(&mut self, id: u32) {
        if let Some(s) = self.stream(id) {
            s.state = StreamState::Done;
            self.served += 1;
        }
    }

    /// The payload of HEADERS without padding and priority fields.
    fn on_headers(&mut self, h: Head, p: &[u8], now: u64, want: bool) -> Result<(), ConnError> {
        if h.stream == 0 {
            return Err(protocol(
                "the server sent HEADERS on stream 0 (PROTOCOL_ERROR)",
            ));
        }
        let (from, to) = header_block_range(h, p)?;
        let end_stream = h.flags & frame::END_STREAM != 0;
        if let Some(s) = self.stream(h.stream) {
            if s.first_byte == 0 {
                s.first_byte = now;
            }
        }
        if h.flags & frame::END_HEADERS != 0 {
            return self.on_block(h.stream, end_stream, &p[from..to], want);
        }
        self.block.clear();
        self.block.extend_from_slice(&p[from..to]);
        self.block_stream = Some((h.stream, end_stream));
        Ok(())
    }

    fn on_continuation(&mut self, h: Head, p: &[u8], want: bool) -> Result<(), ConnError> {
        let Some((id, end_stream)) = self.block_stream else {
            return Err(protocol(
                "CONTINUATION without a header block to continue (PROTOCOL_ERROR)",
            ));
        };
        if h.stream != id {
            return Err(protocol(
                "CONTINUATION on another stream than its HEADERS (PROTOCOL_ERROR)",
            ));
        }
        if self.block.len() + p.len() > MAX_BLOCK {
            return Err(protocol(format!(
                "a response header block over {} KiB",
                MAX_BLOCK / 1024
            )));
        }
        self.block.extend_from_slice(p);
        if h.flags & frame::END_HEADERS != 0 {
            self.block_stream = None;
            let block = std::mem::take(&mut self.block);
            let r = self.on_block(id, end_stream, &block, want);
            self.block = block;
            return r;
        }
        Ok(())
    }

    /// A complete header block: decode it (always: HPACK state must follow
    /// the server's), then settle the stream.
    fn on_block(
        &mut self,
        id: u32,
        end_stream: bool,
        block: &[u8],
        want: bool,
    ) -> Result<(), ConnError> {
        let want = want && self.server.is_none();
        let head = match &mut self.full {
            None => hpack::decode(&mut self.dec, block, want),
            Some(full) => hpack::decode_full(full, block, want, &mut self.lines),
        }
        .map_err(|why| protocol(format!("{why} (COMPRESSION_ERROR)")))?;
        self.server = head.server.or(self.server.take());
        let lines = std::mem::take(&mut self.lines);
        let r = self.settle_head(id, end_stream, head.status, &lines);
        self.lines = lines;
        r
    }

    /// A decoded header block's `status` on stream `id` (`lines`: its
    /// fields, when kept): an interim head is passed over, the final one
    /// sets the stream's status (and kept head), END_STREAM ends it.
    fn settle_head(
        &mut self,
        id: u32,
        end_stream: bool,
        status: u16,
        lines: &[u8],
    ) -> Result<(), ConnError> {
        let Some(s) = self.stream(id) else {
            return Ok(());
        };
        if s.status == 0 && (100..200).contains(&status) && !end_stream {
            return Ok(()); // informational: the final head follows
        }
        if s.status == 0 {
            if status == 0 {
                return Err(protocol(
                    "a response header block without :status (PROTOCOL_ERROR)",
                ));
            }
            s.status = status;
            if let Some(k) = &mut s.kept {
                keep_head(&mut k.head, status, lines);
            }
        }
        if end_stream {
            self.end_stream(id);
        }
        Ok(())
    }

    fn on_rst(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if p.len() != 4 || h.stream == 0 {
            return Err(protocol("a malformed RST_STREAM (FRAME_SIZE_ERROR)"));
        }
        let code = frame::be32(p, 0);
        if let Some(s) = self.stream(h.stream) {
            s.state = StreamState::Reset(code);
        }
        Ok(())
    }

    fn on_settings(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if h.stream != 0 || p.len() % 6 != 0 || (h.flags & frame::ACK != 0 && !p.is_empty()) {
            return Err(protocol("a malformed SETTINGS frame (FRAME_SIZE_ERROR)"));
        }
        if h.flags & frame::ACK != 0 {
            return Ok(());
        }
        for pair in p.chunks(6) {
            let id = u16::from_be_bytes([pair[0], pair[1]]);
            self.setting(id, frame::be32(pair, 2))?;
        }
        self.settings_seen = true;
        frame::settings_ack(&mut self.out);
        Ok(())
    }

    fn setting(&mut self, id: u16, v: u32) -> Result<(), ConnError> {
        match id {
            frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.peer_max_streams = v,
            frame::SETTINGS_INITIAL_WINDOW_SIZE => self.initial_window(v)?,
            frame::SETTINGS_MAX_FRAME_SIZE => {
                if !(frame::DEFAULT_MAX_FRAME..=0xff_ffff).contains(&v) {
                    return Err(protocol(
                        "SETTINGS_MAX_FRAME_SIZE out of range (PROTOCOL_ERROR)",
                    ));
                }
                self.peer_max_frame = v;
            }
            frame::SETTINGS_HEADER_TABLE_SIZE => {
                // Our entries need `table_need` bytes; the worker checks that
                // against the new size before the next block (see `table_size`).
                self.peer_table = Some(v as usize);
            }
            _ => {}
        }
        Ok(())
    }

    /// The server's new initial stream window: every open stream's window
    /// moves by the difference (RFC 9113 §6.9.2).
    fn initial_window(&mut self, v: u32) -> Result<(), ConnError> {
        if v > frame::MAX_WINDOW {
            return Err(protocol(
                "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1 (FLOW_CONTROL_ERROR)",
            ));
        }
        let delta = i64::from(v) - i64::from(self.peer_window);
        self.peer_window = v;
        for s in &mut self.streams {
            s.send_window += delta;
        }
        Ok(())
    }

    /// Apply a new server table size against what our entries need.
    pub fn table_size(&mut self, need: usize) {
        if let Some(size) = self.peer_table.take() {
            if size < need && self.table == Table::Indexed {
                self.table = Table::ResetDue;
            } else if size < need && self.table == Table::Fresh {
                self.table = Table::Plain;
            }
        }
    }

    fn on_ping(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if p.len() != 8 || h.stream != 0 {
            return Err(protocol("a malformed PING (FRAME_SIZE_ERROR)"));
        }
        if h.flags & frame::ACK == 0 {
            frame::ping_ack(&mut self.out, p);
        }
        Ok(())
    }

    fn on_goaway(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if p.len() < 8 || h.stream != 0 {
            return Err(protocol("a malformed GOAWAY (FRAME_SIZE_ERROR)"));
        }
        let last = frame::be32(p, 0) & frame::MAX_WINDOW;
        let code = frame::be32(p, 4);
        self.goaway = Some((last, code));
        for s in &mut self.streams {
            if s.id > last && s.state == StreamState::Open {
                s.state = StreamState::Refused;
            }
        }
        Ok(())
    }

    fn on_window_update(&mut self, h: Head, p: &[u8]) -> Result<(), ConnError> {
        if p.len() != 4 {
            return Err(protocol("a malformed WINDOW_UPDATE (FRAME_SIZE_ERROR)"));
        }
        let inc = i64::from(frame::be32(p, 0) & frame::MAX_WINDOW);
        if h.stream == 0 {
            self.conn_send_window += inc;
            if inc == 0 || self.conn_send_window > i64::from(frame::MAX_WINDOW) {
                return Err(protocol(
                    "a connection WINDOW_UPDATE of 0 or past 2^31-1 (FLOW_CONTROL_ERROR)",
                ));
            }
        } else if let Some(s) = self.stream(h.stream) {
            s.send_window += inc;
        }
        Ok(())
    }
}

/// A kept head in the form an HTTP/1.1 head has (what the checks and a
/// failure's summary read): `HTTP/2 STATUS`, the fields, a blank line.
fn keep_head(head: &mut Vec<u8>, status: u16, lines: &[u8]) {
    use std::io::Write;
    head.clear();
    let _ = write!(head, "HTTP/2 {status}\r\n");
    head.extend_from_slice(lines);
    head.extend_from_slice(b"\r\n");
}

/// The frame header at the start of `b` (at least 9 bytes), refused when
/// its payload is over the largest frame the client allows.
fn frame_head(b: &[u8]) -> Result<Head, ConnError> {
    let h = Head::parse(b);
    if h.len > frame::DEFAULT_MAX_FRAME {
        return Err(protocol(format!(
            "the server sent a frame of {} bytes (type {}), over the {} the client allows (FRAME_SIZE_ERROR)",
            h.len,
            h.kind,
            frame::DEFAULT_MAX_FRAME
        )));
    }
    Ok(h)
}

/// A DATA frame's pad length field (1 byte or none) and padding; `None`
/// while the pad length has not arrived.
fn data_padding(h: Head, rest: &[u8]) -> Result<Option<(usize, usize)>, ConnError> {
    if h.flags & frame::PADDED == 0 {
        return Ok(Some((0, 0)));
    }
    let pad = match rest.first() {
        Some(&p) => usize::from(p),
        None if h.len == 0 => return Err(protocol("a padded DATA frame without its pad length")),
        None => return Ok(None),
    };
    if 1 + pad > h.len as usize {
        return Err(protocol(
            "DATA padding longer than the frame (PROTOCOL_ERROR)",
        ));
    }
    Ok(Some((1, pad)))
}

/// Where a HEADERS payload's header block lies, past its pad length and
/// priority fields and before its padding.
fn header_block_range(h: Head, p: &[u8]) -> Result<(usize, usize), ConnError> {
    let mut from = 0;
    let mut to = p.len();
    if h.flags & frame::PADDED != 0 {
        let pad = usize::from(
            *p.first()
                .ok_or_else(|| protocol("HEADERS without its pad length"))?,
        );
        from = 1;
        to = to
            .checked_sub(pad)
            .filter(|&t| t >= from)
            .ok_or_else(|| protocol("HEADERS padding longer than the frame (PROTOCOL_ERROR)"))?;
    }
    if h.flags & frame::PRIORITY != 0 {
        from += 5;
        if from > to {
            return Err(protocol("HEADERS too short for its priority fields"));
        }
    }
    Ok((from, to))
}

/// The frame types the client acts on besides DATA; others are skipped.
fn handled(kind: u8) -> bool {
    matches!(
        kind,
        frame::HEADERS
            | frame::CONTINUATION
            | frame::RST_STREAM
            | frame::SETTINGS
            | frame::PUSH_PROMISE
            | frame::PING
            | frame::GOAWAY
            | frame::WINDOW_UPDATE
    )
}

/// Before the server's SETTINGS: refuse at once what cannot be HTTP/2.
fn check_first_frame(b: &[u8]) -> Result<(), ConnError> {
    if b.len() >= 5 && b.starts_with(b"HTTP/") {
        return Err(ConnError {
            kind: FailureKind::Connect,
            why: "the server answered in HTTP/1.x: it does not speak HTTP/2 with prior \
                  knowledge (h2c) on this port; drop --http2, or use an https:// URL"
                .to_owned(),
        });
    }
    if b.len() >= frame::HEADER_LEN {
        let h = Head::parse(b);
        if h.kind != frame::SETTINGS || h.flags & frame::ACK != 0 {
            return Err(ConnError {
                kind: FailureKind::Connect,
                why: format!(
                    "the server's first frame was not SETTINGS (type {}): it is not an HTTP/2 server",
                    h.kind
                ),
            });
        }
    }
    Ok(())
}
