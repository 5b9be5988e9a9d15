//! Access-log formats in nginx's `log_format` syntax: `combined`,
//! `common`, or any format given as text (`$remote_addr - $remote_user
//! [$time_local] "$request" $status …`), compiled once and matched
//! against each line.
//!
//! Owns the grammar (`$name` or `${name}` variables between literal text;
//! the quoted pieces of an nginx config line such as `'$a ' '"$b"'` are
//! joined) and the split of a line into variable values: a variable runs
//! up to the first occurrence of the literal text after it (inside quotes,
//! past an Apache-style `\"`), the last one to the end of the line.
//! Must not interpret values (the `log` module does) or read files.

/// nginx's predefined `combined` format (Apache's `combined` writes the
/// same shape; `$remote_ident` stands for Apache's `%l`, which nginx
/// writes as `-`).
pub const COMBINED: &str = r#"$remote_addr $remote_ident $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#;

/// The Common Log Format (Apache `common`, nginx's `combined` without
/// its two quoted fields).
pub const COMMON: &str =
    r#"$remote_addr $remote_ident $remote_user [$time_local] "$request" $status $body_bytes_sent"#;

/// One piece of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Text the line must hold here.
    Lit(String),
    /// A variable's value (its name without `$`).
    Var(String),
}

/// A compiled log format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFormat {
    /// What the format is called in messages (`combined`, or the text).
    pub name: String,
    pieces: Vec<Piece>,
}

/// A format that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--log-format '{format}': {problem}")]
pub struct FormatError {
    /// The format as given.
    pub format: String,
    /// What is wrong and what to write instead.
    pub problem: String,
}

impl LogFormat {
    /// `combined`, `common`, or a format in nginx `log_format` syntax.
    pub fn parse(text: &str) -> Result<LogFormat, FormatError> {
        match text {
            "combined" => Self::compile("combined", COMBINED),
            "common" => Self::compile("common", COMMON),
            _ => Self::compile(text, &unquote(text)),
        }
    }

    fn compile(name: &str, text: &str) -> Result<LogFormat, FormatError> {
        let fail = |problem: String| FormatError {
            format: name.to_owned(),
            problem,
        };
        let mut pieces: Vec<Piece> = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if c != '$' {
                lit.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            }
            let (var, after) = variable(&rest[1..]).ok_or_else(|| {
                fail(format!(
                    "'$' at '{}' starts no variable: write $name or ${{name}}",
                    clip(rest, 20)
                ))
            })?;
            if !lit.is_empty() {
                pieces.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            pieces.push(Piece::Var(var.to_owned()));
            rest = after;
        }
        if !lit.is_empty() {
            pieces.push(Piece::Lit(lit));
        }
        let pieces = join_uri(pieces);
        if let Some(w) = pieces.windows(2).find_map(|w| match w {
            [Piece::Var(a), Piece::Var(b)] => Some((a.clone(), b.clone())),
            _ => None,
        }) {
            return Err(fail(format!(
                "${}${} has no text between the variables, so a line cannot be split there: put a space or other separator between them",
                w.0, w.1
            )));
        }
        if !pieces.iter().any(|p| matches!(p, Piece::Var(_))) {
            return Err(fail(
                "no variable: a format names fields such as $request and $time_local".to_owned(),
            ));
        }
        Ok(LogFormat {
            name: name.to_owned(),
            pieces,
        })
    }

    /// Whether the format has the variable `name`.
    pub fn has(&self, name: &str) -> bool {
        self.pieces
            .iter()
            .any(|p| matches!(p, Piece::Var(v) if v == name))
    }

    /// The line's variable values as `(name, value)`, in format order;
    /// `None` when the line is not in this format.
    pub fn split<'l>(&self, line: &'l str) -> Option<Vec<(&str, &'l str)>> {
        let mut out = Vec::with_capacity(self.pieces.len());
        let mut p = 0;
        let mut i = 0;
        while i < self.pieces.len() {
            match &self.pieces[i] {
                Piece::Lit(l) => {
                    if !line[p..].starts_with(l.as_str()) {
                        return None;
                    }
                    p += l.len();
                }
                Piece::Var(v) => {
                    let end = match self.pieces.get(i + 1) {
                        None => line.len(),
                        Some(Piece::Lit(next)) => {
                            let quoted = self.quoted_before(i) && next.starts_with('"');
                            p + find_end(&line[p..], next, quoted)?
                        }
                        Some(Piece::Var(_)) => unreachable!("refused by compile"),
                    };
                    out.push((v.as_str(), &line[p..end]));
                    p = end;
                }
            }
            i += 1;
        }
        (p == line.len()).then_some(out)
    }

    /// Whether the literal before piece `i` ends with a quote (the value
    /// is quoted, so `\"` inside it is not its end).
    fn quoted_before(&self, i: usize) -> bool {
        i > 0 && matches!(&self.pieces[i - 1], Piece::Lit(l) if l.ends_with('"'))
    }
}

/// `name` or `{name}` at the start of `s`: the name and what follows.
fn variable(s: &str) -> Option<(&str, &str)> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if let Some(inner) = s.strip_prefix('{') {
        let end = inner.find('}')?;
        let name = &inner[..end];
        return (!name.is_empty() && name.chars().all(is_name)).then(|| (name, &inner[end + 1..]));
    }
    let end = s.find(|c| !is_name(c)).unwrap_or(s.len());
    (end > 0).then(|| (&s[..end], &s[end..]))
}

