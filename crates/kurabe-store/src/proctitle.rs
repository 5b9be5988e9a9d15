//! Keeps store passwords out of the process title.
//!
//! Owns [`hide_passwords`]: `--store postgres://user:PASS@host/db` puts the
//! password into `/proc/PID/cmdline`, which every user of the machine can
//! read (`ps`). As PostgreSQL does for its own process title, kurabe
//! rewrites its original argv strings in place at start-up, after taking its
//! own copy of the arguments: each URL goes through `crate::pg::redact`
//! (`user:***@host`, `password=***`). The kernel shows whatever those bytes
//! hold. Must not change the arguments kurabe itself parses (the binary's
//! `main` collects them first), nor touch anything but the argv area the
//! kernel names.

/// Overwrites every password in this process's argv area (as
/// `/proc/self/cmdline` shows it); returns whether anything was hidden.
/// Call once, first thing in `main`, after collecting `std::env::args_os`:
/// later calls to `args_os` see the hidden form.
pub fn hide_passwords() -> bool {
    let Some((start, end)) = argv_area() else {
        return false;
    };
    // SAFETY: [start, end) is this process's argv strings as the kernel
    // reports them (/proc/self/stat, `arg_start`/`arg_end`): mapped and
    // writable on the initial stack for the life of the process. Nothing
    // holds a Rust reference into it (std reads it only when `args_os` is
    // called, which the caller has done), and kurabe is still single-threaded.
    let area = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
    match hidden(area) {
        Some(new) => {
            area.copy_from_slice(&new);
            true
        }
        None => false,
    }
}

/// `arg_start` and `arg_end` from /proc/self/stat (fields 48 and 49).
fn argv_area() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; fields after it start at 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(48 - 3);
    let start = fields.next()?.parse().ok()?;
    let end: usize = fields.next()?.parse().ok()?;
    (start != 0 && end > start).then_some((start, end))
}

/// The argv area `area` (NUL-separated strings) with every URL's password
/// hidden, padded with NULs to the same length; `None` when nothing needs
/// hiding. A password shorter than `***` is starred in place instead.
fn hidden(area: &[u8]) -> Option<Vec<u8>> {
    let args: Vec<&[u8]> = area.split(|b| *b == 0).collect();
    let redacted: Vec<Vec<u8>> = args.iter().map(|a| redact_arg(a)).collect();
    if redacted.iter().zip(&args).all(|(r, a)| r == a) {
        return None;
    }
    let mut out = redacted.join(&0u8);
    if out.len() > area.len() {
        out = args
            .iter()
            .map(|a| star_arg(a))
            .collect::<Vec<_>>()
            .join(&0u8);
    }
    out.resize(area.len(), 0);
    Some(out)
}

/// One argument with a URL password redacted; unchanged otherwise.
fn redact_arg(arg: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(arg) {
        Ok(s) if s.contains("://") => crate::pg::redact(s).into_bytes(),
        _ => arg.to_vec(),
    }
}

/// One argument with everything after `://` starred when it holds a
/// password (the fallback when the redacted form would not fit).
fn star_arg(arg: &[u8]) -> Vec<u8> {
    if redact_arg(arg) == arg {
        return arg.to_vec();
    }
    let s = std::str::from_utf8(arg).expect("redact_arg changed only UTF-8");
    let keep = s.find("://").map_or(0, |i| i + 3);
    let mut out = arg.to_vec();
    out[keep..].fill(b'*');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area(args: &[&str]) -> Vec<u8> {
        args.iter().flat_map(|a| a.bytes().chain([0])).collect()
    }

    #[test]
    fn passwords_are_redacted_in_place_and_the_rest_kept() {
        let before = area(&[
            "kurabe",
            "worker",
            "--store",
            "postgres://me:hunter2secret@db:5432/k",
        ]);
        let after = hidden(&before).unwrap();
        assert_eq!(after.len(), before.len());
        let text = String::from_utf8(after).unwrap();
        assert!(
            text.starts_with("kurabe\0worker\0--store\0postgres://me:***@db:5432/k\0"),
            "{text:?}"
        );
        assert!(!text.contains("hunter2"));
        let q = area(&["--store=postgres://db/k?password=topsecret&sslmode=require"]);
        let text = String::from_utf8(hidden(&q).unwrap()).unwrap();
        assert!(text.starts_with("--store=postgres://db/k?password=***&sslmode=require\0"));
    }

    #[test]
    fn nothing_to_hide_is_left_alone_and_tiny_passwords_are_starred() {
        assert_eq!(
            hidden(&area(&["kurabe", "http", "http://127.0.0.1:80/"])),
            None
        );
        let tiny = area(&["postgres://u:p@h/d"]);
        let text = String::from_utf8(hidden(&tiny).unwrap()).unwrap();
        assert_eq!(text, "postgres://*******\0");
    }

    #[test]
    fn the_argv_area_of_this_process_is_found() {
        let (start, end) = argv_area().unwrap();
        let cmdline = std::fs::read("/proc/self/cmdline").unwrap();
        assert_eq!(end - start, cmdline.len());
    }
}
