//! Peak memory is bounded by the documented limits (issue 38): the built
//! binary is fed each input kind at its largest allowed size and run
//! against `kurabe serve` on port 0 under `/usr/bin/time -f %M` (the
//! kernel's peak resident set), and the peak must stay under the bound
//! README's "Limits" gives for that kind. Each bound is the input's own
//! limit (what must be held) plus [`OVERHEAD`], the binary itself (a
//! debug build is ~25 MiB) and the engine's buffers.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::serve::ServeChild;

const MIB: u64 = 1 << 20;

/// What a run needs besides its inputs: the binary, threads, buffers.
const OVERHEAD: u64 = 64 * MIB;

/// The largest request body.
const MAX_BODY: u64 = kurabe_http::request::MAX_BODY_BYTES;

/// The largest set held rather than streamed: its bytes and lines
/// (kurabe_http's STREAM_BYTES and HELD_LINES).
const STREAM_BYTES: u64 = 16 * MIB;
const HELD_LINES: u64 = 256 << 10;

/// What a held set at both limits may take (README "Limits").
const HELD: u64 = 128 * MIB;

/// `kurabe ARGS` under `/usr/bin/time`, `input` written to its standard
/// input (else none): its exit code, standard error and peak resident set
/// in bytes.
fn peak_fed(dir: &Path, args: &[&str], input: Option<Vec<u8>>) -> (Option<i32>, String, u64) {
    let time = Path::new("/usr/bin/time");
    assert!(time.exists(), "these tests need /usr/bin/time (GNU time)");
    let out = dir.join("peak");
    let mut child = Command::new(time)
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&out)
        .arg(env!("CARGO_BIN_EXE_kurabe"))
        .args(args)
        .stdin(input.as_ref().map_or_else(Stdio::null, |_| Stdio::piped()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let feeder = child.stdin.take().zip(input).map(|(mut stdin, input)| {
        // The run may end before it read all of it (a broken pipe then).
        std::thread::spawn(move || drop(stdin.write_all(&input)))
    });
    let run = child.wait_with_output().unwrap();
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    let err = String::from_utf8_lossy(&run.stderr).into_owned();
    let text = std::fs::read_to_string(&out).unwrap();
    let kib: u64 = text.trim().lines().last().unwrap().parse().unwrap();
    (run.status.code(), err, kib * 1024)
}

/// [`peak_fed`] of a run without input that must succeed, at most `bound` bytes.
fn assert_peak(dir: &Path, args: &[&str], bound: u64) -> String {
    assert_peak_fed(dir, args, None, bound)
}

/// [`peak_fed`] of a run that must succeed, at most `bound` bytes.
fn assert_peak_fed(dir: &Path, args: &[&str], input: Option<Vec<u8>>, bound: u64) -> String {
    let (code, err, bytes) = peak_fed(dir, args, input);
    assert_eq!(code, Some(0), "{args:?}: {err}");
    assert!(
        bytes <= bound,
        "{args:?}: peak RSS {} MiB, bound {} MiB",
        bytes / MIB,
        bound / MIB
    );
    err
}

/// `len` bytes of a pattern no compression or sharing could shorten.
fn noise(len: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Lines from `line(i)` written to `path` while they fit in `limit` bytes.
fn lines_within(path: &Path, limit: u64, line: impl Fn(u64) -> String) -> u64 {
    let mut f = BufWriter::new(std::fs::File::create(path).unwrap());
    let (mut size, mut i) = (0, 0);
    loop {
        let l = line(i);
        if size + l.len() as u64 > limit {
            break;
        }
        f.write_all(l.as_bytes()).unwrap();
        size += l.len() as u64;
        i += 1;
    }
    f.flush().unwrap();
    i
}

#[test]
fn a_body_at_the_limit_is_held_once_however_deep_the_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServeChild::start(&[]);
    let body = dir.path().join("body");
    std::fs::write(&body, noise(MAX_BODY as usize)).unwrap();
    let body = body.to_str().unwrap();
    for pipeline in ["1", "4"] {
        let args = [
            "http",
            &srv.url,
            "-p",
            body,
            "-n",
            "8",
            "-c",
            "2",
            "-k",
            "--pipeline",
            pipeline,
        ];
        assert_peak(dir.path(), &args, MAX_BODY + OVERHEAD);
    }
    assert_eq!(srv.served_settled(16), 16);
}

#[test]
fn a_har_body_at_the_limit_is_read_and_held_once() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let srv = ServeChild::start(&[]);
    let text = base64::engine::general_purpose::STANDARD.encode(noise(MAX_BODY as usize));
    // Line-wrapped at 76 with JSON-escaped CRLFs, as MIME writes base64
    // (held as text before, and its size then counted with the line
    // breaks: refused as 68 874 886 bytes).
    let lines: Vec<&[u8]> = text.as_bytes().chunks(76).collect();
    let text = lines.join(&b"\\r\\n"[..]);
    let text = String::from_utf8(text).unwrap();
    let har = dir.path().join("big.har");
    let mut f = BufWriter::new(std::fs::File::create(&har).unwrap());
    write!(
        f,
        r#"{{"log":{{"version":"1.2","entries":[{{"startedDateTime":"2026-12-02T04:30:00Z","request":{{"method":"POST","url":"http://h/up","headers":[],"postData":{{"mimeType":"application/octet-stream","encoding":"base64","text":"{text}"}}}}}}]}}}}"#
    )
    .unwrap();
    f.flush().unwrap();
    drop((f, text));
    // Decoded as it is read: the body alone, never its base64 text (which
    // took 85 MiB more), nor its line breaks (2 bytes each, noted apart).
    let args = ["replay", har.to_str().unwrap(), &srv.url];
    assert_peak(dir.path(), &args, MAX_BODY + OVERHEAD);
    assert_eq!(srv.served_settled(1), 1);
}

