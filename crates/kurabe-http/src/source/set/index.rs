//! A sparse index of a large targets file, for the `weighted` and
//! `random` orders: one fast pass over the file (`super::scan`: where
//! each target starts and what it weighs, no full parse) keeps a [`Mark`] every
//! [`EVERY`] targets or [`EVERY_BYTES`] bytes, whichever comes first: its
//! byte offset, line, the number of targets and the sum of the weights
//! before it. A draw is a binary search of the marks, then a read forward
//! from the mark's offset to the target drawn (at most [`EVERY`] targets).
//! So memory is the marks (32 bytes per mark: about 10 MB for a 1 GB file
//! of 20 M small targets), never the targets or their bodies. A draw
//! parses what it reads (from the mark to the target drawn), so a line
//! that does not parse is found when a draw reaches it.
//!
//! Owns the index and the draws. Must not resolve or tag targets
//! (`super::read`'s `Resolver` does).

#[cfg(test)]
use std::io::BufRead;
use std::io::{BufReader, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::source::set::Draws;
#[cfg(test)]
use crate::source::targets::TargetsError;
use crate::source::targets::{Format, Reader, TargetDef};

/// Targets between marks, at most.
const EVERY: u64 = 64;
/// Bytes between marks, at most (one target may be longer).
const EVERY_BYTES: u64 = 4096;

/// A place in the file a reader can start from.
#[derive(Debug, Clone, Copy)]
struct Mark {
    /// Byte offset of the first target's text (its annotations included).
    offset: u64,
    /// Lines before it.
    line: u64,
    /// Targets before it.
    first: u64,
    /// Sum of the weights of the targets before it.
    weight_before: u64,
}

/// The marks of a targets file and its totals.
#[derive(Debug)]
pub(crate) struct Index {
    marks: Vec<Mark>,
    /// Targets in the file.
    pub targets: u64,
    /// Sum of their weights.
    total_weight: u64,
}

impl Index {
    /// An index of no targets yet.
    pub(super) fn new() -> Index {
        Index {
            marks: Vec::new(),
            targets: 0,
            total_weight: 0,
        }
    }

    /// Count the next target: its text starts at byte `offset` after
    /// `line` lines (annotations included: where a reader resumes), and
    /// it weighs `weight`.
    pub(super) fn add(&mut self, offset: u64, line: u64, weight: u32) {
        let (since, last_offset) = self
            .marks
            .last()
            .map_or((EVERY, 0), |m| (self.targets - m.first, m.offset));
        if since >= EVERY || offset - last_offset >= EVERY_BYTES {
            self.marks.push(Mark {
                offset,
                line,
                first: self.targets,
                weight_before: self.total_weight,
            });
        }
        self.targets += 1;
        self.total_weight += u64::from(weight.max(1));
    }

    /// Add `next`, the index of the text from byte `offset` (`line`
    /// lines in) where a target starts: its marks shifted. Its first
    /// target is a mark, so no more than [`EVERY`] targets follow any
    /// mark without another (the marks may not be the ones one pass
    /// over the whole would keep; the draws are the same).
    pub(super) fn append(&mut self, next: Index, offset: u64, line: u64) {
        self.marks.reserve_exact(next.marks.len());
        self.marks.extend(next.marks.iter().map(|m| Mark {
            offset: m.offset + offset,
            line: m.line + line,
            first: m.first + self.targets,
            weight_before: m.weight_before + self.total_weight,
        }));
        self.targets += next.targets;
        self.total_weight += next.total_weight;
    }

    /// The index complete: its marks' spare room given back.
    pub(super) fn finish(mut self) -> Index {
        self.marks.shrink_to_fit();
        self
    }

    /// Index what `r` reads (from the file's start), every line parsed:
    /// the reference [`super::scan`] must agree with.
    #[cfg(test)]
    pub fn build<R: BufRead>(mut r: Reader<R>) -> Result<Index, TargetsError> {
        let mut ix = Index::new();
        loop {
            let (offset, line) = r.resume();
            let Some(def) = r.next() else {
                break;
            };
            ix.add(offset, line, def?.weight.unwrap_or(1));
        }
        Ok(ix.finish())
    }

    /// The marks (offset, line, targets and weight before) and totals.
    #[cfg(test)]
    pub(super) fn parts(&self) -> (Vec<[u64; 4]>, u64, u64) {
        let marks = self.marks.iter();
        let marks = marks.map(|m| [m.offset, m.line, m.first, m.weight_before]);
        (marks.collect(), self.targets, self.total_weight)
    }

    /// The mark before draw `r` and what is left of `r` there: `r` counts
    /// targets (`weighted` false) or weight.
    fn locate(&self, r: u64, weighted: bool) -> (Mark, u64) {
        let key = |m: &Mark| if weighted { m.weight_before } else { m.first };
        let i = self.marks.partition_point(|m| key(m) <= r).max(1) - 1;
        let m = self.marks[i];
        (m, r - key(&m))
    }
}

/// Draws of targets from an indexed file; each pass is as many draws as
/// the file has targets, from a seeded stream of its own (pass `k` of
/// seed `s` draws the same whatever the run).
#[derive(Debug)]
pub(crate) struct Drawn {
    pub index: Arc<Index>,
    pub format: Format,
    pub source: String,
    pub weighted: bool,
    pub seed: u64,
    /// Passes started.
    pub passes: AtomicU64,
}

impl Drawn {
    /// The draws of the next pass, reading `file` (a reader of its own).
    pub fn pass(self: &Arc<Self>, file: kurabe_input::Part) -> Draw {
        let k = self.passes.fetch_add(1, Ordering::Relaxed);
        Draw {
            of: Arc::clone(self),
            file: BufReader::with_capacity(16 * 1024, file),
            rng: Draws::new(self.seed, k),
            left: self.index.targets,
        }
    }
}

/// One pass of a [`Drawn`] set.
pub(crate) struct Draw {
    of: Arc<Drawn>,
    file: BufReader<kurabe_input::Part>,
    rng: Draws,
    /// Draws left in this pass.
    left: u64,
}

impl Draw {
    /// The next target drawn, as read; `None` at the pass's end.
    pub fn next_def(&mut self) -> Option<Result<TargetDef, String>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(self.draw())
    }

    fn draw(&mut self) -> Result<TargetDef, String> {
        let (of, ix) = (&*self.of, &self.of.index);
        let total = if of.weighted {
            ix.total_weight
        } else {
            ix.targets
        };
        let (mark, mut rest) = ix.locate(self.rng.below(total), of.weighted);
        let io = |e: std::io::Error| format!("cannot read the targets file {}: {e}", of.source);
        self.file.seek(SeekFrom::Start(mark.offset)).map_err(io)?;
        let r = Reader::at(
            &mut self.file,
            of.format,
            &of.source,
            mark.offset,
            mark.line,
        );
        for def in r.take(EVERY as usize) {
            let def = def.map_err(|e| e.to_string())?;
            let w = if of.weighted {
                u64::from(def.weight.unwrap_or(1).max(1))
            } else {
                1
            };
            if rest < w {
                return Ok(def);
            }
            rest -= w;
        }
        Err(format!(
            "{}: the file changed after it was indexed (a target drawn is not where it was): keep a targets file unchanged during a run",
            of.source
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kurabe_input::Part;

    fn file(text: &str) -> (tempfile::NamedTempFile, Index) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        let r = Reader::new(text.as_bytes(), Format::Http, "t");
        (f, Index::build(r).unwrap())
    }

    fn drawn(f: &tempfile::NamedTempFile, weighted: bool, seed: u64) -> (Arc<Drawn>, Part) {
        let text = std::fs::read(f.path()).unwrap();
        let index = Index::build(Reader::new(&text[..], Format::Http, "t")).unwrap();
        let d = Arc::new(Drawn {
            index: Arc::new(index),
            format: Format::Http,
            source: "t".into(),
            weighted,
            seed,
            passes: AtomicU64::new(0),
        });
        let name = kurabe_input::Name::new("t");
        (
            d,
            kurabe_input::open(f.path(), name).unwrap().shared().part(),
        )
    }

    /// Per target (`/N`), how often one pass drew it.
    fn counts((d, file): &(Arc<Drawn>, Part), n: usize) -> Vec<u64> {
        let mut c = vec![0; n];
        let mut p = d.pass(file.clone());
        while let Some(t) = p.next_def() {
            let t = t.unwrap();
            c[t.url.rsplit('/').next().unwrap().parse::<usize>().unwrap()] += 1;
        }
        c
    }

    /// `n` targets `/i`; target `i` weighs `1 + i % 4` (a sum of 2.5 n).
    fn set(n: usize) -> String {
        (0..n)
            .map(|i| {
                format!(
                    "# @weight {}\nGET http://h/{i}\nX: {}\n\n",
                    1 + i % 4,
                    "y".repeat(1 + i % 90)
                )
            })
            .collect()
    }

    #[test]
    fn draws_follow_the_weights_and_a_seed_repeats_them() {
        let n = 1000;
        let (f, ix) = file(&set(n));
        assert_eq!((ix.targets, ix.total_weight), (n as u64, 2500));
        assert!(ix.marks.len() > n / 64, "{}", ix.marks.len());
        let d = drawn(&f, true, 7);
        let mut by_weight = [0u64; 4];
        for _ in 0..20 {
            for (i, c) in counts(&d, n).iter().enumerate() {
                by_weight[i % 4] += c;
            }
        }
        let all: u64 = by_weight.iter().sum();
        assert_eq!(all, 20 * n as u64);
        for (w, c) in by_weight.iter().enumerate() {
            let share = *c as f64 / all as f64;
            assert!(
                (share - (w + 1) as f64 / 10.0).abs() < 0.01,
                "{by_weight:?}"
            );
        }
        let (a, b) = (drawn(&f, true, 7), drawn(&f, true, 7));
        let first = counts(&a, n);
        assert_eq!(first, counts(&b, n), "the same seed draws the same");
        assert_ne!(first, counts(&a, n), "a second pass draws anew");
        assert_ne!(first, counts(&drawn(&f, true, 8), n));
    }

    #[test]
    fn random_draws_every_target_alike() {
        let n = 500;
        let (f, _) = file(&set(n));
        let d = drawn(&f, false, 3);
        let mut c = vec![0u64; n];
        for _ in 0..40 {
            for (i, k) in counts(&d, n).iter().enumerate() {
                c[i] += k;
            }
        }
        assert!(c.iter().all(|&k| (15..=70).contains(&k)), "{c:?}");
    }
}
