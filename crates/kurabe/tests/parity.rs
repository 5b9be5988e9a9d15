//! One load, one shape, end to end: for every ab option (and kurabe's
//! own load flags) `kurabe http URL`, a plan's `http = { … }`, `kurabe
//! http A B` and a distributed run (`--workers 1`, a real `kurabe worker`
//! meeting the coordinator in PostgreSQL) describe the same
//! [`LoadSpec`] and send byte-identical requests.
//!
//! The requests are captured on a raw TCP listener on 127.0.0.1:0 that
//! answers every request `200 ok` (HTTP/1.x, or HTTP/2 frames after the
//! prior-knowledge preface), or that is the `-X` proxy itself. Specs are
//! compared where each path keeps them: the plan's table as the binary's
//! loader reads it, the flags' spec as the coordinator stores it in
//! `fleet_runs.spec` (the body inline), and the share the worker runs
//! ([`kurabe_fleet::spec::share_spec`]). TLS options (`-E -f -Z
//! --insecure`) are compared as specs and by one real handshake of each
//! path with `openssl s_server` demanding the client certificate.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};

use kurabe_model::load::LoadSpec;
use kurabe_model::plan::WorkloadKind;

use crate::abflags::{self_signed, SServer};
use crate::http::TestServer;
use crate::util::{Kid, PgSchema};

/// One request as it arrived: the peer's address and its bytes (HTTP/1.x:
/// head and body; HTTP/2: one frame the client sent after the preface:
/// SETTINGS, HEADERS, DATA, the requests themselves).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Seen {
    peer: IpAddr,
    bytes: Vec<u8>,
}

/// A listener that records every request and answers `200 ok`.
struct Capture {
    srv: TestServer,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Capture {
    fn start() -> Capture {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let srv = TestServer::start(move |s| serve(s, &log));
        Capture { srv, seen }
    }

    fn url(&self) -> String {
        self.srv.url()
    }

    /// What arrived since the last call, sorted (connections race).
    fn take(&self) -> Vec<Seen> {
        let mut v = std::mem::take(&mut *self.seen.lock().unwrap());
        v.sort();
        v
    }
}

/// One connection: HTTP/2 after its preface, else HTTP/1.x requests.
fn serve(mut s: TcpStream, log: &Mutex<Vec<Seen>>) {
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let peer = s.peer_addr().unwrap().ip();
    let mut buf = Vec::new();
    while buf.len() < 24 {
        let mut b = [0u8; 4096];
        match s.read(&mut b) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
        if !b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".starts_with(&buf[..buf.len().min(24)]) {
            return http1(s, buf, peer, log);
        }
    }
    http2(s, buf.split_off(24), peer, log);
}

/// Read until `buf` holds `want` bytes; false when the peer closed first.
fn fill(s: &mut TcpStream, buf: &mut Vec<u8>, want: usize) -> bool {
    let mut b = [0u8; 4096];
    while buf.len() < want {
        match s.read(&mut b) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
    }
    true
}

