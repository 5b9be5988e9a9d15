//! Hostile and careless input (issue 16): header injection, plan size,
//! removing a running experiment, shell quoting, descriptor limits, limits.

use std::process::Output;

use crate::serve::ServeChild;
use crate::util::kurabe;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit 2 with one `kurabe: error:` line containing `needle`.
fn assert_one_line_error(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("kurabe: error:") && err.contains(needle),
        "{err}"
    );
}

/// Row 4: CR/LF/NUL in any header source is refused before any load.
#[test]
fn header_injection_is_refused_from_every_source() {
    let server = ServeChild::start(&[]);
    let url = server.url.as_str();
    for (args, needle) in [
        (vec!["-C", "a=b\r\nX-Inj: 1"], "-C"),
        (
            vec!["-T", "text/plain\r\nX-Inj: 1", "-p", "/dev/null"],
            "-T",
        ),
        (vec!["-H", "X-A: a\x01b"], "-H"),
        (vec!["-H", "X A: b"], "-H"),
    ] {
        let out = kurabe()
            .args(["http", "-q", "-n", "1"])
            .args(&args)
            .arg(url)
            .output()
            .unwrap();
        assert_one_line_error(&out, needle);
    }
    let dir = tempfile::tempdir().unwrap();
    for (field, value) in [
        ("headers", r#"{ "X-A" = "a\r\nX-Inj: 1" }"#),
        ("headers", r#"{ "X A" = "1" }"#),
        ("headers", r#"{ "X-A" = "a\u0000b" }"#),
        ("cookies", r#"["a=b\r\nX-Inj: 1"]"#),
        ("content_type", r#""text/plain\nX-Inj: 1""#),
    ] {
        let plan = dir.path().join("plan.toml");
        std::fs::write(
            &plan,
            format!(
                "name = \"p\"\n[[variant]]\nname = \"a\"\n[[workload]]\nname = \"w\"\n\
                 http = {{ url = \"{url}\", requests = 1, {field} = {value} }}\n"
            ),
        )
        .unwrap();
        let out = kurabe()
            .args(["run", "-q", "--store"])
            .arg(dir.path().join("r.db"))
            .arg(&plan)
            .output()
            .unwrap();
        assert_one_line_error(&out, &format!("http.{field}"));
    }
    assert_eq!(server.served(), 0, "nothing reached the server");
}
