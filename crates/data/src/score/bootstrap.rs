//! Paired bootstrap resampling (Koehn, 2004), as sacrebleu's `--paired-bs`
//! runs it: is system B's difference from baseline A larger than the test
//! set's luck of the draw?
//!
//! Draw `R` test sets of `n` sentences from the real one, with replacement,
//! the same draws for every system; score each system on each draw from its
//! sentences' statistics. Then for each system
//!
//! ```text
//! mean, 95 % CI  = the mean of its R scores, half the spread between the
//!                  2.5th and 97.5th percentiles
//! d_k            = |score_B(draw k) - score_A(draw k)|
//! p              = (#{k : d_k - mean(d) > |score_B - score_A|} + 1) / (R + 1)
//! ```
//!
//! (centred, the `d_k` stand for the differences luck alone makes; `p` is
//! how often luck alone makes one as large as the real one).
//!
//! The draws are numpy's: `np.random.default_rng(seed).choice(n, (R, n))`,
//! reproduced here bit for bit ([`NumpyRng`]), so a seed gives the same
//! draws, means, intervals and p-values as sacrebleu's.

use super::{Metric, sum_stats};
use crate::error::{Error, Result};

/// numpy's default generator, `np.random.default_rng(seed)`: PCG64 (a
/// 128-bit LCG with an xor-shift-rotate output) seeded through numpy's
/// `SeedSequence`, bounded integers by Lemire's method. It exists so that a
/// bootstrap with sacrebleu's seed draws sacrebleu's samples.
///
/// ```
/// // np.random.default_rng(12345).choice(37, size=5) == [25, 8, 29, 11, 7]
/// let mut rng = lingo_data::NumpyRng::new(12345);
/// let draws: Vec<usize> = (0..5).map(|_| rng.below(37)).collect();
/// assert_eq!(draws, [25, 8, 29, 11, 7]);
/// ```
#[derive(Debug, Clone)]
pub struct NumpyRng {
    state: u128,
    increment: u128,
    /// The upper half of the last 64-bit output, not yet handed out.
    spare: Option<u32>,
}

/// PCG64's multiplier.
const PCG_MULTIPLIER: u128 = 0x2360_ED05_1FC6_5DA4_4385_DF64_9FCC_F645;

impl NumpyRng {
    /// The generator `np.random.default_rng(seed)` makes.
    ///
    /// ```
    /// // np.random.default_rng(12345).bit_generator.random_raw() == 4193609425186963869
    /// assert_eq!(lingo_data::NumpyRng::new(12345).next_u64(), 4193609425186963869);
    /// ```
    pub fn new(seed: u64) -> NumpyRng {
        let words = seed_sequence(seed, 8);
        let word64 = |k: usize| u64::from(words[2 * k]) | (u64::from(words[2 * k + 1]) << 32);
        let initial = (u128::from(word64(0)) << 64) | u128::from(word64(1));
        let sequence = (u128::from(word64(2)) << 64) | u128::from(word64(3));
        let mut rng = NumpyRng { state: 0, increment: (sequence << 1) | 1, spare: None };
        rng.step();
        rng.state = rng.state.wrapping_add(initial);
        rng.step();
        rng
    }

    /// The LCG's step: `state ← state · a + c (mod 2¹²⁸)`.
    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULTIPLIER).wrapping_add(self.increment);
    }

    /// The next 64 random bits: the two halves of the new state xored,
    /// rotated by its top six bits.
    ///
    /// ```
    /// let mut rng = lingo_data::NumpyRng::new(12345);
    /// assert_ne!(rng.next_u64(), rng.next_u64());
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let folded = ((self.state >> 64) as u64) ^ (self.state as u64);
        folded.rotate_right((self.state >> 122) as u32)
    }

    /// The next 32 random bits: the lower half of a fresh 64-bit output,
    /// then its upper half.
    ///
    /// ```
    /// let (mut a, mut b) = (lingo_data::NumpyRng::new(7), lingo_data::NumpyRng::new(7));
    /// let wide = a.next_u64();
    /// assert_eq!((b.next_u32(), b.next_u32()), (wide as u32, (wide >> 32) as u32));
    /// ```
    pub fn next_u32(&mut self) -> u32 {
        if let Some(upper) = self.spare.take() {
            return upper;
        }
        let wide = self.next_u64();
        self.spare = Some((wide >> 32) as u32);
        wide as u32
    }

    /// A uniform integer in `0..n` (`n ≤ 2³²`), as numpy's `integers(0, n)`
    /// draws it: `x · n` for a 32-bit `x`, keeping the upper word, drawing
    /// again when the lower word falls in the biased sliver.
    ///
    /// ```
    /// let mut rng = lingo_data::NumpyRng::new(1);
    /// assert!((0..1000).all(|_| rng.below(3) < 3));
    /// assert_eq!(rng.below(1), 0);
    /// ```
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0 && n as u64 <= 1 << 32, "below(n) needs 0 < n <= 2^32, got {n}");
        if n == 1 {
            return 0; // numpy draws nothing for a range of one
        }
        let n = n as u64;
        let mut m = u64::from(self.next_u32()) * n;
        if (m as u32 as u64) < n {
            let threshold = (1u64 << 32) % n;
            while (m as u32 as u64) < threshold {
                m = u64::from(self.next_u32()) * n;
            }
        }
        (m >> 32) as usize
    }
}

