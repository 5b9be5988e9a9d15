//! Every escaper of the reports, one per medium: a terminal, Markdown, HTML
//! (and SVG), CSV.
//!
//! Owns how text from users (plan, variant and workload names, command
//! lines, error output) is made inert before it reaches a reader: control
//! characters are shown as `\e`, `\r`, `\x07` instead of moving a
//! terminal's cursor or retitling its window; Markdown and HTML special
//! characters become text; CSV cells that a spreadsheet would run as a
//! formula are neutralised as OWASP recommends. Must not decide layout or
//! colour: renderers call these on every user string they print.

use std::borrow::Cow;

/// `text` with every control character in a visible form, for one line on
/// a terminal: ESC `\e`, CR `\r`, LF `\n`, TAB `\t`, others `\xNN` (C0,
/// DEL) or `\u{NN}` (C1). Ordinary text comes back borrowed.
pub fn terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_visible(&mut out, c);
    }
    Cow::Owned(out)
}

/// Like [`terminal`] but keeps line breaks: for multi-line text such as a
/// failed run's error output.
pub fn terminal_lines(text: &str) -> String {
    text.split('\n')
        .map(terminal)
        .collect::<Vec<_>>()
        .join("\n")
}

fn push_visible(out: &mut String, c: char) {
    match c {
        '\x1b' => out.push_str("\\e"),
        '\r' => out.push_str("\\r"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 && c.is_control() => {
            out.push_str(&format!("\\x{:02x}", c as u32));
        }
        c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        c => out.push(c),
    }
}

/// Text safe inside HTML/SVG elements and attribute values.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Text made inert in Markdown and inline HTML: HTML special characters
/// become entities, Markdown punctuation is backslash-escaped, newlines
/// become spaces (a table cell is one line), other control characters are
/// shown as [`terminal`] shows them.
pub fn markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => push_visible(&mut out, c),
        }
    }
    out
}

/// One CSV field: control characters shown as [`terminal`] shows them; a
/// cell a spreadsheet would read as a formula (starting with `=`, `+`,
/// `-`, `@`, TAB or CR, OWASP's list) gets a leading `'`, unless it is a
/// plain number such as `-1.5`; then quoted per RFC 4180 when it holds a
/// comma, quote or that `'`.
pub fn csv(text: &str) -> String {
    let formula =
        text.starts_with(['=', '+', '-', '@', '\t', '\r']) && text.trim().parse::<f64>().is_err();
    let visible = terminal(text);
    if formula {
        format!("\"'{}\"", visible.replace('"', "\"\""))
    } else if visible.contains([',', '"']) {
        format!("\"{}\"", visible.replace('"', "\"\""))
    } else {
        visible.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_shows_control_characters() {
        assert_eq!(terminal("plain"), "plain");
        assert!(matches!(terminal("plain"), Cow::Borrowed(_)));
        assert_eq!(
            terminal("a\x1b]0;pwned\x07\x1b[2Jb\rc"),
            "a\\e]0;pwned\\x07\\e[2Jb\\rc"
        );
        assert_eq!(terminal("t\tn\n\x7f\u{9b}é"), "t\\tn\\n\\x7f\\u{9b}é");
        assert_eq!(terminal_lines("one\x1b[31m\ntwo"), "one\\e[31m\ntwo");
    }

    #[test]
    fn html_and_markdown_are_inert() {
        assert_eq!(
            html("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(markdown("a<b>&c|d\ne"), "a&lt;b&gt;&amp;c\\|d e");
        assert_eq!(markdown("x\x1b[2J"), "x\\e\\[2J");
    }

    #[test]
    fn csv_quotes_and_neutralises_formulas() {
        assert_eq!(csv("a"), "a");
        assert_eq!(csv("a\"b"), "\"a\"\"b\"");
        assert_eq!(csv("a,b"), "\"a,b\"");
        assert_eq!(csv("=1+2"), "\"'=1+2\"");
        assert_eq!(csv("@SUM(A1)"), "\"'@SUM(A1)\"");
        assert_eq!(csv("+cmd"), "\"'+cmd\"");
        assert_eq!(csv("-x"), "\"'-x\"");
        assert_eq!(csv("\tx"), "\"'\\tx\"");
        assert_eq!(csv("\rx"), "\"'\\rx\"");
        assert_eq!(csv("-1.5"), "-1.5");
        assert_eq!(csv("+3"), "+3");
        assert_eq!(csv("1e-7"), "1e-7");
        assert_eq!(csv("=\"x\""), "\"'=\"\"x\"\"\"");
    }
}
