//! The one file writer: every output kurabe writes (`-o`, `-e`, `-g`,
//! `--html`, `watch -o DIR`, exports) goes through here.
//!
//! Owns where bytes land and how: a regular file is replaced atomically (a
//! temp file created exclusively, with an unpredictable name, in the same
//! directory — `tempfile`'s `O_EXCL`, no symlink followed — then renamed over
//! it), so readers see the old file or the complete new one. Anything that is
//! not a regular file (a FIFO, a character device, `/dev/stdout`) is written
//! in place: replacing it would break it for everyone. A symlink is followed:
//! its target is written and the link stays. Nothing under `/dev` or `/proc`
//! ever gets a temp file beside it.
//!
//! A report without `-o` goes to stdout ([`write_output`]), coloured only
//! where stdout is a terminal that wants it ([`colour_for`]); a run's log
//! (ab's `-v`) where ab prints it ([`write_log`]).
//!
//! Must not render (a renderer is handed in, [`write_rendered`]) or
//! decide what to write; it only puts bytes in place.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// Why an output file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The path names a directory.
    #[error("'{}' is a directory: give a file name", path.display())]
    IsDirectory {
        /// The path as given.
        path: PathBuf,
    },
    /// The directory the file would go into does not exist.
    #[error("cannot write '{}': the directory '{}' does not exist", path.display(), dir.display())]
    NoDirectory {
        /// The path as given.
        path: PathBuf,
        /// Its parent directory.
        dir: PathBuf,
    },
    /// The system refused (permissions, full disk, read-only file system …).
    #[error("cannot write '{}'", path.display())]
    Io {
        /// The path as given (never the temp file's).
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
}

/// How a path is written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Destination {
    /// Replace this regular file (or create it) through a temp file beside it.
    Replace(PathBuf),
    /// Open and write this path as it is: a device, a FIFO, a magic link.
    InPlace(PathBuf),
}

/// Write `bytes` to `path` (see the module header for how).
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_with(path, |w| w.write_all(bytes))
}

/// Write `body` to `path` (`-o FILE`, as [`write_file`] does) or, without
/// one, to stdout.
pub fn write_output(path: Option<&Path>, body: &str) -> Result<(), OutputWriteError> {
    match path {
        None => {
            let mut out = io::stdout().lock();
            let written = out.write_all(body.as_bytes()).and_then(|()| out.flush());
            written.map_err(OutputWriteError::Stdout)
        }
        Some(p) => write_file(p, body.as_bytes())
            .map_err(|source| OutputWriteError::File { flag: "-o", source }),
    }
}

/// Write what `render` makes of `value` to the file `flag` names at
/// `path` (`-e`, `--series-csv`), if one was asked for.
pub fn write_rendered<T: ?Sized>(
    (flag, path): (&'static str, Option<&Path>),
    render: &dyn crate::Render<T>,
    value: &T,
) -> Result<(), OutputWriteError> {
    let Some(path) = path else {
        return Ok(());
    };
    let text = crate::to_string(render, value);
    write_file(path, text.as_bytes()).map_err(|source| OutputWriteError::File { flag, source })
}

/// Write a log `text` (ab's `-v` lines) where ab prints it, stdout,
/// unless the report there is `format` other than text (then stderr, so
/// the document stays parseable). A closed pipe ends the log quietly
/// (the report's own write says so).
pub fn write_log(format: crate::Format, text: &str) {
    let _ = if format == crate::Format::Text {
        io::stdout().lock().write_all(text.as_bytes())
    } else {
        io::stderr().lock().write_all(text.as_bytes())
    };
}

/// Whether a report going to `path` (`None`: stdout) is coloured: only on
/// stdout, when it is a terminal and `NO_COLOR` is unset or empty
/// (no-color.org).
pub fn colour_for(path: Option<&Path>) -> bool {
    path.is_none()
        && io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Why a report could not be written where it was asked to go.
#[derive(Debug, thiserror::Error)]
pub enum OutputWriteError {
    /// The file given with `flag` (`-o`, `--html`) could not be written.
    #[error("{flag}")]
    File {
        /// The flag that named the file.
        flag: &'static str,
        /// Why.
        #[source]
        source: WriteError,
    },
    /// stdout refused the bytes (a closed pipe is the caller's success).
    #[error("cannot write the report to stdout")]
    Stdout(#[source] io::Error),
}

/// Write what `fill` produces to `path`; on any error the old file stays.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), WriteError> {
    let pending = Pending::begin(path)?;
    let mut buffered = BufWriter::new(pending.file());
    let written = fill(&mut buffered).and_then(|()| buffered.flush());
    drop(buffered);
    written.map_err(|source| io_error(path, source))?;
    pending.commit()
}

/// Write `bytes` to `path` only when the file does not already hold
/// exactly them (a static site regenerates incrementally: an unchanged page
/// keeps its time stamp, so rsync and browser caches see nothing new);
/// true when it wrote.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool, WriteError> {
    if holds_exactly(path, bytes) {
        return Ok(false);
    }
    write_file(path, bytes)?;
    Ok(true)
}

/// True when `path` is a regular file of exactly `bytes`. Only a regular
/// file of the same length is read: a named pipe there would block the
/// read until someone writes to it (and its reader waits for us), and a
/// large file would be read whole for nothing.
fn holds_exactly(path: &Path, bytes: &[u8]) -> bool {
    let same_size =
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64);
    same_size && std::fs::read(path).is_ok_and(|old| old == bytes)
}

