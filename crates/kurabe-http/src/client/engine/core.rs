//! The part of a worker thread that is the same for HTTP/1.1 and HTTP/2:
//! the run's clock and phase (warm-up, measuring, draining), the `-n`
//! budget and the `--rate` schedule, requests claimed and stamped sent,
//! complete responses counted, failures counted by kind with their first
//! reason, the abort on error, progress, the pace of waiting; and the socket
//! steps both protocols take alike (a connect's outcome, writing until the
//! socket is full, reading).
//!
//! Owns [`Core`] (a worker's protocol-free state and accounting); the
//! turn loop ([`super::turns`]) drives each protocol's connections through
//! [`super::connections::Connections`]. Must not know framing or
//! connection state: that is each protocol's worker (`h1/`,
//! `h2/worker.rs`, `h3/worker.rs`).

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use socket2::Socket;

use super::slot::Slot;
use super::sys;
use super::tls::TlsSession;
use crate::client::measure::gnuplot::GnuplotWriter;
use crate::client::measure::record::{record, Answer};
use crate::client::measure::series::Meter;
use crate::client::schedule::pace::Pace;
use crate::client::schedule::{Claims, Schedule};
use crate::request::Body;

use crate::client::shared::{socket_failure_kind, Shared};
use crate::client::RunControl;
use crate::response_check::{describe_failure, Seen};
use crate::source::set::feed::{Chunk, Feed};
use crate::source::set::{Picker, Span};
use crate::source::wire::Prepared;
use crate::tags::Labels;
use kurabe_model::failures::FailureKind;
use kurabe_model::load_stats::Stats;

/// A streamed set's request as picked: its bytes (its head when its body
/// is sent apart), its span, and that body.
pub(crate) type Picked<'a> = (&'a [u8], &'a Span, Option<&'a Body>);

/// What a connection kept of a response for the checks: its head and the
/// first bytes of its body (both empty when nothing is checked).
pub(crate) type Kept<'b> = (&'b [u8], &'b [u8]);

/// A send later than this behind its intended time counts as late.
const LATE_NS: u64 = 1_000_000;

/// A worker's state and accounting that do not depend on the protocol.
pub(crate) struct Core<'a> {
    pub sh: &'a Shared,
    pub ctl: &'a RunControl,
    /// Connections this worker drives.
    pub conns: usize,
    /// This worker's number (its share of the `--rate` schedule).
    pub index: u64,
    pub stats: Stats,
    pub claims: Claims,
    /// Open model: this worker's share of the schedule.
    pub schedule: Option<Schedule>,
    /// Connections to (re)start on the next turn.
    pub restart: Vec<u32>,
    /// The batch of `restart` being processed (kept to reuse its allocation).
    pub restarting: Vec<u32>,
    /// Connection stages: connections `0..awake` of this worker may be
    /// open (all without stages); the others are parked, closed, listed
    /// in `parked` once their last answer is in.
    awake: usize,
    parked: Vec<u32>,
    pub gnuplot: Option<GnuplotWriter>,
    pub measuring: bool,
    /// The run has stopped: read answers, write and count nothing.
    pub draining: bool,
    /// The clock as last read.
    pub now: u64,
    /// The first response's `Server:` (and TLS summary) is still wanted.
    pub want_server: bool,
    /// The ticker, and naps that batch wake-ups.
    pub pace: Pace,
    /// This worker's cut of the per-second series.
    pub meter: Meter,
    /// A request set's next target (None: one request).
    picker: Option<Picker>,
    /// A streamed set: the chunk requests are picked from, and the next.
    cursor: Option<(Arc<Chunk>, usize)>,
    /// The run's names and checks (of a streamed set: as of the last chunk).
    pub labels: Arc<Labels>,
    published: (u64, u64),
    /// Why the failure about to be counted happened; taken by [`Core::fail`].
    why: Option<String>,
}

