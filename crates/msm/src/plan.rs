//! The MSM plan (window, parts, device scratch layout): made by
//! `cuzk_msm_plan_make` on a GPU, and mirrored here on the host so that the
//! scratch can be estimated without one.

use crate::config::{split, window_bits, MsmConfig};
use crate::{sys, Error, MsmCurve, Result};

/// What an MSM's plan is made for (the fields of `cuzk_msm_plan_request`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    pub(crate) curve: u32,
    pub(crate) n: u64,
    pub(crate) window_bits: u32,
    /// 0: all windows at once.
    pub(crate) windows_per_batch: u32,
    pub(crate) precomputed: bool,
    pub(crate) parts: u32,
}

impl Request {
    fn to_sys(self) -> sys::cuzk_msm_plan_request {
        sys::cuzk_msm_plan_request {
            curve: self.curve,
            window_bits: self.window_bits,
            n: self.n,
            windows_per_batch: self.windows_per_batch,
            precomputed: u32::from(self.precomputed),
            parts: self.parts,
            reserved: 0,
        }
    }
}

fn check(s: sys::cuzk_status) -> Result<()> {
    Error::from_status(s.code, s.cuda_error, &s.message)
}

/// The plan of `req` on `device`, from csrc/msm (exact: it asks CUB for its
/// sort storage).
pub(crate) fn make(device: i32, req: Request) -> Result<sys::cuzk_msm_plan> {
    let mut plan = sys::cuzk_msm_plan::default();
    // SAFETY: a request and an output struct, both valid for the call.
    check(unsafe { sys::cuzk_msm_plan_make(device, &req.to_sys(), &mut plan) })?;
    Ok(plan)
}

/// An upper bound on CUB's radix-sort storage for `items` pairs of 32-bit
/// keys and values: the sort's alternate key and value buffers (8 bytes a
/// pair), its per-tile look-back and histograms (under 8 bytes a pair), and
/// 16 MiB for the fixed part.
pub(crate) fn sort_bytes_bound(items: u64) -> u64 {
    16 * items + (16 << 20)
}

fn align(x: u64) -> u64 {
    (x + 255) & !255
}

