//! A [`LoadSpec`]'s request set (`targets`, `targets_text`) read and
//! resolved into the engine's [`RequestSet`]: every target's method, URL, headers (its
//! own, then the spec's `-H`, `-C`, `-A`) and body, its name id and weight,
//! checked before any request; the settings that need no target
//! ([`check`]) before a byte of the set is read.
//!
//! Owns reading the set through [`crate::source::targets::Reader`], reading body
//! files, the rules a set must keep (not empty, every target on the first
//! one's scheme, host and port: the engine connects to one address) and
//! tagging each target with its name and checks ([`Labels::tag`]: its
//! `# @name`, else its URL, its method first when not GET), and the
//! order it is sent in (the one given, else `weighted` when a target
//! carries a weight, else `round-robin`). Errors are
//! one line: `FILE:LINE: …` for a target, the setting's name (flag or
//! plan key) for the rest. Must not fetch anything.
//!
//! A file larger than [`STREAM_BYTES`] (or of more than [`super::spool::HELD_LINES`]
//! lines) sent over HTTP/1.1 is not held:
//! its first [`FIRST_BYTES`] of targets are read and checked before the
//! run, and a [`Stream`] reads the file again during it (`super::feed`),
//! each target resolved by the same [`Resolver`]: front to back in the
//! sequential and round-robin orders (a line that does not parse further
//! on ends the run with its `FILE:LINE: …` when the feeder reaches it),
//! drawn from its [`index`] (built by a fast scan before the run, each
//! draw parsing what it reads, so a bad line ends the run likewise when a
//! draw reaches it) in the weighted and random orders. Without an order,
//! a streamed set is drawn by weight when its first targets carry one;
//! when they do not, it is sent in file order and a weight further on
//! ends the run like a bad line (it would go unused).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kurabe_model::load::{LoadSpec, Order, TargetsFormat};

use super::index;
pub(crate) use super::spool::STREAM_BYTES;
use crate::client::Requests;
use crate::load::SpecError;
use crate::request::Names;
use crate::source::set::{Pass, RequestSet, SetTarget, Stream, Streamed};
use crate::source::targets::{Body, Format, Reader, TargetDef, TargetsError};
use crate::tags::Labels;
use crate::target::Target;

/// The set `spec` names, if any, with `extra` (the spec's resolved `-H`,
/// `-C`, `-A` headers) after each target's own headers; its reading
/// given up once `stop` is set ([`SpecError::Stopped`]: a file's within a
/// block, a held set's parse within [`STOP_EVERY`] targets).
pub(crate) fn read(
    spec: &LoadSpec,
    n: &Names,
    (extra, stop): (&[(String, String)], &Arc<AtomicBool>),
    labels: &mut Labels,
) -> Result<Option<Requests>, SpecError> {
    let base = check(spec, n)?;
    let source = match (&spec.targets, &spec.targets_text) {
        (None, None) => return Ok(None),
        (Some(p), None) => p.display().to_string(),
        (_, Some(_)) => "-".to_owned(),
    };
    let format = spec.targets_format.unwrap_or_default();
    let head = SetHead {
        source,
        format,
        order: spec.order,
        seed: spec.seed.unwrap_or_else(draw_seed),
    };
    let held;
    let text = match (&spec.targets, &spec.targets_text) {
        (_, Some(text)) => text.as_bytes(),
        (Some(path), None) => match open(path, n, stop)? {
            Opened::Held(bytes) => {
                held = bytes;
                &held[..]
            }
            Opened::Streamed(file) => {
                let ends = (base.as_ref(), extra, stop);
                let (set, stream) = stream(path, file, head, ends, labels)?;
                return Ok(Some(Requests::Streamed(Arc::new(set), stream)));
            }
        },
        (None, None) => unreachable!("checked above"),
    };
    let source = &head.source;
    let defs = Reader::new(text, parser(format), source);
    let (targets, weighted) = build(defs, source, (base.as_ref(), extra, stop), labels)?;
    let order = head.order_of(weighted);
    Ok(Some(Requests::Set(Arc::new(head.into_set(targets, order)))))
}