/// A held set whose every target names one body file at the limit: the
/// body is read once and shared by its targets and the run's table (it
/// was copied per target and again into the table: 2 × 8 × 64 MiB here).
#[test]
fn a_body_file_every_target_names_is_held_once() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServeChild::start(&[]);
    let body = dir.path().join("body");
    std::fs::write(&body, noise(MAX_BODY as usize)).unwrap();
    let set = dir.path().join("set.txt");
    let url = srv.url.trim_end_matches('/').to_owned();
    let targets: String = (0..8)
        .map(|i| format!("POST {url}/b/{i}\n@{}\n\n", body.display()))
        .collect();
    std::fs::write(&set, targets).unwrap();
    let set = set.to_str().unwrap();
    let args = ["http", "--targets", set, "-n", "16", "-c", "2", "-k"];
    assert_peak(dir.path(), &args, MAX_BODY + OVERHEAD);
    assert_eq!(srv.served_settled(16), 16);
}

/// A set file at both limits of a held set: [`HELD_LINES`] lines of
/// `STREAM_BYTES / HELD_LINES` bytes each, `line(i, pad)` padded.
fn held_set(path: &Path, line: impl Fn(u64, &str) -> String) {
    let width = (STREAM_BYTES / HELD_LINES) as usize;
    let mut f = BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..HELD_LINES {
        let short = line(i, "");
        let pad = "x".repeat(width.saturating_sub(short.len()));
        let l = line(i, &pad);
        assert_eq!(l.len(), width, "{l}");
        f.write_all(l.as_bytes()).unwrap();
    }
    f.flush().unwrap();
    assert!(std::fs::metadata(path).unwrap().len() <= STREAM_BYTES);
}