/// The plan of `req` computed on the host, as `make_plan` in
/// csrc/msm/plan.cuh does, with `sort_bytes(items)` for CUB's storage of a
/// sort of `items` pairs (0 when there are no points). Same checks.
pub(crate) fn layout(
    req: Request,
    sort_bytes: impl FnOnce(u64) -> u64,
) -> Result<sys::cuzk_msm_plan> {
    let c = req.window_bits;
    let max_c = if req.precomputed {
        sys::CUZK_MSM_MAX_PRECOMPUTED_WINDOW
    } else {
        sys::CUZK_MSM_MAX_WINDOW
    };
    if !(sys::CUZK_MSM_MIN_WINDOW..=max_c).contains(&c) {
        return Err(Error::InvalidArgument(format!(
            "cuzk_msm: window of {c} bits is outside {}..={max_c}",
            sys::CUZK_MSM_MIN_WINDOW
        )));
    }
    if req.parts != 1 && req.parts != 2 {
        return Err(Error::InvalidArgument(format!(
            "cuzk_msm: {} parts (give 1 or 2)",
            req.parts
        )));
    }
    let point_bytes: u64 = match req.curve {
        sys::CUZK_MSM_G1 => 4 * 48,
        sys::CUZK_MSM_G2 => 4 * 96,
        other => {
            return Err(Error::InvalidArgument(format!(
                "cuzk_msm: curve {other} is neither G1 (1) nor G2 (2)"
            )))
        }
    };
    let windows = 256u32.div_ceil(c);
    let max_points = u64::from(sys::CUZK_MSM_MAX_POINTS);
    let limit = if req.precomputed {
        max_points / u64::from(windows)
    } else {
        max_points
    };
    let n = req.n;
    if n > limit {
        return Err(Error::InvalidArgument(format!(
            "cuzk_msm: {n} points exceed the limit of {limit} a call; split the MSM and add \
             the results"
        )));
    }
    let half = 1u64 << (c - 1);
    let wpb = req.windows_per_batch;
    let batch = if req.precomputed || wpb == 0 || wpb > windows {
        windows
    } else {
        wpb
    };
    let bucket_windows = if req.precomputed {
        1
    } else {
        u64::from(windows)
    };
    let entries = n * u64::from(batch);
    let sort_items = if req.precomputed { entries } else { n };
    let l1 = 2 * entries.div_ceil(64);
    let l2 = 2 * l1.div_ceil(16);
    let mut s = sys::cuzk_msm_scratch_layout::default();
    // Region 1: the unsorted pairs, later reused by the partial lists.
    let pairs = align(entries * 4);
    s.keys_in = 0;
    s.vals_in = pairs;
    s.list_a_keys = 0;
    s.list_a_pts = align(l1 * 4);
    s.list_b_keys = s.list_a_pts + align(l1 * point_bytes);
    s.list_b_pts = s.list_b_keys + align(l2 * 4);
    let lists_end = s.list_b_pts + align(l2 * point_bytes);
    let mut at = (2 * pairs).max(lists_end);
    s.keys_out = at;
    s.vals_out = at + pairs;
    at += 2 * pairs;
    s.sort = at;
    s.sort_bytes = if n > 0 { sort_bytes(sort_items) } else { 0 };
    at += align(s.sort_bytes);
    s.buckets = at;
    s.bucket_bytes = align(bucket_windows * half * point_bytes);
    at += u64::from(req.parts) * s.bucket_bytes;
    // Bucket reduction: segments of 16 buckets (fewer when a window has
    // fewer), at most 8 levels.
    let seg = half.min(16);
    let level0 = align(bucket_windows * (half / seg) * point_bytes);
    s.segs = at;
    s.segs2 = at + level0;
    s.r0 = at + 2 * level0;
    s.r1 = at + 3 * level0;
    at += 4 * level0;
    s.level_sums = at;
    at += align(8 * bucket_windows * point_bytes);
    s.window_sums = at;
    at += align(bucket_windows * point_bytes);
    s.total = at;
    Ok(sys::cuzk_msm_plan {
        curve: req.curve,
        window_bits: c,
        plan_n: n,
        windows,
        windows_per_batch: batch,
        precomputed: u32::from(req.precomputed),
        parts: req.parts,
        scratch: s,
    })
}

/// The request of a plain-base MSM of `n` points of curve `P` as a
/// [`crate::GpuMsm`] with `config` starts it (before it takes fewer windows
/// a batch to fit the memory budget).
pub(crate) fn plain_request<P: MsmCurve>(n: usize, config: &MsmConfig) -> Request {
    let (parts, _, plan_n) = split(n, config.split);
    Request {
        curve: P::CURVE,
        n: plan_n as u64,
        window_bits: config.window_bits.unwrap_or_else(|| window_bits(n)),
        windows_per_batch: config.windows_per_batch.unwrap_or(0),
        precomputed: false,
        parts,
    }
}

