//! Replay (`kurabe replay LOG URL`): recorded traffic read into a timed
//! sequence of requests.
//!
//! `log` reads access logs (nginx/Apache `combined` and `common`, or any
//! nginx `log_format`, compiled by `format`) one line at a time; `har`
//! reads HAR 1.2 files; `time` reads their timestamps; `edit` applies
//! `--rewrite`, `--allow-url`, `--deny-url` and `--set-header`. Each
//! yields [`Recorded`] requests (when, method, path and query, headers,
//! body) and a [`Tally`] of what could not be replayed, by [`Skip`]
//! reason with the first few places, because a request the log cannot
//! reproduce (a POST whose body the log does not hold, a CONNECT, a
//! malformed request line) is counted and listed, never guessed.
//!
//! Owns reading recordings. Must not fetch anything, resolve the hosts a
//! log names (only the base URL's host is ever contacted: absolute-form
//! request targets keep their path and query only), or build requests'
//! bytes (the engine does).

pub mod edit;
pub mod format;
pub mod har;
mod har_lift;
pub mod log;
pub(crate) mod read;
pub mod time;

/// One recorded request that can be replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// Its line in the log, or its entry in a HAR file (1-based).
    pub place: u64,
    /// When it started, microseconds since the Unix epoch.
    pub at_us: i64,
    /// Upper-case method.
    pub method: String,
    /// Path and query (origin form, starts with `/`).
    pub target: String,
    /// Headers to send, in order (a log's `Content-Type`, a HAR's headers
    /// without hop-by-hop ones, `Host` and `Content-Length`).
    pub headers: Vec<(String, String)>,
    /// The body, when the recording holds one (`None`: no body): held
    /// once, shared with the run's tables.
    pub body: Option<crate::request::Body>,
    /// The status the recording saw, if it says.
    pub status: Option<u16>,
}

/// Why a recorded request is not replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    /// The line is not in the log format.
    OtherFormat,
    /// The request line (or HAR entry) is not a request that can be sent.
    Malformed,
    /// A method with a body (POST, PUT, PATCH) whose body the log lacks.
    NoBody,
    /// CONNECT opens a tunnel; there is nothing to replay.
    Connect,
    /// A HAR entry for another scheme (`data:`, `ws:`, …).
    NotHttp,
    /// Not matched by any `--allow-url`.
    NotAllowed,
    /// Matched by a `--deny-url`.
    Denied,
}

impl Skip {
    /// The snake_case key in reports.
    pub fn key(self) -> &'static str {
        match self {
            Skip::OtherFormat => "other_format",
            Skip::Malformed => "malformed",
            Skip::NoBody => "no_body",
            Skip::Connect => "connect",
            Skip::NotHttp => "not_http",
            Skip::NotAllowed => "not_allowed",
            Skip::Denied => "denied",
        }
    }

    /// What the reason means, for people.
    pub fn text(self) -> &'static str {
        match self {
            Skip::OtherFormat => "line not in the log format",
            Skip::Malformed => "malformed request",
            Skip::NoBody => "body not in the log",
            Skip::Connect => "CONNECT (a tunnel)",
            Skip::NotHttp => "not http(s)",
            Skip::NotAllowed => "not matched by --allow-url",
            Skip::Denied => "matched by --deny-url",
        }
    }
}

/// How many places [`Tally`] keeps per reason.
pub const FIRST_KEPT: usize = 5;

/// Requests skipped for one reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Why.
    pub reason: Skip,
    /// How many.
    pub count: u64,
    /// The first few: place (line or entry) and an excerpt.
    pub first: Vec<(u64, String)>,
}

/// What a reader read and what it could not use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Lines (log) or entries (HAR) read, blank lines not counted.
    pub read: u64,
    /// Skipped requests by reason, in reason order.
    pub skipped: Vec<Skipped>,
}

impl Tally {
    /// Count `place` as skipped for `reason`, keeping an excerpt of `text`
    /// for the first few.
    pub fn skip(&mut self, reason: Skip, place: u64, text: &str) {
        let i = match self.skipped.binary_search_by(|s| s.reason.cmp(&reason)) {
            Ok(i) => i,
            Err(i) => {
                self.skipped.insert(
                    i,
                    Skipped {
                        reason,
                        count: 0,
                        first: Vec::new(),
                    },
                );
                i
            }
        };
        let s = &mut self.skipped[i];
        s.count += 1;
        if s.first.len() < FIRST_KEPT {
            s.first.push((place, format::clip(text, 120)));
        }
    }

