//! Which run `kurabe http`'s flags ask for — one load (in this process or
//! on a fleet), an A/B of URLs ([`crate::http_compare`]) or a capacity
//! search ([`crate::find_rate`]) — and the flags each run refuses, read
//! from the [`Given`] flags: a contradiction is refused before anything
//! is read or run, in one line naming the flag and the fix.
//!
//! Owns these rules and their sentences. Must not check a load's own
//! settings (`kurabe_http::load::check_spec` does), a flag's value, nor
//! know clap.

use kurabe_model::given::Given;

/// The run `kurabe http`'s flags ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpRun {
    /// One load of one URL (in this process, or with `--workers` on a fleet).
    One,
    /// Two or more URLs compared in interleaved rounds (with
    /// `--find-rate`, a search of each).
    Compare,
    /// `--find-rate` on one URL.
    Search,
}

/// A flag combination refused, in one line.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FlagError {
    /// A search's own flag without `--find-rate`.
    #[error("{0} belongs to --find-rate: add --find-rate, or drop {0}")]
    SearchOnly(&'static str),
    /// A flag a search cannot honour, and what to do instead.
    #[error("{flag} contradicts --find-rate: {why}")]
    ContradictsSearch {
        /// The flag (or flags, `-x/-y/-z`).
        flag: String,
        /// Why, and what to give instead.
        why: &'static str,
    },
    /// A flag of one run of one URL, with two or more URLs.
    #[error("{0} applies to one URL; drop it, or compare the URLs without it")]
    OneUrlOnly(String),
    /// Two flags that exclude each other, in a sentence of their own.
    #[error("{0}")]
    Excluded(&'static str),
}

/// The search's own flags, named in this order when given without
/// `--find-rate`.
const SEARCH_FLAGS: [&str; 7] = [
    "--slo",
    "--step",
    "--step-warmup",
    "--start-rate",
    "--max-rate",
    "--max-searches",
    "--precision",
];

/// A flag, the flags it excludes (any one of them), and the sentence.
type Exclusion = (&'static str, &'static [&'static str], &'static str);

/// What every run refuses first, in this order.
const EXCLUDED: [Exclusion; 5] = [
    ("--find-rate", &["--series-csv"], "--series-csv with --find-rate: the search runs many steps, each its own run; drop --series-csv"),
    ("--find-rate", &["--prometheus-addr", "--tui"], "--prometheus-addr and --tui watch one load, and --find-rate runs a search of many: drop them, or watch one step's rate with kurabe http URL --rate R --tui"),
    // `--threshold` judges one run (here, or a fleet's merged run).
    ("--threshold", &["--find-rate"], "--threshold with --find-rate: a search states its limits as --slo (same notation): use --slo"),
    ("--threshold", &["URL_B"], "--threshold judges one run: drop URL_B, or run each URL on its own"),
    ("--profile", &["--find-rate", "--workers"], "--profile samples the server over one load per run: drop it, or drop --find-rate and --workers"),
];

/// What a run on a fleet (`--workers`) refuses, in this order.
const FLEET_EXCLUDED: [Exclusion; 3] = [
    ("--workers", &["--prometheus-addr"], "--prometheus-addr with --workers: give it to each `kurabe worker`, which serves its own share"),
    ("--workers", &["--tui"], "--tui watches a run in this process: drop --workers, or drop --tui"),
    ("--workers", &["-g"], "-g writes one line per request on one host; it cannot be used with --workers"),
];

/// A flag (or flags shown together) and whether any of them was given.
type Flags = &'static [&'static str];

/// What a search sets, judges or writes itself, and what to give instead
/// (`-w` with another `--format`, and `--save=LABEL`, are values: the
/// caller refuses them after these).
const SEARCH_REFUSES: [(Flags, &str); 11] = [
    (&["-n"], "each step lasts --step"),
    (&["-t"], "each step lasts --step"),
    (
        &["--rate"],
        "the search chooses the rate; bound it with --start-rate/--max-rate",
    ),
    (
        &["--stage"],
        "the search chooses each step's rate; bound it with --start-rate/--max-rate",
    ),
    (&["--warmup"], "use --step-warmup"),
    (&["--max-error-rate"], "use --slo 'failed<1%'"),
    (&["--abort-on-error"], "use --slo 'failed<…'"),
    (&["--workers"], "a search runs in this process"),
    (&["-e"], "it is one run's output"),
    (&["-g"], "it is one run's output"),
    (
        &["-x", "-y", "-z"],
        "they style ab's table; -w alone prints the search's HTML page",
    ),
];

/// What a comparison of URLs refuses: one run's outputs (`-e`, `-g`,
/// ab's HTML), its server and its exit rule. Every load flag applies to
/// every URL.
const COMPARE_REFUSES: [Flags; 7] = [
    &["-e"],
    &["--series-csv"],
    &["-g"],
    &["-w", "-x", "-y", "-z"],
    &["--server-pid"],
    &["--workers"],
    &["--max-error-rate"],
];

/// The run `given` asks for, refusing the flags that contradict it (or
/// each other) first.
pub fn choose(given: &Given) -> Result<HttpRun, FlagError> {
    let search = given.has("--find-rate");
    if let Some(flag) = given.first(&SEARCH_FLAGS).filter(|_| !search) {
        return Err(FlagError::SearchOnly(flag));
    }
    refuse(given, &EXCLUDED)?;
    Ok(match (given.has("URL_B"), search) {
        (true, _) => HttpRun::Compare,
        (false, true) => HttpRun::Search,
        (false, false) if given.has("--rounds") => {
            return Err(FlagError::Excluded(
                "--rounds compares two or more URLs: give URL_B too, or drop --rounds",
            ))
        }
        (false, false) => HttpRun::One,
    })
}

/// What a fleet run (`--workers`) refuses: the views and files of a run
/// in this process.
pub fn refuse_for_fleet(given: &Given) -> Result<(), FlagError> {
    refuse(given, &FLEET_EXCLUDED)
}

/// The flags a search sets, judges or writes itself, then `--save`'s
/// `label`: a search is kept as an experiment named after its URL.
pub fn refuse_for_search(given: &Given, label: Option<&str>) -> Result<(), FlagError> {
    let refused = SEARCH_REFUSES.iter().find(|(flags, _)| given.any(flags));
    let refused = refused.map(|(flags, why)| (flags.join("/"), *why));
    let label = label.filter(|l| !l.is_empty()).map(|_| {
        let why =
            "a search is saved as an experiment named after its URL; use --save without a label";
        ("--save=LABEL".to_owned(), why)
    });
    match refused.or(label) {
        Some((flag, why)) => Err(FlagError::ContradictsSearch { flag, why }),
        None => Ok(()),
    }
}

/// The flags of one run of one URL, refused with two or more, then
/// `--save`'s `label`: a comparison is kept as an experiment named after
/// its URLs.
pub fn refuse_for_compare(given: &Given, label: Option<&str>) -> Result<(), FlagError> {
    if let Some(flags) = COMPARE_REFUSES.iter().find(|flags| given.any(flags)) {
        return Err(FlagError::OneUrlOnly(flags.join("/")));
    }
    match label.filter(|l| !l.is_empty()) {
        Some(_) => Err(FlagError::Excluded("--save=LABEL: a comparison is saved as an experiment named after its URLs; use --save without a label")),
        None => Ok(()),
    }
}

/// The first exclusion of `rules` whose flags are both given.
fn refuse(given: &Given, rules: &[Exclusion]) -> Result<(), FlagError> {
    match rules
        .iter()
        .find(|(flag, with, _)| given.has(flag) && given.any(with))
    {
        Some((_, _, sentence)) => Err(FlagError::Excluded(sentence)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choose_from(flags: &[&str]) -> Result<HttpRun, String> {
        choose(&Given::new(flags.iter().copied())).map_err(|e| e.to_string())
    }

    #[test]
    fn the_flags_choose_the_run_and_refuse_what_contradicts_it() {
        assert_eq!(choose_from(&["-n"]), Ok(HttpRun::One));
        assert_eq!(choose_from(&["URL_B", "--rounds"]), Ok(HttpRun::Compare));
        assert_eq!(
            choose_from(&["--find-rate", "--rounds"]),
            Ok(HttpRun::Search)
        );
        let e = choose_from(&["--rounds"]).unwrap_err();
        assert!(e.starts_with("--rounds compares two or more URLs"), "{e}");
        let e = choose_from(&["--step", "--slo"]).unwrap_err();
        assert_eq!(
            e,
            "--slo belongs to --find-rate: add --find-rate, or drop --slo"
        );
        let e = choose_from(&["--profile", "--workers", "--threshold", "URL_B"]).unwrap_err();
        assert!(e.starts_with("--threshold judges one run"), "{e}");
    }

    #[test]
    fn each_run_names_the_first_flag_it_refuses() {
        let given = Given::new(["-g", "-y", "--workers"]);
        let e = refuse_for_search(&given, Some("x"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--workers contradicts --find-rate: a search runs in this process"
        );
        let e = refuse_for_compare(&Given::new(["-y", "--workers"]), None).unwrap_err();
        assert_eq!(e, FlagError::OneUrlOnly("-w/-x/-y/-z".into()));
        let e = refuse_for_search(&Given::default(), Some("x")).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--save=LABEL contradicts --find-rate: a search is saved"));
        let e = refuse_for_compare(&Given::default(), Some("x")).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--save=LABEL: a comparison is saved"));
        assert!(refuse_for_compare(&Given::default(), Some("")).is_ok());
        let e = refuse_for_fleet(&given).unwrap_err().to_string();
        assert!(e.starts_with("-g writes one line per request"), "{e}");
        assert!(refuse_for_fleet(&Given::new(["-g"])).is_ok());
    }
}