#[test]
fn a_set_and_a_url_list_at_the_held_limits_stay_within_their_bound() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServeChild::start(&[]);
    let url = srv.url.trim_end_matches('/').to_owned();
    let set = dir.path().join("held.txt");
    held_set(&set, |i, pad| format!("GET {url}/p/{i}?{pad}\n"));
    let urls = dir.path().join("urls.txt");
    held_set(&urls, |i, pad| format!("{url}/u/{i}?{pad}\n"));
    let set = set.to_str().unwrap();
    let args = ["http", "--targets", set, "-n", "200", "--format", "json"];
    assert_peak(dir.path(), &args, HELD + OVERHEAD);
    let urls = urls.to_str().unwrap();
    let args = ["http", "--urls-from-file", urls, "-n", "200"];
    assert_peak(dir.path(), &args, HELD + OVERHEAD);
    assert_eq!(srv.served_settled(400), 400);
}

#[test]
fn a_streamed_set_four_times_the_threshold_takes_no_more_than_a_small_run() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServeChild::start(&[]);
    let set = dir.path().join("streamed.txt");
    let url = srv.url.trim_end_matches('/').to_owned();
    lines_within(&set, 4 * STREAM_BYTES, |i| format!("GET {url}/s/{i}\n"));
    let args = ["http", "--targets", set.to_str().unwrap(), "-n", "2000"];
    assert_peak(dir.path(), &args, OVERHEAD);
    assert_eq!(srv.served_settled(2000), 2000);
}

/// A set streamed (more lines than a held set has) whose every target
/// names one body file at the limit: the body is read once per pass and
/// shared by the chunks and the connections that send it (it was copied
/// into each chunk and each connection: a copy per chunk ahead, per
/// worker and per connection).
#[test]
fn a_body_file_every_target_of_a_streamed_set_names_is_held_once() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServeChild::start(&[]);
    let body = dir.path().join("body");
    std::fs::write(&body, noise(MAX_BODY as usize)).unwrap();
    let set = dir.path().join("set.txt");
    let url = srv.url.trim_end_matches('/').to_owned();
    let target = |i| format!("POST {url}/b/{i}\n@{}\n\n", body.display());
    let mut f = BufWriter::new(std::fs::File::create(&set).unwrap());
    for i in 0..HELD_LINES / 3 + 1 {
        f.write_all(target(i).as_bytes()).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let set = set.to_str().unwrap();
    let args = ["http", "--targets", set, "-n", "8", "-c", "2", "-k"];
    assert_peak(dir.path(), &args, MAX_BODY + OVERHEAD);
    assert_eq!(srv.served_settled(8), 8);
}

#[test]
fn a_replayed_log_is_held_once() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServeChild::start(&[]);
    let log = dir.path().join("access.log");
    // 100 000 requests over 10 recorded seconds, replayed 100x faster.
    lines_within(&log, 9 * MIB, |i| {
        format!(
            "127.0.0.1 - - [02/Dec/2026:04:30:{:02} +0000] \"GET /a/{i} HTTP/1.1\" 200 5 \"-\" \"t\"\n",
            i / 10_000
        )
    });
    let args = ["replay", log.to_str().unwrap(), &srv.url, "--speed", "100x"];
    assert_peak(dir.path(), &args, 8 * 9 * MIB + OVERHEAD);
}

