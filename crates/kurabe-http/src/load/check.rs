//! The one check of a [`LoadSpec`]: [`check_spec`] checks it whole (every
//! combination of settings, every grammar, every bound: the rate within
//! reach, the pipeline's depth, a file named is a regular file within
//! its limit) before any of its inputs is read, and returns a
//! [`CheckedSpec`], which can only become a resolved load by reading
//! them ([`CheckedSpec::read`]: standard input's set, the set file, the
//! body, the replay's log). The CLI, plans, `kurabe replay` and the
//! fleet's workers all come through here, so a bad setting is refused in
//! the same words, exit 2, before any input is touched (standard input's
//! producer may not have written yet, or never end).
//!
//! Owns the order of the two steps, the rules of a load several client
//! processes share (a fleet's) and the reading of standard input. The
//! rules of every load are `resolve`'s, `set`'s and `replay`'s, which
//! name each setting as [`Names`] says.

use kurabe_model::load::LoadSpec;

use super::error::SpecError;
use super::{online_cpus, resolve, Checked};
use crate::request::Names;
use crate::source::set::spool::{self, StdinSet};

/// The largest set on standard input a load shared by several client
/// processes (a fleet) carries: held and sent inline to every worker.
pub const INLINE_SET_BYTES: u64 = 16 << 20;

/// A [`LoadSpec`] that passed every check that needs none of its inputs;
/// none of them read yet. Made only by [`check_spec`].
#[derive(Debug, Clone)]
pub struct CheckedSpec {
    spec: LoadSpec,
    names: Names,
    clients: u32,
}

/// A load whose inputs were read: the spec as run (a set read from
/// standard input carried as its text) and what it resolved to.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The spec, its standard input read (what a fleet sends its workers).
    pub spec: LoadSpec,
    /// The load resolved.
    pub load: Checked,
}

/// Check `spec` whole, reading none of its inputs, with errors that call
/// each setting what `names` says; `clients`: the client processes that
/// share the load (a fleet's workers; 1 otherwise), each sending at most
/// [`super::MAX_RATE_PER_CLIENT`].
pub fn check_spec(spec: LoadSpec, names: &Names, clients: u32) -> Result<CheckedSpec, SpecError> {
    resolve::check_early(&spec, names, clients)?;
    if clients > 1 {
        shared(&spec, names)?;
    }
    Ok(CheckedSpec {
        spec,
        names: *names,
        clients,
    })
}

/// What a load shared by client processes (`--workers`) needs besides:
/// a known end, figures an aborting threshold could judge live, and
/// stages of the rate (each worker sends its part), not of connections.
fn shared(spec: &LoadSpec, n: &Names) -> Result<(), SpecError> {
    let thresholds = super::gate::parsed(spec, n)?;
    if let Some(t) = thresholds.iter().find(|t| t.abort) {
        return Err(SpecError::Invalid(format!(
            "{} '{}' with --workers: ,abort needs live merged latency and the workers stream only counts; drop ,abort (the threshold is still judged on the merged run), or drop --workers",
            n.thresholds, t.text
        )));
    }
    if spec.requests.is_none() && spec.duration.is_none() && spec.stages.is_empty() {
        return Err(SpecError::Invalid(format!(
            "--workers needs {} REQUESTS, {} TIME or {}: a distributed run must know when to stop",
            n.requests, n.duration, n.stages
        )));
    }
    if spec.executor == Some(kurabe_model::stage::Executor::RampingVus) {
        return Err(SpecError::Invalid(format!(
            "{} DURATION:c=N with --workers: connection stages run on one host; stage the rate (30s:200, split among the workers) or drop --workers",
            n.stages
        )));
    }
    Ok(())
}

impl CheckedSpec {
    /// The spec as checked.
    pub fn spec(&self) -> &LoadSpec {
        &self.spec
    }

    /// Read the inputs (standard input's set once per process, then the
    /// set file, the body, the log) and resolve the load, checking what
    /// needs them (a set's size against `concurrency`, threshold names).
    pub fn read(self) -> Result<Loaded, SpecError> {
        self.read_stopping(&Default::default())
    }

    /// [`CheckedSpec::read`], the reading of the set or the log given up
    /// within a block once `stop` is set ([`SpecError::Stopped`]): a
    /// cancelled fleet share's reader does not read on to the end.
    pub fn read_or_stop(self, stop: &kurabe_stop::Stop) -> Result<Loaded, SpecError> {
        self.read_stopping(stop.flag())
    }