fn http1(mut s: TcpStream, mut buf: Vec<u8>, peer: IpAddr, log: &Mutex<Vec<Seen>>) {
    loop {
        let head_end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            let have = buf.len();
            if !fill(&mut s, &mut buf, have + 1) {
                return;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        if !fill(&mut s, &mut buf, head_end + len) {
            return;
        }
        let rest = buf.split_off(head_end + len);
        log.lock().unwrap().push(Seen {
            peer,
            bytes: std::mem::replace(&mut buf, rest),
        });
        let keep = head.contains("connection: keep-alive")
            || (head.contains(" http/1.1\r\n") && !head.contains("connection: close"));
        let body = if head.starts_with("head ") { "" } else { "ok" };
        let close = if keep { "" } else { "Connection: close\r\n" };
        let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n{close}\r\n{body}");
        if s.write_all(answer.as_bytes()).is_err() || !keep {
            return;
        }
    }
}

/// HTTP/2: our SETTINGS, then `:status 200` + "ok" for every HEADERS,
/// every frame the client sent recorded as it arrives.
fn http2(mut s: TcpStream, mut buf: Vec<u8>, peer: IpAddr, log: &Mutex<Vec<Seen>>) {
    let frame = |kind: u8, flags: u8, stream: u32, payload: &[u8]| {
        let l = (payload.len() as u32).to_be_bytes();
        let mut f = vec![l[1], l[2], l[3], kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    };
    let _ = s.write_all(&frame(4, 0, 0, &[]));
    loop {
        if !fill(&mut s, &mut buf, 9) {
            break;
        }
        let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize;
        if !fill(&mut s, &mut buf, 9 + len) {
            break;
        }
        let rest = buf.split_off(9 + len);
        let f = std::mem::replace(&mut buf, rest);
        let (kind, flags) = (f[3], f[4]);
        let stream = u32::from_be_bytes([f[5], f[6], f[7], f[8]]) & 0x7fff_ffff;
        // Acknowledgements, WINDOW_UPDATE and GOAWAY answer us or end the
        // connection: whether they come before the client exits is timing.
        let ack = (kind == 4 || kind == 6) && flags & 1 == 1;
        if !(ack || kind == 7 || kind == 8) {
            log.lock().unwrap().push(Seen { peer, bytes: f });
        }
        if kind == 1 {
            let mut answer = frame(1, 0x4, stream, &[0x88]);
            answer.extend(frame(0, 0x1, stream, b"ok"));
            if s.write_all(&answer).is_err() {
                return;
            }
        }
    }
}

/// The spec of the newest distributed run in `schema`, as the coordinator stored it.
fn stored_spec(schema: &PgSchema) -> LoadSpec {
    let mut c = kurabe_store::pg::connect(&schema.url).unwrap();
    let row = c
        .query_one(
            "SELECT spec::text FROM fleet_runs ORDER BY id DESC LIMIT 1",
            &[],
        )
        .unwrap();
    serde_json::from_str(row.get(0)).unwrap()
}

/// One option (or a few that go together) as flags and as a plan's keys.
struct Case {
    name: &'static str,
    flags: &'static [&'static str],
    plan: &'static str,
}

/// Every ab option and kurabe's load flags. `body.txt` is in the test's
/// folder, beside the plan (flags name it by its absolute path).
const CASES: &[Case] = &[
    Case {
        name: "-n -c -k -s -l",
        flags: &["-n", "4", "-c", "2", "-k", "-s", "5", "-l"],
        plan: r#"requests = 4, concurrency = 2, keep_alive = true, timeout = "5s", variable_length = true"#,
    },
    Case {
        name: "-m -H -C -A",
        flags: &[
            "-n",
            "2",
            "-m",
            "PATCH",
            "-H",
            "X-B: 2",
            "-H",
            "X-A: 1",
            "-C",
            "a=1",
            "-C",
            "b=2",
            "-A",
            "user:secret",
        ],
        plan: r#"requests = 2, method = "PATCH", headers = ["X-B: 2", "X-A: 1"], cookies = ["a=1", "b=2"], auth = "user:secret""#,
    },
    Case {
        name: "-p -T",
        flags: &["-n", "2", "-p", "BODY", "-T", "application/json"],
        plan: r#"requests = 2, body_file = "body.txt", content_type = "application/json""#,
    },
    Case {
        name: "-u",
        flags: &["-n", "2", "-u", "BODY"],
        plan: r#"requests = 2, method = "PUT", body_file = "body.txt""#,
    },
    Case {
        name: "-i",
        flags: &["-n", "2", "-i"],
        plan: r#"requests = 2, method = "HEAD""#,
    },
    Case {
        name: "-t --rate --threads --engine",
        flags: &[
            "-n",
            "6",
            "-t",
            "30s",
            "-c",
            "2",
            "--rate",
            "400",
            "--threads",
            "2",
            "--engine",
            "epoll",
        ],
        plan: r#"requests = 6, duration = "30s", concurrency = 2, rate = 400.0, threads = 2, engine = "epoll""#,
    },
    Case {
        name: "--warmup",
        flags: &["-n", "2", "-k", "--warmup", "50ms"],
        plan: r#"requests = 2, keep_alive = true, warmup = "50ms""#,
    },
    Case {
        name: "--pipeline",
        flags: &["-n", "4", "-k", "--pipeline", "2"],
        plan: r#"requests = 4, keep_alive = true, pipeline = 2"#,
    },
    Case {
        name: "--http2 --streams",
        flags: &["-n", "4", "--http2", "--streams", "2"],
        plan: r#"requests = 4, http2 = true, streams = 2"#,
    },
    Case {
        name: "-B -b",
        flags: &["-n", "2", "-B", "127.0.0.2", "-b", "65536"],
        plan: r#"requests = 2, bind = "127.0.0.2", socket_buffer = 65536"#,
    },
    Case {
        name: "--abort-on-error",
        flags: &["-n", "2", "--abort-on-error"],
        plan: r#"requests = 2, abort_on_error = true"#,
    },
    Case {
        name: "-X -P",
        flags: &["-n", "2", "-X", "PROXY", "-P", "proxyuser:hunter2"],
        plan: r#"requests = 2, proxy = "PROXY", proxy_auth = "proxyuser:hunter2""#,
    },
];

/// The test's folder: the body file and one plan per path.
struct Env {
    dir: tempfile::TempDir,
    schema: Option<PgSchema>,
}

impl Env {
    fn new(tag: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("body.txt"), "{\"hello\": \"body\"}\n").unwrap();
        let schema = kurabe_testkit::pg::server()
            .map(|pg| PgSchema::create(&pg.url, &format!("parity_{tag}")));
        Env { dir, schema }
    }

    fn body(&self) -> String {
        self.dir.path().join("body.txt").display().to_string()
    }

    /// The case's flags with its placeholders filled in.
    fn flags(&self, case: &Case, proxy: &str) -> Vec<String> {
        case.flags
            .iter()
            .map(|f| match *f {
                "BODY" => self.body(),
                "PROXY" => proxy.to_owned(),
                f => f.to_owned(),
            })
            .collect()
    }

    /// The plan of `case` against `url`, written beside the body file.
    fn plan(&self, case: &Case, url: &str, proxy: &str) -> std::path::PathBuf {
        let table = case.plan.replace("PROXY", proxy);
        let text = format!(
            "name = \"parity\"\nrepeat = 1\n[[variant]]\nname = \"a\"\nurl = \"{url}\"\n\
             [[workload]]\nname = \"w\"\nhttp = {{ {table} }}\n"
        );
        let path = self.dir.path().join("plan.toml");
        std::fs::write(&path, text).unwrap();
        path
    }
}