/// An upper bound on the device scratch (bytes) of one MSM of `n` points of
/// curve `P` against plain bases, as a [`crate::GpuMsm`] with `config` runs
/// it ([`crate::GpuMsm::msm`], [`crate::FixedBases::msm`] on bases uploaded
/// by [`crate::GpuMsm::upload_bases`]): the layout of csrc/msm's plan
/// (digit pairs, sort, partial lists, one bucket array a part, reduction
/// buffers) with CUB's radix-sort storage bounded by 16 bytes a pair plus
/// 16 MiB. Windows per batch as `config.windows_per_batch`, all W when
/// `None` (the most memory; the engine takes fewer windows a batch when the
/// budget is short). Host-only: needs no GPU and works in a CPU-only build.
/// Unless `config.witness_shaped` is [`crate::WitnessShaped::Never`], the
/// larger of that and a witness-shaped MSM's: 4 bytes a scalar of indices
/// and the largest of its phases (the classification's storage, the sum of
/// the ones' points, a one-part plan for the rest).
/// Not included: the bases (96 bytes a G1 point, 192 a G2 point) and the
/// scalars (32 bytes each), also on the device during the MSM. 0 for n = 0.
///
/// # Errors
/// [`Error::InvalidArgument`] when `config.window_bits` is outside 2..=24,
/// `config.windows_per_batch` is `Some(0)`, or a part passes 2^31 - 1
/// points (the larger part: n, or n - n/8 when split).
pub fn scratch_bytes_estimate<P: MsmCurve>(n: usize, config: &MsmConfig) -> Result<u64> {
    config.check()?;
    if n == 0 {
        return Ok(0);
    }
    let dense = layout(plain_request::<P>(n, config), sort_bytes_bound)?
        .scratch
        .total;
    if config.witness_shaped == crate::WitnessShaped::Never {
        return Ok(dense);
    }
    let whole = MsmConfig {
        split: false,
        ..*config
    };
    let rest = layout(plain_request::<P>(n, &whole), sort_bytes_bound)?
        .scratch
        .total;
    let point_bytes = if P::CURVE == sys::CUZK_MSM_G1 {
        192
    } else {
        384
    };
    let phases = classify_bytes_bound(n as u64)
        .max(sum_bytes(n as u64, point_bytes))
        .max(rest);
    Ok(dense.max(align(4 * n as u64) + phases))
}

/// An upper bound on cuzk_msm_classify's scratch for n scalars: 256 bytes
/// of counts and CUB's selection storage (its tile states, a few bytes for
/// every few thousand items), bounded by n / 4 bytes plus 1 MiB.
fn classify_bytes_bound(n: u64) -> u64 {
    256 + n / 4 + (1 << 20)
}

/// cuzk_msm_sum_indexed's scratch for `count` points (as `sum_plan` in
/// csrc/msm/witness.cuh): at most 2^18 first-level partial sums of at
/// least 32 points each, and the tree's second buffer of an eighth of them.
pub(crate) fn sum_bytes(count: u64, point_bytes: u64) -> u64 {
    let chunk = count.div_ceil(1 << 18).max(32);
    let partials = count.div_ceil(chunk);
    align(partials * point_bytes) + align(partials.div_ceil(8) * point_bytes)
}

/// The fewest points of one chunk when an MSM is cut into chunks to fit
/// the device-memory budget (the plan's last step before out of memory): 2^16.
pub const MIN_CHUNK_POINTS: usize = 1 << 16;

/// The smallest window [`choose`] shrinks a plain plan to: 8 bits (32
/// windows of 128 buckets).
const MIN_SHRINK_WINDOW: u32 = 8;

/// What an MSM's plan is chosen for (see [`choose`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ask {
    pub(crate) curve: u32,
    /// Entries (points with their scalars) of the whole MSM.
    pub(crate) n: usize,
    /// The configuration's window for plain bases (`None`: [`window_bits`]
    /// of the points of a chunk, shrunk when short of memory).
    pub(crate) window: Option<u32>,
    /// The configuration's windows a batch (`None`: all).
    pub(crate) windows_per_batch: Option<u32>,
    /// Whether the MSM may run in two parts ([`MsmConfig::split`]).
    pub(crate) split: bool,
    /// The window of precomputed bases, when the bases have copies.
    pub(crate) precomputed: Option<u32>,
    /// Device bytes a point of a chunk holds beside the scratch (the
    /// scalars copied in: 32; scalars already resident: 0).
    pub(crate) bytes_per_point: u64,
}

/// A chosen plan and the points of one chunk: the MSM runs over
/// consecutive ranges of `chunk` entries (the last one shorter), each with
/// this plan, and their sums are added; `chunk == n` is one run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Choice {
    pub(crate) plan: sys::cuzk_msm_plan,
    pub(crate) chunk: usize,
}

