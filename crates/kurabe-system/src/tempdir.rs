//! A private (mode 0700) temp dir, removed with everything in it on drop.
//!
//! The run holds it for its whole length; an error or Ctrl-C returns through
//! the caller and drops it, so no test file outlives kurabe (a SIGKILL of
//! kurabe itself is the only exception, and the name says where it came from;
//! a forced exit, which runs no drop, removes it through kurabe-probe's
//! launch list).

use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// The directory; deleted on drop.
#[derive(Debug)]
pub(crate) struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// `mkdtemp(parent/kurabe-system-XXXXXX)`: unique, created 0700.
    pub(crate) fn new(parent: &Path) -> io::Result<TempDir> {
        let mut template = parent
            .join("kurabe-system-XXXXXX")
            .into_os_string()
            .into_vec();
        template.push(0);
        // SAFETY: template is a writable NUL-terminated buffer ending in XXXXXX.
        let p = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
        if p.is_null() {
            return Err(io::Error::last_os_error());
        }
        template.pop();
        let path = PathBuf::from(std::ffi::OsString::from_vec(template));
        // A forced exit (a second signal) removes it too.
        kurabe_probe::launch::track_scratch(&path);
        Ok(TempDir { path })
    }

    /// Its path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        kurabe_probe::launch::forget_scratch(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn private_and_removed_on_drop() {
        let t = TempDir::new(&std::env::temp_dir()).unwrap();
        let p = t.path().to_path_buf();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o700
        );
        std::fs::write(p.join("f"), b"x").unwrap();
        drop(t);
        assert!(!p.exists());
    }
}