fn ok(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `kurabe http FLAGS URL`.
fn by_flags(flags: &[String], url: &str) -> Output {
    crate::util::kurabe()
        .args(["http", "-q", "--no-server-metrics"])
        .args(flags)
        .arg(url)
        .env("KURABE_STORE", "/nonexistent/never-written.db")
        .output()
        .unwrap()
}

/// `kurabe run PLAN`.
fn by_plan(plan: &Path, dir: &Path) -> Output {
    crate::util::kurabe()
        .arg("run")
        .arg(plan)
        .arg("--store")
        .arg(dir.join("r.db"))
        .output()
        .unwrap()
}

/// `kurabe http FLAGS URL B --rounds 1`: the A/B path.
fn by_ab(flags: &[String], url: &str, b: &str) -> Output {
    crate::util::kurabe()
        .args(["http", "-q", "--rounds", "1"])
        .args(flags)
        .arg(url)
        .arg(b)
        .env("KURABE_STORE", "/nonexistent/never-written.db")
        .output()
        .unwrap()
}

/// `kurabe http --workers 1 FLAGS URL` with one `kurabe worker --once`.
fn by_fleet(schema: &PgSchema, flags: &[String], url: &str) -> Output {
    let _worker = Kid(crate::util::kurabe()
        .args([
            "worker",
            "--once",
            "--store",
            &schema.url,
            "--name",
            "parity",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap());
    crate::util::kurabe()
        .args(["http", "-q", "--format", "json", "--store", &schema.url])
        .args(["--workers", "1", "--wait-workers", "60s"])
        .args(flags)
        .arg(url)
        .output()
        .unwrap()
}

/// The requests for the A/B's first URL only (through a proxy its second
/// is `…/b` on the same origin).
fn first_url_only(seen: Vec<Seen>) -> Vec<Seen> {
    seen.into_iter()
        .filter(|s| {
            let line = s.bytes.split(|b| *b == b'\n').next().unwrap_or_default();
            let line = String::from_utf8_lossy(line);
            !line.contains("/b HTTP/")
        })
        .collect()
}

/// What arrived, as compared: a warm-up sends as many requests as fit in
/// its time, so there only the distinct requests count.
fn compared(case: &Case, seen: Vec<Seen>) -> Vec<Seen> {
    if case.name == "--warmup" {
        let mut d = seen;
        d.dedup();
        d
    } else {
        seen
    }
}

/// The plan's http table as the binary's loader reads it.
fn plan_spec(plan: &Path) -> LoadSpec {
    let p = kurabe_lab::plan::load_plan(plan).unwrap();
    match &p.workloads[0].kind {
        WorkloadKind::Http(h) => (**h).clone(),
        other => panic!("not an http workload: {other:?}"),
    }
}

/// The plan's spec as the fleet stores the flags' spec: the variant's URL
/// in, the body file (relative to the plan) inline.
fn as_stored(mut spec: LoadSpec, url: &str, dir: &Path) -> LoadSpec {
    use base64::Engine as _;
    spec.url = Some(url.to_owned());
    if let Some(f) = spec.body_file.take() {
        let body = std::fs::read(dir.join(f)).unwrap();
        spec.body_base64 = Some(base64::engine::general_purpose::STANDARD.encode(body));
    }
    spec
}

/// The fleet's spec and the plan's are one, and the worker's share is that
/// spec with its part of the load.
fn assert_same_specs(case: &Case, stored: &LoadSpec, plan: LoadSpec, url: &str, dir: &Path) {
    assert_eq!(
        stored,
        &as_stored(plan, url, dir),
        "{}: the flags' spec (as stored) and the plan's differ",
        case.name
    );
    let share = kurabe_fleet::spec::split(stored, 1).unwrap()[0];
    let mine = kurabe_fleet::spec::share_spec(stored, &share, stored.threads.unwrap_or(1));
    let back = LoadSpec {
        threads: stored.threads,
        // The coordinator judges the thresholds on the merged run.
        thresholds: stored.thresholds.clone(),
        ..mine
    };
    assert_eq!(&back, stored, "{}: the worker's share", case.name);
}

#[test]
fn every_option_is_one_spec_and_the_same_bytes_from_flags_plans_ab_and_the_fleet() {
    let env = Env::new("flags");
    if env.schema.is_none() {
        eprintln!("note: without PostgreSQL the fleet path is left out");
    }
    let mut report = BTreeMap::new();
    for case in CASES {
        let target = Capture::start();
        // A proxy case sends to the capture through the proxy: the URL is elsewhere.
        let proxied = case.flags.contains(&"PROXY");
        let url = if proxied {
            "http://origin.invalid:8080/".to_owned()
        } else {
            target.url()
        };
        let proxy = target.srv.addr.to_string();
        let flags = env.flags(case, &proxy);
        let out = by_flags(&flags, &url);
        ok(&format!("{}: kurabe http", case.name), &out);
        let cli = compared(case, target.take());
        assert!(!cli.is_empty(), "{}: nothing arrived", case.name);
        let plan = env.plan(case, url.trim_end_matches('/'), &proxy);
        ok(
            &format!("{}: kurabe run", case.name),
            &by_plan(&plan, env.dir.path()),
        );
        // The variant's URL without its slash, the workload's path none: the same "/".
        assert_eq!(compared(case, target.take()), cli, "{}: plan", case.name);
        // B is another listener, or through the proxy another path.
        let other = Capture::start();
        let b = if proxied {
            format!("{url}b")
        } else {
            other.url()
        };
        ok(
            &format!("{}: kurabe http A B", case.name),
            &by_ab(&flags, &url, &b),
        );
        assert_eq!(
            compared(case, first_url_only(target.take())),
            cli,
            "{}: kurabe http A B",
            case.name
        );
        if let Some(schema) = &env.schema {
            ok(
                &format!("{}: --workers", case.name),
                &by_fleet(schema, &flags, &url),
            );
            assert_eq!(compared(case, target.take()), cli, "{}: fleet", case.name);
            let spec = plan_spec(&plan);
            assert_same_specs(case, &stored_spec(schema), spec, &url, env.dir.path());
        }
        report.insert(case.name, cli.len());
    }
    eprintln!("requests compared per case: {report:?}");
}

#[test]
fn tls_options_are_one_spec_and_one_handshake_from_every_path() {
    let env = Env::new("tls");
    let d = env.dir.path();
    self_signed(d, "server");
    self_signed(d, "client");
    let mut pem = std::fs::read(d.join("client.pem")).unwrap();
    pem.extend(std::fs::read(d.join("client.key")).unwrap());
    std::fs::write(d.join("bundle.pem"), pem).unwrap();
    // Only a client with the certificate, TLS 1.3 and this suite gets an answer.
    let server = SServer::start(
        d,
        &[
            "-Verify",
            "1",
            "-CAfile",
            "client.pem",
            "-tls1_3",
            "-ciphersuites",
            "TLS_AES_256_GCM_SHA384",
        ],
    );
    let bundle = d.join("bundle.pem").display().to_string();
    let flags: Vec<String> = [
        "-n",
        "2",
        "-l",
        "--insecure",
        "-E",
        &bundle,
        "-f",
        "TLS1.3",
        "-Z",
        "TLS_AES_256_GCM_SHA384",
    ]
    .map(str::to_owned)
    .to_vec();
    let case = Case {
        name: "-E -f -Z --insecure",
        flags: &[],
        plan: r#"requests = 2, variable_length = true, insecure = true, client_cert = "bundle.pem", tls_protocol = "TLS1.3", ciphers = "TLS_AES_256_GCM_SHA384""#,
    };
    let url = server.url.clone();
    ok("kurabe http", &by_flags(&flags, &url));
    let plan = env.plan(&case, url.trim_end_matches('/'), "");
    ok("kurabe run", &by_plan(&plan, d));
    let wrong: Vec<String> = flags
        .iter()
        .map(|f| f.replace("TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256"))
        .collect();
    assert_eq!(
        by_flags(&wrong, &url).status.code(),
        Some(1),
        "another suite gets no answer: the handshake is the server's test"
    );
    if let Some(schema) = &env.schema {
        ok("--workers", &by_fleet(schema, &flags, &url));
        let mut spec = plan_spec(&plan);
        // The plan's certificate is relative to its folder, the flag's absolute.
        spec.client_cert = spec.client_cert.map(|c| d.join(c));
        assert_same_specs(&case, &stored_spec(schema), spec, &url, d);
    }
}

/// `--abort-on-error` over two workers: the first failure on either one
/// stops both (through the run's state), as one client stops at its
/// first failure; the other worker does not run out its `-t 60s`.
#[test]
fn abort_on_error_stops_every_worker_at_the_first_failure() {
    let Some(pg) = kurabe_testkit::pg::server() else {
        return;
    };
    let schema = PgSchema::create(&pg.url, "parity_abort");
    let conns = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let n = conns.clone();
    // Every connection is answered, except the 20th: it is closed unanswered.
    let srv = TestServer::start(move |mut s| {
        let nth = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if crate::http::read_request(&mut s).is_some() && nth != 19 {
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    let _workers: Vec<Kid> = (1..=2)
        .map(|i| {
            Kid(crate::util::kurabe()
                .args(["worker", "--once", "--store", &schema.url])
                .args(["--name", &format!("abort{i}"), "--heartbeat", "200ms"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap())
        })
        .collect();
    let started = std::time::Instant::now();
    let out = crate::util::kurabe()
        .args(["http", "-q", "--format", "json", "--store", &schema.url])
        .args([
            "--workers",
            "2",
            "--wait-workers",
            "60s",
            "--abort-on-error",
        ])
        .args(["-c", "2", "-t", "60s", &srv.url()])
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stopped at a failure: {err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["interrupted"], true, "{v:#}");
    assert!(v["failed_requests"].as_u64() >= Some(1), "{v:#}");
    let rows = v["fleet"]["workers"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v:#}");
    assert!(
        took < std::time::Duration::from_secs(40),
        "both workers stopped long before -t 60s ({took:?}): {v:#}"
    );
}