/// Chooses the fastest plan of `ask` whose scratch, with the chunk's
/// `bytes_per_point`, `fits`, shrinking step by step:
/// 1. precomputed bases (all windows at once), when there are copies;
/// 2. plain bases in the configured parts, halving the windows a batch
///    from the configured count (all) down to one;
/// 3. one part instead of two (one bucket array fewer), one window a batch;
/// 4. smaller windows (fewer buckets), down to 8 bits, unless the
///    configuration fixes the window;
/// 5. chunks of n/2, n/4, ... points (each run reduces its own buckets),
///    down to [`MIN_CHUNK_POINTS`].
///
/// `make` turns a request into a plan (on a GPU: csrc/msm's, which asks
/// CUB for its sort storage; in tests: the host mirror).
///
/// # Errors
/// [`Error::OutOfMemory`] when not even the smallest plan (one part, one
/// window a batch, the smallest window, chunks of [`MIN_CHUNK_POINTS`])
/// fits, naming its bytes; the errors of `fits` and `make`.
pub(crate) fn choose(
    ask: &Ask,
    fits: impl Fn(u64) -> Result<bool>,
    make: impl Fn(Request) -> Result<sys::cuzk_msm_plan>,
) -> Result<Choice> {
    let n = ask.n;
    let needs = |p: &sys::cuzk_msm_plan, chunk: usize| {
        p.scratch
            .total
            .saturating_add(ask.bytes_per_point.saturating_mul(chunk as u64))
    };
    let (parts, _, plan_n) = split(n, ask.split);
    if let Some(c) = ask.precomputed {
        let p = make(Request {
            curve: ask.curve,
            n: plan_n as u64,
            window_bits: c,
            windows_per_batch: 0,
            precomputed: true,
            parts,
        })?;
        if fits(needs(&p, n))? {
            return Ok(Choice { plan: p, chunk: n });
        }
    }
    // The smallest plan tried, for the error.
    let mut smallest: Option<(u64, u32, usize)> = None;
    // Plain plans of `chunk` points in `parts` parts at window c, all
    // windows a batch (or the configured count) down to one.
    let mut try_batches = |chunk: usize, parts: u32, c: u32| -> Result<Option<Choice>> {
        let windows = 256u32.div_ceil(c);
        let mut batch = ask.windows_per_batch.unwrap_or(windows).min(windows);
        let plan_n = if parts == 2 { chunk - chunk / 8 } else { chunk };
        loop {
            let p = make(Request {
                curve: ask.curve,
                n: plan_n as u64,
                window_bits: c,
                windows_per_batch: batch,
                precomputed: false,
                parts,
            })?;
            let bytes = needs(&p, chunk);
            if fits(bytes)? {
                return Ok(Some(Choice { plan: p, chunk }));
            }
            smallest = Some((bytes, c, chunk));
            if batch == 1 {
                return Ok(None);
            }
            batch = batch.div_ceil(2);
        }
    };
    let c0 = ask.window.unwrap_or_else(|| window_bits(n));
    if let Some(ch) = try_batches(n, parts, c0)? {
        return Ok(ch);
    }
    if parts == 2 {
        if let Some(ch) = try_batches(n, 1, c0)? {
            return Ok(ch);
        }
    }
    if ask.window.is_none() {
        for c in (MIN_SHRINK_WINDOW..c0).rev() {
            if let Some(ch) = try_batches(n, 1, c)? {
                return Ok(ch);
            }
        }
    }
    let mut chunk = n / 2;
    while chunk >= MIN_CHUNK_POINTS {
        let c = ask
            .window
            .unwrap_or_else(|| window_bits(chunk).max(MIN_SHRINK_WINDOW));
        if let Some(ch) = try_batches(chunk, 1, c)? {
            return Ok(ch);
        }
        chunk /= 2;
    }
    let (bytes, c, chunk) = smallest.unwrap_or((0, c0, n));
    Err(Error::OutOfMemory(format!(
        "MSM of {n} points: the smallest plan ({chunk} points a run, {c}-bit windows one at a \
         time, one part) needs {bytes} bytes of device memory, more than the budget has free; \
         free device memory, raise CUZK_DEVICE_MEMORY_LIMIT or run fewer workers on the GPU"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_bls12_381::{g1, g2};

    /// Every request the GPU tests exercise, plain and precomputed.
    fn requests() -> Vec<Request> {
        let mut v = Vec::new();
        for curve in [sys::CUZK_MSM_G1, sys::CUZK_MSM_G2] {
            for n in [0u64, 1, 5, 127, 1 << 10, 1 << 16, (1 << 20) + 3] {
                for c in [2u32, 4, 7, 13, 16] {
                    for wpb in [0u32, 1, 3, 40] {
                        for parts in [1u32, 2] {
                            v.push(Request {
                                curve,
                                n,
                                window_bits: c,
                                windows_per_batch: wpb,
                                precomputed: false,
                                parts,
                            });
                        }
                    }
                    v.push(Request {
                        curve,
                        n,
                        window_bits: c + 8,
                        windows_per_batch: 0,
                        precomputed: true,
                        parts: 1 + (n as u32 & 1),
                    });
                }
            }
        }
        v
    }

    #[test]
    fn host_layout_is_ordered_and_aligned() {
        for req in requests() {
            let p = layout(req, sort_bytes_bound).unwrap();
            let s = p.scratch;
            for off in [
                s.keys_in,
                s.vals_in,
                s.keys_out,
                s.vals_out,
                s.list_a_keys,
                s.list_a_pts,
                s.list_b_keys,
                s.list_b_pts,
                s.sort,
                s.buckets,
                s.segs,
                s.segs2,
                s.r0,
                s.r1,
                s.level_sums,
                s.window_sums,
                s.total,
            ] {
                assert_eq!(off % 256, 0, "{req:?}");
            }
            assert!(s.keys_out >= s.vals_in + (s.vals_in - s.keys_in), "{req:?}");
            assert!(s.keys_out >= s.list_b_pts, "{req:?}");
            assert!(
                s.sort >= s.vals_out && s.buckets >= s.sort + s.sort_bytes,
                "{req:?}"
            );
            assert!(
                s.segs >= s.buckets + u64::from(p.parts) * s.bucket_bytes,
                "{req:?}"
            );
            assert!(s.total > s.window_sums, "{req:?}");
        }
    }

    #[test]
    fn host_layout_checks_like_the_plan() {
        let ok = Request {
            curve: sys::CUZK_MSM_G1,
            n: 10,
            window_bits: 8,
            windows_per_batch: 0,
            precomputed: false,
            parts: 1,
        };
        assert!(layout(ok, sort_bytes_bound).is_ok());
        for bad in [
            Request { curve: 3, ..ok },
            Request {
                window_bits: 1,
                ..ok
            },
            Request {
                window_bits: 25,
                ..ok
            },
            Request { parts: 3, ..ok },
            Request { n: 1 << 31, ..ok },
            Request {
                n: 1 << 30,
                window_bits: 16,
                precomputed: true,
                ..ok
            },
        ] {
            assert!(
                matches!(
                    layout(bad, sort_bytes_bound),
                    Err(Error::InvalidArgument(_))
                ),
                "{bad:?}"
            );
        }
        assert!(layout(
            Request {
                window_bits: 26,
                precomputed: true,
                ..ok
            },
            sort_bytes_bound
        )
        .is_ok());
    }

    #[test]
    fn estimate_follows_the_config() {
        let d = MsmConfig::default();
        assert_eq!(scratch_bytes_estimate::<g1::Config>(0, &d).unwrap(), 0);
        let g1 = scratch_bytes_estimate::<g1::Config>(1 << 16, &d).unwrap();
        let g2 = scratch_bytes_estimate::<g2::Config>(1 << 16, &d).unwrap();
        assert!(g2 > g1);
        // Fewer windows a batch, less scratch.
        let one = MsmConfig {
            windows_per_batch: Some(1),
            ..d
        };
        assert!(scratch_bytes_estimate::<g1::Config>(1 << 16, &one).unwrap() < g1);
        // Two parts (from 2^20 points): a second bucket array, smaller pair
        // arrays.
        let n = 1 << 20;
        let dense = MsmConfig {
            witness_shaped: crate::WitnessShaped::Never,
            ..d
        };
        let split = scratch_bytes_estimate::<g1::Config>(n, &dense).unwrap();
        let whole = scratch_bytes_estimate::<g1::Config>(
            n,
            &MsmConfig {
                split: false,
                ..dense
            },
        )
        .unwrap();
        assert_ne!(split, whole);
        // Witness-shaped MSMs may run (the default): the bound covers their
        // indices and one-part plan too.
        let either = scratch_bytes_estimate::<g1::Config>(n, &d).unwrap();
        assert!(either >= split && either >= whole + 4 * n as u64);
        // An invalid configuration is an error.
        let bad = MsmConfig {
            window_bits: Some(30),
            ..d
        };
        assert!(scratch_bytes_estimate::<g1::Config>(10, &bad).is_err());
        let whole = MsmConfig { split: false, ..d };
        assert!(scratch_bytes_estimate::<g1::Config>(1 << 31, &whole).is_err());
    }

    fn ask(n: usize, curve: u32) -> Ask {
        Ask {
            curve,
            n,
            window: None,
            windows_per_batch: None,
            split: true,
            precomputed: None,
            bytes_per_point: 32,
        }
    }

    fn host(req: Request) -> Result<sys::cuzk_msm_plan> {
        layout(req, sort_bytes_bound)
    }

    fn needs(ask: &Ask, ch: &Choice) -> u64 {
        ch.plan.scratch.total + ask.bytes_per_point * ch.chunk as u64
    }

    /// Under a shrinking cap the plan shrinks in the documented order and
    /// always fits; below the smallest plan the error names its bytes.
    #[test]
    fn choose_shrinks_to_the_budget() {
        for curve in [sys::CUZK_MSM_G1, sys::CUZK_MSM_G2] {
            let a = ask(1 << 22, curve);
            let full = choose(&a, |_| Ok(true), host).unwrap();
            assert_eq!(full.chunk, 1 << 22);
            assert_eq!(full.plan.parts, 2);
            assert_eq!(full.plan.windows_per_batch, full.plan.windows);
            let mut cap = needs(&a, &full);
            let mut last = full;
            let mut saw = (false, false, false, false); // batch, parts, window, chunk
            loop {
                cap = cap * 3 / 4;
                match choose(&a, |b| Ok(b <= cap), host) {
                    Ok(ch) => {
                        assert!(needs(&a, &ch) <= cap, "curve {curve}, cap {cap}");
                        saw.0 |= ch.plan.windows_per_batch < ch.plan.windows;
                        saw.1 |= ch.plan.parts == 1;
                        saw.2 |= ch.plan.window_bits < full.plan.window_bits;
                        saw.3 |= ch.chunk < a.n;
                        assert!(ch.chunk <= last.chunk);
                        assert!(ch.chunk >= MIN_CHUNK_POINTS);
                        last = ch;
                    }
                    Err(Error::OutOfMemory(m)) => {
                        assert!(m.contains("smallest plan"), "{m}");
                        assert!(
                            m.contains(&format!("{MIN_CHUNK_POINTS} points a run")),
                            "{m}"
                        );
                        break;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(saw, (true, true, true, true), "curve {curve}");
            // The case: a 2^22 G1 MSM under 1 GiB runs.
            let ch = choose(&a, |b| Ok(b <= 1 << 30), host).unwrap();
            assert!(needs(&a, &ch) <= 1 << 30);
        }
    }

    /// A configured window is kept; precomputed bases are used when their
    /// plan fits and left for copy 0's plain plans when not.
    #[test]
    fn choose_keeps_the_configured_window_and_prefers_copies() {
        let mut a = ask(1 << 20, sys::CUZK_MSM_G1);
        a.window = Some(13);
        let big = choose(&a, |_| Ok(true), host).unwrap();
        let cap = needs(&a, &big) / 8;
        let ch = choose(&a, |b| Ok(b <= cap), host).unwrap();
        assert_eq!(ch.plan.window_bits, 13);
        assert!(ch.chunk < a.n);
        a.window = None;
        a.precomputed = Some(16);
        let ch = choose(&a, |_| Ok(true), host).unwrap();
        assert_eq!(ch.plan.precomputed, 1);
        let merged = needs(&a, &ch);
        let ch = choose(&a, |b| Ok(b < merged), host).unwrap();
        assert_eq!(ch.plan.precomputed, 0);
    }

    /// The host's mirror of cuzk_msm_sum_scratch equals it (a CUDA build
    /// answers without a GPU; a CPU-only build has nothing to compare).
    #[test]
    fn sum_bytes_equals_the_abi() {
        for curve in [sys::CUZK_MSM_G1, sys::CUZK_MSM_G2] {
            let pb = if curve == sys::CUZK_MSM_G1 { 192 } else { 384 };
            for count in [
                0u64,
                1,
                31,
                32,
                33,
                1000,
                1 << 18,
                (1 << 23) + 7,
                1 << 26,
                3 << 27,
            ] {
                let mut bytes = 0u64;
                // SAFETY: an output integer, valid for the call.
                let s = unsafe { sys::cuzk_msm_sum_scratch(0, curve, count, &mut bytes) };
                if s.code == sys::CUZK_ERR_NO_CUDA_BUILD as i32 {
                    return;
                }
                assert_eq!(s.code, sys::CUZK_OK as i32);
                assert_eq!(sum_bytes(count, pb), bytes, "curve {curve}, {count} points");
            }
        }
        // At most 2^18 partials: bounded however many points.
        assert!(sum_bytes(1 << 30, 384) <= (1 << 18) * 384 * 9 / 8 + 512);
    }

    /// In a CUDA build with a GPU: the host layout, given CUB's storage as
    /// the plan reports it, is the plan; the bound covers CUB's storage.
    #[test]
    #[ignore = "needs a GPU"]
    fn host_layout_equals_the_gpu_plan() {
        for req in requests() {
            let gpu = match make(0, req) {
                Ok(p) => p,
                Err(e) => panic!("{req:?}: {e} (this test needs a GPU)"),
            };
            let sort = gpu.scratch.sort_bytes;
            let host = layout(req, |_| sort).unwrap();
            assert_eq!(format!("{host:?}"), format!("{gpu:?}"), "{req:?}");
            let items = if req.precomputed {
                req.n * u64::from(gpu.windows)
            } else {
                req.n
            };
            assert!(
                sort <= sort_bytes_bound(items),
                "{req:?}: CUB takes {sort} bytes"
            );
            let bound = layout(req, sort_bytes_bound).unwrap();
            assert!(bound.scratch.total >= gpu.scratch.total, "{req:?}");
        }
        for n in [1u64, 1000, 1 << 20, 1 << 26, (1 << 31) - 1] {
            let mut bytes = 0u64;
            // SAFETY: an output integer, valid for the call.
            let s = unsafe { sys::cuzk_msm_classify_scratch(0, n, &mut bytes) };
            assert_eq!(s.code, sys::CUZK_OK as i32, "classify scratch of {n}");
            assert!(
                bytes <= classify_bytes_bound(n),
                "{n} scalars: {bytes} bytes"
            );
        }
    }
}
