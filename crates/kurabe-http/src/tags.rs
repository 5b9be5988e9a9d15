//! What each request of a run is reported as and checked by: the run's
//! table of request names (the per-request breakdown's rows) and of check
//! sets, and the small [`Tag`] every send carries into its completion.
//!
//! A request's name is its target's name (`# @name`), else its URL (with
//! the method first when not GET), folded by the first `--group
//! REGEX=NAME` whose REGEX matches the URL. Its checks are the run's
//! (`--check`) followed by its target's (`# @check`). Both are interned
//! once per target before the run, so the hot path only copies a [`Tag`]
//! and indexes a table.
//!
//! Hand-off with the request sets: whoever builds the run's requests
//! calls [`Labels::tag`] once per target and puts the returned [`Tag`]
//! into the `Slot` of every send of that target (`slot.tag`); a run of one
//! request uses [`Tag::default`].
//!
//! Owns the name and check-set tables, their bound ([`MAX_NAMES`]) and the
//! `--group` grammar. Must not count anything (the workers' `Stats` do).

use std::collections::HashMap;

use regex::bytes::{Regex, RegexBuilder};

use crate::response_check::{CheckError, CheckSet, Needs};

/// Most names a breakdown keeps; later names share one row, [`OTHER`]
/// (each name's histogram is a few KiB per worker thread).
pub const MAX_NAMES: usize = 256;

/// The row of the names beyond [`MAX_NAMES`].
pub const OTHER: &str = "(other names)";

/// What one send is reported as and checked by: indexes into the run's
/// [`Labels`] (0 and 0: the first name, the run's own checks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Tag {
    /// Row of the breakdown ([`Labels::names`]).
    pub name: u16,
    /// Check set ([`Labels::checks`]).
    pub checks: u16,
}

/// A `--group` rule: URLs matching `re` are reported as `name`.
#[derive(Debug, Clone)]
struct Group {
    re: Regex,
    name: String,
}

/// A `--group` that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{token}': {why}; a group is REGEX=NAME, e.g. '/item/\\d+=/item/:id'")]
pub struct GroupError {
    /// The group as given.
    pub token: String,
    /// What is wrong with it.
    pub why: String,
}

/// The run's names and check sets.
#[derive(Debug, Clone)]
pub struct Labels {
    groups: Vec<Group>,
    names: Vec<String>,
    name_ids: HashMap<String, u16>,
    run_checks: Vec<String>,
    check_sets: Vec<CheckSet>,
    check_ids: HashMap<Vec<String>, u16>,
}

impl Default for Labels {
    /// No group, no check, no name yet.
    fn default() -> Self {
        Labels::new::<&str>(&[], &[]).expect("no group and no check always parse")
    }
}

impl Labels {
    /// Labels with `groups` (`REGEX=NAME` each) and the run's `checks`,
    /// before any target: check set 0 is the run's checks alone.
    pub fn new<S: AsRef<str>>(groups: &[S], checks: &[S]) -> Result<Labels, LabelError> {
        let groups = groups
            .iter()
            .map(|g| parse_group(g.as_ref()))
            .collect::<Result<_, _>>()?;
        let run_checks: Vec<String> = checks.iter().map(|c| c.as_ref().to_owned()).collect();
        let set = CheckSet::parse(&run_checks)?;
        Ok(Labels {
            groups,
            names: Vec::new(),
            name_ids: HashMap::new(),
            check_ids: HashMap::from([(Vec::new(), 0)]),
            run_checks,
            check_sets: vec![set],
        })
    }

    /// The tag of a target: `method` and `url` as sent, its own `name`
    /// and `checks` (unparsed, as a targets file gives them). `Err`: a
    /// check that does not parse.
    pub fn tag<S: AsRef<str>>(
        &mut self,
        method: &str,
        url: &str,
        name: Option<&str>,
        checks: &[S],
    ) -> Result<Tag, CheckError> {
        let name = match name {
            Some(n) => n.to_owned(),
            None => self.url_name(method, url),
        };
        Ok(Tag {
            name: self.intern_name(name),
            checks: self.intern_checks(checks)?,
        })
    }

    /// The name of an unnamed request: the first matching group's NAME,
    /// else the URL (after the method, when not GET).
    fn url_name(&self, method: &str, url: &str) -> String {
        for g in &self.groups {
            if let Some(c) = g.re.captures(url.as_bytes()) {
                let mut out = Vec::new();
                c.expand(g.name.as_bytes(), &mut out);
                return String::from_utf8_lossy(&out).into_owned();
            }
        }
        if method.eq_ignore_ascii_case("GET") {
            url.to_owned()
        } else {
            format!("{method} {url}")
        }
    }

    fn intern_name(&mut self, name: String) -> u16 {
        if let Some(&id) = self.name_ids.get(&name) {
            return id;
        }
        let name = if self.names.len() < MAX_NAMES {
            name
        } else {
            OTHER.to_owned()
        };
        if let Some(&id) = self.name_ids.get(&name) {
            return id;
        }
        let id = self.names.len() as u16;
        self.names.push(name.clone());
        self.name_ids.insert(name, id);
        id
    }