    /// How many were skipped for `reason`.
    pub fn count(&self, reason: Skip) -> u64 {
        self.skipped
            .iter()
            .find(|s| s.reason == reason)
            .map_or(0, |s| s.count)
    }

    /// How many were skipped in all.
    pub fn total(&self) -> u64 {
        self.skipped.iter().map(|s| s.count).sum()
    }
}

/// The most of a recording one replay holds: its requests, each counted
/// as [`Recorded::held_bytes`]. A replay holds every request it sends
/// (recorded, then as the engine sends it), so this bounds its memory as
/// a held set's is bounded; a log or HAR file past it is refused at the
/// request that passes it, before the rest is read.
pub const MAX_HELD_BYTES: u64 = 128 << 20;

/// What one held request costs besides its method, path, headers and
/// body: its record, its place in the schedule and in the engine's table
/// (measured: a 16 MiB log of 206 000 GETs peaked ~330 bytes a request
/// above the binary, bodies and paths included).
pub const HELD_PER_REQUEST: u64 = 256;

/// A recording that passed [`MAX_HELD_BYTES`] at its request at `place`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    /// The line (log) or entry (HAR) whose request passed the limit.
    pub place: u64,
}

/// The one line of a recording too large to hold: `unit` and `place`
/// say where it passed [`MAX_HELD_BYTES`].
pub(crate) fn too_large(source_name: &str, unit: &str, place: u64) -> String {
    format!(
        "{source_name}: its requests pass the {} a replay holds at {unit} {place} (each counts its method, path, headers and body and {HELD_PER_REQUEST} bytes): replay a part of it (e.g. the {unit}s before {unit} {place})",
        kurabe_input::Bytes(MAX_HELD_BYTES)
    )
}

impl Recorded {
    /// What holding it counts toward [`MAX_HELD_BYTES`].
    pub fn held_bytes(&self) -> u64 {
        let headers: usize = self.headers.iter().map(|(k, v)| k.len() + v.len()).sum();
        let bytes = self.method.len() + self.target.len() + headers;
        bytes as u64 + self.body.as_ref().map_or(0, |b| b.len() as u64) + HELD_PER_REQUEST
    }
}

/// A recording read: its requests in time order and the tally.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    /// Replayable requests, sorted by start time (stable: a log's order
    /// among equal times).
    pub requests: Vec<Recorded>,
    /// What was read and skipped.
    pub tally: Tally,
    /// `line` for logs, `entry` for HAR files (how places are named).
    pub unit: &'static str,
    /// What `requests` count toward [`MAX_HELD_BYTES`].
    held: u64,
}

impl Recording {
    fn new(unit: &'static str) -> Recording {
        Recording {
            unit,
            ..Recording::default()
        }
    }

    /// Keep `r`, unless the requests kept and it pass [`MAX_HELD_BYTES`]
    /// (then it is dropped: a reader stops there).
    fn keep(&mut self, r: Recorded) -> Result<(), Full> {
        self.held += r.held_bytes();
        if self.held > MAX_HELD_BYTES {
            return Err(Full { place: r.place });
        }
        self.requests.push(r);
        Ok(())
    }

    /// Sort by start time (a log is written as requests end, so a slow
    /// request appears after later ones).
    fn finish(mut self) -> Recording {
        self.requests.sort_by_key(|r| r.at_us);
        self
    }

    /// Microseconds from the first request's start to the last's.
    pub fn duration_us(&self) -> u64 {
        match (self.requests.first(), self.requests.last()) {
            (Some(a), Some(b)) => (b.at_us - a.at_us) as u64,
            _ => 0,
        }
    }
}

/// A replay, read: the requests in time order, when each is due, and the
/// summary the report carries.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The requests to send, in recorded order.
    pub requests: Vec<Recorded>,
    /// Per request: nanoseconds after the first, at the replay's speed.
    pub offsets_ns: Vec<u64>,
    /// Nanoseconds between the starts of two loops, at the replay's speed.
    pub period_ns: u64,
    /// Times the recording is played.
    pub loops: u32,
    /// What was read and skipped, and the pace.
    pub summary: kurabe_model::replay::ReplaySummary,
    /// Per request: its name and checks in the run's labels (set when the
    /// load is resolved; empty: the run's first name).
    pub tags: Vec<crate::tags::Tag>,
}

