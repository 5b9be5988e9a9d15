//! The order in which variants run: interleaved, randomised, balanced.
//!
//! Running all of A then all of B lets drift (thermal throttling, a backup
//! job starting, page cache warming) masquerade as a difference between A
//! and B. Instead runs happen in rounds; each round runs every variant once,
//! in an order that changes from round to round (A B | B A | …).
//!
//! Rounds come in groups of `variants` rounds forming a randomised Latin
//! square: within a group every variant takes every position exactly once,
//! so each variant runs first equally often (exactly, when `repeat` is a
//! multiple of the variant count; otherwise counts differ by at most one).
//! The square's rows, columns and symbols are shuffled by a seeded PRNG, so
//! the order is unpredictable yet reproducible from the seed recorded with
//! the experiment. Pure: no clock, no system entropy.

/// Round-by-round run order for `variants` variants repeated `repeat` times.
///
/// Returns `repeat` rounds; each round is a permutation of `0..variants`.
/// The same arguments always give the same schedule.
pub fn randomized_blocks(variants: usize, repeat: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = SplitMix64::new(seed);
    let mut rounds = Vec::with_capacity(repeat);
    while rounds.len() < repeat {
        let symbols = rng.permutation(variants);
        let columns = rng.permutation(variants);
        let rows = rng.permutation(variants);
        // Cyclic Latin square L[r][c] = (r + c) mod k, with rows, columns and
        // symbols permuted: still a Latin square, now a random-looking one.
        for &r in rows.iter().take(repeat - rounds.len()) {
            let round = columns
                .iter()
                .map(|&c| symbols[(r + c) % variants])
                .collect();
            rounds.push(round);
        }
        if variants == 0 {
            // No variants: `repeat` empty rounds.
            rounds.resize(repeat, Vec::new());
        }
    }
    rounds
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, statistically sound for
/// shuffling, and fully determined by its 64-bit seed.
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform integer in `0..bound` (bound > 0), without modulo bias
    /// (Lemire's multiply-and-reject).
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(bound);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// A uniformly random permutation of `0..n` (Fisher–Yates).
    pub(crate) fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i as u64 + 1) as usize;
            p.swap(i, j);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn firsts(rounds: &[Vec<usize>], k: usize) -> Vec<usize> {
        let mut count = vec![0; k];
        for r in rounds {
            count[r[0]] += 1;
        }
        count
    }

    #[test]
    fn every_round_runs_every_variant_once() {
        for k in 1..=6 {
            for repeat in [1, 2, 5, 13] {
                let s = randomized_blocks(k, repeat, 7);
                assert_eq!(s.len(), repeat);
                for round in &s {
                    let mut sorted = round.clone();
                    sorted.sort_unstable();
                    assert_eq!(sorted, (0..k).collect::<Vec<_>>());
                }
            }
        }
    }

    #[test]
    fn two_variants_alternate_in_pairs_of_rounds() {
        // A B | B A within each pair of rounds, whatever the seed.
        for seed in 0..50 {
            let s = randomized_blocks(2, 10, seed);
            for pair in s.chunks(2) {
                assert_ne!(pair[0], pair[1], "seed {seed}: {s:?}");
            }
            assert_eq!(firsts(&s, 2), vec![5, 5]);
        }
    }

    #[test]
    fn firsts_are_balanced_as_far_as_possible() {
        for seed in 0..20 {
            for (k, repeat) in [(3, 9), (3, 10), (4, 6), (5, 7), (2, 7)] {
                let count = firsts(&randomized_blocks(k, repeat, seed), k);
                let (min, max) = (*count.iter().min().unwrap(), *count.iter().max().unwrap());
                assert!(
                    max - min <= 1,
                    "k {k} repeat {repeat} seed {seed}: {count:?}"
                );
                assert_eq!(count.iter().sum::<usize>(), repeat);
            }
        }
    }

    #[test]
    fn every_position_is_balanced_in_full_groups() {
        let (k, repeat) = (4, 12);
        let s = randomized_blocks(k, repeat, 99);
        for pos in 0..k {
            let mut count = vec![0; k];
            for r in &s {
                count[r[pos]] += 1;
            }
            assert_eq!(count, vec![3; k], "position {pos}");
        }
    }

    #[test]
    fn deterministic_per_seed_and_varies_across_seeds() {
        assert_eq!(randomized_blocks(3, 8, 42), randomized_blocks(3, 8, 42));
        let distinct: std::collections::HashSet<_> =
            (0..20).map(|seed| randomized_blocks(3, 8, seed)).collect();
        assert!(
            distinct.len() > 10,
            "only {} distinct schedules from 20 seeds",
            distinct.len()
        );
    }

    #[test]
    fn orders_are_not_just_rotations() {
        // With 3 variants a plain cyclic square only ever yields 3 of the 6
        // orders; the column shuffle must reach the others too.
        let mut seen = std::collections::HashSet::new();
        for seed in 0..30 {
            for r in randomized_blocks(3, 3, seed) {
                seen.insert(r);
            }
        }
        assert_eq!(seen.len(), 6);
    }

    #[test]
    fn degenerate_inputs() {
        assert!(randomized_blocks(3, 0, 1).is_empty());
        assert_eq!(randomized_blocks(0, 2, 1), vec![Vec::<usize>::new(); 2]);
        assert_eq!(randomized_blocks(1, 3, 1), vec![vec![0]; 3]);
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut rng = SplitMix64::new(5);
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let x = rng.below(7) as usize;
            seen[x] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
