//! cuzk-msm: multi-scalar multiplication `sum_i s_i P_i` over BLS12-381 G1
//! and G2, on the GPU (Pippenger's bucket method, see [`GpuMsm`]) or on the
//! CPU (blst's Pippenger, see [`cpu`]).
//!
//! Points are arkworks' affine points and scalars arkworks' [`Fr`], used in
//! place (no conversion: the GPU reads their Montgomery-form limbs). The
//! result is arkworks' projective point.
//!
//! ```no_run
//! use ark_ec::{CurveGroup, PrimeGroup};
//! use cuzk_msm::{msm, Fr, G1Affine, G1Projective};
//! let bases: Vec<G1Affine> = (1..=4u64)
//!     .map(|k| (G1Projective::generator() * Fr::from(k)).into_affine())
//!     .collect();
//! let scalars: Vec<Fr> = (1..=4u64).map(Fr::from).collect();
//! let (sum, _backend) = msm(&bases, &scalars)?;
//! assert_eq!(sum, G1Projective::generator() * Fr::from(30u64));
//! # Ok::<(), cuzk_msm::Error>(())
//! ```
//!
//! Entry points: [`msm`] (GPU when there is one, else CPU; checked),
//! [`GpuMsm`] (a GPU engine: one-off MSMs, batches, and [`FixedBases`]
//! uploaded once for many MSMs, as Groth16 and KZG provers use one SRS for
//! many proofs), [`cpu::msm`] (blst) and [`cpu::msm_arkworks`].

pub mod cpu;
mod gpu;
mod sys;

use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
pub use cuzk_field::{Backend, Error, Fr, G1Affine, G1Projective, G2Affine, G2Projective, Result};
pub use gpu::{FixedBases, GpuMsm, SPLIT_MIN_POINTS};

mod sealed {
    pub trait Sealed {}
    impl Sealed for ark_bls12_381::g1::Config {}
    impl Sealed for ark_bls12_381::g2::Config {}
}

/// The curves cuzk's MSM runs on: BLS12-381 G1 (`ark_bls12_381::g1::Config`)
/// and G2 (`ark_bls12_381::g2::Config`). Sealed.
pub trait MsmCurve: SWCurveConfig<ScalarField = Fr> + sealed::Sealed {
    /// `CUZK_MSM_G1` or `CUZK_MSM_G2` of `csrc/include/cuzk/msm.h`.
    #[doc(hidden)]
    const CURVE: u32;
    /// "G1" or "G2".
    const NAME: &'static str;
    /// blst's Pippenger (all CPU threads) on arkworks points.
    #[doc(hidden)]
    fn blst_msm(bases: &[Affine<Self>], scalars: &[Fr]) -> Projective<Self>;
}

/// Checks an MSM's shapes: as many scalars as bases.
///
/// # Errors
/// [`Error::InvalidArgument`] when the lengths differ.
pub fn check_lengths(bases: usize, scalars: usize) -> Result<()> {
    if bases != scalars {
        return Err(Error::InvalidArgument(format!(
            "MSM of {bases} bases and {scalars} scalars: give one scalar per base \
             (for fewer scalars, pass a prefix of the bases)"
        )));
    }
    Ok(())
}

/// `sum_i scalars[i] * bases[i]` on the GPU when one is usable (device 0),
/// else on the CPU (blst); returns the sum and where it ran. For one-off
/// calls: a [`GpuMsm`] kept across calls keeps its stream and memory pool,
/// and [`FixedBases`] keeps the bases on the device.
///
/// # Errors
/// [`Error::InvalidArgument`] when the lengths differ; GPU errors
/// ([`Error::OutOfMemory`], [`Error::Cuda`]) from a GPU that exists.
pub fn msm<P: MsmCurve>(bases: &[Affine<P>], scalars: &[Fr]) -> Result<(Projective<P>, Backend)> {
    check_lengths(bases.len(), scalars.len())?;
    match GpuMsm::new(0) {
        Ok(g) => g.msm(bases, scalars).map(|r| (r, Backend::Gpu { device: 0 })),
        Err(e) if e.is_no_gpu() => cpu::msm(bases, scalars).map(|r| (r, Backend::Cpu)),
        Err(e) => Err(e),
    }
}

/// The window size (bits) the GPU uses for `n` points: about log2(n) - 4,
/// so that buckets hold some 16 to 32 points each, within 4..=20
/// (`CUZK_MSM_WINDOW` overrides it, 2..=24).
pub fn window_bits(n: usize) -> u32 {
    if let Some(c) = std::env::var("CUZK_MSM_WINDOW")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|c| (2..=24).contains(c))
    {
        return c;
    }
    let lg = usize::BITS - n.leading_zeros(); // ceil-ish log2(n + 1)
    lg.saturating_sub(4).clamp(4, 20)
}

/// The window size (bits) for bases precomputed for `n` points (see
/// [`GpuMsm::upload_bases_precomputed`]): the c in 8..=26 that minimizes
/// n W(c) + 4.5 x 2^(c-1), the point additions of the bucket sums plus the
/// bucket reduction's cost (about 4.5 additions' worth a bucket, measured on
/// the H200), W(c) = ceil(256 / c). E.g. 16 for 2^16 points, 20 for 2^22,
/// 22 for 2^24, 24 for 2^26.
pub fn precomputed_window_bits(n: usize) -> u32 {
    let cost = |c: u32| n as f64 * f64::from(256u32.div_ceil(c)) + 4.5 * f64::from(1u32 << (c - 1));
    (8..=26u32)
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
        .expect("a non-empty range")
}