#[test]
fn names_past_the_bound_share_one_row_and_the_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServeChild::start(&[]);
    let set = dir.path().join("names.txt");
    let url = srv.url.trim_end_matches('/').to_owned();
    let mut f = BufWriter::new(std::fs::File::create(&set).unwrap());
    for i in 0..20_000 {
        writeln!(f, "# @name n{i}\nGET {url}/n/{i}\n").unwrap();
    }
    f.flush().unwrap();
    let json = dir.path().join("report.json");
    let args = [
        "http",
        "--targets",
        set.to_str().unwrap(),
        "-n",
        "20000",
        "-c",
        "4",
        "--format",
        "json",
        "-o",
        json.to_str().unwrap(),
    ];
    let err = assert_peak(dir.path(), &args, OVERHEAD);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("request names"))
        .collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(notes[0].contains("first 256"), "{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = report["requests"].as_array().unwrap();
    let kept = kurabe_http::tags::MAX_NAMES;
    assert_eq!(rows.len(), kept + 1);
    assert_eq!(rows[kept]["name"], kurabe_http::tags::OTHER);
    let sum: u64 = rows
        .iter()
        .map(|r| r["complete_requests"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, 20_000);
    assert_eq!(report["complete_requests"], 20_000);
}

/// The same over HTTP/3: the body is written on each stream after the
/// request's frames from its one copy (it was rendered into every chunk
/// the feeder made ahead: against Caddy, `-n 8 -c 2`, 618 012 KiB before,
/// 94 600 KiB after). One request is enough: the feeder renders ahead
/// whatever `-n`; ~5 s (64 MiB over QUIC in the debug build).
#[test]
fn a_body_file_a_streamed_set_sends_over_http3_is_held_once() {
    use kurabe_testkit::h3bad::{BadH3, Misbehaviour};
    let dir = tempfile::tempdir().unwrap();
    let server = BadH3::start(Misbehaviour::Answers);
    let body = dir.path().join("body");
    std::fs::write(&body, noise(MAX_BODY as usize)).unwrap();
    let set = dir.path().join("set.txt");
    let target = format!(
        "POST https://127.0.0.1:{}/b\n@{}\n\n",
        server.port(),
        body.display()
    );
    std::fs::write(&set, target.repeat(HELD_LINES as usize / 3 + 1)).unwrap();
    let set = set.to_str().unwrap();
    let h3 = ["--http3", "--insecure", "--no-server-metrics"];
    let args = [
        &["http"],
        &h3[..],
        &["--targets", set, "-n", "2", "-c", "1"],
    ]
    .concat();
    assert_peak(dir.path(), &args, MAX_BODY + OVERHEAD);
    assert_eq!(server.requests(), 2);
}

/// A set on standard input four times the size a set is held at: spooled
/// to the disk as it is read, never held. 200 targets, then 64 MiB of
/// comments; `-n 400` is two passes, so the whole input is read (the
/// second pass from the spool). ~3 s: the only test of standard input's
/// spooled path at this size.
#[test]
fn a_set_streamed_from_standard_input_takes_no_more_than_a_small_run() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServeChild::start(&[]);
    let url = srv.url.trim_end_matches('/').to_owned();
    let mut input: Vec<u8> = (0..200)
        .flat_map(|i| format!("GET {url}/i/{i}\n").into_bytes())
        .collect();
    let comment = format!("#{}\n", "c".repeat(4094));
    input.extend(
        comment
            .repeat((4 * STREAM_BYTES / 4096) as usize)
            .as_bytes(),
    );
    let args = ["http", "--targets", "-", "-n", "400", "-c", "2"];
    assert_peak_fed(dir.path(), &args, Some(input), OVERHEAD);
    assert_eq!(srv.served_settled(400), 400);
}

/// A replay of a log at the most a replay holds (128 MiB of requests as
/// counted): requests with 16 000-byte paths, each held as recorded and
/// as the engine sends it, so at most twice that (README "Limits"). A
/// debug build peaked at 301 MiB in 7 s; worth its seconds as the one run
/// at the replay's limit (the other test's log is 9 MiB).
#[test]
fn a_replay_at_the_limit_holds_its_requests_twice_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let srv = ServeChild::start(&[]);
    let log = dir.path().join("access.log");
    let max = kurabe_http::source::replay::MAX_HELD_BYTES;
    let held = |path: &str| (3 + path.len() + "User-Agent".len() + 1 + 256) as u64;
    let pad = "p".repeat(16_000);
    let (mut text, mut total, mut n) = (String::new(), 0, 0);
    loop {
        let path = format!("/a/{n}?{pad}");
        if total + held(&path) > max - MIB {
            break;
        }
        total += held(&path);
        text.push_str(&format!(
            "127.0.0.1 - - [02/Dec/2026:04:30:{:02} +0000] \"GET {path} HTTP/1.1\" 200 5 \"-\" \"t\"\n",
            n / 1000
        ));
        n += 1;
    }
    std::fs::write(&log, text).unwrap();
    let args = [
        "replay",
        log.to_str().unwrap(),
        &srv.url,
        "--speed",
        "10000x",
    ];
    assert_peak(dir.path(), &args, 2 * max + OVERHEAD);
    assert_eq!(srv.served_settled(n), n);
}