/// What [`read`] checks before it reads a byte of the set, so a caller
/// that reads the set itself (standard input) can check it first: the
/// set's settings given without a set, the settings a set replaces, the
/// URL given with it. The origin of every target when that URL gives it
/// (`None`: the set's first target's, or no set).
pub(crate) fn check(spec: &LoadSpec, n: &Names) -> Result<Option<Target>, SpecError> {
    if spec.targets.is_none() && spec.targets_text.is_none() {
        if spec.order.is_some() || spec.seed.is_some() || spec.targets_format.is_some() {
            invalid(format!(
                "{}, {} and {} apply to a request set: add {} FILE",
                n.order, n.seed, n.targets_format, n.targets
            ))?;
        }
        return Ok(None);
    }
    check_settings(spec, n)?;
    base(spec, n)
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

/// A set's file as opened: small enough to hold, or streamed.
enum Opened {
    /// All of it (at most [`STREAM_BYTES`]).
    Held(Vec<u8>),
    /// Larger (or standard input's spool): read as it is sent.
    Streamed(SetFile),
}

/// The set's file opened once and checked (`kurabe_input`: a regular
/// file, never a pipe or a device), held when it is at most
/// [`STREAM_BYTES`] and [`super::spool::HELD_LINES`] lines (its read
/// given up once `stop` is set); standard input's spool for `-`.
fn open(path: &Path, n: &Names, stop: &Arc<AtomicBool>) -> Result<Opened, SpecError> {
    if let Some(r) = stdin_spool(path) {
        return Ok(Opened::Streamed(SetFile::Spool(r)));
    }
    let input = kurabe_input::open(path, crate::load::files::targets(n))?;
    if input.size() > STREAM_BYTES {
        return Ok(Opened::Streamed(SetFile::File(input.shared())));
    }
    // Read through the shared file (up to its size when opened), which a
    // set of too many lines streams from instead.
    let file = input.shared();
    let mut held = Vec::with_capacity(file.size() as usize);
    let mut reading = file.stopping_on(Arc::clone(stop)).part();
    std::io::Read::read_to_end(&mut reading, &mut held)
        .map_err(|e| SpecError::Invalid(format!("{}: cannot read: {e}", path.display())))?;
    if super::spool::too_many_lines(&held) {
        return Ok(Opened::Streamed(SetFile::File(file)));
    }
    Ok(Opened::Held(held))
}

/// Where a streamed set's passes read: standard input's spool, or the
/// file opened once (each pass reads it by offset, up to its size when
/// opened).
#[derive(Debug, Clone)]
enum SetFile {
    Spool(super::spool::SpoolReader),
    File(kurabe_input::Shared),
}

impl SetFile {
    /// The same file, whose reads fail once `stop` is set (standard
    /// input's spool: a wait for more of it is given up).
    fn stopping_on(&self, stop: &Arc<AtomicBool>) -> SetFile {
        match self {
            SetFile::File(f) => SetFile::File(f.stopping_on(Arc::clone(stop))),
            SetFile::Spool(r) => SetFile::Spool(r.stopping_on(stop)),
        }
    }

    /// A reader from the start, front to back.
    fn reader(&self) -> Box<dyn std::io::Read + Send> {
        match self {
            SetFile::Spool(r) => Box::new(r.clone()),
            SetFile::File(f) => Box::new(f.part()),
        }
    }

    /// A reader a draw seeks in: the file, or the spool once complete
    /// (the wait for it given up once `stop` is set), whose reads fail
    /// once `stop` is set.
    fn seekable(&self, stop: &Arc<AtomicBool>) -> Result<kurabe_input::Part, String> {
        match self {
            SetFile::File(f) => Ok(f.stopping_on(Arc::clone(stop)).part()),
            SetFile::Spool(_) => super::spool::complete_file(Some(stop))
                .unwrap_or_else(|| Err(std::io::Error::other("standard input was not spooled")))
                .and_then(kurabe_input::Shared::of)
                .map(|f| f.stopping_on(Arc::clone(stop)).part())
                .map_err(|e| format!("cannot read the spooled standard input: {e}")),
        }
    }
}

/// A seed for a run that was given none (recorded in its result).
fn draw_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_nanos() as u64) ^ (u64::from(std::process::id()) << 32)
}

