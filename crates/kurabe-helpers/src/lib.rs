//! kurabe's two helper programs, built into the library and run from memory.
//!
//! Owns the helper images and the one way to start them: [`execl`] (the
//! Execl and Process Creation loops of `kurabe system`,
//! `programs/execl.rs`) and [`rusage`] (the launcher of `command`
//! workloads, `programs/rusage.rs`). Must not decide what they measure
//! (kurabe-system and kurabe-lab read their records) and must not depend on
//! anything but libc and miniz_oxide (the images are stored deflated).
//!
//! Why separate images at all, when kurabe is one executable: the process
//! that forks must be small (a fork copies the mappings and page tables of
//! the process that forks, so Process Creation forked from kurabe measures
//! kurabe's size, not the kernel's fork), and the process that execs a
//! command must have a tiny address space (Linux folds the pre-exec
//! high-water RSS into the new program's `ru_maxrss`, so `true` started
//! from kurabe "uses" kurabe's 10 MiB). A `vfork` or `CLONE_VM` child does
//! not help: exec folds the old mm's high-water mark all the same.
//!
//! How: `build.rs` compiles each program alone with rustc into a ~300 KB
//! executable that maps only libc; `include_bytes!` puts it into kurabe,
//! deflated (1.3 MB of images take 0.6 MB of kurabe). On first use it is
//! inflated and written to an anonymous, sealed `memfd` (or, where
//! memfds cannot be executed, to an unlinked temporary file), and the
//! descriptor is kept open for the life of the process at a high number.
//! Its `/proc/self/fd/N` path is then an ordinary program path: a child
//! forked from kurabe execs it (the path is resolved before close-on-exec
//! closes the descriptor), so nothing is ever installed next to kurabe.
//!
//! Measured on the shared 2-vCPU VM, load average 13–18, 2026-12-01
//! (`/tmp` harness, UnixBench 6.0.0 built outside the repository):
//! * run from the memfd, the images cost what they cost as separate files:
//!   CPU per fork+exit+wait (user+sys with children, medians of 10
//!   interleaved 3 s rounds) UnixBench `spawn` 80.6 µs, the old separate
//!   helper 76.9, this image from a file 77.0, from the memfd 75.9; CPU per
//!   exec in the Execl chain 618.7 / 612.6 / 626.3 / 619.0 µs. Both images
//!   map 22 areas with 40 kB of page tables (UnixBench's `spawn`: 23, 40 kB).
//! * `bench/system-fidelity.sh` (5 × 3 s rounds, paired concurrently):
//!   kurabe/UnixBench per-round median spawn 1.024 (0.999–1.045), execl
//!   1.045 (1.014–1.213).
//! * `max_rss_bytes` through the launcher: `true` 972–1112 KiB
//!   (`/usr/bin/time`: 984–992), 100 MiB in python3 115632–115840 KiB
//!   (`/usr/bin/time`: 115620–115780).

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The images as `build.rs` deflated them.
static EXECL_DEFLATED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/execl.deflate"));
static RUSAGE_DEFLATED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/rusage.deflate"));

/// Lowest descriptor number an image is kept at: above stdio and the
/// descriptors children `dup2` into place before exec (kurabe-system's
/// result pipe is fd 3), so no child replaces it before the exec that needs it.
const MIN_FD: libc::c_int = 64;

/// Path of the Execl/Process Creation helper (`programs/execl.rs`), ready
/// to exec from this process and its forked children.
pub fn execl() -> io::Result<PathBuf> {
    static PATH: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    cached(&PATH, "execl", EXECL_DEFLATED)
}

/// Path of the rusage launcher of `command` workloads
/// (`programs/rusage.rs`), ready to exec from this process and its children.
pub fn rusage() -> io::Result<PathBuf> {
    static PATH: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    cached(&PATH, "rusage", RUSAGE_DEFLATED)
}

/// The image materialised once per process; a failure is remembered too,
/// so every caller gets the same answer.
fn cached(
    cell: &OnceLock<Result<PathBuf, String>>,
    name: &str,
    deflated: &[u8],
) -> io::Result<PathBuf> {
    cell.get_or_init(|| materialize(name, &inflate(deflated)?).map_err(|e| e.to_string()))
        .clone()
        .map_err(|e| io::Error::other(format!("cannot prepare kurabe's {name} helper: {e}")))
}

