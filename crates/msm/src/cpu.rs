//! The CPU path: blst's Pippenger (the fastest CPU MSM for BLS12-381, all
//! threads), and arkworks' `VariableBaseMSM` as a second opinion.
//!
//! arkworks and blst keep BLS12-381 coordinates the same way (six 64-bit
//! limbs, Montgomery form with R = 2^384, identity (0, 0) in affine and
//! z = 0 in Jacobian form), so points pass between them limb for limb.

use crate::engine::check_lengths;
use crate::{MsmCurve, Result};
use ark_bls12_381::{g1, g2, Fq, Fq2};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::VariableBaseMSM;
use ark_ff::{BigInt, PrimeField};
use blst::{blst_fp, blst_fp2, blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use cuzk_field::Fr;

/// `sum_i scalars[i] * bases[i]` by blst's Pippenger on all CPU threads.
/// O(n / log n) point additions; allocates a copy of the bases in blst's
/// types (n x 96 bytes for G1, n x 192 for G2) and 32 bytes a scalar.
///
/// # Errors
/// [`crate::Error::InvalidArgument`] when the lengths differ.
pub fn msm<P: MsmCurve>(bases: &[Affine<P>], scalars: &[Fr]) -> Result<Projective<P>> {
    check_lengths(bases.len(), scalars.len())?;
    Ok(P::blst_msm(bases, scalars))
}

/// `sum_i scalars[i] * bases[i]` by arkworks' `VariableBaseMSM` (the second
/// reference; slower than [`msm`]).
///
/// # Errors
/// [`crate::Error::InvalidArgument`] when the lengths differ.
pub fn msm_arkworks<P: MsmCurve>(bases: &[Affine<P>], scalars: &[Fr]) -> Result<Projective<P>> {
    check_lengths(bases.len(), scalars.len())?;
    Ok(<Projective<P> as VariableBaseMSM>::msm_unchecked(
        bases, scalars,
    ))
}

fn fp(x: &Fq) -> blst_fp {
    blst_fp { l: x.0 .0 }
}
fn fq(x: &blst_fp) -> Fq {
    Fq::new_unchecked(BigInt(x.l))
}
fn fp2(x: &Fq2) -> blst_fp2 {
    blst_fp2 {
        fp: [fp(&x.c0), fp(&x.c1)],
    }
}
fn fq2(x: &blst_fp2) -> Fq2 {
    Fq2::new(fq(&x.fp[0]), fq(&x.fp[1]))
}

/// Scalars as blst wants them: 32 little-endian bytes of the integer each.
fn scalar_bytes(scalars: &[Fr]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 * scalars.len());
    for s in scalars {
        for limb in s.into_bigint().0 {
            out.extend_from_slice(&limb.to_le_bytes());
        }
    }
    out
}

impl MsmCurve for g1::Config {
    const CURVE: u32 = crate::sys::CUZK_MSM_G1;
    const NAME: &'static str = "G1";
    fn blst_msm(bases: &[Affine<Self>], scalars: &[Fr]) -> Projective<Self> {
        if bases.is_empty() {
            return Projective::default();
        }
        let pts: Vec<blst_p1_affine> = bases
            .iter()
            .map(|p| blst_p1_affine {
                x: fp(&p.x),
                y: fp(&p.y),
            })
            .collect();
        let r: blst_p1 = pts.as_slice().mult(&scalar_bytes(scalars), 255);
        Projective::new_unchecked(fq(&r.x), fq(&r.y), fq(&r.z))
    }
}

impl MsmCurve for g2::Config {
    const CURVE: u32 = crate::sys::CUZK_MSM_G2;
    const NAME: &'static str = "G2";
    fn blst_msm(bases: &[Affine<Self>], scalars: &[Fr]) -> Projective<Self> {
        if bases.is_empty() {
            return Projective::default();
        }
        let pts: Vec<blst_p2_affine> = bases
            .iter()
            .map(|p| blst_p2_affine {
                x: fp2(&p.x),
                y: fp2(&p.y),
            })
            .collect();
        let r: blst_p2 = pts.as_slice().mult(&scalar_bytes(scalars), 255);
        Projective::new_unchecked(fq2(&r.x), fq2(&r.y), fq2(&r.z))
    }
}