/// Check, before any work starts, that `path` can be written: its directory
/// exists and takes new files, and it is not a directory itself. Creates
/// and removes one temp file; never touches `path`.
pub fn check_writable(path: &Path) -> Result<(), WriteError> {
    match destination(path)? {
        Destination::Replace(real) => {
            let dir = parent_dir(path, &real)?;
            NamedTempFile::new_in(dir)
                .map(drop)
                .map_err(|source| io_error(path, source))
        }
        // A FIFO would block on open until a reader comes; the device or
        // link exists, which is what can be checked without side effects.
        Destination::InPlace(_) => Ok(()),
    }
}

/// [`check_writable`] for every output location (`flag`, path) given, the
/// first failure naming its flag: a typo in `-o` costs one line, not the
/// whole measurement.
pub fn check_outputs(outputs: &[(&str, Option<&Path>)]) -> Result<(), OutputError> {
    for (flag, path) in outputs {
        if let Some(path) = path {
            check_writable(path).map_err(|e| OutputError(format!("{flag}: {e}")))?;
        }
    }
    Ok(())
}

/// An output location that cannot be written, with its flag.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct OutputError(String);

/// An output file being written: a temp file until [`Pending::commit`], or
/// the device/FIFO itself. Dropped without commit, a temp file is removed and
/// the old file stays as it was.
#[derive(Debug)]
pub struct Pending {
    path: PathBuf,
    target: Target,
}

#[derive(Debug)]
enum Target {
    Temp { file: NamedTempFile, real: PathBuf },
    InPlace(File),
}

impl Pending {
    /// Start writing `path`: creates the temp file (or opens the device) now,
    /// so a bad location fails before any work.
    pub fn begin(path: &Path) -> Result<Pending, WriteError> {
        let target = match destination(path)? {
            Destination::Replace(real) => Target::Temp {
                file: temp_beside(path, &real)?,
                real,
            },
            Destination::InPlace(p) => Target::InPlace(
                OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&p)
                    .map_err(|source| io_error(path, source))?,
            ),
        };
        Ok(Pending {
            path: path.to_owned(),
            target,
        })
    }

    /// The open file to write to.
    pub fn file(&self) -> &File {
        match &self.target {
            Target::Temp { file, .. } => file.as_file(),
            Target::InPlace(f) => f,
        }
    }

    /// Put the written bytes in place: sync and rename over the target.
    pub fn commit(self) -> Result<(), WriteError> {
        let path = self.path;
        match self.target {
            Target::Temp { file, real } => {
                file.as_file()
                    .sync_all()
                    .map_err(|source| io_error(&path, source))?;
                file.persist(&real)
                    .map(drop)
                    .map_err(|e| io_error(&path, e.error))
            }
            Target::InPlace(_) => Ok(()),
        }
    }
}

/// Decide how `path` is written, following symlinks to their target.
fn destination(path: &Path) -> Result<Destination, WriteError> {
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(classify_new(path));
        }
        Err(source) => return Err(io_error(path, source)),
        Ok(m) => m,
    };
    if meta.file_type().is_symlink() {
        return match std::fs::canonicalize(path) {
            // `/dev/stdout` onto a pipe resolves to "pipe:[…]", a dangling
            // name: only the link itself can be opened.
            Err(_) => Ok(Destination::InPlace(path.to_owned())),
            Ok(_) if in_system_dir(path) => Ok(Destination::InPlace(path.to_owned())),
            Ok(real) => classify_existing(path, &real),
        };
    }
    classify_existing(path, path)
}

