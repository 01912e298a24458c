//! Tuning of the GPU MSM: [`MsmConfig`] and the default window sizes.

/// Tuning of a [`crate::GpuMsm`] (set with [`crate::GpuMsm::with_config`]);
/// [`Default`] is what cuzk ships with. Every field changes speed or
/// memory, never the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmConfig {
    /// Window size c (bits) of plain-base MSMs, in 2..=24; `None` (default):
    /// [`window_bits`]`(n)`. Precomputed bases keep the window they were
    /// computed for ([`crate::GpuMsm::upload_bases_precomputed`]).
    pub window_bits: Option<u32>,
    /// Run MSMs of at least 2^20 points in two parts (default `true`): the
    /// first eighth of the scalars is copied in and its kernels start while
    /// the other seven eighths go up on a second stream; the parts' buckets
    /// are added before the reduction. Costs a second bucket array and, once
    /// used, a second 64 MiB pinned staging buffer.
    pub split: bool,
    /// The most windows digitized and sorted at a time (at least 1) for
    /// plain bases; `None` (default): all W = ceil(256 / c). While the
    /// scratch does not fit the device memory budget the engine halves the
    /// count, then runs in one part, takes smaller windows (unless
    /// `window_bits` is set) and at last cuts the points into chunks of at
    /// least [`crate::MIN_CHUNK_POINTS`]. Fewer windows a batch: less
    /// scratch, more launches.
    pub windows_per_batch: Option<u32>,
    /// Time each phase of every MSM (digits, sort, first and later
    /// accumulation levels, reduction) with CUDA events and emit them as a
    /// `tracing` event (target `cuzk_msm`, level INFO, fields in
    /// milliseconds). Default `false`. When on, every phase waits for the
    /// previous one, which serializes the two parts' copies and kernels.
    pub profile: bool,
    /// How scalars equal to 0 or 1 are treated (default
    /// [`WitnessShaped::Detect`]). Witness-shaped: the scalars are
    /// classified on the device, a 0 costs nothing, the points of the
    /// scalars equal to 1 are summed with one mixed addition each, and only
    /// the rest go through Pippenger, so the time follows the number of
    /// scalars that are neither. Host scalars go up in one piece
    /// ([`MsmConfig::split`] does not apply); device memory: 4 bytes a
    /// scalar for the indices beside the scalars, and a plan for the rest
    /// only. When the budget has no room for host scalars and their
    /// indices, the host's threads classify them and only the indices and
    /// the rest's scalars go up.
    pub witness_shaped: WitnessShaped,
}

/// When a GPU MSM runs witness-shaped (see [`MsmConfig::witness_shaped`]).
/// The result never depends on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WitnessShaped {
    /// Look at [`DETECT_SAMPLE`] scalars at fixed pseudo-random positions
    /// (so that a periodic layout of bits cannot fool the sample): when at
    /// least an eighth of them are 0 or 1, witness-shaped; otherwise dense.
    #[default]
    Detect,
    /// Always witness-shaped.
    Always,
    /// Never: every scalar through Pippenger.
    Never,
}

/// Scalars sampled by [`WitnessShaped::Detect`].
pub const DETECT_SAMPLE: usize = 1024;

impl WitnessShaped {
    /// Whether an MSM over `scalars` runs witness-shaped.
    pub(crate) fn applies(self, scalars: &[crate::Fr]) -> bool {
        match self {
            WitnessShaped::Always => true,
            WitnessShaped::Never => false,
            WitnessShaped::Detect => mostly_trivial(scalars),
        }
    }
}

/// Whether at least an eighth of a sample of `scalars` (all of them when
/// there are at most [`DETECT_SAMPLE`]) are 0 or 1. The positions come from
/// a fixed xorshift64 generator (G. Marsaglia, "Xorshift RNGs", J. Stat.
/// Softw. 8(14), 2003), so the choice is the same on every run.
pub(crate) fn mostly_trivial(scalars: &[crate::Fr]) -> bool {
    use ark_ff::{AdditiveGroup, Field};
    let n = scalars.len();
    if n == 0 {
        return false;
    }
    let trivial = |s: &crate::Fr| *s == crate::Fr::ZERO || *s == crate::Fr::ONE;
    let (hits, seen) = if n <= DETECT_SAMPLE {
        (scalars.iter().filter(|s| trivial(s)).count(), n)
    } else {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let hits = (0..DETECT_SAMPLE)
            .filter(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                trivial(&scalars[(x % n as u64) as usize])
            })
            .count();
        (hits, DETECT_SAMPLE)
    };
    hits * 8 >= seen
}

impl Default for MsmConfig {
    fn default() -> Self {
        MsmConfig {
            window_bits: None,
            split: true,
            windows_per_batch: None,
            profile: false,
            witness_shaped: WitnessShaped::Detect,
        }
    }
}

impl MsmConfig {
    /// Checks the fields' ranges.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] when `window_bits` is outside
    /// 2..=24 or `windows_per_batch` is `Some(0)`.
    pub(crate) fn check(&self) -> crate::Result<()> {
        if let Some(c) = self.window_bits {
            if !(crate::sys::CUZK_MSM_MIN_WINDOW..=crate::sys::CUZK_MSM_MAX_WINDOW).contains(&c) {
                return Err(crate::Error::InvalidArgument(format!(
                    "MsmConfig::window_bits = {c}: choose 2..=24 (or None for the default)"
                )));
            }
        }
        if self.windows_per_batch == Some(0) {
            return Err(crate::Error::InvalidArgument(
                "MsmConfig::windows_per_batch = 0: choose at least 1 (or None for all)".into(),
            ));
        }
        Ok(())
    }
}