/// `kurabe ARGS`, which must succeed: its standard output.
fn kurabe_ok(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kurabe"))
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    String::from_utf8(out.stdout).unwrap()
}

/// A `results import` export at its limit, 256 MiB, one string the size
/// of the file (the case with the most copies: the text, the parsed
/// record, its JSON for the store, SQLite's): held about five times
/// while it is stored (README "Limits"; a debug build peaked at
/// 1 331 904 KiB in 6.6 s: ~8 s, most of it the kernel's, faulting
/// 1.3 GB in and writing the store). Then `results save`'s record at its
/// 64 MiB, the same shape, held about four times (282 876 KiB; ~1.5 s
/// more). The one test of the store's input limits at size.
#[test]
fn an_export_and_a_saved_record_at_their_limits_are_held_five_and_four_times_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).display().to_string();
    let b = d("b.db");
    // What `kurabe results export` writes for one result saved from
    // `{"note":"x"}`, with a pad in its record.
    let export = r#"{"format":"kurabe-results","schema_version":1,"entries":[{"entry":"result","id":1,"kind":"http","label":"http on vm","host":{"hostname":"vm","cpu_model":"AMD EPYC","cores":2,"memory_bytes":25276182528,"kernel":"6.18.44","arch":"x86_64"},"created_at":"2026-12-07T19:45:01.100Z","record":{"note":"x"},"origin":{"limits":{}}}]}"#;
    let max = kurabe_store::transfer::MAX_EXPORT_BYTES;
    let (head, tail) = export.split_once(r#""note""#).unwrap();
    let pad = "x".repeat(max as usize - export.len() - 16);
    let mut f = BufWriter::new(std::fs::File::create(d("export.json")).unwrap());
    write!(f, r#"{head}"pad":"{pad}","note"{tail}"#).unwrap();
    f.flush().unwrap();
    drop((f, pad));
    assert_eq!(std::fs::metadata(d("export.json")).unwrap().len(), max - 7);
    let args = ["results", "import", "--store", &b, &d("export.json")];
    assert_peak(dir.path(), &args, 5 * max + OVERHEAD);
    let list = kurabe_ok(&["results", "list", "--store", &b]);
    assert_eq!(
        list.lines().filter(|l| l.contains("http on")).count(),
        1,
        "{list}"
    );
    std::fs::remove_file(d("export.json")).unwrap();
    let max = kurabe_store::transfer::MAX_RECORD_BYTES;
    let record = r#"{"schema_version":1,"used_bytes":5,"note":""}"#;
    let pad = "x".repeat(max as usize - record.len());
    std::fs::write(
        d("mem.json"),
        record.replace(r#""note":"""#, &format!(r#""note":"{pad}""#)),
    )
    .unwrap();
    drop(pad);
    assert_eq!(std::fs::metadata(d("mem.json")).unwrap().len(), max);
    let args = [
        "results",
        "save",
        "--kind",
        "mem",
        "--store",
        &b,
        &d("mem.json"),
    ];
    assert_peak(dir.path(), &args, 4 * max + OVERHEAD);
    let list = kurabe_ok(&["results", "list", "--store", &b]);
    assert_eq!(
        list.lines().filter(|l| l.contains("mem")).count(),
        1,
        "{list}"
    );
}