    fn intern_checks<S: AsRef<str>>(&mut self, own: &[S]) -> Result<u16, CheckError> {
        let own: Vec<String> = own.iter().map(|c| c.as_ref().trim().to_owned()).collect();
        if let Some(&id) = self.check_ids.get(&own) {
            return Ok(id);
        }
        let all: Vec<&str> = self
            .run_checks
            .iter()
            .map(String::as_str)
            .chain(own.iter().map(String::as_str))
            .collect();
        let set = CheckSet::parse(&all)?;
        // Distinct check lists are few (a targets file's handful): no bound needed
        // beyond the id's, which a file cannot reach without failing here.
        let id = u16::try_from(self.check_sets.len()).map_err(|_| CheckError {
            token: own.join(" "),
            why: "more than 65535 distinct check lists".to_owned(),
        })?;
        self.check_sets.push(set);
        self.check_ids.insert(own, id);
        Ok(id)
    }

    /// The names, by [`Tag::name`] (empty before the first tag).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The check set of `id` ([`Tag::checks`]).
    #[inline]
    pub fn checks(&self, id: u16) -> &CheckSet {
        &self.check_sets[usize::from(id)]
    }

    /// Every check of the run, each once, as written: the run's, then the
    /// targets' in first-seen order.
    pub fn check_texts(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.check_sets.iter().flat_map(|s| s.checks()) {
            if !out.iter().any(|o| o == c.text()) {
                out.push(c.text().to_owned());
            }
        }
        out
    }

    /// How many names and check sets there are (they only grow).
    pub fn size(&self) -> (usize, usize) {
        (self.names.len(), self.check_sets.len())
    }

    /// Whether any request of the run is checked.
    pub fn any_checks(&self) -> bool {
        self.check_sets.iter().any(|s| !s.is_empty())
    }

    /// What the run's checks read of responses, together.
    pub fn needs(&self) -> Needs {
        self.check_sets.iter().fold(Needs::default(), |a, s| {
            let n = s.needs();
            Needs {
                headers: a.headers || n.headers,
                body: a.body || n.body,
            }
        })
    }
}

/// A `--group` or a check that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// A `--group`.
    #[error(transparent)]
    Group(#[from] GroupError),
    /// A `--check`.
    #[error(transparent)]
    Check(#[from] CheckError),
}

/// `REGEX=NAME`: split at the last `=` (a regex may hold `=`, a name rarely does).
fn parse_group(text: &str) -> Result<Group, GroupError> {
    let bad = |why: String| GroupError {
        token: text.to_owned(),
        why,
    };
    let (pattern, name) = text
        .rsplit_once('=')
        .ok_or_else(|| bad("no '=' between REGEX and NAME".to_owned()))?;
    if pattern.is_empty() || name.trim().is_empty() {
        return Err(bad("the REGEX or the NAME is empty".to_owned()));
    }
    let re = RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            bad(match e {
                regex::Error::Syntax(s) => format!(
                    "the regex does not parse: {}",
                    s.lines().last().unwrap_or("").trim()
                ),
                other => format!("the regex cannot be used: {other}"),
            })
        })?;
    Ok(Group {
        re,
        name: name.trim().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: &[&str] = &[];

    #[test]
    fn unnamed_requests_are_named_by_url_and_folded_by_groups() {
        let mut l = Labels::new(&[r"/item/\d+=/item/:id", r"/u/(\w+)$=user $1"], NONE).unwrap();
        let a = l.tag("GET", "http://h/item/1", None, NONE).unwrap();
        let b = l.tag("GET", "http://h/item/22?x", None, NONE).unwrap();
        let c = l.tag("POST", "http://h/cart", None, NONE).unwrap();
        let d = l.tag("GET", "http://h/u/ann", None, NONE).unwrap();
        let e = l.tag("GET", "http://h/x", Some("checkout"), NONE).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            l.names(),
            ["/item/:id", "POST http://h/cart", "user ann", "checkout"]
        );
        assert_eq!((a.name, c.name, d.name, e.name), (0, 1, 2, 3));
    }

    #[test]
    fn names_beyond_the_bound_share_one_row() {
        let mut l = Labels::new(NONE, NONE).unwrap();
        for i in 0..MAX_NAMES + 10 {
            l.tag("GET", &format!("http://h/{i}"), None, NONE).unwrap();
        }
        assert_eq!(l.names().len(), MAX_NAMES + 1);
        assert_eq!(l.names().last().unwrap(), OTHER);
        let t = l.tag("GET", "http://h/new", None, NONE).unwrap();
        assert_eq!(usize::from(t.name), MAX_NAMES);
    }

    #[test]
    fn check_sets_are_the_runs_then_the_targets() {
        let mut l = Labels::new(NONE, &["status==200"]).unwrap();
        let a = l.tag("GET", "http://h/a", None, NONE).unwrap();
        let b = l.tag("GET", "http://h/b", None, &["body~ok"]).unwrap();
        let c = l.tag("GET", "http://h/c", None, &["body~ok"]).unwrap();
        assert_eq!((a.checks, b.checks, c.checks), (0, 1, 1));
        assert_eq!(l.checks(1).checks().len(), 2);
        assert!(l.needs().body && !l.needs().headers && l.any_checks());
        assert_eq!(l.check_texts(), ["status==200", "body~ok"]);
        let e = l.tag("GET", "http://h/d", None, &["bdy~x"]).unwrap_err();
        assert!(e.to_string().starts_with("'bdy~x': unknown subject"));
    }

    #[test]
    fn bad_groups_say_the_grammar() {
        for bad in ["noequals", "=x", "(=x"] {
            let e = Labels::new(&[bad], NONE).unwrap_err().to_string();
            assert!(e.starts_with(&format!("'{bad}': ")), "{e}");
            assert!(e.ends_with("e.g. '/item/\\d+=/item/:id'"), "{e}");
        }
    }
}
