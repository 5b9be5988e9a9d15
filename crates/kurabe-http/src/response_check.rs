//! Response checks (`--check`, a target's `# @check`, a plan's `checks`):
//! the grammar, and whether one response passes.
//!
//! ```text
//! status==200   status!=503   status<400   status in 200..399 (inclusive)
//! size>=1000    size==0       size<65536   (body bytes; == != < <= > >=)
//! body~REGEX    body!~REGEX   (the first 64 KiB of the body)
//! header:NAME~REGEX   header:NAME!~REGEX   (any NAME header's value; a
//!                                           missing header fails ~, passes !~)
//! ```
//!
//! Regexes are byte regexes without Unicode classes (`\d` is `[0-9]`, `(?i)`
//! folds ASCII), searched anywhere in the value: anchor with `^`/`$`.
//!
//! Owns the grammar, its one-line errors (the token and the grammar) and
//! the verdict on a [`Seen`] response. Must not do I/O or decide what the
//! workers keep of a response beyond saying what it needs ([`Needs`]).

use regex::bytes::{Regex, RegexBuilder};

/// The most body bytes a `body~` check reads (and a worker keeps per connection).
pub const MAX_CHECKED_BODY: usize = 64 * 1024;

/// The grammar, as every error states it.
pub const GRAMMAR: &str = "a check is status==N, status in A..B, size>=N, body~REGEX or header:NAME~REGEX (operators == != < <= > >=, ~ !~)";

/// A check that does not parse: the token and what was expected (the
/// caller puts what gave it first: `--check`, `http.checks`, `FILE:LINE`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{token}': {why}; {GRAMMAR}")]
pub struct CheckError {
    /// The check as given.
    pub token: String,
    /// What is wrong with it.
    pub why: String,
}

/// A comparison of a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    fn holds(self, a: u64, b: u64) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }
}

/// What one check tests.
#[derive(Debug, Clone)]
enum Test {
    Status(Cmp, u64),
    StatusIn(u64, u64),
    Size(Cmp, u64),
    Body { re: Regex, want: bool },
    Header { name: String, re: Regex, want: bool },
}

/// One parsed check, with its text for reports.
#[derive(Debug, Clone)]
pub struct Check {
    text: String,
    test: Test,
}

/// What a response must offer for a set of checks to be judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Some check reads a header.
    pub headers: bool,
    /// Some check reads the body.
    pub body: bool,
}

/// One complete response as the checks see it.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// Final status code.
    pub status: u16,
    /// Body bytes received (all of them, not only those kept).
    pub body_bytes: u64,
    /// The response head as received (status line and headers), if kept.
    pub head: &'a [u8],
    /// The body's first bytes, at most [`MAX_CHECKED_BODY`], if kept.
    pub body: &'a [u8],
}

impl Check {
    /// Parse one check; `Err` names the token and the grammar.
    pub fn parse(text: &str) -> Result<Check, CheckError> {
        let t = text.trim();
        let bad = |why: &str| CheckError {
            token: text.to_owned(),
            why: why.to_owned(),
        };
        let test = if let Some(rest) = t.strip_prefix("status") {
            status(rest.trim_start()).map_err(|w| bad(&w))?
        } else if let Some(rest) = t.strip_prefix("size") {
            let (cmp, n) = comparison(rest.trim_start()).map_err(|w| bad(&w))?;
            Test::Size(cmp, n)
        } else if let Some(rest) = t.strip_prefix("body") {
            let (want, re) = matcher(rest.trim_start()).map_err(|w| bad(&w))?;
            Test::Body { re, want }
        } else if let Some(rest) = t.strip_prefix("header:") {
            let at = rest
                .find(['~', '!'])
                .ok_or_else(|| bad("a header check is header:NAME~REGEX"))?;
            let name = rest[..at].trim();
            if name.is_empty() || !name.bytes().all(is_token_byte) {
                return Err(bad("the header name is empty or not a header name"));
            }
            let (want, re) = matcher(&rest[at..]).map_err(|w| bad(&w))?;
            Test::Header {
                name: name.to_owned(),
                re,
                want,
            }
        } else {
            return Err(bad("unknown subject (status, size, body or header:NAME)"));
        };
        Ok(Check {
            text: t.to_owned(),
            test,
        })
    }

    /// The check as written (trimmed).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What this check reads of a response.
    pub fn needs(&self) -> Needs {
        match self.test {
            Test::Body { .. } => Needs {
                headers: false,
                body: true,
            },
            Test::Header { .. } => Needs {
                headers: true,
                body: false,
            },
            _ => Needs::default(),
        }
    }

