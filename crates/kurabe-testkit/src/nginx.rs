//! nginx for the tests that measure a real server (`watch --port`, HTTP/2).
//!
//! Owns starting a private nginx (config, pid, logs and temp files in the
//! test's directory, its own process group) and stopping it. The listening
//! sockets are bound here, on port 0, and handed to nginx the way it hands
//! them to a new binary on upgrade (the `NGINX` environment variable names
//! inherited descriptors): no port is guessed, and a client can connect the
//! moment [`Nginx::start`] returns (the kernel queues it until a worker
//! accepts), so no test polls for nginx to come up.
//! Must not be used by product code.

use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NGINX: &str = "/usr/sbin/nginx";

/// One listening socket to give nginx: an address (`127.0.0.1`, `::1`) and
/// the `listen` parameters after it (`http2`, `ssl http2`, or none).
#[derive(Debug, Clone, Copy)]
pub struct Listen<'a> {
    /// IP address to bind, port 0.
    pub addr: &'a str,
    /// What follows the address on nginx's `listen` line.
    pub params: &'a str,
}

/// A running nginx; SIGKILLed with its process group on drop.
#[derive(Debug)]
pub struct Nginx {
    child: Option<Child>,
    dir: PathBuf,
    ports: Vec<u16>,
}

impl Nginx {
    /// nginx with `workers` worker processes, its files in `dir`, serving
    /// one `server` block: a `listen` line per `listens` entry (bound here,
    /// see the module docs) plus the `server` directives given (`root`,
    /// `location`, certificates). Requests go to `dir/access.log`.
    ///
    /// None, with a visible message, when nginx is not installed outside
    /// CI; in CI (`CI` set) a missing nginx fails the test.
    pub fn start(dir: &Path, workers: u32, listens: &[Listen<'_>], server: &str) -> Option<Nginx> {
        Self::start_with(dir, workers, listens, "", server)
    }

    /// [`Nginx::start`] with `http` directives too (e.g. a `log_format`,
    /// which nginx takes only at the `http` level).
    pub fn start_with(
        dir: &Path,
        workers: u32,
        listens: &[Listen<'_>],
        http: &str,
        server: &str,
    ) -> Option<Nginx> {
        if !Path::new(NGINX).exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "nginx is required in CI (.ci/run installs it)"
            );
            eprintln!("SKIPPED: nginx not installed");
            return None;
        }
        let sockets: Vec<TcpListener> = listens
            .iter()
            .map(|l| TcpListener::bind((l.addr, 0)).expect("bind a port for nginx"))
            .collect();
        let addrs: Vec<SocketAddr> = sockets.iter().map(|s| s.local_addr().unwrap()).collect();
        let lines: String = listens
            .iter()
            .zip(&addrs)
            .map(|(l, a)| format!("  listen {a} {};\n", l.params))
            .collect();
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, config(dir, workers, &lines, http, server)).unwrap();
        let child = spawn(dir, &conf, sockets.into_iter().map(OwnedFd::from).collect());
        Some(Nginx {
            child: Some(child),
            dir: dir.to_owned(),
            ports: addrs.iter().map(SocketAddr::port).collect(),
        })
    }

    /// The master's PID (the root of the process tree holding the sockets).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The ports of the `listens`, in their order.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// Access log lines containing `pattern`, once the count stops moving:
    /// nginx writes a line after it sent the response, so the client may
    /// see the last response a moment before the line exists. Up to 5 s.
    pub fn logged(&self, pattern: &str) -> u64 {
        let count = || {
            std::fs::read_to_string(self.dir.join("access.log"))
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains(pattern))
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

    /// Stop nginx: SIGTERM to the master (it stops its workers and waits
    /// for them; up to 5 s), then SIGKILL to the whole process group for
    /// anything left. Idempotent.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id() as libc::pid_t;
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        wait_exit(pid, Duration::from_secs(5));
        // SAFETY: as above; the group is nginx's own (process_group(0)).
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let _ = child.wait();
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            let pid = child.id() as libc::pid_t;
            // SAFETY: kill has no memory-safety preconditions; the group is nginx's own.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }
}

/// The installed nginx's version as its `Server` header gives it (`nginx/1.22.1`).
pub fn version() -> String {
    let out = Command::new(NGINX)
        .arg("-v")
        .output()
        .expect("run nginx -v");
    let text = String::from_utf8_lossy(&out.stderr);
    text.trim().trim_start_matches("nginx version: ").to_owned()
}

/// nginx.conf: everything nginx writes stays in `dir`.
fn config(dir: &Path, workers: u32, listen_lines: &str, http: &str, server: &str) -> String {
    let d = dir.display();
    format!(
        "worker_processes {workers};\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 256; }}\nhttp {{\n {http}\n access_log {d}/access.log;\n \
         keepalive_requests 100000;\n client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; \
         fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n \
         server {{\n{listen_lines}  {server}\n }}\n}}\n"
    )
}

/// Start nginx in the foreground in its own process group, with `sockets`
/// as descriptors 3, 4, … named in `NGINX`. Our copies close when this
/// returns: nginx then holds the only ones.
fn spawn(dir: &Path, conf: &Path, sockets: Vec<OwnedFd>) -> Child {
    let mut cmd = Command::new(NGINX);
    cmd.process_group(0)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(conf)
        .args(["-g", "daemon off; master_process on;"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let moved = inherit(&mut cmd, &sockets);
    let child = cmd.spawn().expect("start nginx");
    drop((sockets, moved));
    child
}

/// Make `sockets` the child's descriptors 3, 4, … and name them in
/// `NGINX`. Returns the copies the child moves from, to close after spawn.
fn inherit(cmd: &mut Command, sockets: &[OwnedFd]) -> Vec<OwnedFd> {
    const FIRST: RawFd = 3;
    let names: String = (0..sockets.len())
        .map(|i| format!("{};", FIRST + i as RawFd))
        .collect();
    cmd.env("NGINX", names);
    // Above every descriptor the child may still hold, so that the dup2s
    // below cannot overwrite a socket not yet moved.
    let high: Vec<OwnedFd> = sockets.iter().map(|s| dup_high(s.as_raw_fd())).collect();
    let high_fds: Vec<RawFd> = high.iter().map(AsRawFd::as_raw_fd).collect();
    // SAFETY: dup2 is async-signal-safe; the closure allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            for (i, &fd) in high_fds.iter().enumerate() {
                if libc::dup2(fd, FIRST + i as RawFd) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    high
}

/// A close-on-exec duplicate of `fd` numbered 100 or above.
fn dup_high(fd: RawFd) -> OwnedFd {
    // SAFETY: fcntl on a descriptor we own; the new one is ours.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100) };
    assert!(new >= 0, "dup a socket for nginx");
    // SAFETY: just created, owned here.
    unsafe { OwnedFd::from_raw_fd(new) }
}

/// Block until process `pid` (our child) has exited or `within` passed,
/// on a pidfd: nothing polls. The child stays a zombie for `wait`.
fn wait_exit(pid: libc::pid_t, within: Duration) {
    // SAFETY: pidfd_open takes a pid and flags; the result is ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    if fd < 0 {
        return;
    }
    // SAFETY: just created, owned here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, within.as_millis() as libc::c_int) };
}