/// numpy's `SeedSequence(seed).generate_state(words)`: the seed's 32-bit
/// words hashed into a pool of four, mixed, then hashed out again.
fn seed_sequence(seed: u64, words: usize) -> Vec<u32> {
    const INIT_A: u32 = 0x43b0_d7e5;
    const MULT_A: u32 = 0x931e_8875;
    const INIT_B: u32 = 0x8b51_f9dd;
    const MULT_B: u32 = 0x58f3_8ded;
    const MIX_L: u32 = 0xca01_f9dd;
    const MIX_R: u32 = 0x4973_f715;
    let entropy: Vec<u32> = if seed >> 32 == 0 { vec![seed as u32] } else { vec![seed as u32, (seed >> 32) as u32] };
    let mut hash = INIT_A;
    let mut hashmix = |value: u32| {
        let v = value ^ hash;
        hash = hash.wrapping_mul(MULT_A);
        let v = v.wrapping_mul(hash);
        v ^ (v >> 16)
    };
    let mix = |x: u32, y: u32| {
        let r = MIX_L.wrapping_mul(x).wrapping_sub(MIX_R.wrapping_mul(y));
        r ^ (r >> 16)
    };
    let mut pool: [u32; 4] = std::array::from_fn(|i| hashmix(entropy.get(i).copied().unwrap_or(0)));
    for src in 0..4 {
        for dst in (0..4).filter(|&dst| dst != src) {
            pool[dst] = mix(pool[dst], hashmix(pool[src]));
        }
    }
    let mut hash = INIT_B;
    (0..words)
        .map(|i| {
            let mut v = pool[i % 4] ^ hash;
            hash = hash.wrapping_mul(MULT_B);
            v = v.wrapping_mul(hash);
            v ^ (v >> 16)
        })
        .collect()
}

/// A paired bootstrap test's settings, sacrebleu's defaults by [`Default`]
/// (1,000 resamples, seed 12345).
///
/// ```
/// use lingo_data::{Bleu, PairedBootstrap, sentence_stats};
/// let refs = vec![vec!["el gato negro duerme"], vec!["la casa es grande"], vec!["tengo un perro"]];
/// let a = sentence_stats(&Bleu::default(), &["el gato negro duerme", "la casa grande", "tengo perro"], &refs).unwrap();
/// let b = sentence_stats(&Bleu::default(), &["el gato duerme", "la casa es grande", "tengo un perro"], &refs).unwrap();
/// let results = PairedBootstrap::default().compare(&Bleu::default(), &[a, b]).unwrap();
/// assert!(results[0].p_value.is_none() && results[1].p_value.is_some());
/// assert!(results[1].ci >= 0.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairedBootstrap {
    /// How many test sets to draw.
    pub resamples: usize,
    /// The seed of the draws (sacrebleu's `SACREBLEU_SEED`).
    pub seed: u64,
}

impl Default for PairedBootstrap {
    fn default() -> PairedBootstrap {
        PairedBootstrap { resamples: 1000, seed: 12345 }
    }
}

/// One system's result in a paired bootstrap test.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SystemResult {
    /// Its score on the real test set.
    pub score: f64,
    /// The mean of its scores on the drawn test sets.
    pub mean: f64,
    /// Half the width of the 95 % interval of those scores.
    pub ci: f64,
    /// The p-value of its difference from the baseline (`None` for the baseline).
    pub p_value: Option<f64>,
}