/// An image as built: `build.rs` deflated what rustc wrote.
fn inflate(deflated: &[u8]) -> Result<Vec<u8>, String> {
    miniz_oxide::inflate::decompress_to_vec(deflated)
        .map_err(|e| format!("the embedded image does not inflate ({:?})", e.status))
}

fn materialize(name: &str, image: &[u8]) -> io::Result<PathBuf> {
    let fd = match memfd(name, image) {
        Ok(fd) => fd,
        Err(memfd_err) => unlinked_file(name, image)
            .map_err(|e| io::Error::other(format!("memfd: {memfd_err}; temporary file: {e}")))?,
    };
    park(fd)
}

/// A sealed memfd holding `image`, executable (`MFD_EXEC` where the kernel
/// knows it, Linux 6.3+; older kernels make every memfd executable).
fn memfd(name: &str, image: &[u8]) -> io::Result<OwnedFd> {
    let cname = CString::new(format!("kurabe-{name}")).expect("no NUL in helper names");
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: a NUL-terminated name and plain flags.
    let mut raw = unsafe { libc::memfd_create(cname.as_ptr(), flags | libc::MFD_EXEC) };
    if raw < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // SAFETY: as above, without the flag older kernels reject.
        raw = unsafe { libc::memfd_create(cname.as_ptr(), flags) };
    }
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: memfd_create just returned this descriptor; owned once.
    let mut file = unsafe { File::from_raw_fd(raw) };
    file.write_all(image)?;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on our own descriptor. Sealing only guards against
    // accidental writes; an exec works without it, so failure is ignored.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) };
    Ok(file.into())
}

