//! What `--allow-url`, `--deny-url`, `--rewrite` and `--set-header` do to
//! recorded requests, in that order: the filters match the path and query
//! as recorded (so they speak of the log), each rewrite then applies in
//! turn to what the previous one left, and set headers replace recorded
//! ones of the same name (case-insensitively) or are added.
//!
//! `--rewrite 'REGEX:REPLACEMENT'` splits at the first `:` that is not
//! escaped (`\:`) and not the `:` of a group's flags (`(?:`, `(?i:`);
//! the replacement may use `$1`, `${name}`. A rewrite that leaves no
//! origin-form path (`/…`, printable, no spaces) is refused when the
//! request is edited, as [`Skip::Malformed`], not sent.
//!
//! Owns parsing and applying the edits. Must not read files or print.

use regex::bytes::{Regex, RegexBuilder};

use super::{sendable, Recorded, Skip};
use crate::header;

/// The edits, checked.
#[derive(Debug, Clone, Default)]
pub struct Edits {
    allow: Vec<Regex>,
    deny: Vec<Regex>,
    rewrites: Vec<(Regex, String)>,
    set_headers: Vec<(String, String)>,
}

/// An edit flag that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag} '{value}': {problem}")]
pub struct EditError {
    /// The flag.
    pub flag: &'static str,
    /// Its value as given.
    pub value: String,
    /// What is wrong and what to write.
    pub problem: String,
}

impl Edits {
    /// Parse every flag's values.
    pub fn parse(
        allow: &[String],
        deny: &[String],
        rewrites: &[String],
        set_headers: &[String],
    ) -> Result<Edits, EditError> {
        Ok(Edits {
            allow: regexes("--allow-url", allow)?,
            deny: regexes("--deny-url", deny)?,
            rewrites: rewrites
                .iter()
                .map(|r| rewrite(r))
                .collect::<Result<_, _>>()?,
            set_headers: set_headers
                .iter()
                .map(|h| set_header(h))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Filter, rewrite and set headers on `r`; why not, if it is dropped.
    pub fn apply(&self, r: &mut Recorded) -> Result<(), Skip> {
        let t = r.target.as_bytes();
        if !self.allow.is_empty() && !self.allow.iter().any(|re| re.is_match(t)) {
            return Err(Skip::NotAllowed);
        }
        if self.deny.iter().any(|re| re.is_match(t)) {
            return Err(Skip::Denied);
        }
        for (re, with) in &self.rewrites {
            if let std::borrow::Cow::Owned(t) = re.replace(r.target.as_bytes(), with.as_bytes()) {
                r.target = String::from_utf8(t).map_err(|_| Skip::Malformed)?;
            }
        }
        if !r.target.starts_with('/') || !sendable(&r.target) {
            return Err(Skip::Malformed);
        }
        for (name, value) in &self.set_headers {
            r.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
            r.headers.push((name.clone(), value.clone()));
        }
        Ok(())
    }
}

fn regexes(flag: &'static str, values: &[String]) -> Result<Vec<Regex>, EditError> {
    values
        .iter()
        .map(|v| {
            compile(v).map_err(|problem| EditError {
                flag,
                value: v.clone(),
                problem,
            })
        })
        .collect()
}

/// `REGEX:REPLACEMENT`.
fn rewrite(v: &str) -> Result<(Regex, String), EditError> {
    let fail = |problem: String| EditError {
        flag: "--rewrite",
        value: v.to_owned(),
        problem,
    };
    let at = split_point(v).ok_or_else(|| {
        fail("expected REGEX:REPLACEMENT, e.g. '^/v1/(.*):/v2/$1' (write \\: for a ':' in the regex)".to_owned())
    })?;
    let (pattern, with) = (&v[..at], &v[at + 1..]);
    let re = compile(pattern).map_err(fail)?;
    Ok((re, with.to_owned()))
}

/// The first `:` outside `\:` and `(?flags:`.
fn split_point(v: &str) -> Option<usize> {
    let b = v.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'(' if b.get(i + 1) == Some(&b'?') => {
                i += 2;
                while i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'-') {
                    i += 1;
                }
                if b.get(i) == Some(&b':') {
                    i += 1;
                }
            }
            b':' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// `Name: value`.
fn set_header(v: &str) -> Result<(String, String), EditError> {
    let fail = |problem: String| EditError {
        flag: "--set-header",
        value: v.escape_debug().to_string(),
        problem,
    };
    let (name, value) = v
        .split_once(':')
        .ok_or_else(|| fail("expected 'Name: value'".to_owned()))?;
    let (name, value) = (name.trim(), value.trim());
    header::check(name, value).map_err(|e| fail(e.to_string()))?;
    if ["host", "content-length", "transfer-encoding", "connection"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
    {
        return Err(fail(format!(
            "{name} is the connection's, set by kurabe: the base URL gives the host"
        )));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// A byte regex as `--group` compiles them (ASCII classes: `\d`, `\w`
/// and `(?i)` need no Unicode tables; paths are ASCII).
fn compile(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| match e {
            regex::Error::Syntax(s) => format!(
                "not a regular expression: {}",
                s.lines().last().unwrap_or("").trim()
            ),
            other => format!("the regex cannot be used: {other}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(target: &str) -> Recorded {
        Recorded {
            place: 1,
            at_us: 0,
            method: "GET".into(),
            target: target.into(),
            headers: vec![("user-agent".into(), "old".into())],
            body: None,
            status: None,
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn filters_match_the_recorded_path_then_rewrites_apply_in_turn() {
        let e = Edits::parse(
            &s(&["^/api/"]),
            &s(&["/admin"]),
            &s(&[r"^/api/v1/(\w+):/api/v2/$1", "(?i:V2):v3"]),
            &s(&["User-Agent: kurabe", "X-Replay: 1"]),
        )
        .unwrap();
        let mut r = req("/api/v1/items?x=1");
        e.apply(&mut r).unwrap();
        assert_eq!(r.target, "/api/v3/items?x=1");
        assert_eq!(
            r.headers,
            [
                ("User-Agent".into(), "kurabe".into()),
                ("X-Replay".into(), "1".into())
            ]
        );
        assert_eq!(e.apply(&mut req("/static/a.css")), Err(Skip::NotAllowed));
        assert_eq!(e.apply(&mut req("/api/admin")), Err(Skip::Denied));
        let e = Edits::parse(&[], &[], &s(&["^/.*:nopath"]), &[]).unwrap();
        assert_eq!(e.apply(&mut req("/a")), Err(Skip::Malformed));
    }

    #[test]
    fn the_split_point_skips_escapes_and_group_flags() {
        assert_eq!(split_point("a:b"), Some(1));
        assert_eq!(split_point(r"a\:b:c"), Some(4));
        assert_eq!(split_point("(?:a)(?i-u:b):c"), Some(13));
        assert_eq!(split_point("abc"), None);
    }

    #[test]
    fn bad_edits_name_the_flag() {
        let e = Edits::parse(&s(&["("]), &[], &[], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--allow-url '(': not a regular expression"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = Edits::parse(&[], &[], &s(&["nocolon"]), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected REGEX:REPLACEMENT"), "{e}");
        let e = Edits::parse(&[], &[], &[], &s(&["X: a\r\nY: b"]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--set-header"), "{e}");
        assert!(e.contains("line break"), "{e}");
        let e = Edits::parse(&[], &[], &[], &s(&["Host: other"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("the base URL gives the host"), "{e}");
    }
}