impl<'a> Core<'a> {
    /// The state of worker `index` with `conns` connections and at most
    /// `in_flight` requests on them; `nap_trial`: whether the pace's naps
    /// are put to the trial (see [`Pace::new`]).
    pub fn new(
        sh: &'a Shared,
        ctl: &'a RunControl,
        index: u64,
        (conns, in_flight): (usize, usize),
        nap_trial: bool,
        gnuplot: Option<GnuplotWriter>,
    ) -> io::Result<Core<'a>> {
        let keep_alive = match &sh.framing {
            super::protocol::Framing::H1(h1) => h1.keep_alive,
            super::protocol::Framing::H2(_) | super::protocol::Framing::H3(_) => true,
        };
        let stats = match sh.wire {
            // Names come with the chunks: a row for every one from the start.
            Prepared::Streamed(_) => Stats::with_rows(sh.load.labels.names()),
            _ => Stats::for_names(sh.load.labels.names()),
        };
        // Two significant digits, growing with the largest latency (≤ ~26 KiB):
        // a second's percentiles need no more, and a worker holds a few.
        let mut meter = Meter::new(&kurabe_model::load_stats::name_histogram());
        if sh.measure_ns <= sh.start_ns {
            meter.start(sh.measure_ns, sh.end_ns);
        }
        Ok(Core {
            meter,
            sh,
            ctl,
            conns,
            index,
            stats,
            claims: Claims::new((in_flight as u64).clamp(1, 64)),
            schedule: first_schedule(sh, index),
            restart: Vec::with_capacity(conns),
            restarting: Vec::with_capacity(conns),
            awake: match sh.load.arrival.connections() {
                Some(_) => 0,
                None => conns,
            },
            parked: Vec::new(),
            gnuplot,
            measuring: sh.measure_ns <= sh.start_ns,
            draining: false,
            now: sys::now_ns(),
            want_server: true,
            pace: Pace::new(sh, in_flight, keep_alive, nap_trial)?,
            // A replay's target is the schedule's index, not a pick.
            picker: match &sh.wire {
                Prepared::Set { table, .. } => Some(Picker::new(table, index, sh.threads())),
                _ => None,
            },
            cursor: None,
            labels: Arc::new(sh.load.labels.clone()),
            published: (0, 0),
            why: None,
        })
    }

    /// Read the clock.
    #[inline]
    pub fn read_clock(&mut self) -> u64 {
        self.now = sys::now_ns();
        self.now
    }

    /// Start the measured phase if the warm-up is over: forget what the
    /// warm-up counted, and restart the schedule at the phase's start with
    /// the `-n` limit.
    pub fn measure_if_due(&mut self) {
        if self.measuring || self.now < self.sh.measure_ns {
            return;
        }
        self.measuring = true;
        self.stats.clear();
        let sh = self.sh;
        self.meter.start(sh.measure_ns, sh.end_ns);
        if let Some(s) = &mut self.schedule {
            *s = Schedule::new(
                sh.measure_ns,
                &sh.load.arrival,
                self.index,
                sh.threads(),
                sh.limit(),
            );
        }
    }

    /// Cut the per-second series at every second that ended by now.
    pub fn cut_series(&mut self) {
        self.meter
            .cut(self.now, &self.stats.counters, &self.sh.series);
    }

    /// The worker's last cut, at the end of its run (nothing is counted after).
    pub fn close_series(&mut self) {
        self.meter.close(&self.stats.counters, &self.sh.series);
    }

    /// Ctrl-C, an abort, or the end of the run.
    pub fn should_stop(&self) -> bool {
        self.stopped_early() || self.now >= self.sh.end_ns
    }

    /// Ctrl-C or an abort (not the clock).
    pub fn stopped_early(&self) -> bool {
        self.ctl.stop.load(Ordering::Relaxed) || self.sh.aborted.load(Ordering::Relaxed)
    }

    /// Neither the budget nor the schedule has a request left to give.
    pub fn no_more_requests(&self) -> bool {
        self.measuring
            && match &self.schedule {
                Some(s) => s.done(),
                None => self.sh.budget.exhausted() && self.claims.held() == 0,
            }
            || self.fed_all()
    }

    /// A streamed set is over (its one pass, or an error) and this
    /// worker's chunk is used up.
    fn fed_all(&self) -> bool {
        self.sh.wire.feed().is_some_and(Feed::done)
            && self
                .cursor
                .as_ref()
                .is_none_or(|(c, next)| *next >= c.spans.len())
    }

    /// How long the next wait may last: `None` when the ticker's period is
    /// soon enough (stop flag, timeout scan, progress), else exactly until
    /// the next precise event (end of the run or of the warm-up, the next
    /// `--rate` send when a connection can take it).
    pub fn timeout(&self, can_take: bool) -> Option<u64> {
        if !self.restart.is_empty() {
            return Some(0);
        }
        let mut until = self.sh.end_ns;
        if !self.measuring {
            until = until.min(self.sh.measure_ns);
        }
        if let Some(t) = self.schedule.as_ref().and_then(Schedule::peek) {
            if can_take {
                until = until.min(t);
            }
        }
        let wait = until.saturating_sub(self.now);
        (wait < self.pace.tick_ns).then_some(wait)
    }

    /// Connection stages: connection `ci` may be open now.
    pub fn awake(&self, ci: usize) -> bool {
        ci < self.awake
    }

    /// Connection stages: closed connection `ci` waits until the stages want it again.
    pub fn park(&mut self, ci: usize) {
        self.parked.push(ci as u32);
    }

    /// Connection stages: follow the ramp's target now. Of the run's
    /// connections, numbered across the workers (this worker's `ci` is
    /// `ci × threads + index`), those below the target are awake; those
    /// parked that woke are queued to start. Those that fell asleep park
    /// themselves after their answer (see the protocol's refill).
    pub fn wake_connections(&mut self) {
        let Some(ramp) = self.sh.load.arrival.connections() else {
            return;
        };
        let t = self.now.saturating_sub(self.sh.measure_ns) as f64 / 1e9;
        let target = (ramp.level_at(t) - 1e-9).ceil().max(0.0) as u64;
        let mine = target
            .saturating_sub(self.index)
            .div_ceil(self.sh.threads());
        let awake = (mine as usize).min(self.conns);
        if awake > self.awake && !self.parked.is_empty() {
            let (wake, sleep) = self.parked.iter().partition(|&&ci| (ci as usize) < awake);
            self.parked = sleep;
            self.restart.extend::<Vec<u32>>(wake);
        }
        self.awake = awake;
    }

    /// Closed model: a new request from the `-n` budget (always one during
    /// the warm-up), none while draining.
    pub fn claim(&mut self) -> Option<Slot> {
        if self.draining {
            return None;
        }
        let measured = self.measuring;
        if measured && !self.claims.take(&self.sh.budget) {
            return None;
        }
        self.slot(0)
    }

    /// Open model: the schedule has a request due at or before `until`.
    pub fn due(&self, until: u64) -> bool {
        self.schedule
            .as_ref()
            .and_then(Schedule::peek)
            .is_some_and(|t| t <= until)
    }

    /// Open model: the next request due at or before `until`.
    pub fn pop_due(&mut self, until: u64) -> Option<Slot> {
        let s = self.schedule.as_mut()?;
        let i = s.next_index();
        let intended = s.pop_due(until)?;
        let mut slot = self.slot(intended)?;
        if let (Some(r), Prepared::Replay { table, .. }) =
            (self.sh.load.arrival.replay(), &self.sh.wire)
        {
            slot.target = r.target(i);
            slot.tag = table.spans[slot.target as usize].tag;
        }
        Some(slot)
    }

    /// The next request's slot; `None`: a streamed set has no more.
    fn slot(&mut self, intended: u64) -> Option<Slot> {
        let (target, tag) = match (&mut self.picker, &self.sh.wire) {
            (Some(p), Prepared::Set { table, .. }) => {
                let i = p.next(table);
                (i, table.spans[i as usize].tag)
            }
            (_, Prepared::Streamed(_)) => self.next_streamed()?,
            _ => (0, Default::default()),
        };
        Some(Slot {
            start: self.now,
            sent: 0,
            intended,
            connect_ns: 0,
            measured: self.measuring,
            target,
            tag,
        })
    }

    /// A streamed set's next target, in its chunk (the next chunk when
    /// this one is used up: its labels and names come with it).
    fn next_streamed(&mut self) -> Option<(u32, crate::tags::Tag)> {
        if self
            .cursor
            .as_ref()
            .is_none_or(|(c, i)| *i >= c.spans.len())
        {
            let feed = self.sh.wire.feed()?;
            let (sh, stop) = (self.sh, &self.ctl.stop);
            let give_up = || {
                stop.load(Ordering::Relaxed)
                    || sh.aborted.load(Ordering::Relaxed)
                    || sys::now_ns() >= sh.end_ns
            };
            let Some(chunk) = feed.next(&give_up) else {
                if feed.error().is_some() {
                    self.sh.aborted.store(true, Ordering::Relaxed);
                }
                return None;
            };
            if !Arc::ptr_eq(&chunk.labels, &self.labels) {
                self.labels = Arc::clone(&chunk.labels);
                self.stats.grow(self.labels.names());
            }
            self.cursor = Some((chunk, 0));
        }
        let (chunk, i) = self.cursor.as_mut()?;
        *i += 1;
        Some(((*i - 1) as u32, chunk.spans[*i - 1].tag))
    }

    /// The chunk of a streamed set the request picked last is in (its
    /// slot's `target` is its place there).
    pub fn streamed_chunk(&self) -> Option<&Arc<Chunk>> {
        self.cursor.as_ref().map(|(chunk, _)| chunk)
    }

    /// The request picked last from a streamed set: its bytes, span and
    /// body sent apart (the bytes are then its head).
    pub fn streamed(&self) -> Option<Picked<'_>> {
        let (chunk, i) = self.cursor.as_ref()?;
        let at = i.checked_sub(1)?;
        let span = chunk.spans.get(at)?;
        let split = chunk.split.get(at)?.as_ref();
        let head_len = span.len - split.map_or(0, |b| b.len());
        Some((&chunk.bytes[span.off..span.off + head_len], span, split))
    }

    /// The run ends by the clock: open model, what was due before the end
    /// and found no connection was never sent, and never will be: it
    /// counts as dropped rather than vanishing from the report, however
    /// far behind the run fell (counted at once, see
    /// [`Schedule::give_up_due`]).
    pub fn give_up_due(&mut self) {
        if !self.measuring {
            return;
        }
        if let Some(s) = &mut self.schedule {
            self.stats.counters.dropped_sends += s.give_up_due(self.sh.end_ns - 1);
        }
    }

    /// Open model: give up the sends no connection took within the request
    /// timeout of their intended time (had they gone out, their latency
    /// from then would already exceed it): k6's dropped iterations.
    pub fn drop_stale(&mut self) {
        let (now, wait) = (self.now, self.sh.timeout_ns);
        if let Some(s) = &mut self.schedule {
            let n = s.drop_stale(now, wait);
            if self.measuring && !self.draining {
                self.stats.counters.dropped_sends += n;
            }
        }
    }

    /// Request `s` (with `body_len` body bytes) went out at `at`.
    #[inline]
    pub fn sent(&mut self, s: &mut Slot, at: u64, body_len: u64) {
        s.sent = at;
        if s.measured {
            let c = &mut self.stats.counters;
            c.sent_requests += 1;
            c.sent_body_bytes += body_len;
            if s.intended != 0 && at > s.intended + LATE_NS {
                c.late_sends += 1;
            }
        }
    }

    /// `n` response bytes arrived.
    #[inline]
    pub fn received(&mut self, n: usize) {
        if self.measuring && !self.draining {
            self.stats.counters.transfer_bytes += n as u64;
        }
    }

    /// Count `a` as the complete response to `slot` (and tell the pace its
    /// latency; a `length` failure
    /// when its body length differs and `-l` is off); false when it was not
    /// counted as a success (warm-up, draining, or that failure).
    /// `kept`: the head and body bytes the connection kept of the response
    /// (see [`Shared::checking`]), judged by the request's checks.
    pub fn complete(&mut self, slot: &Slot, a: Answer, kept: Kept<'_>) -> bool {
        self.pace.answered(self.now.saturating_sub(slot.start));
        if !slot.measured || self.draining {
            return false;
        }
        if self.meter.due(self.now) {
            self.cut_series();
        }
        if self.sh.checking && !self.passes_checks(slot, &a, kept) {
            return false;
        }
        let (st, g) = (&mut self.stats, self.gnuplot.as_mut());
        match record(self.sh, st, g, slot, a, self.now) {
            Ok(us) => {
                let _ = self.meter.latency.record(us);
                true
            }
            Err(why) => {
                self.explain(FailureKind::Length, || why);
                self.fail_slot(slot, FailureKind::Length);
                false
            }
        }
    }

    /// Judge a response by `slot`'s checks; a failure is counted (with the
    /// response's summary as the first `check` error).
    fn passes_checks(&mut self, slot: &Slot, a: &Answer, (head, body): Kept<'_>) -> bool {
        let labels = Arc::clone(&self.labels);
        let seen = Seen {
            status: a.status,
            body_bytes: a.body_bytes,
            head,
            body,
        };
        let Some(check) = labels.checks(slot.tag.checks).first_failed(&seen) else {
            return true;
        };
        self.explain(FailureKind::Check, || describe_failure(check, &seen));
        self.fail_slot(slot, FailureKind::Check);
        false
    }

    /// Count one failure of `kind` for `slot` (its name's row too).
    pub fn fail_slot(&mut self, slot: &Slot, kind: FailureKind) {
        if !self.draining {
            self.stats.fail_name(slot.tag.name, kind, 1);
        }
        self.fail(kind, 1);
    }

    /// Count the measured ones of `slots` as failures of `kind`.
    pub fn fail_slots<'s>(&mut self, slots: impl Iterator<Item = &'s Slot>, kind: FailureKind) {
        let mut n = 0;
        for s in slots.filter(|s| s.measured) {
            n += 1;
            if !self.draining {
                self.stats.fail_name(s.tag.name, kind, 1);
            }
        }
        self.fail(kind, n);
    }

    /// Say why the failure about to be counted as `kind` happened; `text` is
    /// only formatted while that kind has no first error yet.
    pub fn explain(&mut self, kind: FailureKind, text: impl FnOnce() -> String) {
        if self.stats.wants_error(kind) && !self.draining {
            self.why = Some(text());
        }
    }

    /// Count `n` failures of `kind` (not while draining), with the reason
    /// [`Core::explain`] gave; abort the run with `--abort-on-error`.
    pub fn fail(&mut self, kind: FailureKind, n: u64) {
        let why = self.why.take();
        if n == 0 || self.draining {
            return;
        }
        self.stats.fail(kind, n);
        if self.stats.wants_error(kind) {
            self.stats
                .note_error(kind, why.unwrap_or_else(|| kind.meaning().to_owned()));
        }
        if self.sh.load.abort_on_error {
            self.sh.aborted.store(true, Ordering::Relaxed);
        }
    }

    /// Forget a reason no failure was counted for.
    pub fn forget_why(&mut self) {
        self.why = None;
    }

    /// Opening a socket failed with `e`: explain it, return its bucket (out
    /// of descriptors is kurabe's own `client` failure).
    pub fn socket_failed(&mut self, e: &io::Error) -> FailureKind {
        let kind = socket_failure_kind(e);
        self.explain(kind, || match kind {
            FailureKind::Client => {
                format!("too many open files in kurabe ({e}): raise `ulimit -n` or lower -c")
            }
            _ => e.to_string(),
        });
        kind
    }

    /// A connecting socket had readiness `flags` (epoll bits): `Err` (its
    /// reason explained as a connect failure) when the connect failed, else
    /// whether it is connected.
    pub fn connect_outcome(&mut self, sock: Option<&Socket>, flags: u32) -> Result<bool, ()> {
        let err = flags & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
        let so_error = sock.and_then(|s| s.take_error().ok().flatten());
        if err || so_error.is_some() {
            self.explain(FailureKind::Connect, || match so_error {
                Some(e) => e.to_string(),
                None => "the connection failed".to_owned(),
            });
            return Err(());
        }
        Ok(flags & libc::EPOLLOUT as u32 != 0)
    }

    /// A request deadline passed on a connection (`connecting`: its
    /// connect had not finished): explain it, return the bucket.
    pub fn timed_out(&mut self, connecting: bool) -> FailureKind {
        let t = Duration::from_nanos(self.sh.timeout_ns);
        if connecting {
            self.explain(FailureKind::Connect, || {
                format!("no answer to the connect within {t:?} (-s)")
            });
            FailureKind::Connect
        } else {
            self.explain(FailureKind::Timeout, || {
                format!("no complete response within {t:?} (-s)")
            });
            FailureKind::Timeout
        }
    }

    /// Add what was answered and failed since the last call to the run's
    /// progress; when an observer wants snapshots (and the warm-up is
    /// over), publish this worker's share too, `in_flight` included
    /// (`last`: the end of the run, a publication that waits for its lock).
    pub fn publish(&mut self, in_flight: u64, last: bool) {
        let done = self.stats.counters.completed;
        let failed = self.stats.counters.failures.total();
        let p = &self.ctl.progress;
        p.completed
            .fetch_add(done.saturating_sub(self.published.0), Ordering::Relaxed);
        p.failed
            .fetch_add(failed.saturating_sub(self.published.1), Ordering::Relaxed);
        self.published = (done, failed);
        if let Some(live) = self.ctl.live.as_ref().filter(|_| self.measuring) {
            live.publish(self.index, &self.stats, in_flight, last);
        }
        #[cfg(debug_assertions)]
        if done > 0 {
            let port = self.sh.addr.as_socket().map_or(0, |a| a.port());
            super::panic_hook::check(port, done);
        }
    }
}

