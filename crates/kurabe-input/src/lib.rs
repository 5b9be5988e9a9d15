//! kurabe's input files, in one place: every file a user names for kurabe
//! to read (request sets, URL lists, body files, replay logs and HAR
//! files, plans, imported reports, exports) is opened here once, checked
//! on the opened descriptor to be a regular file, and read with a bound.
//!
//! Why on the descriptor: a path checked, then opened, can change in
//! between. Why `O_NONBLOCK`: opening a named pipe no one writes to waits
//! for ever, so the file is opened without waiting and the flag cleared
//! once it is known to be a regular file. A directory, a named pipe, a
//! device or a socket is refused in one line naming the path and what it
//! is ([`InputError::NotAFile`]); `/dev/null` is read as an empty file
//! (the usual way to say "nothing"). A file larger than its reader's limit
//! is refused with its size and the limit ([`InputError::TooLarge`]), and
//! no read goes past the limit ([`Input::read_all`]) or past the size the
//! file had when opened ([`Shared::part`]), so a file that grows meanwhile
//! cannot make kurabe hold more.
//!
//! A read can be given up: a [`Shared`] file made to stop on a flag
//! ([`Shared::stopping_on`], a `kurabe_stop::Stop`'s) fails each read of
//! its parts once the flag is set ([`is_stopped`]), so a parser that reads
//! by blocks or lines stops within one of them (a cancelled fleet share's
//! reader does not keep its CPU until the file's end).
//!
//! Owns opening, checking and bounded reading, and their messages. Must
//! not parse what it reads, know which setting names which file (callers
//! pass a [`Name`]), or read standard input (each caller keeps its own
//! streaming path for `-`).

use std::fmt;
use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How a setting's file is called in messages ("the --targets file",
/// "plan"), and whether the setting takes `-` for standard input (said
/// in the fix when a pipe or a device is refused).
#[derive(Debug, Clone)]
pub struct Name {
    what: String,
    stdin: bool,
}

impl Name {
    /// The file a setting calls `what`.
    pub fn new(what: impl Into<String>) -> Name {
        Name {
            what: what.into(),
            stdin: false,
        }
    }

    /// The same, for a setting where `-` reads standard input.
    pub fn or_stdin(self) -> Name {
        Name {
            stdin: true,
            ..self
        }
    }
}

/// What a path is when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Directory,
    /// A named pipe (FIFO).
    Fifo,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// A Unix socket.
    Socket,
}

impl Kind {
    fn of(m: &Metadata) -> Kind {
        let t = m.file_type();
        if t.is_dir() {
            Kind::Directory
        } else if t.is_fifo() {
            Kind::Fifo
        } else if t.is_block_device() {
            Kind::BlockDevice
        } else if t.is_socket() {
            Kind::Socket
        } else {
            Kind::CharDevice
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Directory => "a directory",
            Kind::Fifo => "a named pipe (FIFO)",
            Kind::CharDevice => "a character device",
            Kind::BlockDevice => "a block device",
            Kind::Socket => "a socket",
        })
    }
}

/// An input file that cannot be read, as one line: the setting's name
/// for the file, its path, what is wrong and what to do.
#[derive(Debug)]
pub enum InputError {
    /// The path cannot be opened (missing, no permission).
    Open {
        /// The setting's name for the file.
        name: Name,
        /// The path as given.
        path: PathBuf,
        /// Why.
        err: io::Error,
    },
    /// The path is not a regular file.
    NotAFile {
        /// The setting's name for the file.
        name: Name,
        /// The path as given.
        path: PathBuf,
        /// What it is.
        kind: Kind,
    },
    /// The file is larger than its reader's limit.
    TooLarge {
        /// The setting's name for the file.
        name: Name,
        /// The path as given.
        path: PathBuf,
        /// Its size in bytes when opened, or `None` when it grew past
        /// the limit while read.
        size: Option<u64>,
        /// The limit in bytes.
        limit: u64,
    },
    /// A read failed.
    Read {
        /// The setting's name for the file.
        name: Name,
        /// The path as given.
        path: PathBuf,
        /// Why.
        err: io::Error,
    },
    /// The file is not UTF-8 text where text is wanted.
    NotText {
        /// The setting's name for the file.
        name: Name,
        /// The path as given.
        path: PathBuf,
        /// The 1-based line of the first byte that is not UTF-8.
        line: usize,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Open { name, path, err } => {
                let p = path.display();
                write!(f, "cannot read {} '{p}': check the path ({err})", name.what)
            }
            InputError::NotAFile { name, path, kind } => {
                let p = path.display();
                write!(
                    f,
                    "{} '{p}' is not a regular file but {kind}: give a regular file",
                    name.what
                )?;
                if name.stdin {
                    f.write_str(", or '-' and its contents on standard input")?;
                }
                Ok(())
            }
            InputError::TooLarge {
                name,
                path,
                size,
                limit,
            } => {
                let (p, l) = (path.display(), Bytes(*limit));
                match size {
                    Some(s) => write!(f, "{} '{p}' is {s} bytes, more than the {l} limit: give a smaller file", name.what),
                    None => write!(f, "{} '{p}' grew past the {l} limit while read: give a file that is not being written", name.what),
                }
            }
            InputError::Read { name, path, err } => {
                write!(f, "cannot read {} '{}': {err}", name.what, path.display())
            }
            InputError::NotText { name, path, line } => {
                let p = path.display();
                write!(
                    f,
                    "{} '{p}':{line}: invalid UTF-8: give a UTF-8 text file",
                    name.what
                )
            }
        }
    }
}

