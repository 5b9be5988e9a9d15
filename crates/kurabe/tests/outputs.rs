//! Output files under abuse (issue 16 rows 1, 2, 11): devices, FIFOs and
//! symlinks are written in place or followed, never replaced; temp files are
//! unpredictable and exclusive; a bad output location fails before the load.
//! Devices are private nodes made with mknod in a temp dir (needs root: the
//! tests that need it say so and skip otherwise), never anything in /dev.

use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, FileTypeExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::serve::ServeChild;
use crate::util::kurabe;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// mknod(2) a character device `major:minor` at `path`.
fn mknod_char(path: &Path, major: u32, minor: u32) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string; makedev/mknod have no other preconditions.
    let rc = unsafe {
        libc::mknod(
            c.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(major, minor),
        )
    };
    assert_eq!(rc, 0, "mknod {}", path.display());
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn http(args: &[&str]) -> Output {
    kurabe().arg("http").arg("-q").args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn char_devices_are_written_in_place_never_replaced() {
    if !is_root() {
        eprintln!("skipped: mknod needs root");
        return;
    }
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let null = dir.path().join("null");
    let full = dir.path().join("full");
    mknod_char(&null, 1, 3);
    mknod_char(&full, 1, 7);
    let ok = http(&["-n", "5", "-o", null.to_str().unwrap(), &server.url]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let bad = http(&["-n", "5", "-o", full.to_str().unwrap(), &server.url]);
    assert_eq!(bad.status.code(), Some(2), "a full device is an error");
    assert!(
        stderr(&bad).contains("No space left on device"),
        "{}",
        stderr(&bad)
    );
    for dev in [&null, &full] {
        let meta = std::fs::symlink_metadata(dev).unwrap();
        assert!(
            meta.file_type().is_char_device(),
            "{} was replaced",
            dev.display()
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temp files"
    );
}

#[test]
fn a_fifo_is_written_in_place_and_a_symlink_is_followed() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            std::fs::File::open(fifo)
                .unwrap()
                .read_to_string(&mut s)
                .unwrap();
            s
        })
    };
    let out = http(&[
        "-n",
        "5",
        "--format",
        "json",
        "-o",
        fifo.to_str().unwrap(),
        &server.url,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let through_fifo = reader.join().unwrap();
    assert!(
        through_fifo.contains("\"complete_requests\": 5"),
        "{through_fifo}"
    );
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    let target = dir.path().join("target.json");
    let link = dir.path().join("link.json");
    std::fs::write(&target, "old").unwrap();
    symlink(&target, &link).unwrap();
    let out = http(&[
        "-n",
        "5",
        "--format",
        "json",
        "-o",
        link.to_str().unwrap(),
        &server.url,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let written = std::fs::read_to_string(&target).unwrap();
    assert!(written.contains("\"complete_requests\": 5"), "{written}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        3,
        "no temp files"
    );
}

/// Row 2: the names the old writers used (`.NAME.kurabe-PID.tmp`,
/// `.NAME.tmp-PID`, `NAME.tmp.PID`) are planted as symlinks to a victim
/// while kurabe runs (it waits on a `-g` FIFO, so its PID is known first):
/// the victim stays untouched.
#[test]
fn planted_temp_name_symlinks_do_not_redirect_the_write() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let fifo = dir.path().join("plot.fifo");
    mkfifo(&fifo);
    let report = dir.path().join("report.csv");
    let child = kurabe()
        .args(["http", "-q", "-n", "5", "-o", report.to_str().unwrap()])
        .args(["-g", fifo.to_str().unwrap(), &server.url])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    for name in [
        format!(".report.csv.kurabe-{pid}.tmp"),
        format!(".report.csv.tmp-{pid}"),
        format!("report.tmp.{pid}"),
    ] {
        symlink(&victim, dir.path().join(name)).unwrap();
    }
    let mut plot = String::new();
    std::fs::File::open(&fifo)
        .unwrap()
        .read_to_string(&mut plot)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(plot.lines().count(), 6, "header + 5 lines:\n{plot}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let report_meta = std::fs::symlink_metadata(&report).unwrap();
    assert!(report_meta.is_file());
    assert!(std::fs::read_to_string(&report)
        .unwrap()
        .contains("Complete requests"));
}

/// Row 11: a bad output location is one line and exit 2 before any load
/// (the server sees no request, although `-t 60` asked for a minute).
#[test]
fn bad_output_locations_fail_before_the_load() {
    let server = ServeChild::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir/x");
    let missing = missing.to_str().unwrap();
    for flag in ["-o", "-e", "-g"] {
        let out = http(&["-t", "60", flag, missing, &server.url]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(flag) && err.contains("does not exist"),
            "{err}"
        );
    }
    let out = http(&["-t", "60", "-o", dir.path().to_str().unwrap(), &server.url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is a directory"), "{}", stderr(&out));
    assert_eq!(server.served(), 0, "no load before the outputs are checked");
}

#[test]
fn run_and_watch_check_their_outputs_first() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "name = \"p\"\n[[variant]]\nname = \"a\"\n[[workload]]\nname = \"w\"\ncommand = { command = \"touch ran\", runs = 1 }\n",
    )
    .unwrap();
    let store = dir.path().join("store.db");
    for flag in ["-o", "--html"] {
        let out = kurabe()
            .args([
                "run",
                "-q",
                "--store",
                store.to_str().unwrap(),
                flag,
                "/nonexistent-dir/r",
            ])
            .arg(&plan)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(flag), "{}", stderr(&out));
    }
    assert!(!dir.path().join("ran").exists(), "the plan did not run");
    // watch -o DIR: one line naming DIR, no DIR.tmp.PID left, the command not started.
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kurabe"))
        .args(["watch", "-o", out_dir.to_str().unwrap(), "--", "touch"])
        .arg(dir.path().join("watched"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("'{}' is a directory", out_dir.display())));
    assert!(
        !dir.path().join("watched").exists(),
        "the command was not started"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp")), "{names:?}");
}

/// With no response at all there are no latencies: `-e` and `-g` write
/// nothing (the old files stay) and say so, instead of "50,0.000".
#[test]
fn percentile_and_gnuplot_files_are_not_made_up_when_nothing_answered() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("p.csv");
    let plot = dir.path().join("p.tsv");
    std::fs::write(&csv, "old csv").unwrap();
    std::fs::write(&plot, "old plot").unwrap();
    let out = http(&[
        "-n",
        "3",
        "-e",
        csv.to_str().unwrap(),
        "-g",
        plot.to_str().unwrap(),
        &url,
    ]);
    let err = stderr(&out);
    assert!(err.contains("-e file not written"), "{err}");
    assert!(err.contains("-g file not written"), "{err}");
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "old csv");
    assert_eq!(std::fs::read_to_string(&plot).unwrap(), "old plot");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temp files"
    );
}

/// A page of `kurabe site` that is a FIFO with a reader waiting: the site
/// writes the page to it (before, it first read the FIFO to compare the
/// page with what was there, and both sides waited for ever).
#[test]
fn a_site_page_that_is_a_fifo_is_written_to_its_reader() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let export = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/report-demo-export.json");
    let (code, err) = crate::util::refused_within(
        &[
            "results",
            "--store",
            store.to_str().unwrap(),
            "import",
            export.to_str().unwrap(),
        ],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{err}");
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    let page = site.join("index.html");
    mkfifo(&page);
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::fs::File::open(&page)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        text
    });
    let (code, err) = crate::util::refused_within(
        &[
            "site",
            "--store",
            store.to_str().unwrap(),
            "-o",
            site.to_str().unwrap(),
        ],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{err}");
    let text = reader.join().unwrap();
    assert!(text.contains("<html"), "{text}");
}
