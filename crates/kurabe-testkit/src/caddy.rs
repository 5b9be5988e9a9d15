//! Caddy and ngtcp2's example server for the HTTP/3 tests: two
//! independent HTTP/3 implementations from Debian, started on a free port
//! and stopped (with their process group) on drop.
//!
//! Owns their configuration, start, readiness and the server-side counts
//! the tests compare with (Caddy's JSON access log; the lines ngtcp2's
//! server prints per request). Neither server takes an inherited UDP
//! socket, so the port is found by binding TCP and UDP port 0 on loopback
//! and released just before the server binds it. Must not be used by
//! product code.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const CADDY: &str = "/usr/bin/caddy";
const NGTCP2: &str = "/usr/sbin/gtlsserver";

/// Caddy's access log mark of an HTTP/3 request.
const H3_LOGGED: &str = "\"proto\":\"HTTP/3.0\"";

/// The document root the HTTP/3 tests serve, made in `dir/www`:
/// `index.html` (26 bytes), `a.txt` (4 bytes) and `big.bin` (300 000
/// bytes, a body of many packets).
pub fn www(dir: &Path) -> PathBuf {
    let www = dir.join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("index.html"), "<p>kurabe over HTTP/3</p>\n").unwrap();
    std::fs::write(www.join("a.txt"), "aaa\n").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(www.join("big.bin"), big).unwrap();
    www
}

/// A port free on loopback for both TCP and UDP at the time of the call.
pub fn free_port() -> u16 {
    loop {
        let tcp = TcpListener::bind("127.0.0.1:0").expect("bind a TCP port");
        let port = tcp.local_addr().unwrap().port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// A server child in its own process group, SIGKILLed with the group on drop.
#[derive(Debug)]
struct Group(Option<Child>);

impl Group {
    fn stop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let pid = child.id() as libc::pid_t;
            // SAFETY: kill has no memory-safety preconditions; the group is the child's own.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `installed` or, outside CI, None with a visible message; in CI a
/// missing server fails the test (`.ci/run` installs it).
fn present(bin: &str, pkg: &str) -> bool {
    if Path::new(bin).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{pkg} is required in CI (.ci/run installs it)"
    );
    eprintln!("SKIPPED: {pkg} not installed");
    false
}

/// Copy `child`'s output lines to `log`, and tell `ready` the first time a
/// line contains `marker`; None of `marker` matches: only copy.
fn tee(
    out: impl std::io::Read + Send + 'static,
    log: PathBuf,
    marker: Option<&'static str>,
) -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut file = std::fs::File::create(log).expect("create the server's log");
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = writeln!(file, "{line}");
            if marker.is_some_and(|m| line.contains(m)) {
                let _ = tx.send(());
            }
        }
    });
    rx
}

