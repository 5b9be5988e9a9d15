//! Shell Scripts (UnixBench's `looper 60 multi.sh N` with `tst.sh`).
//!
//! One iteration = fork, exec `/bin/sh` on a small driver script that starts
//! N copies of the work script in the background and waits for them; the
//! parent waits for the iteration and fails on a non-zero status. The work
//! script is UnixBench's text-processing pipeline on the same shape of input
//! (an ~8.5 KB, 362-line shell-like text, kurabe's own, in
//! `data/sort.src`): sort it to a file; `od` that file and sort the dump
//! numerically; grep the lines containing "the" through `tee` into `wc`;
//! remove the temporaries. `LANG` is set to `en_US.utf8` as UnixBench's
//! `Run` sets it (it changes `sort`'s speed a lot; where that locale is
//! missing both fall back to C).
//!
//! As in UnixBench, the iteration in flight when the time is up is waited
//! for but not counted, and the wall time includes it (UnixBench's driver
//! reads the test's output until the last shell closes it).

use std::ffi::CString;
use std::io;
use std::path::Path;

use super::{code, environment, wait_for, ExecArgs};
use crate::worker::{self, Record};

/// The input file the work script sorts (kurabe's own text, same shape as UnixBench's).
pub const INPUT: &[u8] = include_bytes!("../../data/sort.src");

/// Driver: start `$1` work scripts at once, wait for all.
const MULTI: &str = "\
# kurabe shell test driver: run $1 copies of the work script concurrently.
i=1
while [ $i -le $1 ]; do
\t/bin/sh ./work.sh input.txt &
\ti=$((i + 1))
done
wait
";

/// Work script: the sort / od / grep / tee / wc pipeline.
const WORK: &str = "\
# kurabe shell test work: the same pipeline as UnixBench's tst.sh.
sort > s.$$ < $1
od s.$$ | sort -n -k 1 > o.$$
grep the s.$$ | tee g.$$ | wc > w.$$
rm s.$$ g.$$ o.$$ w.$$
";

/// A prepared shell test.
pub(crate) struct ShellJob {
    dir: CString,
    exec: ExecArgs,
}

impl ShellJob {
    /// Write the scripts and the input into `dir` and prepare `sh multi.sh N`.
    pub(crate) fn prepare(dir: &Path, concurrent: u32) -> io::Result<ShellJob> {
        use std::os::unix::ffi::OsStrExt;
        std::fs::write(dir.join("multi.sh"), MULTI)?;
        std::fs::write(dir.join("work.sh"), WORK)?;
        std::fs::write(dir.join("input.txt"), INPUT)?;
        let args = vec![
            CString::new("/bin/sh").expect("literal"),
            CString::new("./multi.sh").expect("literal"),
            CString::new(concurrent.to_string()).expect("digits"),
        ];
        Ok(ShellJob {
            dir: CString::new(dir.as_os_str().as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in temp dir path"))?,
            exec: ExecArgs::new(args, environment(&[("LANG", "en_US.utf8")])),
        })
    }

    pub(crate) fn run(&self, secs: f64) -> Record {
        // SAFETY: chdir to a NUL-terminated path.
        if unsafe { libc::chdir(self.dir.as_ptr()) } != 0 {
            return Record::error(code::CHDIR);
        }
        let mut loops: u64 = 0;
        worker::arm_timer(secs);
        while !worker::stopped() {
            // SAFETY: the child only execs or _exits.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                self.exec.exec();
                // SAFETY: exec failed; leave with looper's marker status.
                unsafe { libc::_exit(99) };
            }
            if pid < 0 {
                return Record {
                    count: loops as f64,
                    time_s: f64::NAN,
                    check: loops,
                    err: code::FORK,
                };
            }
            let status = wait_for(pid);
            if status != 0 {
                let err = if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 99 {
                    code::EXEC_SH
                } else {
                    code::SHELL_STATUS
                };
                return Record {
                    count: loops as f64,
                    time_s: f64::NAN,
                    check: loops,
                    err,
                };
            }
            if !worker::stopped() {
                loops += 1;
            }
        }
        Record {
            count: loops as f64,
            time_s: f64::NAN,
            check: loops,
            err: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_has_the_shape_of_unixbench_input() {
        assert!((8000..9000).contains(&INPUT.len()));
        let text = std::str::from_utf8(INPUT).unwrap();
        assert_eq!(text.lines().count(), 362);
        assert_eq!(text.lines().filter(|l| l.contains("the")).count(), 35);
    }
}