/// Targets a held set's parse resolves between two looks at the stop.
const STOP_EVERY: usize = 1024;

/// The ends a set's targets are resolved against: the URL given with the
/// set, the spec's extra headers, and the stop its reading gives up on.
type Ends<'a> = (
    Option<&'a Target>,
    &'a [(String, String)],
    &'a Arc<AtomicBool>,
);

/// Resolve every target as it is read (never every target read first
/// and then resolved: a held set is in memory once); the names in
/// first-seen order, and whether any target carries a weight.
fn build(
    mut defs: impl Iterator<Item = Result<TargetDef, TargetsError>>,
    source: &str,
    (base, extra, stop): Ends<'_>,
    labels: &mut Labels,
) -> Result<(Vec<SetTarget>, bool), SpecError> {
    let read =
        |d: Result<TargetDef, TargetsError>| d.map_err(|e| SpecError::Invalid(e.to_string()));
    let Some(first) = defs.next().map(read).transpose()? else {
        return Err(empty_set(source));
    };
    let mut r = Resolver::new(&first, source, base, extra)?;
    r.keeps_bodies = true;
    let mut weighted = first.weight.is_some();
    let mut out = vec![r.one(first, labels)?];
    for d in defs {
        if out.len() % STOP_EVERY == 0 && stop.load(Ordering::Relaxed) {
            return Err(SpecError::Stopped);
        }
        let d = read(d)?;
        weighted |= d.weight.is_some();
        out.push(r.one(d, labels)?);
    }
    Ok((out, weighted))
}

/// What turns a target as read into one as sent: the set's origin and
/// the spec's extra headers.
#[derive(Debug, Clone)]
struct Resolver {
    source: String,
    /// The URL given with the set replaces every target's origin.
    rebase: bool,
    origin: Target,
    extra: Vec<(String, String)>,
    /// The body files read, one shared [`crate::request::Body`] each (a
    /// set often names one for every target: held once, not per target);
    /// of a streamed set, only the last one read.
    bodies: std::collections::HashMap<std::path::PathBuf, crate::request::Body>,
    /// Every body file read is kept (a held set's targets hold them all
    /// anyway); else only the last (a streamed set's passes).
    keeps_bodies: bool,
    /// The set is sent in file order because no order was given and its
    /// first targets carry no weight: a target that carries one is an
    /// error (its weight would go unused).
    no_weights: bool,
}

impl Resolver {
    /// The resolver of a set whose first target is `first`.
    fn new(
        first: &TargetDef,
        source: &str,
        base: Option<&Target>,
        extra: &[(String, String)],
    ) -> Result<Resolver, SpecError> {
        let origin = match base {
            Some(b) => b.clone(),
            None => Target::parse(&first.url).map_err(|e| at(source, first.line, e.to_string()))?,
        };
        Ok(Resolver {
            source: source.to_owned(),
            rebase: base.is_some(),
            origin,
            extra: extra.to_vec(),
            bodies: Default::default(),
            keeps_bodies: false,
            no_weights: false,
        })
    }

