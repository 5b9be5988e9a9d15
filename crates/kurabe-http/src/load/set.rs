//! A [`LoadSpec`]'s request set (`targets`, `targets_text`) read and
//! resolved into the engine's [`RequestSet`]: every target's method, URL, headers (its
//! own, then the spec's `-H`, `-C`, `-A`) and body, its name id and weight,
//! checked before any request.
//!
//! Owns reading the set through [`crate::targets::Reader`], reading body
//! files, the rules a set must keep (not empty, every target on the first
//! one's scheme, host and port: the engine connects to one address) and
//! tagging each target with its name and checks ([`Labels::tag`]: its
//! `# @name`, else its URL, its method first when not GET). Errors are one line: `FILE:LINE: …` for a target, the
//! setting's name (flag or plan key) for the rest. Must not fetch anything.

use std::io::BufRead;
use std::path::Path;

use kurabe_model::load::{LoadSpec, TargetsFormat};

use super::resolve::SpecError;
use crate::client::set::{RequestSet, SetTarget};
use crate::client::Target;
use crate::request::Names;
use crate::tags::Labels;
use crate::targets::{Body, Format, Reader, TargetDef, TargetsError};

/// The set `spec` names, if any, with `extra` (the spec's resolved `-H`,
/// `-C`, `-A` headers) after each target's own headers.
pub(crate) fn read(
    spec: &LoadSpec,
    n: &Names,
    extra: &[(String, String)],
    labels: &mut Labels,
) -> Result<Option<RequestSet>, SpecError> {
    let source = match (&spec.targets, &spec.targets_text) {
        (None, None) => {
            if spec.order.is_some() || spec.seed.is_some() || spec.targets_format.is_some() {
                invalid(format!(
                    "{}, {} and {} apply to a request set: add {} FILE",
                    n.order, n.seed, n.targets_format, n.targets
                ))?;
            }
            return Ok(None);
        }
        (Some(p), None) => p.display().to_string(),
        (_, Some(_)) => "-".to_owned(),
    };
    check_settings(spec, n)?;
    let base = base(spec, n)?;
    let format = spec.targets_format.unwrap_or_default();
    let defs = match (&spec.targets, &spec.targets_text) {
        (_, Some(text)) => collect(Reader::new(text.as_bytes(), parser(format), &source))?,
        (Some(path), None) => collect(Reader::new(open(path, n)?, parser(format), &source))?,
        (None, None) => unreachable!("checked above"),
    };
    let order = spec.order.unwrap_or_default();
    let seed = spec.seed.unwrap_or_else(draw_seed);
    build(defs, &source, base.as_ref(), extra, labels).map(|targets| {
        Some(RequestSet {
            targets,
            order,
            seed,
            source,
            format,
        })
    })
}

/// The URL given with a set (a plan's variant, `kurabe http --targets
/// FILE URL`): its scheme, host and port replace every target's, so one
/// set is sent to each variant alike.
fn base(spec: &LoadSpec, n: &Names) -> Result<Option<Target>, SpecError> {
    let Some(url) = &spec.url else {
        return Ok(None);
    };
    let mut t = Target::parse(url)?;
    if t.path != "/" && spec.path.is_none() {
        invalid(format!(
            "{} '{url}' with {}: give only scheme://host:port, whose requests get each target's own path",
            n.url, n.targets
        ))?;
    }
    t.path = "/".to_owned();
    Ok(Some(t))
}

/// The settings a set replaces: one method, one body.
fn check_settings(spec: &LoadSpec, n: &Names) -> Result<(), SpecError> {
    let clash = [
        (spec.method.is_some(), n.method),
        (spec.body_file.is_some(), n.body_file),
        (spec.body_base64.is_some(), n.body_base64),
        (spec.content_type.is_some(), n.content_type),
    ];
    if let Some((_, what)) = clash.iter().find(|(given, _)| *given) {
        invalid(format!(
            "{what} and {}: each target of a set gives its own method and body; drop {what}",
            n.targets
        ))?;
    }
    if spec.pipeline > 1 {
        invalid(format!(
            "{} with {}: pipelining sends one request's bytes again and again; drop {}",
            n.pipeline, n.targets, n.pipeline
        ))?;
    }
    Ok(())
}

fn invalid(text: String) -> Result<(), SpecError> {
    Err(SpecError::Invalid(text))
}

fn parser(f: TargetsFormat) -> Format {
    match f {
        TargetsFormat::Http => Format::Http,
        TargetsFormat::Json => Format::Json,
        TargetsFormat::Urls => Format::Urls,
    }
}

/// The set's file, buffered.
fn open(path: &Path, n: &Names) -> Result<Box<dyn BufRead>, SpecError> {
    match std::fs::File::open(path) {
        Ok(f) => Ok(Box::new(std::io::BufReader::with_capacity(64 * 1024, f))),
        Err(source) => Err(SpecError::File {
            what: format!(
                "cannot read the {} file '{}': check the path",
                n.targets,
                path.display()
            ),
            source,
        }),
    }
}

fn collect<R: BufRead>(r: Reader<R>) -> Result<Vec<TargetDef>, SpecError> {
    r.collect::<Result<Vec<_>, TargetsError>>()
        .map_err(|e| SpecError::Invalid(e.to_string()))
}

/// A seed for a run that was given none (recorded in its result).
fn draw_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_nanos() as u64) ^ (u64::from(std::process::id()) << 32)
}

