//! The input files a [`LoadSpec`] names (its request set, its body file,
//! its replay's log, its client certificate): what each is called in messages, and [`check_files`],
//! which opens and checks each as `kurabe_input` checks every input (a
//! regular file; a body within [`MAX_BODY_BYTES`]) without reading it, for
//! a caller that checks a spec long before it runs it (a plan, before any
//! target starts): a pipe, a device or a directory is refused before
//! anything runs, in the words the run itself would use.
//!
//! Owns which fields name input files and their names. Must not read a
//! set or a log (the run reads each when it resolves the spec, checking it
//! again on its own descriptor).

use std::path::Path;

use kurabe_input::{InputError, Name};
use kurabe_model::load::LoadSpec;

use crate::request::{Names, MAX_BODY_BYTES};

/// The request set's file (`-`: standard input).
pub(crate) fn targets(n: &Names) -> Name {
    Name::new(format!("the {} file", n.targets)).or_stdin()
}

/// The body file's.
fn body(n: &Names) -> Name {
    Name::new(format!("the {} file", n.body_file))
}

/// The replay's log.
pub(crate) fn log() -> Name {
    Name::new("the log")
}

/// The body file at `path`, at most [`MAX_BODY_BYTES`].
pub(super) fn read_body(path: &Path, n: &Names) -> Result<Vec<u8>, InputError> {
    kurabe_input::read(path, body(n), MAX_BODY_BYTES)
}

/// The body file at `path` opened and checked, not read: a regular file
/// of at most [`MAX_BODY_BYTES`].
pub(super) fn check_body(path: &Path, n: &Names) -> Result<(), InputError> {
    kurabe_input::open(path, body(n))?.within(MAX_BODY_BYTES)
}

/// The largest client certificate file (`-E`: PEM certificates and key).
const MAX_CERT_BYTES: u64 = 1 << 20;

/// The client certificate file opened and checked (rustls reads it by
/// path when the connection is set up): a regular file of at most
/// [`MAX_CERT_BYTES`].
pub(super) fn check_cert(path: &Path, flag: &str) -> Result<(), InputError> {
    let name = Name::new(format!("the {flag} file"));
    kurabe_input::open(path, name)?.within(MAX_CERT_BYTES)
}

/// Every input file `spec` names opened and checked, none read: each a
/// regular file (a set may be `-`), the body within [`MAX_BODY_BYTES`].
/// Paths with a `{placeholder}` are filled only when they run: skipped.
pub fn check_files(spec: &LoadSpec, n: &Names) -> Result<(), InputError> {
    let known = |p: &&Path| !p.to_string_lossy().contains('{');
    let set = spec.targets.as_deref().filter(|p| *p != Path::new("-"));
    if let Some(p) = set.filter(known) {
        kurabe_input::open(p, targets(n))?;
    }
    if let Some(p) = spec.body_file.as_deref().filter(known) {
        check_body(p, n)?;
    }
    if let Some(p) = spec.replay.as_ref().map(|r| r.log.as_path()).filter(known) {
        kurabe_input::open(p, log())?;
    }
    Ok(())
}