/// The `--rate` schedule of worker `index`, None in the closed model. With a
/// warm-up it starts at the run's start without a `-n` limit (the limit
/// applies from the measured phase, see [`Core::measure_if_due`]).
fn first_schedule(sh: &Shared, index: u64) -> Option<Schedule> {
    if !sh.load.arrival.is_open() {
        return None;
    }
    let warm_up = sh.measure_ns > sh.start_ns;
    let (start, limit) = if warm_up {
        (sh.start_ns, None)
    } else {
        (sh.measure_ns, sh.limit())
    };
    Some(Schedule::new(
        start,
        &sh.load.arrival,
        index,
        sh.threads(),
        limit,
    ))
}

/// Write `bytes[*off..]` to `fd` (through `tls` if given) until all is
/// written or the socket is full, advancing `*off`; `Err` when the
/// connection broke.
#[inline]
pub(crate) fn write_out(
    tls: &mut Option<Box<TlsSession>>,
    fd: RawFd,
    bytes: &[u8],
    off: &mut usize,
) -> io::Result<()> {
    while *off < bytes.len() {
        let r = match tls {
            Some(t) => t.write(fd, &bytes[*off..]),
            None => sys::send(fd, &bytes[*off..]),
        };
        match r {
            Ok(n) => *off += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Read what `fd` has (through `tls` if given) into `buf`.
#[inline]
pub(crate) fn read_in(
    tls: &mut Option<Box<TlsSession>>,
    fd: RawFd,
    buf: &mut [u8],
) -> io::Result<usize> {
    match tls {
        Some(t) => t.read(fd, buf),
        None => sys::recv(fd, buf),
    }
}

/// Wait on `ep` for at most `timeout` ns, after a nap of `nap` ns if given
/// (a nap that found nothing is followed by the plain wait); the number of
/// events in `events`.
pub(crate) fn epoll_wait(
    ep: &mut sys::Epoll,
    events: &mut [libc::epoll_event],
    timeout: Option<u64>,
    nap: Option<u64>,
) -> usize {
    if let Some(ns) = nap {
        sys::nap(ns);
        let n = ep.wait(events, Some(0));
        if n > 0 {
            return n;
        }
    }
    ep.wait(events, timeout)
}
