//! [`Proto`] fed server bytes by hand: each frame rule on its own, exactly.

use super::conn::{Proto, StreamState, STREAM_WINDOW};
use super::frame::{self, Head};
use super::hpack;
use super::{Req, Setup};
use crate::client::engine::slot::Slot;
use kurabe_model::failures::FailureKind;

fn slot() -> Slot {
    Slot {
        start: 1,
        sent: 0,
        intended: 0,
        connect_ns: 0,
        measured: true,
        target: 0,
        tag: Default::default(),
    }
}

/// The run's one request, with `body` (empty: none).
fn setup(body: &[u8]) -> Setup {
    Setup {
        blocks: vec![hpack::encode(&hpack::header_list(
            "GET",
            "http",
            "h",
            "/",
            &[],
        ))],
        bodies: vec![body.to_vec().into()],
        any_body: !body.is_empty(),
        table_need: 0,
        streams: 1,
    }
}

/// A started connection with `n` streams open (ids 1, 3, 5 …) and the server's SETTINGS read.
fn proto(n: usize, has_body: bool) -> Proto {
    keeping(n, has_body, None)
}

/// [`proto`] keeping `keep_body` (responses are checked).
fn keeping(n: usize, has_body: bool, keep_body: Option<usize>) -> Proto {
    let mut p = Proto::keeping(keep_body);
    p.start();
    for _ in 0..n {
        p.open(slot(), Req::Held, &setup(if has_body { b"x" } else { b"" }));
    }
    let mut settings = Vec::new();
    frame::settings(&mut settings, &[]);
    assert_eq!(p.input(&settings, 5, false), Ok(settings.len()));
    p.out.clear();
    p
}

fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::head(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out
}

#[test]
fn start_writes_preface_settings_and_the_connection_window() {
    let mut p = Proto::default();
    p.start();
    assert!(p.out.starts_with(frame::PREFACE));
    let h = Head::parse(&p.out[frame::PREFACE.len()..]);
    assert_eq!((h.kind, h.len), (frame::SETTINGS, 12));
}

#[test]
fn a_response_split_anywhere_completes_its_stream() {
    let mut bytes = frame_bytes(frame::HEADERS, frame::END_HEADERS, 3, &[0x88]);
    bytes.extend(frame_bytes(frame::DATA, frame::END_STREAM, 3, b"hello"));
    for cut in 0..bytes.len() {
        let mut p = proto(2, false);
        let used = p.input(&bytes[..cut], 9, false).unwrap();
        let rest = bytes[used..].to_vec();
        assert_eq!(p.input(&rest, 9, false).unwrap(), rest.len());
        let s = &p.streams[1];
        assert_eq!(
            (s.state, s.status, s.body),
            (StreamState::Done, 200, 5),
            "cut {cut}"
        );
        assert_eq!(p.streams[0].state, StreamState::Open);
    }
}

/// Checked responses: each stream keeps its final head (an interim one
/// passed over) in HTTP/1.1's form and its body's first bytes (padding
/// left out), with another stream's frames between, however split.
#[test]
fn a_checked_stream_keeps_its_final_head_and_body_prefix() {
    let mut interim = vec![0x08, 3];
    interim.extend_from_slice(b"103");
    let mut head = vec![0x88, 0x00, 3];
    head.extend_from_slice(b"x-a\x011");
    let mut bytes = frame_bytes(frame::HEADERS, frame::END_HEADERS, 3, &interim);
    bytes.extend(frame_bytes(frame::HEADERS, frame::END_HEADERS, 3, &head));
    bytes.extend(frame_bytes(frame::HEADERS, frame::END_HEADERS, 1, &[0x88]));
    let padded = [2, b'h', b'e', b'l', 0, 0];
    bytes.extend(frame_bytes(frame::DATA, frame::PADDED, 3, &padded));
    bytes.extend(frame_bytes(frame::DATA, frame::END_STREAM, 1, b"other"));
    bytes.extend(frame_bytes(frame::DATA, frame::END_STREAM, 3, b"lo!"));
    for cut in 0..bytes.len() {
        let mut p = keeping(2, false, Some(4));
        let used = p.input(&bytes[..cut], 9, false).unwrap();
        let rest = bytes[used..].to_vec();
        assert_eq!(p.input(&rest, 9, false).unwrap(), rest.len());
        let (one, three) = (&p.streams[0], &p.streams[1]);
        assert_eq!(
            (three.state, three.status, three.body),
            (StreamState::Done, 200, 6)
        );
        let k = three.kept.as_ref().unwrap();
        assert_eq!(k.head, b"HTTP/2 200\r\nx-a: 1\r\n\r\n", "cut {cut}");
        assert_eq!(k.body, b"hell", "cut {cut}");
        let k = one.kept.as_ref().unwrap();
        assert_eq!(
            (&k.head[..], &k.body[..]),
            (&b"HTTP/2 200\r\n\r\n"[..], &b"othe"[..])
        );
    }
    assert!(
        proto(1, false).streams[0].kept.is_none(),
        "unchecked: nothing kept"
    );
}