/// Points from which an MSM runs in two parts when [`MsmConfig::split`] is
/// on (2^20: 32 MiB of scalars, where the copy is long enough to hide).
pub(crate) const SPLIT_MIN_POINTS: usize = 1 << 20;

/// (parts, points of part 0, points of the larger part: the plan's n) of an
/// MSM of n points: two parts, the first an eighth, from
/// [`SPLIT_MIN_POINTS`] on when `split`.
pub(crate) fn split(n: usize, split: bool) -> (u32, usize, usize) {
    if split && n >= SPLIT_MIN_POINTS {
        (2, n / 8, n - n / 8)
    } else {
        (1, n, n)
    }
}

/// The default window size (bits) of a plain-base MSM of `n` points:
/// floor(log2 n) - 3 (so that each of the 2^(c-1) buckets of a window holds
/// about 16 points), clamped to 4..=20.
pub fn window_bits(n: usize) -> u32 {
    let lg = usize::BITS - n.leading_zeros(); // floor(log2 n) + 1 for n > 0
    lg.saturating_sub(4).clamp(4, 20)
}

/// The window size (bits) for bases precomputed for `n` points (see
/// [`crate::GpuMsm::upload_bases_precomputed`]): the c in 8..=26 that
/// minimizes n W(c) + 4.5 x 2^(c-1), the point additions of the bucket sums
/// plus the bucket reduction's cost (about 4.5 additions' worth a bucket,
/// fitted to GPU timings, see BENCHMARKS.md), W(c) = ceil(256 / c). E.g. 16
/// for 2^16 points, 20 for 2^22, 22 for 2^24, 24 for 2^26.
pub fn precomputed_window_bits(n: usize) -> u32 {
    let cost = |c: u32| n as f64 * f64::from(256u32.div_ceil(c)) + 4.5 * f64::from(1u32 << (c - 1));
    (8..=26u32)
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
        .expect("a non-empty range")
}

/// Whether n scalars against bases precomputed for window c cost less than
/// plain bases with window `plain_c`, by the cost model of
/// [`precomputed_window_bits`] (plain: W windows of buckets to reduce).
pub(crate) fn merged_pays(n: usize, c: u32, plain_c: u32) -> bool {
    let w = |c: u32| f64::from(256u32.div_ceil(c));
    let buckets = |c: u32| 4.5 * f64::from(1u32 << (c - 1));
    let merged = n as f64 * w(c) + buckets(c);
    let plain = n as f64 * w(plain_c) + w(plain_c) * buckets(plain_c);
    merged <= plain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bits_is_floor_log2_minus_3() {
        assert_eq!(window_bits(0), 4);
        assert_eq!(window_bits(127), 4);
        assert_eq!(window_bits(1 << 10), 7);
        assert_eq!(window_bits((1 << 16) - 1), 12);
        assert_eq!(window_bits(1 << 16), 13);
        assert_eq!(window_bits(1 << 22), 19);
        assert_eq!(window_bits(1 << 26), 20);
    }

    #[test]
    fn precomputed_window_bits_examples() {
        assert_eq!(precomputed_window_bits(1 << 16), 16);
        assert_eq!(precomputed_window_bits(1 << 22), 20);
        assert_eq!(precomputed_window_bits(1 << 24), 22);
        assert_eq!(precomputed_window_bits(1 << 26), 24);
    }

    #[test]
    fn detect_counts_zeros_and_ones() {
        use crate::Fr;
        use ark_ff::{AdditiveGroup, Field};
        assert!(!mostly_trivial(&[]));
        let dense: Vec<Fr> = (2..5000u64).map(Fr::from).collect();
        assert!(!mostly_trivial(&dense));
        assert!(!WitnessShaped::Detect.applies(&dense));
        assert!(WitnessShaped::Always.applies(&dense));
        // One scalar in four is 0 or 1: witness-shaped, short and long.
        let shaped = |n: usize| -> Vec<Fr> {
            (0..n as u64)
                .map(|i| match i % 8 {
                    0 => Fr::ZERO,
                    1 => Fr::ONE,
                    _ => Fr::from(i + 2),
                })
                .collect()
        };
        assert!(mostly_trivial(&shaped(100)));
        assert!(mostly_trivial(&shaped(1 << 16)));
        assert!(!WitnessShaped::Never.applies(&shaped(1 << 16)));
        // Exactly an eighth counts; one fewer does not.
        let mut edge = vec![Fr::from(7u64); 800];
        edge[..100].fill(Fr::ONE);
        assert!(mostly_trivial(&edge));
        edge[0] = Fr::from(9u64);
        assert!(!mostly_trivial(&edge));
    }

    #[test]
    fn split_takes_an_eighth_first() {
        assert_eq!(
            split(SPLIT_MIN_POINTS - 1, true),
            (1, SPLIT_MIN_POINTS - 1, SPLIT_MIN_POINTS - 1)
        );
        assert_eq!(split(1 << 23, true), (2, 1 << 20, 7 << 20));
        assert_eq!(split(1 << 23, false), (1, 1 << 23, 1 << 23));
    }
}