impl std::error::Error for InputError {}

/// A limit as people say it: "64 MiB", "1 MiB", else bytes.
#[derive(Debug, Clone, Copy)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("0 bytes"),
            b if b % (1 << 30) == 0 => write!(f, "{} GiB", b >> 30),
            b if b % (1 << 20) == 0 => write!(f, "{} MiB", b >> 20),
            b if b % (1 << 10) == 0 => write!(f, "{} KiB", b >> 10),
            b => write!(f, "{b} bytes"),
        }
    }
}

/// An input file, open and checked: a regular file (or `/dev/null`) and
/// its size when opened.
#[derive(Debug)]
pub struct Input {
    file: File,
    size: u64,
    name: Name,
    path: PathBuf,
}

/// Open the file at `path` that a setting calls `name`, without waiting
/// (a named pipe no one writes to is refused, not waited on), and check
/// on the open descriptor that it is a regular file or `/dev/null`.
pub fn open(path: &Path, name: Name) -> Result<Input, InputError> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let file = match opened {
        Ok(f) => f,
        Err(err) => {
            return Err(InputError::Open {
                name,
                path: path.to_owned(),
                err,
            })
        }
    };
    let checked = file.metadata().and_then(|m| blocking(&file).map(|()| m));
    let meta = match checked {
        Ok(m) => m,
        Err(err) => {
            return Err(InputError::Read {
                name,
                path: path.to_owned(),
                err,
            })
        }
    };
    if !meta.is_file() && !is_null(&meta) {
        let kind = Kind::of(&meta);
        return Err(InputError::NotAFile {
            name,
            path: path.to_owned(),
            kind,
        });
    }
    Ok(Input {
        size: meta.len(),
        file,
        name,
        path: path.to_owned(),
    })
}

/// [`open`] and [`Input::read_all`]: the whole file, at most `limit` bytes.
pub fn read(path: &Path, name: Name, limit: u64) -> Result<Vec<u8>, InputError> {
    open(path, name)?.read_all(limit)
}

/// [`open`] and [`Input::read_text`]: the whole file as UTF-8 text, at
/// most `limit` bytes.
pub fn read_text(path: &Path, name: Name, limit: u64) -> Result<String, InputError> {
    open(path, name)?.read_text(limit)
}

