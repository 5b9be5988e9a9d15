//! The floor for `bench/http-peers.sh`: the least a keep-alive HTTP/1.1
//! client can do per request, so kurabe's CPU per request can be printed as a
//! multiple of the kernel's own cost.
//!
//! Owns nothing the product uses. Per request it makes exactly one `send` and
//! one `recv` on the same keep-alive connections a load generator would use,
//! driven by one edge-triggered epoll loop on one thread; it parses nothing,
//! times nothing and assumes each response arrives in one read (true for the
//! bench's 381-byte file on loopback). Must not be used as a load generator.
//!
//! Usage: `floor HOST:PORT PATH CONNECTIONS SECONDS` → prints `requests N`.

use std::io::Write;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, path, conns, secs] = &args[..] else {
        eprintln!("usage: floor HOST:PORT PATH CONNECTIONS SECONDS");
        std::process::exit(2);
    };
    let conns: usize = conns.parse().expect("CONNECTIONS is a number");
    let secs: f64 = secs.parse().expect("SECONDS is a number");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
    let streams: Vec<TcpStream> = (0..conns)
        .map(|_| {
            let s = TcpStream::connect(addr.as_str()).expect("connect");
            s.set_nodelay(true).expect("nodelay");
            s.set_nonblocking(true).expect("nonblocking");
            s
        })
        .collect();
    // SAFETY: plain syscall; checked below.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    assert!(ep >= 0, "epoll_create1");
    for (i, s) in streams.iter().enumerate() {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
            u64: i as u64,
        };
        // SAFETY: `ev` is valid for the call.
        let rc = unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev) };
        assert_eq!(rc, 0, "epoll_ctl");
        send(s.as_raw_fd(), &request);
    }
    let n = run(ep, &streams, &request, Duration::from_secs_f64(secs));
    let _ = writeln!(std::io::stdout(), "requests {n}");
}

/// One recv and one send per readable event until `limit` has passed; returns responses read.
fn run(ep: i32, streams: &[TcpStream], request: &[u8], limit: Duration) -> u64 {
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
    let mut buf = vec![0u8; 64 * 1024];
    let mut done = 0u64;
    let start = Instant::now();
    while start.elapsed() < limit {
        // SAFETY: `events` is a valid writable buffer of its length.
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, 100) };
        for ev in &events[..n.max(0) as usize] {
            let fd = streams[ev.u64 as usize].as_raw_fd();
            // SAFETY: `buf` is valid and writable for its length.
            let r = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if r > 0 {
                done += 1;
                send(fd, request);
            }
        }
    }
    done
}

fn send(fd: i32, request: &[u8]) {
    // SAFETY: `request` is valid for its length.
    unsafe {
        libc::send(
            fd,
            request.as_ptr().cast(),
            request.len(),
            libc::MSG_NOSIGNAL,
        )
    };
}
