//! The device memory one proof's GPU stage claims ([`crate::Prover::working_set_bytes`]).

use crate::ProvingKey;
use ark_bls12_381::{g1, g2};
use cuzk_msm::{MsmConfig, MsmCurve};

/// Largest twiddle table of one NTT pass a prover's NTT engine keeps, in
/// bytes: 64 MiB, so that at 2^27 only the second pass boundary gets one
/// (20 MiB, tiled Shoup entries), not the first (2 to 10 GiB, and as much
/// again for the inverse root). Full tables there would make the NTTs a few
/// percent of a proof faster for gigabytes more in every worker's working
/// set (cuzk-ntt's default, at least 2 GiB, suits a lone transform).
pub(crate) const PROVER_FULL_TWIDDLE_MAX_BYTES: u64 = 64 << 20;

/// Bytes of a scalar of Fr on the device.
const SCALAR_BYTES: u64 = 32;

/// An over-estimate of the device memory, in bytes, of one proof's GPU
/// stage for the key `pk` (documented on
/// [`crate::Prover::working_set_bytes`]); `full_twiddle_bytes` is what the
/// NTT engine's full twiddle tables of the root and its inverse take at the
/// key's domain (zero on the CPU path). `device_eval`: the prover may
/// evaluate the R1CS on the GPU from a device-resident assignment, with
/// streamed chunks' buffers of that many bytes (0 when resident); the
/// assignment then stays on the device through the H stage (beside two of
/// its vectors, and a chunk buffer; counted dense, though a witness of
/// mostly 0s and 1s goes there compact, in about 1/100 of the bytes) and
/// the MSMs, which also take a compacted query's indices (4 bytes a
/// variable). Jobs of other matrices
/// and checked ones still evaluate on the CPU, so the figure is the larger
/// of the two paths.
pub(crate) fn working_set_bytes(
    pk: &ProvingKey,
    full_twiddle_bytes: u64,
    device_eval: Option<u64>,
) -> u64 {
    let host = path_bytes(pk, full_twiddle_bytes, None);
    match device_eval {
        None => host,
        Some(_) => host.max(path_bytes(pk, full_twiddle_bytes, device_eval)),
    }
}

/// The H stage's part of [`working_set_bytes`] (the larger of the two
/// paths'): the most a proof whose witness MSMs wait for a batch's witness
/// pass holds at once, its H MSM taking its scalars and chunks from the
/// stage's freed vectors.
pub(crate) fn h_stage_bytes(
    pk: &ProvingKey,
    full_twiddle_bytes: u64,
    device_eval: Option<u64>,
) -> u64 {
    let host = stage_bytes(pk, full_twiddle_bytes, None).0;
    match device_eval {
        None => host,
        Some(_) => host.max(stage_bytes(pk, full_twiddle_bytes, device_eval).0),
    }
}

/// [`working_set_bytes`] of one path: evaluations from the host (`None`)
/// or on the GPU (streamed chunk buffers of `Some` bytes).
fn path_bytes(pk: &ProvingKey, full_twiddle_bytes: u64, device_eval: Option<u64>) -> u64 {
    let (h_stage, msm_stage) = stage_bytes(pk, full_twiddle_bytes, device_eval);
    h_stage.saturating_add(msm_stage)
}

/// The part of [`working_set_bytes`] (path as [`path_bytes`]) for the
/// MSM stage: the largest MSM's scalars and full scratch and, with the
/// evaluation on the GPU, the assignment and a compacted query's indices.
/// What the MSM stage of one admitted proof may claim beside the H
/// stage's vectors.
pub(crate) fn msm_stage_bytes(pk: &ProvingKey, device_eval: Option<u64>) -> u64 {
    stage_bytes(pk, 0, device_eval).1
}

/// [`path_bytes`] as (H stage, MSM stage).
fn stage_bytes(pk: &ProvingKey, full_twiddle_bytes: u64, device_eval: Option<u64>) -> (u64, u64) {
    let n = (pk.h_query.len() as u64 + 1).next_power_of_two();
    let log_n = n.trailing_zeros();
    // Twiddle tables: the root, its inverse and two coset shifts, each a
    // table of 2^ceil(log_n/2) and one of 2^floor(log_n/2) powers (and
    // n^-1); counted as six for margin.
    let table = (1u64 << log_n.div_ceil(2)) + (1u64 << (log_n / 2)) + 1;
    let z = pk.a_query.len() as u64 * SCALAR_BYTES;
    // The H stage holds a, b and c at once (the quotient goes into a); with
    // the evaluation on the GPU, z, two of them and a chunk's buffers (a
    // proof alone on its device may take the third where the budget has it
    // free: not counted here, see `qap::device_quotient`).
    let vectors = match device_eval {
        None => 3 * n * SCALAR_BYTES,
        Some(chunks) => (2 * n * SCALAR_BYTES)
            .saturating_add(z)
            .saturating_add(chunks),
    };
    let h_stage = vectors + 6 * table * SCALAR_BYTES + full_twiddle_bytes;
    let vars = pk.a_query.len().saturating_sub(1) as u64;
    let g1_msm = |m: u64| (m * SCALAR_BYTES).saturating_add(msm_scratch_bytes::<g1::Config>(m));
    let g2_msm = |m: u64| (m * SCALAR_BYTES).saturating_add(msm_scratch_bytes::<g2::Config>(m));
    let msm_stage = [
        g1_msm(vars),
        g2_msm(vars),
        g1_msm(pk.h_query.len() as u64),
        g1_msm(pk.l_query.len() as u64),
    ]
    .into_iter()
    .max()
    .unwrap_or(0)
    .saturating_add(if device_eval.is_some() {
        z.saturating_add(4 * vars)
    } else {
        0
    });
    (h_stage, msm_stage)
}

/// Device scratch, in bytes, of an MSM of `n` points of curve `P` as the
/// prover's MSM engine runs it (default [`cuzk_msm::MsmConfig`]: every
/// window sorted at once, the most memory): cuzk-msm's own upper bound
/// beside its plan. A size the plan refuses counts as unbounded, so the
/// proof is refused admission rather than started.
fn msm_scratch_bytes<P: MsmCurve>(n: u64) -> u64 {
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    cuzk_msm::scratch_bytes_estimate::<P>(n, &MsmConfig::default()).unwrap_or(u64::MAX)
}
