//! cuzk-msm: multi-scalar multiplication `sum_i s_i P_i` over BLS12-381 G1
//! and G2, on the GPU (Pippenger's bucket method, see [`GpuMsm`]) or on the
//! CPU (blst's Pippenger, see [`cpu`]).
//!
//! Points are arkworks' affine points and scalars arkworks' [`Fr`], used in
//! place (no conversion: the GPU reads their Montgomery-form limbs). The
//! result is arkworks' projective point.
//!
//! ```
//! use ark_ec::{CurveGroup, PrimeGroup};
//! use cuzk_msm::{msm, Fr, G1Affine, G1Projective};
//! let bases: Vec<G1Affine> = (1..=4u64)
//!     .map(|k| (G1Projective::generator() * Fr::from(k)).into_affine())
//!     .collect();
//! let scalars: Vec<Fr> = (1..=4u64).map(Fr::from).collect();
//! let (sum, _backend) = msm(&bases, &scalars)?; // the GPU when there is one, else blst
//! assert_eq!(sum, G1Projective::generator() * Fr::from(30u64));
//! # Ok::<(), cuzk_msm::Error>(())
//! ```
//!
//! Entry points: [`msm`] (GPU when there is one, else CPU; checked),
//! [`GpuMsm`] (a GPU engine tuned by an [`MsmConfig`]: one-off MSMs,
//! [`FixedBases`] uploaded once for many MSMs and batches, as Groth16 and
//! KZG provers use one SRS for many proofs, and [`GpuMsm::msm_streamed`]
//! for bases larger than the device budget, streamed from host memory), [`cpu::msm`] (witness-shaped:
//! zeros skipped, ones summed, the rest through blst), [`cpu::msm_dense`] and
//! [`cpu::msm_arkworks`]. [`scratch_bytes_estimate`] tells, without a GPU,
//! how much device scratch an MSM takes.

mod config;
pub mod cpu;
mod engine;
mod fixed;
mod plan;
mod streamed;
#[allow(unreachable_pub)] // generated bindings, crate-private
mod sys;

use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
pub use config::{precomputed_window_bits, window_bits, MsmConfig, WitnessShaped, DETECT_SAMPLE};
pub use cuzk_field::{Backend, Error, Fr, G1Affine, G1Projective, G2Affine, G2Projective, Result};
pub use engine::GpuMsm;
pub use fixed::FixedBases;
pub use plan::{scratch_bytes_estimate, MIN_CHUNK_POINTS};

mod sealed {
    /// Seals [`super::MsmCurve`]: only G1 and G2 of BLS12-381 implement it.
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

/// `sum_i scalars[i] * bases[i]` on the GPU when one is usable (device 0),
/// else on the CPU (blst); returns the sum and where it ran (the identity
/// for empty slices). For one-off calls: a [`GpuMsm`] kept across calls
/// keeps its stream and memory pool, and [`FixedBases`] keeps the bases on
/// the device. The bases are taken as given, as arkworks' `msm` takes
/// them: points off the curve or outside the prime-order subgroup (check
/// them once, when the SRS is read) give a meaningless sum, not an error.
///
/// # Errors
/// [`Error::InvalidArgument`] when the lengths differ; GPU errors
/// ([`Error::OutOfMemory`], [`Error::Cuda`]) from a GPU that exists.
pub fn msm<P: MsmCurve>(bases: &[Affine<P>], scalars: &[Fr]) -> Result<(Projective<P>, Backend)> {
    engine::check_lengths(bases.len(), scalars.len())?;
    match GpuMsm::new(0) {
        Ok(g) => g
            .msm(bases, scalars)
            .map(|r| (r, Backend::Gpu { device: 0 })),
        Err(e) if e.is_no_gpu() => cpu::msm(bases, scalars).map(|r| (r, Backend::Cpu)),
        Err(e) => Err(e),
    }
}