    /// Whether `r` passes.
    pub fn passes(&self, r: &Seen<'_>) -> bool {
        match &self.test {
            Test::Status(cmp, n) => cmp.holds(u64::from(r.status), *n),
            Test::StatusIn(lo, hi) => (*lo..=*hi).contains(&u64::from(r.status)),
            Test::Size(cmp, n) => cmp.holds(r.body_bytes, *n),
            Test::Body { re, want } => re.is_match(r.body) == *want,
            Test::Header { name, re, want } => {
                header_values(r.head, name).any(|v| re.is_match(v)) == *want
            }
        }
    }
}

/// The checks that apply to one request: every check must pass.
#[derive(Debug, Clone, Default)]
pub struct CheckSet {
    checks: Vec<Check>,
}

impl CheckSet {
    /// Parse every check in `texts`; the first that does not parse is the error.
    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<CheckSet, CheckError> {
        let checks = texts
            .iter()
            .map(|t| Check::parse(t.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(CheckSet { checks })
    }

    /// No check at all.
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// What the checks read of a response, together.
    pub fn needs(&self) -> Needs {
        self.checks.iter().fold(Needs::default(), |a, c| {
            let n = c.needs();
            Needs {
                headers: a.headers || n.headers,
                body: a.body || n.body,
            }
        })
    }

    /// The first check `r` fails, if any.
    pub fn first_failed(&self, r: &Seen<'_>) -> Option<&Check> {
        self.checks.iter().find(|c| !c.passes(r))
    }

    /// The checks, in order.
    pub fn checks(&self) -> &[Check] {
        &self.checks
    }
}

/// How a failed check reads in a report: the check, then the response
/// (status line, a few headers, the body's first bytes), on one line.
pub fn describe_failure(check: &Check, r: &Seen<'_>) -> String {
    let mut lines = r.head.split(|&b| b == b'\n').map(|l| l.trim_ascii_end());
    let status_line = lines
        .next()
        .filter(|l| !l.is_empty())
        .map(String::from_utf8_lossy)
        .unwrap_or_else(|| format!("status {}", r.status).into());
    let headers: Vec<String> = lines
        .take_while(|l| !l.is_empty())
        .take(SUMMARY_HEADERS)
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    let mut s = format!(
        "failed {}: {status_line} ({} body bytes)",
        check.text, r.body_bytes
    );
    if !headers.is_empty() {
        s.push_str("; ");
        s.push_str(&headers.join("; "));
    }
    if !r.body.is_empty() {
        let prefix = &r.body[..r.body.len().min(SUMMARY_BODY)];
        s.push_str("; body: ");
        s.push_str(&printable(prefix));
        if r.body.len() > SUMMARY_BODY || r.body_bytes > prefix.len() as u64 {
            s.push('…');
        }
    }
    s
}

/// Headers a failure's summary shows.
const SUMMARY_HEADERS: usize = 4;
/// Body bytes a failure's summary shows.
pub const SUMMARY_BODY: usize = 80;

/// `bytes` as text on one line: control bytes and invalid UTF-8 escaped.
fn printable(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { '·' } else { c })
        .collect()
}

/// `status` after its subject: `==N`-style or `in A..B`.
fn status(rest: &str) -> Result<Test, String> {
    if let Some(range) = rest.strip_prefix("in") {
        let (lo, hi) = range
            .trim()
            .split_once("..")
            .ok_or("a status range is status in A..B")?;
        let (lo, hi) = (number(lo)?, number(hi.trim_start_matches('='))?);
        if lo > hi {
            return Err(format!("the range {lo}..{hi} is empty"));
        }
        return Ok(Test::StatusIn(lo, hi));
    }
    let (cmp, n) = comparison(rest)?;
    Ok(Test::Status(cmp, n))
}

/// `OP N` with OP one of == != <= >= < >.
fn comparison(rest: &str) -> Result<(Cmp, u64), String> {
    let ops = [
        ("==", Cmp::Eq),
        ("!=", Cmp::Ne),
        ("<=", Cmp::Le),
        (">=", Cmp::Ge),
        ("<", Cmp::Lt),
        (">", Cmp::Gt),
    ];
    for (op, cmp) in ops {
        if let Some(n) = rest.strip_prefix(op) {
            return Ok((cmp, number(n)?));
        }
    }
    Err("expected one of == != < <= > >= and a number".to_owned())
}

fn number(s: &str) -> Result<u64, String> {
    let s = s.trim();
    s.parse()
        .map_err(|_| format!("'{s}' is not a whole number"))
}

/// `~REGEX` (must match) or `!~REGEX` (must not).
fn matcher(rest: &str) -> Result<(bool, Regex), String> {
    let (want, pattern) = if let Some(p) = rest.strip_prefix("!~") {
        (false, p)
    } else if let Some(p) = rest.strip_prefix('~') {
        (true, p)
    } else {
        return Err("expected ~REGEX or !~REGEX".to_owned());
    };
    let re = RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| match e {
            regex::Error::Syntax(s) => format!(
                "the regex does not parse: {}",
                s.lines().last().unwrap_or("").trim()
            ),
            other => format!("the regex cannot be used: {other}"),
        })?;
    Ok((want, re))
}