/// Resolve every target; the names in first-seen order.
fn build(
    defs: Vec<TargetDef>,
    source: &str,
    base: Option<&Target>,
    extra: &[(String, String)],
    labels: &mut Labels,
) -> Result<Vec<SetTarget>, SpecError> {
    let at = |line: u64, what: String| SpecError::Invalid(format!("{source}:{line}: {what}"));
    let Some(first) = defs.first() else {
        return Err(SpecError::Invalid(format!(
            "{source}: the set is empty: give at least one target (METHOD URL, or one URL a line)"
        )));
    };
    let origin = match base {
        Some(b) => b.clone(),
        None => Target::parse(&first.url).map_err(|e| at(first.line, e.to_string()))?,
    };
    let mut out = Vec::with_capacity(defs.len());
    for d in defs {
        let mut target = Target::parse(&d.url).map_err(|e| at(d.line, e.to_string()))?;
        if base.is_some() {
            target = Target {
                path: target.path,
                ..origin.clone()
            };
        }
        if (target.tls, &target.host, target.port) != (origin.tls, &origin.host, origin.port) {
            return Err(at(
                d.line,
                format!(
                    "{} is not on {}, where the set's first target is: a set is sent to one host and port; split it by host",
                    d.url,
                    origin.url().trim_end_matches('/')
                ),
            ));
        }
        let body = match &d.body {
            None => None,
            Some(Body::Inline(b)) => Some(b.clone()),
            Some(Body::File(p)) => Some(std::fs::read(p).map_err(|e| {
                at(
                    d.line,
                    format!("cannot read the body file '{}': {e}", p.display()),
                )
            })?),
        };
        let tag = labels
            .tag(&d.method, &target.url(), d.name.as_deref(), &d.checks)
            .map_err(|e| at(d.line, format!("# @check {e}")))?;
        let mut headers = d.headers;
        headers.extend(extra.iter().cloned());
        out.push(SetTarget {
            method: d.method,
            target,
            headers,
            body,
            tag,
            weight: d.weight,
            checks: d.checks,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_model::load::Order;

    fn set(text: &str, edit: fn(&mut LoadSpec)) -> Result<(RequestSet, Vec<String>), String> {
        let mut spec = LoadSpec {
            targets_text: Some(text.to_owned()),
            concurrency: 1,
            pipeline: 1,
            ..LoadSpec::default()
        };
        edit(&mut spec);
        let mut labels = Labels::default();
        read(
            &spec,
            &Names::FLAGS,
            &[("X-All".into(), "1".into())],
            &mut labels,
        )
        .map(Option::unwrap)
        .map(|s| (s, labels.names().to_vec()))
        .map_err(|e| e.to_string())
    }

    #[test]
    fn names_are_given_or_the_url_and_shared_by_id() {
        let (s, names) = set(
            "GET http://h:81/a\n\n# @name b\nPOST http://h:81/b\nX: 1\n\n# @name b\nGET http://h:81/b2\n\nDELETE http://h:81/a\n",
            |_| {},
        )
        .unwrap();
        assert_eq!(names, ["http://h:81/a", "b", "DELETE http://h:81/a"]);
        let ids: Vec<u16> = s.targets.iter().map(|t| t.tag.name).collect();
        assert_eq!(ids, [0, 1, 1, 2]);
        assert_eq!(
            s.targets[1].headers,
            [("X".into(), "1".into()), ("X-All".into(), "1".into())]
        );
        assert_eq!(s.origin().url(), "http://h:81/");
        assert_eq!(s.order, Order::RoundRobin);
    }

    #[test]
    fn bad_sets_are_one_line_naming_the_place() {
        assert_eq!(
            set("", |_| {}).unwrap_err(),
            "-: the set is empty: give at least one target (METHOD URL, or one URL a line)"
        );
        let e = set("GET http://a/\nGET http://b/\n", |_| {}).unwrap_err();
        assert!(e.starts_with("-:2: http://b/ is not on http://a"), "{e}");
        let e = set("GET http://a/\n@/nonexistent/kurabe-body\n", |_| {}).unwrap_err();
        assert!(
            e.starts_with("-:1: cannot read the body file '/nonexistent/kurabe-body'"),
            "{e}"
        );
        let e = set("GET http://a/\n", |s| s.method = Some("PUT".into())).unwrap_err();
        assert!(e.starts_with("-m and --targets:"), "{e}");
        let e = set("GET http://a/\n", |s| s.url = Some("http://b/x".into())).unwrap_err();
        assert!(e.contains("give only scheme://host:port"), "{e}");
        let e = set("GET http://a/\n", |s| s.pipeline = 2).unwrap_err();
        assert!(e.starts_with("--pipeline with --targets"), "{e}");
        let e = set("http://a/\nhttp://a/ x\n", |s| {
            s.targets_format = Some(TargetsFormat::Urls)
        })
        .unwrap_err();
        assert!(e.starts_with("-:2: invalid URL"), "{e}");
    }

    #[test]
    fn a_url_given_with_the_set_is_every_targets_origin() {
        let (s, _) = set("GET http://a/x?q\n\nGET http://b:81/y\n", |s| {
            s.url = Some("https://c:8443".into())
        })
        .unwrap();
        let urls: Vec<String> = s.targets.iter().map(|t| t.target.url()).collect();
        assert_eq!(urls, ["https://c:8443/x?q", "https://c:8443/y"]);
    }

    #[test]
    fn a_seed_is_kept_or_drawn() {
        let (s, _) = set("http://a/\n", |s| {
            s.targets_format = Some(TargetsFormat::Urls);
            s.order = Some(Order::Weighted);
            s.seed = Some(7);
        })
        .unwrap();
        assert_eq!((s.order, s.seed), (Order::Weighted, 7));
        let e = read(
            &LoadSpec {
                seed: Some(1),
                ..LoadSpec::for_url("http://a/")
            },
            &Names::FLAGS,
            &[],
            &mut Labels::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("add --targets FILE"), "{e}");
    }
}