#[test]
fn settings_are_acknowledged_and_ping_is_answered() {
    let mut p = proto(0, false);
    let ping = frame_bytes(frame::PING, 0, 0, b"12345678");
    p.input(&ping, 1, false).unwrap();
    assert_eq!(p.out, frame_bytes(frame::PING, frame::ACK, 0, b"12345678"));
}

#[test]
fn goaway_refuses_streams_above_the_last_id_and_stops_new_ones() {
    let mut p = proto(3, false);
    let mut payload = 3u32.to_be_bytes().to_vec();
    payload.extend_from_slice(&0u32.to_be_bytes());
    p.input(&frame_bytes(frame::GOAWAY, 0, 0, &payload), 1, false)
        .unwrap();
    let states: Vec<_> = p.streams.iter().map(|s| s.state).collect();
    assert_eq!(
        states,
        [StreamState::Open, StreamState::Open, StreamState::Refused]
    );
    assert_eq!(p.capacity(10), 0);
    assert!(p.exhausted());
}

#[test]
fn rst_stream_keeps_its_code() {
    let mut p = proto(1, false);
    p.input(
        &frame_bytes(frame::RST_STREAM, 0, 1, &7u32.to_be_bytes()),
        1,
        false,
    )
    .unwrap();
    assert_eq!(p.streams[0].state, StreamState::Reset(7));
}

#[test]
fn request_bodies_wait_for_window_updates() {
    let mut p = Proto::default();
    p.start();
    let run = setup(&[1u8; 25]);
    p.open(slot(), Req::Held, &run);
    let mut settings = Vec::new();
    frame::settings(&mut settings, &[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 10)]);
    p.input(&settings, 1, false).unwrap();
    assert!(p.pump_bodies(&run), "blocked after 10 bytes");
    assert_eq!(p.streams[0].body_sent, 10);
    let mut wu = Vec::new();
    frame::window_update(&mut wu, 1, 100);
    p.input(&wu, 1, false).unwrap();
    assert!(!p.pump_bodies(&run));
    assert_eq!(p.streams[0].body_sent, 25);
}

#[test]
fn large_responses_are_granted_more_window() {
    let mut p = proto(1, false);
    let data = vec![0u8; 16_384];
    let frame = frame_bytes(frame::DATA, 0, 1, &data);
    for _ in 0..(STREAM_WINDOW / 2 / 16_384) {
        assert_eq!(p.input(&frame, 1, false).unwrap(), frame.len());
    }
    p.replenish();
    let h = Head::parse(&p.out);
    assert_eq!((h.kind, h.stream), (frame::WINDOW_UPDATE, 1));
    assert_eq!(frame::be32(&p.out, 9), STREAM_WINDOW / 2);
}

#[test]
fn what_is_not_http2_fails_the_connection_with_a_reason() {
    let mut p = Proto::default();
    p.start();
    let e = p
        .input(b"HTTP/1.1 400 Bad Request\r\n\r\n", 1, false)
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::Connect);
    assert!(e.why.contains("HTTP/1.x"));
    let mut p = proto(1, false);
    let e = p.input(&[0xff; 20], 1, false).unwrap_err();
    assert!(e.why.contains("FRAME_SIZE_ERROR"), "{}", e.why);
    let mut p = proto(1, false);
    let e = p
        .input(
            &frame_bytes(frame::PUSH_PROMISE, 0x4, 1, &[0, 0, 0, 2, 0x88]),
            1,
            false,
        )
        .unwrap_err();
    assert!(e.why.contains("ENABLE_PUSH=0"), "{}", e.why);
}

#[test]
fn a_streamed_target_is_sent_from_its_chunk_block_then_body() {
    use crate::source::set::feed::Chunk;
    use crate::source::set::Span;
    let list = hpack::header_list("POST", "http", "h", "/p?i=7", &[]);
    let mut bytes = b"earlier target".to_vec();
    let off = bytes.len();
    hpack::encode_plain(&list, &mut bytes);
    let len = bytes.len() - off;
    bytes.extend_from_slice(b"the body");
    let span = Span {
        off,
        len,
        body_len: 8,
        head: false,
        tag: Default::default(),
    };
    let chunk = std::sync::Arc::new(Chunk {
        bytes: bytes.clone(),
        spans: vec![span, span],
        split: vec![None, None],
        labels: Default::default(),
    });
    // The run's own request is another: the stream's comes from the chunk.
    let run = setup(b"");
    let mut p = proto(0, false);
    let mut s = slot();
    s.target = 1;
    p.open(s, Req::Streamed(chunk, 1), &run);
    let h = Head::parse(&p.out);
    assert_eq!((h.kind, h.flags), (frame::HEADERS, frame::END_HEADERS));
    assert_eq!(&p.out[9..], &bytes[off..off + len], "the chunk's block");
    p.out.clear();
    assert!(!p.pump_bodies(&run));
    let h = Head::parse(&p.out);
    assert_eq!((h.kind, h.flags), (frame::DATA, frame::END_STREAM));
    assert_eq!(&p.out[9..], b"the body");
}