/// Whether `path` names something other than a regular file: for files
/// another library opens itself (the SQLite store), checked the same way
/// first. `Ok(None)` when nothing is there (the library may create it).
pub fn check_if_there(path: &Path, name: Name) -> Result<Option<u64>, InputError> {
    match open(path, name) {
        Ok(input) => Ok(Some(input.size)),
        Err(InputError::Open { err, .. }) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `/dev/null` (character device 1:3), read as an empty file.
fn is_null(m: &Metadata) -> bool {
    m.file_type().is_char_device() && m.rdev() == libc::makedev(1, 3)
}

/// Clear `O_NONBLOCK` on `f` (opened with it so that opening could not wait).
fn blocking(f: &File) -> io::Result<()> {
    let fd = f.as_raw_fd();
    // SAFETY: fcntl(F_GETFL) on a descriptor `f` owns; no pointers.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fcntl(F_SETFL) on the same descriptor with an int argument.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Input {
    /// The file's size when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `Err(TooLarge)` when the file was larger than `limit` when opened.
    pub fn within(&self, limit: u64) -> Result<(), InputError> {
        if self.size > limit {
            return Err(self.too_large(Some(self.size), limit));
        }
        Ok(())
    }

    /// The error of this file found larger than `limit` (`size`: its
    /// size, `None` when it grew past the limit while read).
    pub fn too_large(&self, size: Option<u64>, limit: u64) -> InputError {
        InputError::TooLarge {
            name: self.name.clone(),
            path: self.path.clone(),
            size,
            limit,
        }
    }

    /// The whole file, refused when larger than `limit` bytes: when
    /// opened, or by the time it is read (at most `limit + 1` bytes are).
    pub fn read_all(self, limit: u64) -> Result<Vec<u8>, InputError> {
        self.within(limit)?;
        let mut buf = Vec::with_capacity(usize::try_from(self.size).unwrap_or(0));
        if let Err(err) = (&self.file)
            .take(limit.saturating_add(1))
            .read_to_end(&mut buf)
        {
            return Err(InputError::Read {
                name: self.name,
                path: self.path,
                err,
            });
        }
        if buf.len() as u64 > limit {
            return Err(self.too_large(None, limit));
        }
        Ok(buf)
    }

    /// [`Input::read_all`] as UTF-8 text.
    pub fn read_text(self, limit: u64) -> Result<String, InputError> {
        let (name, path) = (self.name.clone(), self.path.clone());
        String::from_utf8(self.read_all(limit)?).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
            InputError::NotText { name, path, line }
        })
    }

    /// The file to be read by parts (by offset, from several readers),
    /// never past its size when opened.
    pub fn shared(self) -> Shared {
        Shared {
            file: Arc::new(self.file),
            size: self.size,
            stop: None,
        }
    }
}

/// Why a read of a part failed when its file was made to stop
/// ([`Shared::stopping_on`]) and the flag is set.
#[derive(Debug)]
struct Stopped;

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the read was given up (stopped)")
    }
}

impl std::error::Error for Stopped {}

/// The error of a read given up on a stop flag, for readers of kurabe's
/// own files (standard input's spool) that stop as a [`Shared`] does.
pub fn stopped() -> io::Error {
    io::Error::other(Stopped)
}

/// Whether `e` is a read given up because its file's stop flag was set.
pub fn is_stopped(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Stopped>())
}

/// An input file open once and read by many [`Part`]s: the passes over
/// a streamed request set, the pieces of a scan on several threads.
#[derive(Debug, Clone)]
pub struct Shared {
    file: Arc<File>,
    size: u64,
    /// Once set, every read of a part fails ([`Shared::stopping_on`]).
    stop: Option<Arc<AtomicBool>>,
}

impl Shared {
    /// A file kurabe made itself (standard input's spool), complete,
    /// shared the same way: its size now is its size.
    pub fn of(file: File) -> io::Result<Shared> {
        let size = file.metadata()?.len();
        Ok(Shared {
            file: Arc::new(file),
            size,
            stop: None,
        })
    }

    /// The same file, whose parts fail each read ([`is_stopped`]) once
    /// `stop` is set: a reader that has been given up ends at its next
    /// read, not at the file's end.
    pub fn stopping_on(&self, stop: Arc<AtomicBool>) -> Shared {
        Shared {
            stop: Some(stop),
            ..self.clone()
        }
    }

    /// The open file, for its metadata (`fstat`) and for reads by offset
    /// below [`Shared::size`].
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Its size when opened: no part reads past it.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// A reader of the whole file (as it was when opened), from its start.
    pub fn part(&self) -> Part {
        self.range(0, self.size)
    }

    /// A reader of bytes `start..end` (cut at the size when opened).
    pub fn range(&self, start: u64, end: u64) -> Part {
        Part {
            file: Arc::clone(&self.file),
            pos: start,
            end: end.min(self.size),
            stop: self.stop.clone(),
        }
    }
}

/// A reader of part of a [`Shared`] file by offset (`pread`): its own
/// position, sharing the open file with every other part.
#[derive(Debug, Clone)]
pub struct Part {
    file: Arc<File>,
    pos: u64,
    end: u64,
    stop: Option<Arc<AtomicBool>>,
}

impl Read for Part {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
        {
            return Err(stopped());
        }
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let n = buf.len().min(left);
        if n == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..n], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Part {
    /// Positions count from the file's start (`End` is the part's end).
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let (base, delta) = match to {
            SeekFrom::Start(n) => (n, 0),
            SeekFrom::End(d) => (self.end, d),
            SeekFrom::Current(d) => (self.pos, d),
        };
        let pos = base.checked_add_signed(delta).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a seek before the file's start",
            )
        })?;
        self.pos = pos;
        Ok(pos)
    }
}

#[cfg(test)]
mod tests;
