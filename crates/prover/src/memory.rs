//! The device memory one proof's GPU stage claims ([`crate::Prover::working_set_bytes`]).

use crate::ProvingKey;

/// Largest twiddle table of one NTT pass a prover's NTT engine keeps, in
/// bytes: 64 MiB, so that at 2^27 only the second pass boundary gets one
/// (20 MiB, tiled Shoup entries), not the first (2 to 10 GiB, and as much
/// again for the inverse root). Full tables there would make the NTTs a few
/// percent of a proof faster for gigabytes more in every worker's working
/// set (cuzk-ntt's default, at least 2 GiB, suits a lone transform).
pub(crate) const PROVER_FULL_TWIDDLE_MAX_BYTES: u64 = 64 << 20;

/// Bytes of a G1 point in XYZZ coordinates (four base-field elements).
const G1_XYZZ_BYTES: u64 = 4 * 48;
/// Bytes of a G2 point in XYZZ coordinates (four elements of Fp2).
const G2_XYZZ_BYTES: u64 = 4 * 96;

/// Bytes of a scalar of Fr on the device.
const SCALAR_BYTES: u64 = 32;

/// An over-estimate of the device memory, in bytes, of one proof's GPU
/// stage for the key `pk` (documented on
/// [`crate::Prover::working_set_bytes`]); `full_twiddle_bytes` is what the
/// NTT engine's full twiddle tables of the root and its inverse take at the
/// key's domain (zero on the CPU path).
pub(crate) fn working_set_bytes(pk: &ProvingKey, full_twiddle_bytes: u64) -> u64 {
    let n = (pk.h_query.len() as u64 + 1).next_power_of_two();
    let log_n = n.trailing_zeros();
    // Twiddle tables: the root, its inverse and two coset shifts, each a
    // table of 2^ceil(log_n/2) and one of 2^floor(log_n/2) powers (and
    // n^-1); counted as six for margin.
    let table = (1u64 << log_n.div_ceil(2)) + (1u64 << (log_n / 2)) + 1;
    let h_stage = 4 * n * SCALAR_BYTES + 6 * table * SCALAR_BYTES + full_twiddle_bytes;
    let vars = pk.a_query.len().saturating_sub(1) as u64;
    let msm = |m: u64, xyzz: u64| m * SCALAR_BYTES + msm_scratch_bytes(m, xyzz);
    let msm_stage = [
        msm(vars, G1_XYZZ_BYTES),
        msm(vars, G2_XYZZ_BYTES),
        msm(pk.h_query.len() as u64, G1_XYZZ_BYTES),
        msm(pk.l_query.len() as u64, G1_XYZZ_BYTES),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    h_stage + msm_stage
}

/// Device scratch, in bytes, of an MSM of `n` points whose bucket points
/// take `xyzz` bytes: the one place the prover asks for it (to be answered
/// by cuzk-msm's own estimate beside its plan).
fn msm_scratch_bytes(n: u64, xyzz: u64) -> u64 {
    msm_scratch_estimate(n, xyzz)
}

/// An over-estimate of `cuzk_msm`'s device scratch for an MSM of `n` points
/// whose bucket points take `xyzz` bytes, every window sorted at once:
/// follows the plan of `csrc/msm` (sort pairs twice, the partial lists,
/// buckets, bucket segments and the tree sum's first level, each counted as
/// large as the buckets) with CUB's sort storage bounded by `16 n + 16 MiB`.
fn msm_scratch_estimate(n: u64, xyzz: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let align = |x: u64| (x + 255) & !255;
    let c = u64::from(cuzk_msm::window_bits(n as usize).max(2));
    let windows = 256u64.div_ceil(c);
    let half = 1u64 << (c - 1);
    let entries = n * windows;
    let pairs = align(entries * 4);
    let l1 = 2 * entries.div_ceil(64);
    let l2 = 2 * l1.div_ceil(16);
    let lists = align(l1 * 4) + align(l1 * xyzz) + align(l2 * 4) + align(l2 * xyzz);
    let cub = 16 * n + (16 << 20);
    let buckets = align(windows * half * xyzz);
    (2 * pairs).max(lists) + 2 * pairs + cub + 3 * buckets
}
