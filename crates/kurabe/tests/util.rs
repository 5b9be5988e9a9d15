//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::process::Command;

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
