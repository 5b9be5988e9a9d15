//! The per-request breakdown end to end: a request set sent to a private
//! nginx on port 0 by the built binary over two engine threads, each
//! name's counts matched with what nginx's access log says arrived,
//! `--group` folding two URLs into one name, and a target's own
//! `# @check` failing exactly that target's responses.

use std::collections::BTreeMap;
use std::path::Path;

use kurabe_testkit::nginx::{Listen, Nginx};

use crate::http::{http, http_json};

fn nginx(dir: &Path) -> Option<Nginx> {
    let www = dir.join("www");
    std::fs::create_dir_all(www.join("item")).unwrap();
    for (f, body) in [
        ("item/1.html", "one"),
        ("item/2.html", "two"),
        ("b.html", "bb"),
        ("c.html", "ccc"),
    ] {
        std::fs::write(www.join(f), body).unwrap();
    }
    let listens = [Listen {
        addr: "127.0.0.1",
        params: "",
    }];
    Nginx::start(dir, 1, &listens, &format!("root {};", www.display()))
}

/// nginx's access log: requests by path.
fn logged(dir: &Path, ng: &Nginx, total: u64) -> BTreeMap<String, u64> {
    assert_eq!(ng.logged("\""), total);
    let text = std::fs::read_to_string(dir.join("access.log")).unwrap();
    let mut by = BTreeMap::new();
    for line in text.lines() {
        let request = line.split('"').nth(1).unwrap_or_default();
        let path = request.split(' ').nth(1).unwrap_or_default().to_owned();
        *by.entry(path).or_insert(0) += 1;
    }
    by
}

#[test]
fn each_name_counts_what_the_server_saw_with_groups_and_target_checks() {
    let dir = tempfile::tempdir().unwrap();
    let Some(ng) = nginx(dir.path()) else {
        return;
    };
    let port = ng.ports()[0];
    let set = format!(
        "GET http://127.0.0.1:{port}/item/1.html\n\n\
         GET http://127.0.0.1:{port}/item/2.html\n\n\
         # @name bee\nGET http://127.0.0.1:{port}/b.html\n\n\
         # @check body~^zzz\nGET http://127.0.0.1:{port}/c.html\n"
    );
    let file = dir.path().join("set.txt");
    std::fs::write(&file, set).unwrap();
    let file = file.display().to_string();
    let args = [
        "--targets",
        &file,
        "-k",
        "-c",
        "4",
        "--threads",
        "2",
        "-n",
        "400",
        "--group",
        r"/item/\d+\.html$=/item/:id",
        "--check",
        "status==200",
    ];
    let r = http_json(&args);
    let log = logged(dir.path(), &ng, 400);
    let names: Vec<&str> = r.requests.iter().map(|q| q.name.as_str()).collect();
    let c_url = format!("http://127.0.0.1:{port}/c.html");
    assert_eq!(names, ["/item/:id", "bee", c_url.as_str()]);
    let sent = |paths: &[&str]| -> u64 { paths.iter().map(|p| log[*p]).sum() };
    let (item, bee, c) = (&r.requests[0], &r.requests[1], &r.requests[2]);
    assert_eq!(
        item.complete_requests,
        sent(&["/item/1.html", "/item/2.html"])
    );
    assert_eq!(bee.complete_requests, sent(&["/b.html"]));
    assert_eq!(item.status_codes.get("200"), Some(&item.complete_requests));
    assert_eq!(item.body_bytes, 3 * item.complete_requests);
    // The target's own check fails all its responses, the run's passes them.
    assert_eq!(
        (c.complete_requests, c.failures.check),
        (0, sent(&["/c.html"]))
    );
    assert_eq!(c.failed_requests, c.failures.check);
    assert_eq!(r.failures.check, c.failures.check);
    assert_eq!(
        sent(&["/item/1.html", "/item/2.html", "/b.html", "/c.html"]),
        400
    );
    assert_eq!(r.checks, ["status==200", "body~^zzz"]);
    let summary = &r
        .errors
        .iter()
        .find(|e| e.kind == "check")
        .unwrap()
        .first_error;
    assert!(
        summary.starts_with("failed body~^zzz: HTTP/1.1 200 OK (3 body bytes)"),
        "{summary}"
    );
    // The rows add up to the whole, exactly.
    let rows: u64 = r.requests.iter().map(|q| q.complete_requests).sum();
    assert_eq!(rows, r.complete_requests);
    for q in &r.requests[..2] {
        assert!(q.latency_us.p50 > 0 && q.latency_us.max >= q.latency_us.p99);
        assert!(q.requests_per_second > 0.0);
    }

    // The text report has the table, a line per name.
    let out = http(&args);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("\nRequests by name (latency in ms)\n"),
        "{}",
        out.stdout
    );
    let line = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(&format!("  {name} ")))
            .unwrap_or_else(|| panic!("no {name} line in {}", out.stdout))
            .to_owned()
    };
    assert!(
        line("/item/:id").contains("  200: "),
        "{}",
        line("/item/:id")
    );
    assert!(line(&c_url).contains("; check "), "{}", line(&c_url));
    // CSV: the whole mix, then a row per name.
    let out = http(&[&args[..], &["--format", "csv"]].concat());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", out.stdout);
    assert!(lines[0].starts_with("url,name,"), "{}", lines[0]);
    assert!(
        lines[1].contains(",(all),") && lines[3].contains(",bee,"),
        "{}",
        out.stdout
    );
}