impl Replay {
    /// Nanoseconds after the run's start that request `i` of the run is
    /// intended; `None` past the last loop.
    pub fn at(&self, i: u64) -> Option<u64> {
        let n = self.offsets_ns.len() as u64;
        let (lp, j) = (i / n, i % n);
        // Saturated: `--loop 4294967295` of a day's log is past u64 ns
        // (it would wrap to early times and send at once).
        let start = lp.saturating_mul(self.period_ns);
        (lp < u64::from(self.loops)).then(|| start.saturating_add(self.offsets_ns[j as usize]))
    }

    /// The recorded request that request `i` of the run sends.
    #[inline]
    pub fn target(&self, i: u64) -> u32 {
        (i % self.offsets_ns.len() as u64) as u32
    }

    /// Requests the whole replay sends (every loop).
    pub fn total(&self) -> u64 {
        self.offsets_ns.len() as u64 * u64::from(self.loops)
    }
}

/// Methods whose request carries a body: a log without the body cannot
/// replay them.
pub(crate) fn wants_body(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH")
}

/// The path and query of a request target: origin form as is, absolute
/// form (`http://host/p?q`) without scheme and host; `None` for anything
/// else (`*`, authority form).
pub(crate) fn origin_form(target: &str) -> Option<String> {
    let t = target.split('#').next().unwrap_or("");
    if t.starts_with('/') {
        return Some(t.to_owned());
    }
    let lower = t.get(..8).unwrap_or(t).to_ascii_lowercase();
    let rest = if lower.starts_with("http://") {
        &t[7..]
    } else if lower.starts_with("https://") {
        &t[8..]
    } else {
        return None;
    };
    let at = rest.find(['/', '?']).unwrap_or(rest.len());
    if at == 0 {
        return None;
    }
    let tail = &rest[at..];
    Some(if tail.starts_with('/') {
        tail.to_owned()
    } else {
        format!("/{tail}")
    })
}

/// Whether a path and query can go on a request line: printable ASCII,
/// no spaces.
pub(crate) fn sendable(target: &str) -> bool {
    !target.is_empty() && target.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_form_keeps_path_and_query_only() {
        assert_eq!(origin_form("/a?b").as_deref(), Some("/a?b"));
        assert_eq!(origin_form("/a#frag").as_deref(), Some("/a"));
        assert_eq!(
            origin_form("http://evil.example:8080/x?y=1").as_deref(),
            Some("/x?y=1")
        );
        assert_eq!(origin_form("HTTPS://h?q").as_deref(), Some("/?q"));
        assert_eq!(origin_form("https://h").as_deref(), Some("/"));
        for bad in ["*", "h:443", "http:///x", "ftp://h/"] {
            assert_eq!(origin_form(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_recording_holds_at_most_its_limit_counting_each_requests_bytes() {
        let req = |place, body: usize| Recorded {
            place,
            at_us: 0,
            method: "POST".into(),
            target: "/up".into(),
            headers: vec![("Content-Type".into(), "x/y".into())],
            // Zeroed pages: counted, never touched.
            body: Some(vec![0; body].into()),
            status: None,
        };
        assert_eq!(
            req(1, 10).held_bytes(),
            4 + 3 + 12 + 3 + 10 + HELD_PER_REQUEST
        );
        let mut rec = Recording::new("line");
        let quarter = (MAX_HELD_BYTES / 4) as usize - 1024;
        for place in 1..=4 {
            rec.keep(req(place, quarter)).unwrap();
        }
        assert_eq!(rec.keep(req(5, 4096)), Err(Full { place: 5 }));
        assert_eq!(
            rec.requests.len(),
            4,
            "the request past the limit is not kept"
        );
        assert_eq!(
            too_large("a.log", "line", 5),
            "a.log: its requests pass the 128 MiB a replay holds at line 5 (each counts its method, path, headers and body and 256 bytes): replay a part of it (e.g. the lines before line 5)"
        );
    }

    #[test]
    fn the_tally_counts_by_reason_and_keeps_the_first_few() {
        let mut t = Tally::default();
        for i in 0..7 {
            t.skip(Skip::NoBody, i, "POST /x");
        }
        t.skip(Skip::OtherFormat, 9, "junk");
        assert_eq!(t.skipped[0].reason, Skip::OtherFormat);
        assert_eq!(t.count(Skip::NoBody), 7);
        assert_eq!(t.skipped[1].first.len(), FIRST_KEPT);
        assert_eq!(t.total(), 8);
    }
}
