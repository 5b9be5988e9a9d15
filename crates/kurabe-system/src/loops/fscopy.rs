//! File Copy (UnixBench's `fstime -c -b BUFSIZE -m MAXBLOCKS`).
//!
//! Per pass, as `fstime.c` does it: create two files in the (private) temp
//! dir; a **write** phase fills the first file with `MAXBLOCKS` KB in
//! `BUFSIZE` writes, rewinding and starting over until its time is up (the
//! time is only checked after a whole file); a **read** phase reads it back
//! in `BUFSIZE` reads, rewinding at end of file; then the timed **copy**
//! phase reads `BUFSIZE` from the first file and writes it to the second,
//! rewinding both at end of file, until the timer fires. Before each phase
//! the original syncs and sleeps (2+2 s, 2+2 s, 2+1 s) to let the disk
//! settle; kurabe does the same by default and skips the sleeps in quick mode.
//!
//! Work is counted in 256-byte units; the score is
//! `units / (seconds × 4)` truncated to whole KBps, and the reported time is
//! the copy phase's own, exactly as `fstime` prints `COUNT|score|0|KBps` and
//! `TIME|seconds`. The write and read scores only weigh the partial credit
//! of a buffer cut short by the timer.

use std::ffi::CString;
use std::time::Instant;

use super::code;
use crate::worker::{self, Record};

const COUNTSIZE: u64 = 256;
const HALFCOUNT: u64 = COUNTSIZE / 2;
const MAX_BUFSIZE: usize = 8192;

/// A prepared file-copy pass.
pub(crate) struct FsJob {
    /// The temp dir, NUL-terminated bytes.
    pub dir: CString,
    /// Buffer size, bytes (256, 1024, 4096).
    pub bufsize: usize,
    /// File size in KB.
    pub max_blocks: usize,
    /// Length of the write and read phases, seconds (2 in UnixBench).
    pub rw_s: f64,
    /// Sync and sleep before each phase, as `fstime` does.
    pub settle: bool,
}

struct Files {
    f: i32,
    g: i32,
}

