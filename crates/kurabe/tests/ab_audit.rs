//! ab's report lines that `abflags` does not cover, end to end through the
//! built binary: "Write errors" (a request that could not be sent), and
//! the lines of flags compared with what `/usr/bin/ab` prints against the
//! same loopback server.

use std::io::Read;
use std::net::TcpStream;
use std::os::fd::AsRawFd;

use crate::http::{http, http_failed, TestServer};

/// Close `s` with a reset (SO_LINGER 0) instead of an orderly FIN.
fn reset(s: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on a socket we own with a valid linger struct of the given size.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as u32,
        )
    };
    assert_eq!(rc, 0, "SO_LINGER: {}", std::io::Error::last_os_error());
    drop(s);
}

/// A server that reads the first 64 KiB of each request (so the client is
/// surely sending) and then resets the connection: the rest of a large
/// body can no longer be written.
fn resets_mid_request() -> TestServer {
    TestServer::start(|mut s| {
        let mut first = vec![0u8; 64 * 1024];
        if s.read_exact(&mut first).is_ok() {
            reset(s);
        }
    })
}

#[test]
fn a_request_the_server_resets_mid_body_is_a_write_error() {
    let server = resets_mid_request();
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.bin");
    // Far more than loopback's socket buffers hold while the server reads nothing.
    std::fs::write(&body, vec![b'x'; 16 << 20]).unwrap();
    let b = body.to_str().unwrap();
    for engine in ["epoll", "io_uring"] {
        let args = ["-n", "3", "--engine", engine, "-p", b, &server.url()];
        let (r, _) = http_failed(&args, "write");
        assert_eq!(r.failures.write, 3, "{engine}: {:?}", r.failures);
        assert_eq!((r.failures.exceptions, r.failed_requests), (0, 3));
        assert!(
            r.errors[0].first_error.starts_with("send: "),
            "{engine}: {:?}",
            r.errors
        );
    }
    let out = http(&["-n", "2", "-p", b, &server.url()]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "\nFailed requests:        2\n   \
             (Connect: 0, Receive: 0, Length: 0, Exceptions: 0)\n\
             Write errors:           2\n"
        ),
        "{}",
        out.stdout
    );
}