/// A path that does not exist yet: a new regular file, unless in /dev or /proc.
fn classify_new(path: &Path) -> Destination {
    if in_system_dir(path) {
        Destination::InPlace(path.to_owned())
    } else {
        Destination::Replace(path.to_owned())
    }
}

/// `real` exists (it is `path` or the target of the link `path`).
fn classify_existing(path: &Path, real: &Path) -> Result<Destination, WriteError> {
    let meta = std::fs::metadata(real).map_err(|source| io_error(path, source))?;
    if meta.is_dir() {
        return Err(WriteError::IsDirectory {
            path: path.to_owned(),
        });
    }
    if meta.is_file() && !in_system_dir(real) {
        Ok(Destination::Replace(real.to_owned()))
    } else {
        Ok(Destination::InPlace(real.to_owned()))
    }
}

/// Under `/dev` or `/proc` (made absolute first): never a temp file there.
fn in_system_dir(path: &Path) -> bool {
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        match std::env::current_dir() {
            Ok(d) => d.join(path),
            Err(_) => return false,
        }
    };
    absolute.starts_with("/dev") || absolute.starts_with("/proc")
}

/// The directory `real` goes into, which must exist.
fn parent_dir<'a>(path: &Path, real: &'a Path) -> Result<&'a Path, WriteError> {
    let dir = match real.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(WriteError::NoDirectory {
            path: path.to_owned(),
            dir: dir.to_owned(),
        })
    }
}

/// A temp file beside `real`, created exclusively with a random name, with
/// the mode the final file should have: the old file's, else 0666 less umask.
fn temp_beside(path: &Path, real: &Path) -> Result<NamedTempFile, WriteError> {
    let dir = parent_dir(path, real)?;
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let old_mode = std::fs::metadata(real).ok().map(|m| m.permissions().mode());
    let file = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".kurabe-tmp")
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|source| io_error(path, source))?;
    if let Some(mode) = old_mode {
        // Replacing a file keeps its permissions (umask applied to the new one).
        file.as_file()
            .set_permissions(Permissions::from_mode(mode & 0o7777))
            .map_err(|source| io_error(path, source))?;
    }
    Ok(file)
}

fn io_error(path: &Path, source: io::Error) -> WriteError {
    WriteError::Io {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn replaces_a_regular_file_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        std::fs::write(&path, "old").unwrap();
        write_file(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_fill_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        std::fs::write(&path, "old").unwrap();
        let err = write_with(&path, |_| Err(io::Error::other("render failed"))).unwrap_err();
        assert!(err.to_string().contains("out.csv"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_symlink_is_followed_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        let link = dir.path().join("link.txt");
        std::fs::write(&target, "old").unwrap();
        symlink(&target, &link).unwrap();
        write_file(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn devices_and_proc_are_written_in_place() {
        assert_eq!(
            destination(Path::new("/dev/null")).unwrap(),
            Destination::InPlace("/dev/null".into())
        );
        assert!(matches!(
            destination(Path::new("/dev/stdout")).unwrap(),
            Destination::InPlace(_)
        ));
        assert_eq!(
            classify_new(Path::new("/dev/new-file")),
            Destination::InPlace("/dev/new-file".into())
        );
    }

    #[test]
    fn missing_directories_and_directories_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope/x.csv");
        let err = check_writable(&missing).unwrap_err();
        assert!(matches!(err, WriteError::NoDirectory { .. }), "{err}");
        let err = check_writable(dir.path()).unwrap_err();
        assert!(matches!(err, WriteError::IsDirectory { .. }), "{err}");
        assert!(check_writable(&dir.path().join("x.csv")).is_ok());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// `-o FILE` gets the file and the error names the flag, as the one
    /// error line shows it ("-o: 'DIR' is a directory: give a file name");
    /// a report going to a file is never coloured.
    #[test]
    fn output_to_a_file_names_its_flag_and_takes_no_colour() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.txt");
        write_output(Some(&path), "body\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "body\n");
        let err = write_output(Some(dir.path()), "body\n").unwrap_err();
        let line = crate::error_text::error_line(&err);
        assert!(
            line.starts_with("-o: '") && line.ends_with("is a directory: give a file name"),
            "{line}"
        );
        assert!(!colour_for(Some(&path)));
    }

    #[test]
    fn replacing_keeps_the_old_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o640)).unwrap();
        write_file(&path, b"new").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }
}