impl FsJob {
    pub(crate) fn run(&self, secs: f64) -> Record {
        let mut p0 = [0u8; 600];
        let mut p1 = [0u8; 600];
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() } as u64;
        let dir = self.dir.as_bytes();
        if !make_path(dir, b"/dummy0-", pid, &mut p0) || !make_path(dir, b"/dummy1-", pid, &mut p1)
        {
            return Record::error(code::CREATE);
        }
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC;
        // SAFETY: p0/p1 are NUL-terminated paths.
        let files = unsafe {
            Files {
                f: libc::open(p0.as_ptr().cast(), flags, 0o600),
                g: libc::open(p1.as_ptr().cast(), flags, 0o600),
            }
        };
        let rec = if files.f < 0 || files.g < 0 {
            Record::error(code::CREATE)
        } else {
            self.phases(&files, secs)
        };
        // SAFETY: closing and unlinking what we created.
        unsafe {
            libc::close(files.f);
            libc::close(files.g);
            libc::unlink(p0.as_ptr().cast());
            libc::unlink(p1.as_ptr().cast());
        }
        rec
    }

    fn phases(&self, fl: &Files, secs: f64) -> Record {
        let mut buf = [0u8; MAX_BUFSIZE];
        for (i, b) in buf.iter_mut().enumerate().take(self.bufsize) {
            *b = (i & 0xff) as u8;
        }
        let buf = &mut buf[..self.bufsize];
        let per_buf = self.bufsize as u64 / COUNTSIZE;
        let max_buffs = self.max_blocks * 1024 / self.bufsize;

        // Write phase: creates the file and gives the write score.
        self.settle(2, 2);
        let mut counted: u64 = 0;
        worker::arm_timer(self.rw_s);
        let start = Instant::now();
        while !worker::stopped() {
            for _ in 0..max_buffs {
                let r = write(fl.f, buf);
                if r != buf.len() as isize {
                    if r < 0 && !interrupted() {
                        return Record::error(code::WRITE);
                    }
                    counted += (r.max(0) as u64 + HALFCOUNT) / COUNTSIZE;
                    break;
                }
                counted += per_buf;
            }
            rewind(fl.f);
        }
        let write_score = score(counted, start.elapsed().as_secs_f64()).max(1);

        // Read phase: gives the read score and warms the cache, as in fstime.
        self.settle(2, 2);
        rewind(fl.f);
        let mut counted: u64 = 0;
        worker::arm_timer(self.rw_s);
        let start = Instant::now();
        while !worker::stopped() {
            let r = read(fl.f, buf);
            if r == buf.len() as isize {
                counted += per_buf;
            } else if r >= 0 {
                rewind(fl.f);
                counted += (r as u64 + HALFCOUNT) / COUNTSIZE;
            } else if interrupted() {
                break;
            } else {
                return Record::error(code::READ);
            }
        }
        let read_score = score(counted, start.elapsed().as_secs_f64()).max(1);

        // Copy phase: the measured one.
        self.settle(2, 1);
        rewind(fl.f);
        let mut counted: u64 = 0;
        worker::arm_timer(secs);
        let start = Instant::now();
        while !worker::stopped() {
            let r = read(fl.f, buf);
            if r != buf.len() as isize {
                if r >= 0 {
                    rewind(fl.f);
                    rewind(fl.g);
                    continue;
                }
                if !interrupted() {
                    return Record::error(code::READ);
                }
                break;
            }
            let w = write(fl.g, buf);
            if w != buf.len() as isize {
                if w < 0 && !interrupted() {
                    return Record::error(code::WRITE);
                }
                // Full credit for what was written, part credit for having read the rest.
                let w = w.max(0) as u64;
                let rest = (self.bufsize as u64 - w) * write_score / (read_score + write_score);
                counted += (w + rest + HALFCOUNT) / COUNTSIZE;
                break;
            }
            counted += per_buf;
        }
        let elapsed = start.elapsed().as_secs_f64();
        let copy_score = score(counted, elapsed);
        Record {
            count: copy_score as f64,
            time_s: elapsed,
            check: counted * COUNTSIZE,
            err: 0,
        }
    }

    fn settle(&self, first_s: u32, second_s: u32) {
        if self.settle {
            // SAFETY: sync and sleep have no preconditions.
            unsafe {
                libc::sync();
                libc::sleep(first_s);
                libc::sync();
                libc::sleep(second_s);
            }
        }
    }
}

/// KBps from 256-byte units, truncated like fstime's `(long)` cast.
fn score(counted: u64, secs: f64) -> u64 {
    if secs <= 0.0 {
        return 0;
    }
    (counted as f64 / (secs * (1024 / COUNTSIZE) as f64)) as u64
}

fn write(fd: i32, buf: &[u8]) -> isize {
    // SAFETY: writing from a live buffer.
    unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) }
}

fn read(fd: i32, buf: &mut [u8]) -> isize {
    // SAFETY: reading into a live buffer.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }
}

fn rewind(fd: i32) {
    // SAFETY: lseek on our own descriptor.
    unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
}

fn interrupted() -> bool {
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

/// `dir + name + pid` NUL-terminated into `out`, without allocating.
fn make_path(dir: &[u8], name: &[u8], pid: u64, out: &mut [u8; 600]) -> bool {
    let mut digits = [0u8; 20];
    let mut n = pid;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let total = dir.len() + name.len() + len;
    if total + 1 > out.len() {
        return false;
    }
    out[..dir.len()].copy_from_slice(dir);
    out[dir.len()..dir.len() + name.len()].copy_from_slice(name);
    for i in 0..len {
        out[dir.len() + name.len() + i] = digits[len - 1 - i];
    }
    out[total] = 0;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_is_kbps_in_256_byte_units() {
        // 4000 units of 256 bytes = 1000 KB in 2 s → 500 KBps.
        assert_eq!(score(4000, 2.0), 500);
        assert_eq!(score(4003, 2.0), 500, "truncated like (long)");
        assert_eq!(score(10, 0.0), 0);
    }

    #[test]
    fn path_without_allocation() {
        let mut out = [0u8; 600];
        assert!(make_path(b"/tmp/x", b"/dummy0-", 4321, &mut out));
        let end = out.iter().position(|&b| b == 0).unwrap();
        assert_eq!(&out[..end], b"/tmp/x/dummy0-4321");
    }
}
