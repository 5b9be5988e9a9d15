//! The load flags whose texts carry a grammar of the load's own: `-H
//! "Name: value"`, `--stage DURATION:RATE` / `DURATION:c=N` and
//! `--http-version`, read into a [`LoadSpec`](kurabe_model::load::LoadSpec)'s
//! fields, one line naming the flag when a text does not fit.
//!
//! Owns those readings and their messages. Must not see clap (the binary
//! hands in the texts as given) nor check the spec as a whole
//! ([`crate::load::check_spec`] does, once, whatever built it).

use std::path::{Path, PathBuf};
use std::time::Duration;

use kurabe_model::load::{Header, HttpVersion, TargetsFormat};
use kurabe_model::plan::HumanDuration;
use kurabe_model::stage::{Executor, Stage, StageSpec, Stages};

/// A load flag's text that does not read: the line to show, naming the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FlagError(String);

/// `-H "Name: value"` each, in order.
pub fn headers(given: &[String]) -> Result<Vec<Header>, FlagError> {
    given
        .iter()
        .map(|h| {
            Header::parse(h)
                .ok_or_else(|| FlagError(format!("-H '{h}': a header is \"Name: value\"")))
        })
        .collect()
}

/// `--stage DURATION:RATE` or `DURATION:c=N` each, in order, as the spec
/// holds them with the executor their kind needs (none given: none);
/// `concurrency` is `-c` if given, which connection stages refuse (the
/// peak stage is the connections).
pub fn stages(
    given: &[String],
    concurrency: Option<u32>,
) -> Result<(Vec<StageSpec>, Option<Executor>), FlagError> {
    if given.is_empty() {
        return Ok((Vec::new(), None));
    }
    let parsed = given
        .iter()
        .map(|text| text.parse::<Stage>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| FlagError(format!("--stage {e}")))?;
    let stages = Stages::new(parsed).map_err(|e| FlagError(format!("--stage: {e}")))?;
    if let (false, Some(c)) = (stages.is_rate(), concurrency) {
        return Err(FlagError(format!("-c {c} with --stage DURATION:c=N: the stages give the connections; drop -c (the peak stage is the connections used)")));
    }
    Ok(stages.to_spec())
}

/// `--http2` and `--http3` as `--http-version` (`1.1`, `2`, `3`) and the
/// switches say together; a version that contradicts a switch is refused.
pub fn http_versions(
    version: Option<&str>,
    http2: bool,
    http3: bool,
) -> Result<(bool, bool), FlagError> {
    let Some(v) = version else {
        return Ok((http2, http3));
    };
    let other = match (http2, http3) {
        (true, _) if v != "2" => "--http2",
        (_, true) if v != "3" => "--http3",
        _ => return Ok((http2 || v == "2", http3 || v == "3")),
    };
    Err(FlagError(format!(
        "--http-version {v} with {other}: give one HTTP version"
    )))
}

/// `--http-version` given once per URL (an A/B of one server's HTTP/2
/// and HTTP/3): each URL's version, in the URLs' order; empty when it is
/// given at most once (every URL speaks it, [`http_versions`]).
pub fn url_versions(
    given: &[String],
    switches: (bool, bool),
    urls: usize,
) -> Result<Vec<HttpVersion>, FlagError> {
    if given.len() < 2 {
        return Ok(Vec::new());
    }
    if let Some(switch) = [(switches.0, "--http2"), (switches.1, "--http3")]
        .into_iter()
        .find_map(|(on, name)| on.then_some(name))
    {
        return Err(FlagError(format!(
            "{switch} with one --http-version per URL: give each URL's version by --http-version only"
        )));
    }
    if given.len() != urls {
        return Err(FlagError(format!(
            "--http-version is given {} times for {urls} URL{}: give it once (every URL speaks it) or once per URL, in the URLs' order",
            given.len(),
            if urls == 1 { "" } else { "s" }
        )));
    }
    given
        .iter()
        .map(|v| {
            HttpVersion::parse(v)
                .ok_or_else(|| FlagError(format!("--http-version {v}: give 1.1, 2 or 3")))
        })
        .collect()
}

/// The method ab's switches mean: `-m` as `given`, else `-i` (`head`)
/// HEAD, else a `-u` body (`put`) PUT, else none (the load's default).
pub fn method(given: Option<&str>, head: bool, put: bool) -> Option<String> {
    let implied = match (head, put) {
        (true, _) => Some("HEAD"),
        (false, true) => Some("PUT"),
        (false, false) => None,
    };
    given.or(implied).map(str::to_owned)
}

/// `-s TIMEOUT` as the spec holds it: none when it is the default, so a
/// stored spec says only what was asked.
pub fn timeout(given: Duration) -> Option<HumanDuration> {
    Some(given)
        .filter(|t| *t != crate::request::DEFAULT_TIMEOUT)
        .map(HumanDuration)
}

/// The request set `--targets FILE` (in `format`) or `--urls-from-file
/// FILE` (`urls`: a URL a line) names, as (file, format); `-` is standard
/// input, read once the spec checks.
pub fn set_source(
    targets: Option<&Path>,
    format: Option<TargetsFormat>,
    urls: Option<&Path>,
) -> (Option<PathBuf>, Option<TargetsFormat>) {
    match (targets, urls) {
        (Some(p), _) => (Some(p.to_owned()), format),
        (None, Some(p)) => (Some(p.to_owned()), Some(TargetsFormat::Urls)),
        (None, None) => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn each_text_reads_or_names_its_flag() {
        let h = headers(&texts(&["X-A: 1", "Host:h"])).unwrap();
        assert_eq!((h[1].name.as_str(), h[1].value.as_str()), ("Host", "h"));
        let e = headers(&texts(&["nocolon"])).unwrap_err().to_string();
        assert_eq!(e, "-H 'nocolon': a header is \"Name: value\"");
        let (specs, executor) = stages(&texts(&["10s:c=5", "5s:c=0"]), None).unwrap();
        assert_eq!((specs.len(), executor), (2, Some(Executor::RampingVus)));
        assert_eq!(stages(&[], Some(3)).unwrap(), (Vec::new(), None));
        let e = stages(&texts(&["10s:c=5"]), Some(2))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("-c 2 with --stage DURATION:c=N"), "{e}");
        let e = stages(&texts(&["10s:5", "1s:c=1"]), None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--stage: stages ramp either a rate (30s:200) or connections (30s:c=100), not both"
        );
        assert!(stages(&texts(&["soon"]), None)
            .unwrap_err()
            .to_string()
            .starts_with("--stage "));
        assert_eq!(http_versions(Some("2"), false, false), Ok((true, false)));
        let given = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(url_versions(&given(&["3"]), (false, false), 2), Ok(vec![]));
        assert_eq!(
            url_versions(&given(&["2", "3"]), (false, false), 2),
            Ok(vec![HttpVersion::H2, HttpVersion::H3])
        );
        let e = url_versions(&given(&["2", "3"]), (false, false), 3).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--http-version is given 2 times for 3 URLs"));
        let e = url_versions(&given(&["2", "3"]), (false, true), 2).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--http3 with one --http-version per URL"));
        assert_eq!(http_versions(Some("3"), false, true), Ok((false, true)));
        assert_eq!(http_versions(None, true, false), Ok((true, false)));
        let e = http_versions(Some("1.1"), false, true)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--http-version 1.1 with --http3: give one HTTP version");
    }
}