/// Lines of `file` containing every one of `patterns`, once the count
/// stops moving (a server logs a request after it answered it). Up to 5 s.
fn count_lines(file: &Path, patterns: &[&str]) -> u64 {
    let count = || {
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter(|l| patterns.iter().all(|p| l.contains(p)))
            .count() as u64
    };
    let mut last = count();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        let now = count();
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

/// A running Caddy serving `www` over HTTPS (HTTP/1.1, HTTP/2 on TCP,
/// HTTP/3 on UDP) at `https://localhost:PORT`, with its internal CA.
#[derive(Debug)]
pub struct Caddy {
    child: Group,
    dir: PathBuf,
    port: u16,
}

impl Caddy {
    /// Caddy with its state, CA and logs in `dir`, serving [`www`]
    /// (None: Caddy is not installed, outside CI).
    pub fn serving_www(dir: &Path) -> Option<Caddy> {
        Caddy::start(dir, &www(dir))
    }

    /// Caddy with its state, CA and logs in `dir`, serving the files of `www`.
    pub fn start(dir: &Path, www: &Path) -> Option<Caddy> {
        if !present(CADDY, "caddy") {
            return None;
        }
        let port = free_port();
        let d = dir.display();
        let conf = dir.join("Caddyfile");
        let text = format!(
            "{{\n  admin off\n  skip_install_trust\n  auto_https disable_redirects\n}}\n\
             https://localhost:{port} {{\n  bind 127.0.0.1\n  tls internal\n  root * {}\n  \
             file_server\n  log {{\n    output file {d}/access.log\n  }}\n}}\n",
            www.display()
        );
        std::fs::write(&conf, text).unwrap();
        let mut cmd = Command::new(CADDY);
        cmd.process_group(0)
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&conf)
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start caddy");
        let stderr = child.stderr.take().unwrap();
        let ready = tee(
            stderr,
            dir.join("caddy.log"),
            Some("certificate obtained successfully"),
        );
        let caddy = Caddy {
            child: Group(Some(child)),
            dir: dir.to_owned(),
            port,
        };
        if ready.recv_timeout(Duration::from_secs(60)).is_err() {
            let log = std::fs::read_to_string(dir.join("caddy.log")).unwrap_or_default();
            panic!("caddy did not start within 60 s:\n{log}");
        }
        caddy.wait_certificate();
        Some(caddy)
    }

    /// Wait until a TLS handshake for `localhost` succeeds: the certificate
    /// is obtained a moment before Caddy serves it (until then a handshake
    /// ends in alert 80). Up to 10 s.
    fn wait_certificate(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let connect = format!("127.0.0.1:{}", self.port);
        while Instant::now() < deadline {
            let ok = Command::new("openssl")
                .args([
                    "s_client",
                    "-brief",
                    "-servername",
                    "localhost",
                    "-connect",
                    &connect,
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("caddy served no certificate for localhost within 10 s");
    }

    /// The port it serves on, TCP and UDP.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its internal CA's root certificate (PEM), which signed the site's.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("data/caddy/pki/authorities/local/root.crt")
    }

    /// Access log lines containing every one of `patterns` (e.g.
    /// `"proto":"HTTP/3.0"` and a path), once the count stops moving.
    pub fn logged(&self, patterns: &[&str]) -> u64 {
        count_lines(&self.dir.join("access.log"), patterns)
    }

    /// Access log lines of HTTP/3 requests for `uri`, once the count stops moving.
    pub fn h3_logged(&self, uri: &str) -> u64 {
        self.logged(&[H3_LOGGED, &format!("\"uri\":\"{uri}\"")])
    }

    /// Stop Caddy and everything in its process group.
    pub fn stop(&mut self) {
        self.child.stop();
    }
}

/// A running ngtcp2 example server (`gtlsserver`, GnuTLS) serving `www`
/// over HTTP/3 only, with a self-signed certificate for `localhost`.
#[derive(Debug)]
pub struct Ngtcp2 {
    child: Group,
    log: PathBuf,
    port: u16,
}

impl Ngtcp2 {
    /// The server with its key, certificate and output in `dir`, serving
    /// [`www`] (None: not installed, outside CI).
    pub fn serving_www(dir: &Path) -> Option<Ngtcp2> {
        Ngtcp2::start(dir, &www(dir))
    }

    /// The server with its key, certificate and output in `dir`.
    pub fn start(dir: &Path, www: &Path) -> Option<Ngtcp2> {
        if !present(NGTCP2, "ngtcp2-server") {
            return None;
        }
        let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
        let st = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
            ])
            .args(["-nodes", "-days", "1", "-subj", "/CN=localhost"])
            .args(["-addext", "subjectAltName=DNS:localhost", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(Stdio::null())
            .status()
            .expect("run openssl (CI installs it)");
        assert!(
            st.success(),
            "openssl could not make the server's certificate"
        );
        let port = free_port();
        let mut child = Command::new(NGTCP2)
            .process_group(0)
            .args(["--no-quic-dump", "--no-http-dump", "-d"])
            .arg(www)
            .arg("127.0.0.1")
            .arg(port.to_string())
            .arg(&key)
            .arg(&cert)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start gtlsserver");
        let log = dir.join("ngtcp2.log");
        tee(child.stderr.take().unwrap(), log.clone(), None);
        let server = Ngtcp2 {
            child: Group(Some(child)),
            log,
            port,
        };
        server.wait_bound();
        Some(server)
    }

    /// Wait until the server's UDP socket is bound (it prints nothing
    /// after binding): the kernel's socket table lists the port. Up to 10 s.
    fn wait_bound(&self) {
        let want = format!("0100007F:{:04X}", self.port);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let table = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
            if table
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(&want))
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("gtlsserver did not bind UDP port {} within 10 s", self.port);
    }

    /// The port it serves on (UDP).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Requests the server answered for `path`: the request heads it
    /// printed (`[:path: PATH]`), once the count stops moving.
    pub fn requests(&self, path: &str) -> u64 {
        count_lines(&self.log, &[&format!("[:path: {path}]")])
    }

    /// Stop the server and everything in its process group.
    pub fn stop(&mut self) {
        self.child.stop();
    }

    /// Response heads the server submitted, for any path.
    pub fn responses(&self) -> u64 {
        count_lines(&self.log, &["submit response headers"])
    }
}
