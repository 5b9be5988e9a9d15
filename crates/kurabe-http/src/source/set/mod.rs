//! A request set as the engine runs it: the targets ([`RequestSet`],
//! resolved by `load` from a spec) and, built from them once per run,
//! the `Table` of every target's request bytes, so a send is a lookup;
//! and each worker's `Picker`, which says which target goes next
//! (`--order`).
//!
//! A set too large to hold (see `read`) is a [`Streamed`] set
//! instead: the targets it keeps are its first ones, and its
//! [`Stream`] reads the file again pass by pass for `feed`.
//!
//! Owns the set's types, the table and the orders. Must not read files
//! or parse anything (`read` does), nor allocate per request: a pick
//! is a counter, one atomic add (`sequential`) or a xorshift draw (and a
//! binary search of the cumulative weights for `weighted`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kurabe_model::load::{Order, TargetsFormat};

use crate::tags::{Labels, Tag};
use crate::target::Target;

pub(crate) mod feed;
pub(crate) mod index;
pub(crate) mod read;
mod scan;
pub(crate) mod spool;

/// One target of a set, resolved: what goes on the wire for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetTarget {
    /// Upper-case method.
    pub method: String,
    /// Where it goes (the set's one scheme, host and port; its own path).
    pub target: Target,
    /// Headers in sending order: the target's own, then the spec's.
    pub headers: Vec<(String, String)>,
    /// The body, read once and shared (by every target naming its file,
    /// and by the run's HTTP/2 table).
    pub body: Option<crate::request::Body>,
    /// Its name and checks in the run's [`crate::tags::Labels`].
    pub tag: Tag,
    /// Relative weight (`--order weighted`), at least 1.
    pub weight: u32,
    /// The target's own response checks (`# @check`), unparsed.
    pub checks: Vec<String>,
}

/// A request set, read and checked: the targets in file order (their
/// names and checks are in the run's [`crate::tags::Labels`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSet {
    /// The targets in file order.
    pub targets: Vec<SetTarget>,
    /// Which target each request sends.
    pub order: Order,
    /// The seed of a random order (drawn when none was given).
    pub seed: u64,
    /// The set's file as given (`-` for standard input).
    pub source: String,
    /// Its format.
    pub format: TargetsFormat,
}

/// The `-n` of a streamed set without `-n` or `-t`: no limit but its
/// file's one pass (`load` cannot count the targets before the run).
pub const STREAM_ONCE: u64 = u64::MAX;

/// A set read from its file as it is sent (a large file): passes over
/// the file target by target, or (the random orders, from an index of
/// the file) draws.
pub trait Stream: Send + Sync + std::fmt::Debug {
    /// A new pass from the file's first target, whose reads fail once
    /// `stop` is set (the run is over: a pass waiting on its input, a
    /// silent standard input, gives up); `Err`: why it cannot be read.
    fn pass(&self, stop: &Arc<std::sync::atomic::AtomicBool>) -> Result<Box<dyn Pass>, String>;

    /// The set's number of targets when known before the run (an indexed
    /// file); `None`: counted as the first pass reads them.
    fn targets(&self) -> Option<u64> {
        None
    }
}

/// One pass over a [`Stream`]'s file.
pub trait Pass: Send {
    /// The next target, resolved as the first ones were and tagged in
    /// `labels`; `None` at the end of the file, `Err` at a line that does
    /// not parse (`FILE:LINE: …`).
    fn next_target(&mut self, labels: &mut Labels) -> Option<Result<SetTarget, String>>;
}

/// A shared [`Stream`].
#[derive(Debug, Clone)]
pub struct Streamed(pub Arc<dyn Stream>);

impl RequestSet {
    /// The origin every target shares (scheme, host and port; path `/`).
    pub fn origin(&self) -> Target {
        Target {
            path: "/".to_owned(),
            ..self.targets[0].target.clone()
        }
    }
}

/// One target's request in the [`Table`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// Where its HTTP/1.1 bytes start in the table's buffer.
    pub off: usize,
    /// Their length.
    pub len: usize,
    /// Body bytes among them.
    pub body_len: u64,
    /// A HEAD request (its response has no body).
    pub head: bool,
    /// Its name and checks.
    pub tag: Tag,
}

/// What every worker reads to send a set's requests.
#[derive(Debug)]
pub(crate) struct Table {
    /// Per target, in file order.
    pub spans: Vec<Span>,
    /// Per target: its body when it is too large to copy into the table
    /// (over `super::SPLIT_BODY`): the span's bytes are then its head,
    /// and the body is sent after it from this one shared copy (a body
    /// file named by every target is held once, not once per target).
    pub split: Vec<Option<crate::request::Body>>,
    /// `weighted`: the running sum of the weights, per target.
    cumulative: Vec<u64>,
    order: Order,
    seed: u64,
    /// `sequential`: the next request's place in the set, over all workers.
    next: AtomicU64,
}

impl Table {
    /// The table of `set` whose HTTP/1.1 bytes are `spans` (and `split`
    /// bodies after them).
    pub fn new(
        set: &RequestSet,
        spans: Vec<Span>,
        split: Vec<Option<crate::request::Body>>,
    ) -> Table {
        let mut sum = 0;
        let cumulative = set
            .targets
            .iter()
            .map(|t| {
                sum += u64::from(t.weight.max(1));
                sum
            })
            .collect();
        Table {
            spans,
            split,
            cumulative,
            order: set.order,
            seed: set.seed,
            next: AtomicU64::new(0),
        }
    }