    /// One target, resolved and tagged.
    fn one(&mut self, d: TargetDef, labels: &mut Labels) -> Result<SetTarget, SpecError> {
        let (source, origin) = (&self.source, &self.origin);
        if self.no_weights && d.weight.is_some() {
            return Err(at(source, d.line, format!(
                "a weight after the first {} KiB of a large set sent without an order, in file order: give --order weighted (a plan's order = \"weighted\") to draw by weight, or --order round-robin to send the file's order",
                FIRST_BYTES / 1024
            )));
        }
        let mut target = Target::parse(&d.url).map_err(|e| at(source, d.line, e.to_string()))?;
        if self.rebase {
            target = Target {
                path: target.path,
                ..origin.clone()
            };
        }
        if (target.tls, &target.host, target.port) != (origin.tls, &origin.host, origin.port) {
            return Err(at(
                source,
                d.line,
                format!(
                    "{} is not on {}, where the set's first target is: a set is sent to one host and port; split it by host",
                    d.url,
                    origin.url().trim_end_matches('/')
                ),
            ));
        }
        let body = self.body(&d)?;
        let tag = labels
            .tag(&d.method, &target.url(), d.name.as_deref(), &d.checks)
            .map_err(|e| at(&self.source, d.line, format!("# @check {e}")))?;
        let mut headers = d.headers;
        headers.extend(self.extra.iter().cloned());
        Ok(SetTarget {
            method: d.method,
            target,
            headers,
            body,
            tag,
            weight: d.weight.unwrap_or(1),
            checks: d.checks,
        })
    }

    /// The target's body: its file read once and shared by every target
    /// that names it (see [`Resolver::bodies`]).
    fn body(&mut self, d: &TargetDef) -> Result<Option<crate::request::Body>, SpecError> {
        let p = match &d.body {
            None => return Ok(None),
            Some(Body::Inline(b)) => return Ok(Some(b.clone().into())),
            Some(Body::File(p)) => p,
        };
        if let Some(body) = self.bodies.get(p) {
            return Ok(Some(body.clone()));
        }
        let name = kurabe_input::Name::new("the body file");
        let body = kurabe_input::read(p, name, crate::request::MAX_BODY_BYTES)
            .map_err(|e| at(&self.source, d.line, e.to_string()))?;
        let body = crate::request::Body::from(body);
        if !self.keeps_bodies {
            self.bodies.clear();
        }
        self.bodies.insert(p.clone(), body.clone());
        Ok(Some(body))
    }
}

/// `FILE:LINE: what`.
fn at(source: &str, line: u64, what: String) -> SpecError {
    SpecError::Invalid(format!("{source}:{line}: {what}"))
}

/// Bytes of targets (about) a streamed set reads before the run: checked,
/// tagged, its origin (at least one target, however large).
const FIRST_BYTES: usize = 256 * 1024;

/// Standard input's spool (`super::spool`) when `path` is `-` and it
/// was too large to hold.
fn stdin_spool(path: &Path) -> Option<super::spool::SpoolReader> {
    (path == Path::new("-")).then(super::spool::open).flatten()
}

/// A streamed set: its first targets read now (so a bad first line or a
/// missing body file stops the run before any request), the rest by its
/// [`Stream`] during the run: the file front to back, or (the random
/// orders) draws from its index, built now. Only the first target is
/// kept (the set's origin and first method). What is read now is given
/// up once `stop` is set; the run's passes read on until the run ends.
fn stream(
    path: &Path,
    file: SetFile,
    head: SetHead,
    (base, extra, stop): Ends<'_>,
    labels: &mut Labels,
) -> Result<(RequestSet, Streamed), SpecError> {
    let now = file.stopping_on(stop);
    let (first, mut resolver, weighted) = first_targets(&now, &head, base, extra, labels)?;
    let format = parser(head.format);
    let order = head.order_of(weighted);
    // No order given and no weight among the first targets: file order,
    // and a weight further on must not go unused in silence.
    resolver.no_weights = head.order.is_none() && !weighted;
    let stream: std::sync::Arc<dyn Stream> = match order {
        Order::Sequential | Order::RoundRobin => std::sync::Arc::new(FileStream {
            file,
            format,
            resolver,
        }),
        Order::Weighted | Order::Random => std::sync::Arc::new(IndexedStream {
            drawn: std::sync::Arc::new(index::Drawn {
                index: build_index(path, &now, format, &head.source)?,
                format,
                source: head.source.clone(),
                weighted: order == Order::Weighted,
                seed: head.seed,
                passes: Default::default(),
            }),
            file,
            resolver,
        }),
    };
    Ok((head.into_set(vec![first], order), Streamed(stream)))
}

