//! Reading results for `kurabe system import` and `compare`: a kurabe JSON
//! result or a UnixBench text report, told apart by their first byte, and
//! the comparison of two such files.
//!
//! Owns what a usable input is and the messages saying what to give
//! instead. Must not print.

use std::path::{Path, PathBuf};

use kurabe_model::system::{SystemCompare, SystemReport};

/// Why a result file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file cannot be read, is not a regular file, or is larger than
    /// [`MAX_RESULT_BYTES`].
    #[error(transparent)]
    Read(#[from] kurabe_input::InputError),
    /// Not a UnixBench report.
    #[error("{}", .0.display())]
    Import(PathBuf, #[source] crate::import::ImportError),
    /// JSON, but not kurabe's system result.
    #[error("{} is JSON but not a kurabe system result (from 'kurabe system --format json' or 'kurabe system import')", .0.display())]
    NotSystem(PathBuf, #[source] serde_json::Error),
    /// Written by a newer kurabe.
    #[error("{} has schema_version {found}, newer than this kurabe understands ({}); upgrade kurabe", .path.display(), kurabe_model::SCHEMA_VERSION)]
    TooNew {
        /// The file.
        path: PathBuf,
        /// Its schema version.
        found: u32,
    },
    /// `--noise` outside (0, 100).
    #[error("--noise {0} is out of range; give a percentage between 0 and 100, e.g. 2")]
    Noise(f64),
    /// The two results share no copy count.
    #[error("{a} and {b} have no copy count in common ({a_copies:?} vs {b_copies:?}); compare runs made with the same -c")]
    NoCommonCopies {
        /// First file.
        a: String,
        /// Second file.
        b: String,
        /// Its copy counts.
        a_copies: Vec<u32>,
        /// Its copy counts.
        b_copies: Vec<u32>,
    },
}

/// The largest result file or UnixBench report read (either is a few KiB).
pub const MAX_RESULT_BYTES: u64 = 16 << 20;

/// The result file at `path`, at most [`MAX_RESULT_BYTES`].
fn read(path: &Path) -> Result<Vec<u8>, FileError> {
    let name = kurabe_input::Name::new("the result file");
    Ok(kurabe_input::read(path, name, MAX_RESULT_BYTES)?)
}

/// A UnixBench text report (5.1.x / 6.0) read into kurabe's model.
pub fn load_unixbench(path: &Path) -> Result<SystemReport, FileError> {
    unixbench(path, &read(path)?)
}

/// `bytes` (the file at `path`) as a UnixBench text report.
fn unixbench(path: &Path, bytes: &[u8]) -> Result<SystemReport, FileError> {
    crate::import::parse(&String::from_utf8_lossy(bytes))
        .map_err(|e| FileError::Import(path.to_owned(), e))
}

/// A kurabe JSON result, or a UnixBench text report imported on the fly.
pub fn load_any(path: &Path) -> Result<SystemReport, FileError> {
    let bytes = read(path)?;
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return unixbench(path, &bytes);
    }
    let r: SystemReport =
        serde_json::from_slice(&bytes).map_err(|e| FileError::NotSystem(path.to_owned(), e))?;
    if r.schema_version > kurabe_model::SCHEMA_VERSION {
        let found = r.schema_version;
        return Err(FileError::TooNew {
            path: path.to_owned(),
            found,
        });
    }
    Ok(r)
}

/// B relative to A, per test, with verdicts against a noise band of
/// `noise_pct` percent; both files read with [`load_any`].
pub fn compare_files(a: &Path, b: &Path, noise_pct: f64) -> Result<SystemCompare, FileError> {
    if !(noise_pct.is_finite() && noise_pct > 0.0 && noise_pct < 100.0) {
        return Err(FileError::Noise(noise_pct));
    }
    let (ra, rb) = (load_any(a)?, load_any(b)?);
    let labels = (a.display().to_string(), b.display().to_string());
    let c = crate::compare::compare(&ra, &rb, (&labels.0, &labels.1), noise_pct / 100.0);
    if c.runs.is_empty() {
        return Err(FileError::NoCommonCopies {
            a_copies: ra.runs.iter().map(|r| r.copies).collect(),
            b_copies: rb.runs.iter().map(|r| r.copies).collect(),
            a: labels.0,
            b: labels.1,
        });
    }
    Ok(c)
}