impl PairedBootstrap {
    /// The drawn test sets: `resamples` rows of `n` sentence indices.
    ///
    /// ```
    /// let draws = lingo_data::PairedBootstrap { resamples: 2, seed: 12345 }.draws(37);
    /// assert_eq!(draws[0][..5], [25, 8, 29, 11, 7]);
    /// assert_eq!((draws.len(), draws[1].len()), (2, 37));
    /// ```
    pub fn draws(&self, n: usize) -> Vec<Vec<usize>> {
        let mut rng = NumpyRng::new(self.seed);
        (0..self.resamples).map(|_| (0..n).map(|_| rng.below(n)).collect()).collect()
    }

    /// Compares `systems` (each one's sentence statistics under `metric`;
    /// the first is the baseline) on the same draws: each system's score,
    /// mean and interval, and every other system's p-value against the
    /// baseline.
    ///
    /// ```
    /// use lingo_data::{Chrf, PairedBootstrap, sentence_stats};
    /// let refs: Vec<Vec<String>> = (0..20).map(|i| vec![format!("frase número {i}")]).collect();
    /// let same: Vec<String> = refs.iter().map(|r| r[0].clone()).collect();
    /// let worse: Vec<String> = (0..20).map(|i| format!("frase {i}")).collect();
    /// let stats = |hyps: &[String]| sentence_stats(&Chrf::default(), hyps, &refs).unwrap();
    /// let results = PairedBootstrap::default().compare(&Chrf::default(), &[stats(&same), stats(&worse)]).unwrap();
    /// assert!(results[1].score < results[0].score && results[1].p_value.unwrap() < 0.05);
    /// ```
    pub fn compare<M: Metric + ?Sized>(&self, metric: &M, systems: &[Vec<Vec<f64>>]) -> Result<Vec<SystemResult>> {
        let n = systems.first().map_or(0, Vec::len);
        if n == 0 || systems.iter().any(|s| s.len() != n) {
            let sizes: Vec<usize> = systems.iter().map(Vec::len).collect();
            return Err(Error::invalid(
                "systems",
                format!("need the same non-zero number of sentences, got {sizes:?}"),
            ));
        }
        if self.resamples == 0 {
            return Err(Error::invalid("resamples", "must be at least 1"));
        }
        let draws = self.draws(n);
        // Each draw's score, summing the drawn sentences' statistics in
        // single precision, in draw order, as sacrebleu's numpy does.
        let resampled = |stats: &[Vec<f64>]| -> Vec<f64> {
            let width = stats[0].len();
            let drawn = draws.iter().map(|draw| {
                let mut sum = vec![0.0_f32; width];
                for &i in draw {
                    for (s, &v) in sum.iter_mut().zip(&stats[i]) {
                        *s += v as f32;
                    }
                }
                metric.score(&sum.iter().map(|&s| f64::from(s)).collect::<Vec<_>>())
            });
            drawn.collect()
        };
        let baseline = resampled(&systems[0]);
        let baseline_score = metric.score(&sum_stats(&systems[0]));
        let results = systems.iter().enumerate().map(|(k, stats)| {
            let score = metric.score(&sum_stats(stats));
            let scores = if k == 0 { baseline.clone() } else { resampled(stats) };
            let (mean, ci) = mean_and_ci(&scores);
            let p_value = (k > 0).then(|| {
                let diffs: Vec<f64> = scores.iter().zip(&baseline).map(|(s, b)| (s - b).abs()).collect();
                let centre = diffs.iter().sum::<f64>() / diffs.len() as f64;
                let real = (score - baseline_score).abs();
                let beyond = diffs.iter().filter(|&&d| d - centre > real).count();
                (beyond + 1) as f64 / (diffs.len() + 1) as f64
            });
            SystemResult { score, mean, ci, p_value }
        });
        Ok(results.collect())
    }
}

/// The mean of `scores` and half the distance between the 2.5th and
/// 97.5th percentile (sacrebleu's `estimate_ci`: the values at `n/40` and
/// `n - n/40 - 1` when sorted).
fn mean_and_ci(scores: &[f64]) -> (f64, f64) {
    let mut sorted = scores.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let low = n / 40;
    let mean = sorted.iter().sum::<f64>() / n as f64;
    (mean, 0.5 * (sorted[n - low - 1] - sorted[low]))
}