/// The index of the targets file at `path` (its fast scan), kept for
/// the process's next set of the same file unchanged (a run is checked,
/// then resolved again; an A/B's variants and rounds send one set).
fn build_index(
    path: &Path,
    file: &SetFile,
    format: Format,
    source: &str,
) -> Result<std::sync::Arc<index::Index>, SpecError> {
    type Key = (
        std::path::PathBuf,
        Format,
        u64,
        Option<std::time::SystemTime>,
    );
    static LAST: std::sync::Mutex<Option<(Key, std::sync::Arc<index::Index>)>> =
        std::sync::Mutex::new(None);
    let meta = match file {
        SetFile::File(f) => f.file().metadata().ok(),
        SetFile::Spool(_) => None,
    };
    let key: Key = (
        path.to_owned(),
        format,
        meta.as_ref().map_or(0, std::fs::Metadata::len),
        meta.and_then(|m| m.modified().ok()),
    );
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, ix)) = last.as_ref().filter(|(k, _)| *k == key) {
        return Ok(std::sync::Arc::clone(ix));
    }
    let ix = scan_targets(file, format).map_err(|err| {
        SpecError::Invalid(format!("cannot read the targets file {source}: {err}"))
    })?;
    let ix = std::sync::Arc::new(ix);
    *last = Some((key, std::sync::Arc::clone(&ix)));
    Ok(ix)
}

/// The fast scan of a streamed set's file (standard input's spool in
/// one pass, a file in pieces on the CPUs).
fn scan_targets(file: &SetFile, format: Format) -> std::io::Result<index::Index> {
    match file {
        SetFile::Spool(r) => super::scan::scan(r.clone(), format),
        SetFile::File(f) => super::scan::scan_file(f, format),
    }
}

/// A streamed set's first targets (about [`FIRST_BYTES`] of them), read,
/// resolved and tagged: the first one, the resolver of the rest, and
/// whether any of them carries a weight.
fn first_targets(
    file: &SetFile,
    head: &SetHead,
    base: Option<&Target>,
    extra: &[(String, String)],
    labels: &mut Labels,
) -> Result<(SetTarget, Resolver, bool), SpecError> {
    let mut reader = Reader::new(
        std::io::BufReader::new(file.reader()),
        parser(head.format),
        &head.source,
    );
    let (mut resolver, mut first, mut bytes, mut weighted) = (None, None, 0, false);
    while bytes < FIRST_BYTES {
        let Some(def) = reader.next() else {
            break;
        };
        let def = def.map_err(|e| SpecError::Invalid(e.to_string()))?;
        weighted |= def.weight.is_some();
        let r = match &mut resolver {
            Some(r) => r,
            None => resolver.insert(Resolver::new(&def, &head.source, base, extra)?),
        };
        let t = r.one(def, labels)?;
        bytes += t.target.path.len() + t.body.as_ref().map_or(0, |b| b.len()) + 64;
        bytes += t
            .headers
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>();
        first.get_or_insert(t);
    }
    match (first, resolver) {
        (Some(first), Some(resolver)) => Ok((first, resolver, weighted)),
        _ => Err(empty_set(&head.source)),
    }
}

fn empty_set(source: &str) -> SpecError {
    SpecError::Invalid(format!(
        "{source}: the set is empty: give at least one target (METHOD URL, or one URL a line)"
    ))
}