/// Fallback where memfds are not executable (`vm.memfd_noexec = 2`): the
/// image in a private temporary file, opened read-only and unlinked at once.
fn unlinked_file(name: &str, image: &[u8]) -> io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let path = std::env::temp_dir().join(format!("kurabe-{name}-{}-{nanos}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(&path)
        .and_then(|mut f| f.write_all(image));
    let opened = written.and_then(|()| File::open(&path));
    let _ = std::fs::remove_file(&path);
    Ok(opened?.into())
}

/// Move `fd` to a number ≥ [`MIN_FD`] (close-on-exec, kept for the life of
/// the process) and name it by its `/proc/self/fd` path.
fn park(fd: OwnedFd) -> io::Result<PathBuf> {
    // SAFETY: fcntl duplicating our own descriptor.
    let high = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, MIN_FD) };
    if high < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fcntl just returned this descriptor; it is owned here and
    // deliberately never closed (the path must stay valid).
    let kept = unsafe { OwnedFd::from_raw_fd(high) }.into_raw_fd();
    Ok(PathBuf::from(format!("/proc/self/fd/{kept}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    #[test]
    fn images_are_small_executables_that_map_only_libc() {
        for deflated in [EXECL_DEFLATED, RUSAGE_DEFLATED] {
            let image = inflate(deflated).unwrap();
            assert!(deflated.len() < image.len() * 2 / 3, "deflating pays");
            assert_eq!(&image[..4], b"\x7fELF");
            assert!(image.len() < 1 << 20, "{} bytes", image.len());
        }
    }

    #[test]
    fn paths_are_stable_executable_and_above_the_low_descriptors() {
        let p = execl().unwrap();
        assert_eq!(p, execl().unwrap());
        assert_ne!(p, rusage().unwrap());
        let n: i32 = p.file_name().unwrap().to_str().unwrap().parse().unwrap();
        assert!(n >= MIN_FD);
        let meta = std::fs::metadata(&p).unwrap();
        assert!(meta.is_file());
        assert_ne!(meta.permissions().mode() & 0o111, 0);
        assert_eq!(meta.len(), inflate(EXECL_DEFLATED).unwrap().len() as u64);
    }

    /// Runs `prog args` with the record descriptor on stdout (the helpers
    /// write their record to the descriptor number they are given).
    fn record(prog: PathBuf, args: &[&str]) -> Vec<i64> {
        let child = Command::new(prog).args(args).output().unwrap();
        assert!(child.status.success(), "{:?}", child.status);
        let words = child.stdout.chunks_exact(8);
        let v = words.map(|w| i64::from_le_bytes(w.try_into().unwrap()));
        v.collect()
    }

    /// The rusage helper running `args`, its requests on stdin (REQ_FD 0),
    /// pids and records on stdout (so each pid comes before its record),
    /// done counts on stderr; each request's output once it is done.
    fn serve_requests(args: &[&str], requests: &[(u32, u32)]) -> Vec<(u32, Vec<i64>)> {
        use std::io::{Read, Write};
        use std::process::Stdio;
        let mut child = Command::new(rusage().unwrap())
            .args(["0", "1", "1", "2"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (mut input, mut out) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let mut done = child.stderr.take().unwrap();
        let mut got = Vec::new();
        for &(count, flags) in requests {
            input.write_all(&count.to_le_bytes()).unwrap();
            input.write_all(&flags.to_le_bytes()).unwrap();
            input.write_all(&7u64.to_le_bytes()).unwrap();
            if count == 0 {
                continue;
            }
            let mut n = [0u8; 4];
            done.read_exact(&mut n).unwrap();
            let ran = u32::from_le_bytes(n);
            let mut b = vec![0u8; ran as usize * (16 + 168)];
            out.read_exact(&mut b).unwrap();
            let words = b
                .chunks_exact(8)
                .map(|w| i64::from_le_bytes(w.try_into().unwrap()));
            got.push((ran, words.collect()));
        }
        drop(input);
        assert!(child.wait().unwrap().success());
        got
    }

    #[test]
    fn rusage_helper_serves_counted_requests_from_memory() {
        // Two executions of `true`, found on PATH once: pid and start,
        // then the record, for each.
        let got = serve_requests(&["true"], &[(2, 0)]);
        assert_eq!(got[0].0, 2);
        for w in got[0].1.chunks(23) {
            let (pid, start, rec) = (w[0], w[1], &w[2..]);
            assert_eq!((rec[0], rec[1]), (0, 0), "exec errno and wait status");
            // Its counters: faults (its exec maps pages), reads (the loader's).
            assert!(rec[7] > 0, "minor faults {}", rec[7]);
            assert!(
                rec[11] > 0 && rec[13] > 0,
                "read calls {}, bytes {}",
                rec[11],
                rec[13]
            );
            assert!(rec[15] >= 0, "migrations {}", rec[15]);
            assert!(rec[4] > 0 && rec[4] < 4096, "max RSS {} KiB", rec[4]);
            assert!(pid > 0 && rec[6] == pid, "pid {pid} then {}", rec[6]);
            assert!(start > 0 && rec[5] > 0, "start {start}, wall {}", rec[5]);
        }
        // A program that is nowhere: its error, pid 0, and the request ends.
        let got = serve_requests(&["/nonexistent/prog"], &[(3, 0)]);
        assert_eq!(got[0].0, 1);
        assert_eq!((got[0].1[0], got[0].1[2]), (0, i64::from(libc::ENOENT)));
        // `test` exits 0 only when KURABE_ENV_PAD is there: a failure ends
        // a request under FLAG_STOP_ON_FAILURE (2) only; a count of 0 is
        // ignored; under FLAG_PAD (1) the padding reaches the command
        // (0–4095 bytes each: an empty one fails, 1 time in 4096).
        let sh = ["sh", "-c", "test -n \"$KURABE_ENV_PAD\""];
        let got = serve_requests(&sh, &[(2, 0), (0, 0), (2, 2), (3, 1)]);
        let statuses = |i: usize| -> Vec<i64> { got[i].1.chunks(23).map(|w| w[3]).collect() };
        assert_eq!(statuses(0), [256, 256]);
        assert_eq!(statuses(1), [256]);
        assert!(
            statuses(2).iter().filter(|s| **s == 0).count() >= 2,
            "{:?}",
            statuses(2)
        );
    }

    #[test]
    fn execl_helper_re_executes_itself_from_memory_in_one_process() {
        let rec = record(execl().unwrap(), &["1", "30", "0", "0"]);
        assert_eq!(rec.len(), 4, "{rec:?}");
        assert!(f64::from_bits(rec[0] as u64) >= 2.0, "count {rec:?}");
        assert_eq!(rec[3], 0, "error code");
    }

    #[test]
    fn spawn_mode_reaps_every_child_it_forks() {
        let rec = record(execl().unwrap(), &["spawn", "1", "30"]);
        let loops = f64::from_bits(rec[0] as u64);
        assert!(loops >= 1.0);
        assert_eq!(rec[2] as f64, loops, "children reaped with status 0");
        assert_eq!(rec[3], 0, "error code");
    }

    #[test]
    fn temporary_file_fallback_is_executable_too() {
        let p = park(unlinked_file("test", &inflate(RUSAGE_DEFLATED).unwrap()).unwrap()).unwrap();
        assert_eq!(Command::new(&p).status().unwrap().code(), Some(2));
    }
}