/// A byte of an HTTP header name (RFC 9110 token).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The values of every `name` header (any case) in a response head.
fn header_values<'h>(head: &'h [u8], name: &'h str) -> impl Iterator<Item = &'h [u8]> + 'h {
    head.split(|&b| b == b'\n')
        .skip(1)
        .map(|l| l.trim_ascii_end())
        .take_while(|l| !l.is_empty())
        .filter_map(move |l| {
            let colon = l.iter().position(|&b| b == b':')?;
            l[..colon]
                .trim_ascii()
                .eq_ignore_ascii_case(name.as_bytes())
                .then(|| l[colon + 1..].trim_ascii())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &[u8] =
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nX-A: 1\r\n\r\n";

    fn seen<'a>(status: u16, head: &'a [u8], body: &'a [u8]) -> Seen<'a> {
        Seen {
            status,
            body_bytes: body.len() as u64,
            head,
            body,
        }
    }

    fn passes(check: &str, r: &Seen<'_>) -> bool {
        Check::parse(check).unwrap().passes(r)
    }

    #[test]
    fn status_checks() {
        let ok = seen(200, b"", b"");
        let bad = seen(503, HEAD, b"");
        assert!(passes("status==200", &ok) && !passes("status==200", &bad));
        assert!(passes("status in 200..399", &ok));
        assert!(passes("status in 200..399", &seen(399, b"", b"")));
        assert!(!passes("status in 200..399", &bad));
        assert!(passes("status < 400", &ok) && !passes("status<400", &bad));
        assert!(passes("status!=503", &ok) && !passes("status != 503", &bad));
    }

    #[test]
    fn size_body_and_header_checks() {
        let r = seen(200, HEAD, b"{\"id\": 42}");
        assert!(passes("size>=10", &r) && !passes("size>=1000", &r));
        assert!(passes(r#"body~"id": \d+"#, &r) && !passes("body~^x", &r));
        assert!(passes("body!~error", &r));
        assert!(passes("header:Content-Type~json", &r));
        assert!(passes("header:content-type~^application/", &r));
        assert!(!passes("header:Content-Type~html", &r));
        assert!(!passes("header:X-Missing~.", &r) && passes("header:X-Missing!~.", &r));
    }

    #[test]
    fn needs_say_what_to_keep() {
        let set = CheckSet::parse(&["status==200", "size>=1"]).unwrap();
        assert_eq!(set.needs(), Needs::default());
        let set = CheckSet::parse(&["status==200", "body~x", "header:A~b"]).unwrap();
        assert_eq!(
            set.needs(),
            Needs {
                headers: true,
                body: true
            }
        );
    }

    #[test]
    fn bad_checks_name_the_token_and_the_grammar() {
        for (bad, why) in [
            ("stauts==200", "unknown subject"),
            ("status=>200", "expected one of"),
            ("status==abc", "'abc' is not a whole number"),
            ("status in 400..200", "is empty"),
            ("body~(", "the regex does not parse"),
            ("header:~x", "header name"),
            ("header:Content-Type", "header:NAME~REGEX"),
        ] {
            let e = Check::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("'{bad}': ")), "{e}");
            assert!(e.contains(why), "{bad}: {e}");
            assert!(e.ends_with(GRAMMAR), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_failure_reads_as_the_check_and_the_response() {
        let c = Check::parse("status==200").unwrap();
        let r = seen(503, HEAD, b"{\"error\":\n\"down\"}");
        assert_eq!(
            describe_failure(&c, &r),
            "failed status==200: HTTP/1.1 503 Service Unavailable (17 body bytes); \
             Content-Type: application/json; X-A: 1; body: {\"error\":·\"down\"}"
        );
        assert_eq!(
            describe_failure(&c, &seen(503, b"", b"")),
            "failed status==200: status 503 (0 body bytes)"
        );
    }
}