    /// [`CheckedSpec::read`], given up once `stop` is set.
    pub(super) fn read_stopping(
        self,
        stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<Loaded, SpecError> {
        let CheckedSpec {
            mut spec,
            names,
            clients,
        } = self;
        if spec.targets.as_deref() == Some(std::path::Path::new("-")) {
            read_stdin(&mut spec, &names, clients)?;
        }
        let load = resolve::resolve(&spec, &names, (online_cpus(), clients), stop).map(Checked)?;
        Ok(Loaded { spec, load })
    }
}

/// Standard input's set into `spec`: its text (the whole of it for a
/// fleet, at most [`INLINE_SET_BYTES`]; else when it is small), or left as
/// `-` when it is spooled (read as it grows). Read once: a process that
/// spooled it already reads the spool.
fn read_stdin(spec: &mut LoadSpec, n: &Names, clients: u32) -> Result<(), SpecError> {
    if spool::open().is_some() {
        return Ok(());
    }
    let cannot = |e| SpecError::Invalid(format!("cannot read the set from standard input: {e}"));
    let bytes = if clients > 1 {
        // Carried inline to every worker: held, so bounded.
        let mut bytes = Vec::new();
        let stdin = std::io::Read::take(std::io::stdin().lock(), INLINE_SET_BYTES + 1);
        std::io::Read::read_to_end(&mut { stdin }, &mut bytes).map_err(cannot)?;
        if bytes.len() as u64 > INLINE_SET_BYTES {
            return Err(SpecError::Invalid(format!(
                "{} - with --workers: standard input is more than {} MiB, the most a set sent to every worker inline may have: save it to a file every worker can read at the same path and give {} FILE",
                n.targets,
                INLINE_SET_BYTES >> 20,
                n.targets
            )));
        }
        bytes
    } else {
        match spool::read_stdin().map_err(cannot)? {
            StdinSet::Text(bytes) => bytes,
            StdinSet::Spooled => return Ok(()),
        }
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
        SpecError::Invalid(format!(
            "-:{line}: invalid UTF-8: targets files are UTF-8 text"
        ))
    })?;
    (spec.targets, spec.targets_text) = (None, Some(text));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checked_spec_has_read_nothing_and_reading_checks_the_rest() {
        let dir = std::env::temp_dir().join(format!("kurabe-load-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (set, body) = (dir.join("set.txt"), dir.join("body"));
        std::fs::write(&set, "NOT A TARGET\n").unwrap();
        std::fs::write(&body, "b").unwrap();
        let spec = LoadSpec {
            targets: Some(set.clone()),
            url: None,
            ..LoadSpec::for_url("http://h/")
        };
        // The set's bad line is found only by reading it.
        let checked = check_spec(spec.clone(), &Names::FLAGS, 1).unwrap();
        let e = checked.read().unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:1:", set.display())), "{e}");
        // A body file checked, then gone: only the read finds out.
        let spec = LoadSpec {
            body_file: Some(body.clone()),
            ..LoadSpec::for_url("http://h/")
        };
        let checked = check_spec(spec.clone(), &Names::FLAGS, 1).unwrap();
        std::fs::remove_file(&body).unwrap();
        let e = checked.read().unwrap_err().to_string();
        assert!(e.starts_with("cannot read the -p file"), "{e}");
        // A bad setting is refused by the check, the files untouched.
        let bad = LoadSpec {
            pipeline: 2,
            ..spec
        };
        let e = check_spec(bad, &Names::PLAN, 1).unwrap_err().to_string();
        assert_eq!(e, "http.pipeline 2 needs keep-alive: add http.keep_alive");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_shared_load_needs_an_end_and_no_live_abort() {
        let fleet = |edit: fn(&mut LoadSpec)| {
            let mut s = LoadSpec::for_url("http://h/");
            s.requests = Some(10);
            edit(&mut s);
            check_spec(s, &Names::FLAGS, 2)
                .map(drop)
                .map_err(|e| e.to_string())
        };
        assert!(fleet(|_| {}).is_ok());
        let e = fleet(|s| s.requests = None).unwrap_err();
        assert!(
            e.starts_with("--workers needs -n REQUESTS, -t TIME or --stage"),
            "{e}"
        );
        let e = fleet(|s| s.thresholds = vec!["p(99)<1s,abort".into()]).unwrap_err();
        assert!(
            e.starts_with("--threshold 'p(99)<1s,abort' with --workers"),
            "{e}"
        );
        // One client process may abort on a threshold.
        let mut one = LoadSpec::for_url("http://h/");
        one.thresholds = vec!["p(99)<1s,abort".into()];
        assert!(check_spec(one, &Names::FLAGS, 1).is_ok());
    }
}