/// nginx's `$uri$is_args$args` (a common spelling of the request URI)
/// as one `request_uri` variable.
fn join_uri(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for p in pieces {
        out.push(p);
        let n = out.len();
        if n >= 3 {
            let tail = [&out[n - 3], &out[n - 2], &out[n - 1]];
            let names = tail.map(|p| match p {
                Piece::Var(v) => v.as_str(),
                Piece::Lit(_) => "",
            });
            if names == ["uri", "is_args", "args"] {
                out.truncate(n - 3);
                out.push(Piece::Var("request_uri".to_owned()));
            }
        }
    }
    out
}

/// Where a value that `next` follows ends in `s`: its first occurrence,
/// past `\"` when the value is quoted.
fn find_end(s: &str, next: &str, quoted: bool) -> Option<usize> {
    let mut from = 0;
    loop {
        let at = from + s[from..].find(next)?;
        let escaped = quoted && s[..at].bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1;
        if !escaped {
            return Some(at);
        }
        from = at + 1;
    }
}

/// An nginx config value `'piece ' 'piece'` (quoted pieces, possibly
/// over several lines, ending with `;`) as the one string nginx joins;
/// anything else as given.
fn unquote(text: &str) -> String {
    let t = text.trim().trim_end_matches(';').trim_end();
    let Some(q) = t.chars().next().filter(|c| *c == '\'' || *c == '"') else {
        return text.to_owned();
    };
    let mut out = String::new();
    let mut rest = t;
    while let Some(inner) = rest.strip_prefix(q) {
        let Some(end) = inner.find(q) else {
            return text.to_owned();
        };
        out.push_str(&inner[..end]);
        rest = inner[end + 1..].trim_start();
        if rest.is_empty() {
            return out;
        }
    }
    text.to_owned()
}

/// At most `n` characters of `s`.
pub(crate) fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        None => s.to_owned(),
        Some((i, _)) => format!("{}…", &s[..i]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"127.0.0.1 - - [02/Dec/2026:04:30:00 +0000] "GET /a?b=1 HTTP/1.1" 200 612 "-" "curl/8.5""#;

    fn fields<'l>(f: &LogFormat, line: &'l str) -> Vec<(String, &'l str)> {
        f.split(line)
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    #[test]
    fn combined_splits_an_nginx_line() {
        let f = LogFormat::parse("combined").unwrap();
        let got = fields(&f, LINE);
        assert_eq!(got[3], ("time_local".into(), "02/Dec/2026:04:30:00 +0000"));
        assert_eq!(got[4], ("request".into(), "GET /a?b=1 HTTP/1.1"));
        assert_eq!(got[5], ("status".into(), "200"));
        assert_eq!(got[8], ("http_user_agent".into(), "curl/8.5"));
        assert!(f.has("request") && !f.has("msec"));
    }

    #[test]
    fn common_does_not_take_a_combined_line_and_combined_not_a_common_one() {
        let common = LogFormat::parse("common").unwrap();
        let combined = LogFormat::parse("combined").unwrap();
        let short = r#"10.0.0.1 ident frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
        assert_eq!(common.split(short).unwrap()[1], ("remote_ident", "ident"));
        assert!(combined.split(short).is_none());
        // common's last field takes the rest: the caller checks it is a number.
        assert_eq!(common.split(LINE).unwrap()[6].1, r#"612 "-" "curl/8.5""#);
    }

    #[test]
    fn apache_escaped_quotes_stay_inside_a_quoted_value() {
        let f = LogFormat::parse("combined").unwrap();
        let line = r#"h - - [02/Dec/2026:04:30:00 +0000] "GET /q HTTP/1.1" 200 1 "-" "a \"quoted\" agent""#;
        assert_eq!(fields(&f, line)[8].1, r#"a \"quoted\" agent"#);
    }

    #[test]
    fn custom_formats_braces_nginx_quoting_and_uri_args() {
        let f = LogFormat::parse(
            "'$msec ${request_method} \"$uri$is_args$args\" ' '$status $request_time';",
        )
        .unwrap();
        let got = fields(&f, r#"1764649800.123 POST "/x?y=2" 201 0.004"#);
        assert_eq!(
            got,
            [
                ("msec".into(), "1764649800.123"),
                ("request_method".into(), "POST"),
                ("request_uri".into(), "/x?y=2"),
                ("status".into(), "201"),
                ("request_time".into(), "0.004"),
            ]
        );
    }

    #[test]
    fn unusable_formats_say_why() {
        let e = LogFormat::parse("$a$b").unwrap_err().to_string();
        assert!(e.contains("$a$b has no text between"), "{e}");
        let e = LogFormat::parse("[$time_local] $ x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("starts no variable"), "{e}");
        let e = LogFormat::parse("just text").unwrap_err().to_string();
        assert!(e.contains("no variable"), "{e}");
    }

    #[test]
    fn a_line_in_another_format_does_not_split() {
        let f = LogFormat::parse("combined").unwrap();
        assert!(f.split("not a log line").is_none());
        assert!(f.split(&format!("{LINE} trailing")).is_none());
    }
}
