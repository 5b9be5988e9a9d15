//! Counting the instructions a command executes, under valgrind's Cachegrind.
//!
//! Owns finding `valgrind` on PATH (at run time: kurabe does not depend on
//! it), the command line that wraps a command in `valgrind
//! --tool=cachegrind --cache-sim=no --trace-children=yes`, the temporary
//! directory the counts are written to (one `cachegrind.out.PID` file per
//! process of the command), and reading them back: the `Ir` column of
//! each file's `summary:` line (older valgrinds write `totals:`), summed
//! over the files one execution left. It must not run anything itself
//! (`execute.rs` does) or choose metrics (`measure.rs` does).
//!
//! Why Cachegrind without its cache simulation: the instruction count
//! (Ir) is all kurabe compares, and it is deterministic — the same
//! program on the same input executes the same instructions however busy
//! the machine is — where time on a shared vCPU wobbles by ±15 %. It
//! needs no hardware PMU (this project's VMs have none). The price is
//! speed: the command runs about 50 times slower.

use std::path::{Path, PathBuf};

/// The Debian (and Ubuntu) package that installs valgrind.
pub const PACKAGE: &str = "valgrind";

/// The one line said when valgrind is missing: what to install.
pub fn missing_message() -> String {
    format!(
        "counting instructions (--measure instructions, or measure = \"instructions\" in a plan) needs valgrind, which is not on PATH: install the `{PACKAGE}` package (apt-get install {PACKAGE}), or measure time"
    )
}

/// The `valgrind` executable on PATH; `None` when there is none.
pub fn find_valgrind() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("valgrind"))
        .find(|p| is_executable(p))
}

/// A regular file someone may execute.
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A command wrapped in Cachegrind, and where its counts land.
#[derive(Debug)]
pub struct Counter {
    valgrind: PathBuf,
    dir: tempfile::TempDir,
}

impl Counter {
    /// A counter with its own empty directory; `Err` with
    /// [`missing_message`] when valgrind is not on PATH.
    pub fn new() -> Result<Counter, String> {
        let valgrind = find_valgrind().ok_or_else(missing_message)?;
        let dir = tempfile::Builder::new()
            .prefix("kurabe-cachegrind-")
            .tempdir()
            .map_err(|e| format!("cannot make a directory for Cachegrind's counts: {e}"))?;
        Ok(Counter { valgrind, dir })
    }

    /// `argv` run under Cachegrind, its children traced too, each process
    /// writing its counts to a file of its own in this counter's directory.
    pub fn wrap(&self, argv: &[String]) -> Vec<String> {
        let out = self.dir.path().join("cachegrind.out.%p");
        let mut wrapped = vec![
            self.valgrind.to_string_lossy().into_owned(),
            "--tool=cachegrind".to_owned(),
            "--cache-sim=no".to_owned(),
            "--trace-children=yes".to_owned(),
            // Cachegrind's own summary on stderr is not needed: the files are read.
            "--quiet".to_owned(),
            format!("--cachegrind-out-file={}", out.display()),
            "--".to_owned(),
        ];
        wrapped.extend(argv.iter().cloned());
        wrapped
    }

    /// The instructions counted since the last call: every process's
    /// total, summed; the files are removed. `Err` when no process left a
    /// count (valgrind could not start the command) or a file is unreadable.
    pub fn take(&self) -> Result<u64, String> {
        let entries = std::fs::read_dir(self.dir.path())
            .map_err(|e| format!("cannot read Cachegrind's counts: {e}"))?;
        let mut total = 0u64;
        let mut files = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            let text = std::fs::read_to_string(&path);
            let _ = std::fs::remove_file(&path);
            let text = text.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let ir = total_ir(&text)
                .ok_or_else(|| format!("{} holds no instruction count", path.display()))?;
            total = total.saturating_add(ir);
            files += 1;
        }
        if files == 0 {
            return Err("Cachegrind wrote no count (did valgrind start the command?)".to_owned());
        }
        Ok(total)
    }
}

/// The `Ir` total of one `cachegrind.out` file: the column of `Ir` in its
/// `events:` line, read from its `summary:` (or `totals:`) line.
pub fn total_ir(text: &str) -> Option<u64> {
    let mut column = None;
    let mut summary = None;
    for line in text.lines() {
        if let Some(events) = line.strip_prefix("events:") {
            column = events.split_whitespace().position(|e| e == "Ir");
        } else if let Some(s) = line
            .strip_prefix("summary:")
            .or_else(|| line.strip_prefix("totals:"))
        {
            summary = Some(s);
        }
    }
    summary?.split_whitespace().nth(column?)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ir_column_of_the_summary_is_the_count() {
        let one = "desc: I1 cache: 32768 B\ncmd: awk\nevents: Ir\nfl=a.c\nfn=main\n1 5\nsummary: 61901237\n";
        assert_eq!(total_ir(one), Some(61_901_237));
        let sim = "events: Dr Ir I1mr\nfn=x\n1 2 3 4\nsummary: 7 123 9\n";
        assert_eq!(total_ir(sim), Some(123));
        let old = "events: Ir\ntotals: 42\n";
        assert_eq!(total_ir(old), Some(42));
        assert_eq!(total_ir("events: Dr\nsummary: 5\n"), None);
        assert_eq!(total_ir("events: Ir\n"), None);
        assert_eq!(total_ir("events: Ir\nsummary: lots\n"), None);
    }

    #[test]
    fn wrapped_commands_write_into_the_counters_directory() {
        let Ok(c) = Counter::new() else {
            return; // no valgrind here: the integration tests cover the refusal
        };
        let argv = c.wrap(&["awk".to_owned(), "BEGIN{}".to_owned()]);
        assert!(argv[0].ends_with("valgrind"), "{argv:?}");
        assert!(argv.contains(&"--cache-sim=no".to_owned()));
        assert_eq!(&argv[argv.len() - 3..], ["--", "awk", "BEGIN{}"]);
        let out = format!("--cachegrind-out-file={}", c.dir.path().display());
        assert!(argv.iter().any(|a| a.starts_with(&out)), "{argv:?}");
        assert!(c.take().is_err(), "nothing ran, nothing counted");
    }
}
