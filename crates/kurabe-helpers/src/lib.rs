//! kurabe's two helper programs, built into the library and run from memory.
//!
//! Owns the helper images and the one way to start them: [`execl`] (the
//! Execl and Process Creation loops of `kurabe system`,
//! `programs/execl.rs`) and [`rusage`] (the launcher of `command`
//! workloads, `programs/rusage.rs`). Must not decide what they measure
//! (kurabe-system and kurabe-lab read their records) and must not depend on
//! anything but libc.
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
//! executable that maps only libc; `include_bytes!` puts it into kurabe. On
//! first use it is written to an anonymous, sealed `memfd` (or, where
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

static EXECL_IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/execl"));
static RUSAGE_IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/rusage"));

/// Lowest descriptor number an image is kept at: above stdio and the
/// descriptors children `dup2` into place before exec (kurabe-system's
/// result pipe is fd 3), so no child replaces it before the exec that needs it.
const MIN_FD: libc::c_int = 64;

/// Path of the Execl/Process Creation helper (`programs/execl.rs`), ready
/// to exec from this process and its forked children.
pub fn execl() -> io::Result<PathBuf> {
    static PATH: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    cached(&PATH, "execl", EXECL_IMAGE)
}

/// Path of the rusage launcher of `command` workloads
/// (`programs/rusage.rs`), ready to exec from this process and its children.
pub fn rusage() -> io::Result<PathBuf> {
    static PATH: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    cached(&PATH, "rusage", RUSAGE_IMAGE)
}

/// The image materialised once per process; a failure is remembered too,
/// so every caller gets the same answer.
fn cached(
    cell: &OnceLock<Result<PathBuf, String>>,
    name: &str,
    image: &[u8],
) -> io::Result<PathBuf> {
    cell.get_or_init(|| materialize(name, image).map_err(|e| e.to_string()))
        .clone()
        .map_err(|e| io::Error::other(format!("cannot prepare kurabe's {name} helper: {e}")))
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
        for image in [EXECL_IMAGE, RUSAGE_IMAGE] {
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
        assert_eq!(meta.len(), EXECL_IMAGE.len() as u64);
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

    #[test]
    fn rusage_helper_serves_one_execution_per_request_from_memory() {
        use std::io::Write;
        // Requests on stdin (REQ_FD 0), pids and records on stdout
        // (REPORT_FD and PID_FD 1, so each pid comes before its record):
        // no padding, then 5 bytes of it, then end-of-file.
        let run = |args: &[&str], requests: &[u32]| {
            let mut child = Command::new(rusage().unwrap())
                .args(args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut input = child.stdin.take().unwrap();
            for r in requests {
                input.write_all(&r.to_le_bytes()).unwrap();
            }
            drop(input);
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{:?}", out.status);
            let words = out.stdout.chunks_exact(8);
            words
                .map(|w| i64::from_le_bytes(w.try_into().unwrap()))
                .collect::<Vec<i64>>()
        };
        let all = run(&["0", "1", "1", "true"], &[0, 5]);
        assert_eq!(all.len(), 16, "{all:?}");
        for rec in all.chunks(8) {
            // The pid as soon as the command runs, then the record.
            let (pid, rec) = (rec[0], &rec[1..]);
            assert_eq!((rec[0], rec[1]), (0, 0), "exec errno and wait status");
            assert!(rec[4] > 0 && rec[4] < 4096, "max RSS {} KiB", rec[4]);
            assert!(pid > 0 && rec[6] == pid, "pid {pid} then {}", rec[6]);
        }
        let all = run(&["0", "1", "1", "/nonexistent/prog"], &[0]);
        assert_eq!(all[1], i64::from(libc::ENOENT));
        // The padding reaches the command's environment: `test` exits 0
        // only when KURABE_ENV_PAD has 5 characters.
        let all = run(
            &["0", "1", "1", "sh", "-c", "test ${#KURABE_ENV_PAD} = 5"],
            &[5, 0],
        );
        assert_eq!((all[2], all[10]), (0, 256), "wait statuses {all:?}");
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
        let p = park(unlinked_file("test", RUSAGE_IMAGE).unwrap()).unwrap();
        assert_eq!(Command::new(&p).status().unwrap().code(), Some(2));
    }
}
