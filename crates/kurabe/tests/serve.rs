//! `kurabe serve` as a child process: the address line, responses, counters,
//! clean shutdown on SIGTERM, and setup errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::util::kurabe;

/// `kurabe serve --port 0 ARGS` running as a child; killed on drop.
pub struct ServeChild {
    child: Child,
    /// `http://127.0.0.1:PORT/` as printed on the first stdout line.
    pub url: String,
    /// The bound address.
    pub addr: SocketAddr,
}

impl ServeChild {
    /// Start the server and read its address line.
    pub fn start(args: &[&str]) -> Self {
        Self::start_with(args, |_| {})
    }

    /// Like [`ServeChild::start`], with the command adjusted first (e.g. limits).
    pub fn start_with(args: &[&str], adjust: impl FnOnce(&mut std::process::Command)) -> Self {
        let mut cmd = kurabe();
        cmd.args(["serve", "--port", "0", "--threads", "2"])
            .args(args);
        adjust(&mut cmd);
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kurabe serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().to_owned();
        let addr = url
            .strip_prefix("http://")
            .and_then(|r| r.strip_suffix('/'))
            .unwrap_or_else(|| panic!("first line is not an address: {line:?}"))
            .parse()
            .unwrap();
        Self { child, url, addr }
    }

    /// Whether the server is still running, and if not, how it ended and
    /// what it wrote to stderr (for a failure message).
    pub fn liveness(&mut self) -> String {
        match self.child.try_wait() {
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                format!("the server exited ({status}): {err}")
            }
            _ => "the server is still running".to_owned(),
        }
    }

    /// PID of the server process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's counters from `GET /__kurabe/stats`.
    pub fn stats(&self) -> serde_json::Value {
        let (head, body) = raw_request(
            self.addr,
            "GET /__kurabe/stats HTTP/1.1\r\nConnection: close\r\n\r\n",
        );
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        serde_json::from_slice(&body).unwrap()
    }

    /// `requests_served`.
    pub fn served(&self) -> u64 {
        self.stats()["requests_served"].as_u64().unwrap()
    }

    /// Poll `requests_served` until it equals `expected` (requests still in socket
    /// buffers when the client stopped get counted as the server reads them) or 5 s pass.
    pub fn served_settled(&self, expected: u64) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let n = self.served();
            if n == expected || Instant::now() > deadline {
                return n;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// CPU seconds (user + system) the server process has used so far.
    pub fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let rest = stat.rsplit_once(") ").unwrap().1;
        let f: Vec<u64> = rest
            .split_whitespace()
            .skip(11)
            .take(2)
            .map(|x| x.parse().unwrap())
            .collect();
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        (f[0] + f[1]) as f64 / hz
    }

    /// Resident set size of the server process, bytes.
    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kb * 1024
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        // SAFETY: plain kill(2) on our own child's PID.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Send `request` on a new connection and read the response until the server closes.
pub fn raw_request(addr: SocketAddr, request: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    (
        String::from_utf8_lossy(&all[..split]).into_owned(),
        all[split + 4..].to_vec(),
    )
}

#[test]
fn prints_address_first_serves_and_stops_cleanly_on_sigterm() {
    let mut server = ServeChild::start(&["--body-bytes", "100", "--status", "503"]);
    let (head, body) = raw_request(server.addr, "GET / HTTP/1.0\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 503 Service Unavailable"),
        "{head}"
    );
    assert!(head.contains("Content-Length: 100") && head.contains("Connection: close"));
    assert_eq!(body.len(), 100);
    assert_eq!(server.served(), 1, "the stats request is not counted");
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    server
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("stopped after 1 requests"), "{err}");
}

#[test]
fn chunked_and_close_options_shape_the_response() {
    let server = ServeChild::start(&["--chunked", "--close", "--body-bytes", "10"]);
    let (head, body) = raw_request(server.addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        head.contains("Transfer-Encoding: chunked") && head.contains("Connection: close"),
        "{head}"
    );
    assert_eq!(body, b"a\r\nxxxxxxxxx\n\r\n0\r\n\r\n");
}

#[test]
fn leak_bytes_grows_resident_memory_and_alloc_kb_does_not() {
    // Reference: the same request count with only a per-request allocation that is freed.
    let churn = ServeChild::start(&["--alloc-kb", "100"]);
    let leak = ServeChild::start(&["--leak-bytes", "100000"]);
    let (churn_before, leak_before) = (churn.rss_bytes(), leak.rss_bytes());
    for server in [&churn, &leak] {
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.write_all(&b"GET / HTTP/1.1\r\n\r\n".repeat(200)).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut sink = Vec::new();
        s.read_to_end(&mut sink).unwrap();
    }
    assert_eq!(leak.stats()["leaked_bytes"], 201 * 100_000);
    let leak_growth = leak.rss_bytes().saturating_sub(leak_before);
    let churn_growth = churn.rss_bytes().saturating_sub(churn_before);
    // 201 × 100 kB ≈ 20 MB retained and touched; the freed allocations stay far below.
    assert!(
        leak_growth > 15_000_000,
        "leak grew RSS by {leak_growth} bytes"
    );
    assert!(
        churn_growth < leak_growth / 4,
        "churn {churn_growth} vs leak {leak_growth}"
    );
}

#[test]
fn a_busy_port_is_a_setup_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = kurabe().args(["serve", "--port", &port]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot listen") && err.contains("--port"),
        "{err}"
    );
}