    /// A table of `spans` alone, for a replay: its target is the
    /// schedule's index (`crate::client::schedule`), never a [`Picker`]'s.
    pub fn of_spans(spans: Vec<Span>, split: Vec<Option<crate::request::Body>>) -> Table {
        Table {
            cumulative: vec![1; spans.len()],
            spans,
            split,
            order: Order::Sequential,
            seed: 0,
            next: AtomicU64::new(0),
        }
    }
}

/// One worker's place in the set's order.
#[derive(Debug, Clone)]
pub(crate) struct Picker {
    cursor: u32,
    rng: Draws,
}

impl Picker {
    /// Worker `index` of `threads`: round-robin starts at its own part of
    /// the set, the random orders draw from their own seeded stream.
    pub fn new(t: &Table, index: u64, threads: u64) -> Picker {
        let n = t.spans.len() as u64;
        Picker {
            cursor: (index * n / threads.max(1)) as u32,
            rng: Draws::new(t.seed, index),
        }
    }

    /// The target of the next request.
    #[inline]
    pub fn next(&mut self, t: &Table) -> u32 {
        let n = t.spans.len() as u32;
        match t.order {
            Order::RoundRobin => {
                let i = self.cursor;
                self.cursor = if i + 1 >= n { 0 } else { i + 1 };
                i
            }
            Order::Sequential => (t.next.fetch_add(1, Ordering::Relaxed) % u64::from(n)) as u32,
            Order::Random => self.rng.below(u64::from(n)) as u32,
            Order::Weighted => {
                let total = *t.cumulative.last().unwrap_or(&1);
                let r = self.rng.below(total);
                t.cumulative.partition_point(|&c| c <= r) as u32
            }
        }
    }
}

/// A seeded stream of draws (xorshift64*): the random orders' source.
#[derive(Debug, Clone)]
pub(crate) struct Draws(u64);

impl Draws {
    /// Stream `index` of `seed` (each worker, or a feeder, its own).
    pub fn new(seed: u64, index: u64) -> Draws {
        Draws(splitmix(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
    }

    /// A draw in `0..n`.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        below(self.draw(), n)
    }

    /// xorshift64*.
    #[inline]
    fn draw(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// `r` mapped onto `0..n` (the high half of the product: no division).
#[inline]
fn below(r: u64, n: u64) -> u64 {
    ((u128::from(r) * u128::from(n)) >> 64) as u64
}

/// A well-mixed seed from any number (splitmix64's finaliser).
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(weights: &[u32], order: Order) -> Table {
        let targets = weights
            .iter()
            .map(|&w| SetTarget {
                method: "GET".into(),
                target: Target::parse("http://h/").unwrap(),
                headers: vec![],
                body: None,
                tag: Tag::default(),
                weight: w,
                checks: vec![],
            })
            .collect::<Vec<_>>();
        let n = targets.len();
        let set = RequestSet {
            targets,
            order,
            seed: 42,
            source: "-".into(),
            format: TargetsFormat::Http,
        };
        let span = Span {
            off: 0,
            len: 1,
            body_len: 0,
            head: false,
            tag: Tag::default(),
        };
        Table::new(&set, vec![span; n], vec![None; n])
    }

    fn counts(t: &Table, index: u64, draws: usize) -> Vec<u32> {
        let mut p = Picker::new(t, index, 2);
        let mut c = vec![0; t.spans.len()];
        for _ in 0..draws {
            c[p.next(t) as usize] += 1;
        }
        c
    }

    #[test]
    fn round_robin_cycles_from_each_workers_own_place() {
        let t = table(&[1; 4], Order::RoundRobin);
        let mut p = Picker::new(&t, 1, 2);
        let got: Vec<u32> = (0..6).map(|_| p.next(&t)).collect();
        assert_eq!(got, [2, 3, 0, 1, 2, 3]);
    }

    #[test]
    fn sequential_is_one_order_over_all_workers() {
        let t = table(&[1; 3], Order::Sequential);
        let (mut a, mut b) = (Picker::new(&t, 0, 2), Picker::new(&t, 1, 2));
        let got = [a.next(&t), b.next(&t), a.next(&t), b.next(&t)];
        assert_eq!(got, [0, 1, 2, 0]);
    }

    #[test]
    fn weights_are_honoured_and_a_seed_repeats_the_draws() {
        let t = table(&[1, 3, 6], Order::Weighted);
        let c = counts(&t, 0, 100_000);
        for (i, w) in [1.0, 3.0, 6.0].iter().enumerate() {
            let share = f64::from(c[i]) / 100_000.0;
            assert!((share - w / 10.0).abs() < 0.01, "{c:?}");
        }
        assert_eq!(counts(&t, 0, 1000), counts(&t, 0, 1000));
        assert_ne!(counts(&t, 0, 1000), counts(&t, 1, 1000));
        let r = counts(&table(&[5, 1], Order::Random), 0, 100_000);
        assert!((f64::from(r[0]) / 100_000.0 - 0.5).abs() < 0.01, "{r:?}");
    }
}
