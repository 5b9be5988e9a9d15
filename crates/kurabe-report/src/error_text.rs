//! One-line error texts for the terminal: clap's usage errors shortened to
//! what tells the fix, and an error with its causes on one line.
//!
//! Owns these texts, and which error is no error at all (a closed pipe),
//! so every command says its errors alike. Must not print or decide exit
//! codes: the binary does.

use std::error::Error;

/// Clap's rendered error → "kurabe: error: …" (plus the possible values),
/// clap's first tip if any, and "see 'HELP --help'" (`help`: "kurabe results list").
///
/// Clap's own rendering spans up to eight lines (blank lines, usage, "for
/// more information"); kept are the first line with the possible values,
/// clap's suggestion ("a similar subcommand exists: 'http'") and which
/// `--help` to read.
pub fn short_usage_error(rendered: &str, help: &str) -> String {
    let lines: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut first = lines
        .first()
        .map_or("invalid arguments", |l| l.trim_start_matches("error: "))
        .to_string();
    // "the following required arguments were not provided:" names them on the next line.
    if first.ends_with(':') {
        if let Some(next) = lines.get(1) {
            first = format!("{first} {next}");
        }
    }
    if let Some(values) = lines.iter().find(|l| l.starts_with("[possible values:")) {
        first = format!("{first} {values}");
    }
    let mut out = format!("kurabe: error: {first}\n");
    if let Some(tip) = lines.iter().find(|l| l.starts_with("tip:")) {
        out.push_str(&format!("  {tip}\n"));
    }
    out.push_str(&format!("  see '{help} --help'\n"));
    out
}

/// `kurabe man WORDS`: `word` names no subcommand of `parent`; which do.
pub fn no_subcommand(parent: &str, word: &str, names: &[&str]) -> String {
    format!(
        "{parent} has no subcommand '{word}': give one of {}",
        names.join(", ")
    )
}

/// The error and its causes on one line, each text once: a cause whose
/// words the line already holds (a library that puts its source in its own
/// message) is not repeated.
pub fn error_line(err: &(dyn Error + 'static)) -> String {
    let mut line = String::new();
    let mut cause = Some(err);
    while let Some(e) = cause {
        let text = e.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
        cause = e.source();
    }
    line
}

/// Whether `err` or a cause is a closed pipe (`kurabe … | head`): the
/// reader had enough, which is success, not an error to report.
pub fn is_broken_pipe(err: &(dyn Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(e) = cause {
        let pipe = e.downcast_ref::<std::io::Error>();
        if pipe.is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) {
            return true;
        }
        cause = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrap(&'static str, Box<dyn Error + 'static>);
    impl std::fmt::Display for Wrap {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl Error for Wrap {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&*self.1)
        }
    }

    #[test]
    fn error_line_says_each_cause_once() {
        let io = std::io::Error::other("disk full");
        let inner = Wrap("cannot write report.json: disk full", Box::new(io));
        let err = Wrap("saving the report", Box::new(inner));
        assert_eq!(
            error_line(&err),
            "saving the report: cannot write report.json: disk full"
        );
    }

    #[test]
    fn a_closed_pipe_under_a_cause_is_found() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(is_broken_pipe(&Wrap("writing", Box::new(pipe))));
        assert!(!is_broken_pipe(&std::io::Error::other("disk full")));
    }

    #[test]
    fn usage_errors_keep_the_fix() {
        let rendered = "error: invalid value 'x' for '--format <FORMAT>'\n  [possible values: text, json]\n\n  tip: a similar argument exists: '--format'\n\nUsage: kurabe results list\n\nFor more information, try '--help'.\n";
        assert_eq!(
            short_usage_error(rendered, "kurabe results list"),
            "kurabe: error: invalid value 'x' for '--format <FORMAT>' [possible values: text, json]\n  tip: a similar argument exists: '--format'\n  see 'kurabe results list --help'\n"
        );
    }
}
