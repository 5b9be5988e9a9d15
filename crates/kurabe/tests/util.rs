//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::process::{Child, Command};

/// A `Command` for the built `kurabe` binary.
pub fn kurabe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kurabe"))
}

/// Lower the running process `pid`'s descriptor limit to stdin, stdout and
/// stderr only, so that every descriptor it opens from now on fails with
/// EMFILE, whatever it holds at this moment. (A limit such as 8 is not
/// enough: a socket closed below it frees a number the next connection
/// reuses, and whether the run ever fails then depends on the timing.)
pub fn out_of_descriptors(pid: u32) {
    let lim = libc::rlimit {
        rlim_cur: 3,
        rlim_max: 3,
    };
    // SAFETY: prlimit on our own child with a valid rlimit; no old value wanted.
    let rc = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_NOFILE,
            &lim,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
}

/// `kurabe` with `args`, its standard input a pipe this process holds
/// open and never writes to: its exit code and standard error, or a
/// failure (after killing it) if it does not exit within 20 s, which is
/// what a refusal that first waited for its input would do (a set on
/// standard input, a log that is a named pipe no one writes to).
pub fn refused_without_reading(args: &[&str]) -> (Option<i32>, String) {
    refused_within(args, std::time::Duration::from_secs(20))
}

/// [`refused_without_reading`] with `limit` in place of 20 s (an input
/// that takes a debug build longer to reach its refusal).
pub fn refused_within(args: &[&str], limit: std::time::Duration) -> (Option<i32>, String) {
    let mut child = kurabe()
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Held, never written nor closed: reading it would wait for ever.
    let _stdin = child.stdin.take();
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: no exit within {limit:?}: it waits for its input before refusing");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status.code(), stderr)
}

/// A child process killed (and reaped) on drop.
pub struct Kid(pub Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A PostgreSQL schema of one test's own, dropped on drop: its fleet
/// tables, so no other test's coordinator takes its workers (or the
/// reverse). `url` is the store URL that puts a session in it.
pub struct PgSchema {
    pub url: String,
    base: String,
    name: String,
}

impl PgSchema {
    /// A fresh schema `TAG_PID` on the server at `base`.
    pub fn create(base: &str, tag: &str) -> PgSchema {
        let name = format!("{tag}_{}", std::process::id());
        let mut c = kurabe_store::pg::connect(base).unwrap();
        c.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
        ))
        .unwrap();
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options=-c%20search_path%3D{name}");
        PgSchema {
            url,
            base: base.to_owned(),
            name,
        }
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut c) = kurabe_store::pg::connect(&self.base) {
            let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}