#[test]
fn thousands_of_concurrent_connections_are_served() {
    // This test process needs a few thousand descriptors too.
    kurabe_http::raise_fd_limit();
    let server = ServeChild::start(&[]);
    // Open 2000 connections first, then send one request on each: all must be answered.
    let conns: Vec<TcpStream> = (0..2000)
        .map(|_| TcpStream::connect(server.addr).unwrap())
        .collect();
    for mut c in &conns {
        c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    }
    for mut c in &conns {
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 256];
        let mut got = 0;
        // Default body is 13 bytes: read the head and then the whole body.
        let complete = |buf: &[u8]| {
            buf.windows(4)
                .position(|w| w == b"\r\n\r\n")
                .is_some_and(|p| buf.len() >= p + 4 + 13)
        };
        while !complete(&buf[..got]) {
            let n = c.read(&mut buf[got..]).unwrap();
            assert!(n > 0, "closed early");
            got += n;
        }
        assert!(buf.starts_with(b"HTTP/1.1 200 OK"));
    }
    assert_eq!(server.served(), 2000);
}

/// Wait until `s` is closed by the server (read returns 0 or a reset); false on a 20 s timeout.
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn out_of_descriptors_the_server_idles_and_answers_again_when_connections_close() {
    let mut server = ServeChild::start_with(&[], |cmd| {
        // SAFETY: setrlimit is async-signal-safe; the struct lives on the child's stack.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(cmd, || {
                let lim = libc::rlimit {
                    rlim_cur: 300,
                    rlim_max: 300,
                };
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                Ok(())
            });
        }
    });
    // 400 idle connections: the server can accept fewer than 300, the rest wait in the backlog.
    let mut conns: Vec<TcpStream> = (0..400)
        .map(|_| TcpStream::connect(server.addr).unwrap())
        .collect();
    let accepted = || server_open_sockets(server.pid());
    let deadline = Instant::now() + Duration::from_secs(10);
    while accepted() < 280 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        accepted() >= 280,
        "the server filled its descriptors: {}",
        accepted()
    );
    // Over a window, an idle server out of descriptors must use next to no CPU
    // (it used 160–190 % of a core spinning on the ready listener).
    let (cpu0, t0) = (server.cpu_seconds(), Instant::now());
    std::thread::sleep(Duration::from_millis(1500));
    let share = (server.cpu_seconds() - cpu0) / t0.elapsed().as_secs_f64();
    assert!(
        share < 0.20,
        "serve used {:.0} % of a core while out of fds",
        share * 100.0
    );
    conns.clear();
    let mut s = TcpStream::connect(server.addr).unwrap_or_else(|e| {
        panic!(
            "connect once the idle clients left: {e}; {}",
            server.liveness()
        )
    });
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap();
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    eprintln!("serve out of fds: {:.1} % of a core", share * 100.0);
}

/// Sockets the process holds open.
fn server_open_sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn slowloris_and_idle_connections_are_closed_after_their_timeouts() {
    let server = ServeChild::start(&["--header-timeout", "300ms", "--idle-timeout", "600ms"]);
    // A head that never completes, trickled a byte at a time: closed at the header timeout.
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    let mut writer = slow.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        // Pacing of the attack itself, not synchronisation: one byte per 50 ms.
        while writer.write_all(b"X").is_ok() {
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let t = Instant::now();
    assert!(
        closed_by_server(&mut slow),
        "slowloris connection stayed open"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
    drop(slow);
    trickle.join().unwrap();
    // A keep-alive connection left idle after a response: closed at the idle timeout.
    let mut idle = TcpStream::connect(server.addr).unwrap();
    idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let t = Instant::now();
    assert!(closed_by_server(&mut idle), "idle connection stayed open");
    assert!(
        t.elapsed() >= Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    // The server still answers.
    let (head, _) = raw_request(server.addr, "GET / HTTP/1.0\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

#[test]
fn body_bytes_and_work_us_above_their_caps_are_one_line_errors() {
    for args in [
        ["--body-bytes", "100000000000"],
        ["--work-us", "99999999999"],
    ] {
        let out = kurabe().arg("serve").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        // Usage errors stay short: the error line and where to look.
        assert!(err.trim_end().lines().count() <= 3, "{err}");
        assert!(err.lines().next().unwrap().contains("67108864") || args[0] == "--work-us");
        assert!(
            !err.contains("backtrace") && !err.contains("panicked"),
            "{err}"
        );
        assert!(err.contains(args[0]), "{err}");
    }
    let out = kurabe().args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in ["--header-timeout", "--idle-timeout", "67108864"] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
}

#[test]
fn sigterm_does_not_wait_for_a_running_work_us_spin() {
    let mut server = ServeChild::start(&["--work-us", "8000000"]);
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    // The spin has started once the server has burnt a good share of a second.
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.cpu_seconds() < 0.3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.cpu_seconds() >= 0.3, "the spin did not start");
    let status = server.terminate(); // panics after 5 s: the spin alone has 8 s of CPU left
    assert!(status.success(), "{status:?}");
}

/// `kurabe demo`: the built-in server's own count matches the client's
/// (requests still in its socket buffers when the client stopped included).
#[test]
fn demo_reconciles_the_servers_count_with_the_clients() {
    let out = crate::util::kurabe()
        .args(["demo", "-q", "--duration", "300ms", "--concurrency", "4"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Server's own count:"))
        .unwrap_or_else(|| panic!("no server count in:\n{stdout}"));
    assert!(line.ends_with("requests served (match)"), "{line}");
}