/// A set's description before its targets.
struct SetHead {
    source: String,
    format: TargetsFormat,
    /// The order given (`--order`, a plan's `order`), if one was.
    order: Option<Order>,
    seed: u64,
}

impl SetHead {
    /// The order the set is sent in: the one given, else `weighted` when
    /// a target carries a weight (`weighted`: one of those read does),
    /// else `round-robin`.
    fn order_of(&self, weighted: bool) -> Order {
        match (self.order, weighted) {
            (Some(order), _) => order,
            (None, true) => Order::Weighted,
            (None, false) => Order::RoundRobin,
        }
    }

    fn into_set(self, targets: Vec<SetTarget>, order: Order) -> RequestSet {
        RequestSet {
            targets,
            order,
            seed: self.seed,
            source: self.source,
            format: self.format,
        }
    }
}

/// A targets file read pass by pass.
#[derive(Debug)]
struct FileStream {
    file: SetFile,
    format: Format,
    resolver: Resolver,
}

impl Stream for FileStream {
    fn pass(&self, stop: &Arc<AtomicBool>) -> Result<Box<dyn Pass>, String> {
        let file = self.file.stopping_on(stop);
        let reader = Reader::new(
            std::io::BufReader::with_capacity(256 * 1024, file.reader()),
            self.format,
            &self.resolver.source,
        );
        Ok(Box::new(FilePass {
            reader,
            resolver: self.resolver.clone(),
        }))
    }
}

/// A target a pass read, resolved and tagged.
fn resolved(
    def: Result<TargetDef, String>,
    resolver: &mut Resolver,
    labels: &mut Labels,
) -> Result<SetTarget, String> {
    resolver.one(def?, labels).map_err(|e| e.to_string())
}

/// A targets file drawn from by its index (`weighted`, `random`).
#[derive(Debug)]
struct IndexedStream {
    drawn: std::sync::Arc<index::Drawn>,
    file: SetFile,
    resolver: Resolver,
}

impl Stream for IndexedStream {
    fn pass(&self, stop: &Arc<AtomicBool>) -> Result<Box<dyn Pass>, String> {
        let file = self.file.seekable(stop)?;
        Ok(Box::new(DrawPass {
            draw: self.drawn.pass(file),
            resolver: self.resolver.clone(),
        }))
    }

    fn targets(&self) -> Option<u64> {
        Some(self.drawn.index.targets)
    }
}

/// One pass of draws from an [`IndexedStream`].
struct DrawPass {
    draw: index::Draw,
    resolver: Resolver,
}

impl Pass for DrawPass {
    fn next_target(&mut self, labels: &mut Labels) -> Option<Result<SetTarget, String>> {
        let def = self.draw.next_def()?;
        Some(resolved(def, &mut self.resolver, labels))
    }
}

/// One pass over a [`FileStream`].
struct FilePass {
    reader: Reader<std::io::BufReader<Box<dyn std::io::Read + Send>>>,
    resolver: Resolver,
}

impl Pass for FilePass {
    fn next_target(&mut self, labels: &mut Labels) -> Option<Result<SetTarget, String>> {
        let def = self.reader.next()?.map_err(|e| e.to_string());
        Some(resolved(def, &mut self.resolver, labels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str, edit: fn(&mut LoadSpec)) -> Result<(RequestSet, Vec<String>), String> {
        let mut spec = LoadSpec {
            targets_text: Some(text.to_owned()),
            concurrency: 1,
            pipeline: 1,
            ..LoadSpec::default()
        };
        edit(&mut spec);
        let mut labels = Labels::default();
        let extra = [("X-All".into(), "1".into())];
        read(
            &spec,
            &Names::FLAGS,
            (&extra, &Default::default()),
            &mut labels,
        )
        .map(|r| RequestSet::clone(r.unwrap().set().unwrap()))
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
            (&[], &Default::default()),
            &mut Labels::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("add --targets FILE"), "{e}");
    }
}
