//! Tests of opening, checking and bounded reading against real files, a
//! real named pipe, `/dev/zero`, `/dev/null` and a directory.

use std::io::{Read, Seek, SeekFrom, Write};
use std::time::Duration;

use super::*;

fn name() -> Name {
    Name::new("the --targets file")
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path in a temporary directory of ours.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_regular_file_is_read_whole_within_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(&p, "GET http://a/\n").unwrap();
    assert_eq!(read(&p, name(), 14).unwrap(), b"GET http://a/\n");
    assert_eq!(read_text(&p, name(), 100).unwrap(), "GET http://a/\n");
    assert_eq!(open(&p, name()).unwrap().size(), 14);
}

#[test]
fn a_file_over_its_limit_is_refused_with_its_size_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("body");
    std::fs::write(&p, vec![b'x'; 3 << 20]).unwrap();
    let e = read(&p, Name::new("the -p file"), 2 << 20).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the -p file '{}' is 3145728 bytes, more than the 2 MiB limit: give a smaller file",
            p.display()
        )
    );
}

#[test]
fn a_file_that_grows_while_read_is_not_read_past_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("log");
    std::fs::write(&p, b"12345").unwrap();
    let input = open(&p, name()).unwrap();
    let mut w = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    w.write_all(b"6789").unwrap();
    let e = input.read_all(6).unwrap_err();
    assert!(
        matches!(
            e,
            InputError::TooLarge {
                size: None,
                limit: 6,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("grew past the 6 bytes limit while read"),
        "{e}"
    );
    let shared = open(&p, name()).unwrap().shared();
    w.write_all(b"more").unwrap();
    let mut all = String::new();
    shared.part().read_to_string(&mut all).unwrap();
    assert_eq!(all, "123456789", "a part stops at the size when opened");
}

#[test]
fn a_named_pipe_no_one_writes_to_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("fifo");
    mkfifo(&p);
    let (tx, rx) = std::sync::mpsc::channel();
    let q = p.clone();
    std::thread::spawn(move || tx.send(open(&q, name().or_stdin()).map(|_| ())));
    let Ok(got) = rx.recv_timeout(Duration::from_secs(30)) else {
        // Unblock the open that waits for a writer, then fail.
        drop(std::fs::OpenOptions::new().write(true).open(&p));
        panic!("opening a FIFO waited for a writer");
    };
    assert_eq!(
        got.unwrap_err().to_string(),
        format!(
            "the --targets file '{}' is not a regular file but a named pipe (FIFO): give a regular file, or '-' and its contents on standard input",
            p.display()
        )
    );
}

#[test]
fn devices_and_directories_are_refused_and_dev_null_is_empty() {
    let e = open(Path::new("/dev/zero"), name()).unwrap_err();
    assert!(
        matches!(
            e,
            InputError::NotAFile {
                kind: Kind::CharDevice,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "the --targets file '/dev/zero' is not a regular file but a character device: give a regular file"
    );
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path(), name()).unwrap_err();
    assert!(
        matches!(
            e,
            InputError::NotAFile {
                kind: Kind::Directory,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(read(Path::new("/dev/null"), name(), 0).unwrap(), b"");
}

#[test]
fn a_missing_file_says_so_and_is_no_error_to_check_if_there() {
    let p = Path::new("/nonexistent/kurabe-input");
    let e = open(p, Name::new("the log")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cannot read the log '/nonexistent/kurabe-input': check the path ("),
        "{e}"
    );
    assert_eq!(check_if_there(p, name()).unwrap(), None);
    assert!(check_if_there(Path::new("/dev/zero"), name()).is_err());
}

#[test]
fn text_that_is_not_utf8_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plan.toml");
    std::fs::write(&p, b"a\nb\n\xff\n").unwrap();
    let e = read_text(&p, Name::new("plan"), 100).unwrap_err();
    assert!(
        e.to_string()
            .ends_with(":3: invalid UTF-8: give a UTF-8 text file"),
        "{e}"
    );
}

#[test]
fn parts_read_and_seek_by_offset_each_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    std::fs::write(&p, b"0123456789").unwrap();
    let shared = open(&p, name()).unwrap().shared();
    let (mut a, mut b) = (shared.range(2, 5), shared.part());
    let mut s = String::new();
    a.read_to_string(&mut s).unwrap();
    assert_eq!(s, "234");
    b.seek(SeekFrom::Start(7)).unwrap();
    s.clear();
    b.read_to_string(&mut s).unwrap();
    assert_eq!(s, "789");
    assert_eq!(b.seek(SeekFrom::End(-1)).unwrap(), 9);
    assert!(b.seek(SeekFrom::Current(-20)).is_err());
}

#[test]
fn limits_are_said_the_way_people_say_them() {
    let said: Vec<String> = [64 << 20, 1 << 20, 4096, 1000, 1 << 30]
        .iter()
        .map(|b| Bytes(*b).to_string())
        .collect();
    assert_eq!(said, ["64 MiB", "1 MiB", "4 KiB", "1000 bytes", "1 GiB"]);
}

#[test]
fn a_file_made_to_stop_fails_its_next_read_once_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("log");
    std::fs::write(&p, vec![b'x'; 1 << 16]).unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let plain = open(&p, name()).unwrap().shared();
    let stopping = plain.stopping_on(Arc::clone(&flag));
    let (mut part, mut other) = (stopping.part(), plain.part());
    let mut buf = [0u8; 4096];
    assert_eq!(part.read(&mut buf).unwrap(), 4096);
    flag.store(true, Ordering::Relaxed);
    let e = part.read(&mut buf).unwrap_err();
    assert!(is_stopped(&e), "{e}");
    assert!(is_stopped(
        &stopping.range(0, 10).read(&mut buf).unwrap_err()
    ));
    assert!(!is_stopped(&io::Error::other("x")));
    // The file itself, and parts not made to stop, read on.
    assert_eq!(other.read(&mut buf).unwrap(), 4096);
}
