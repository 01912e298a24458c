//! The CPU path: witness-shaped MSMs over blst's Pippenger (the fastest CPU
//! MSM for BLS12-381, all threads), and arkworks' `VariableBaseMSM` as a
//! second opinion.
//!
//! arkworks and blst keep BLS12-381 coordinates the same way (six 64-bit
//! limbs, Montgomery form with R = 2^384, identity (0, 0) in affine and
//! z = 0 in Jacobian form), so points pass between them limb for limb.

use crate::engine::check_lengths;
use crate::{MsmCurve, Result};
use ark_bls12_381::{g1, g2, Fq, Fq2};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::VariableBaseMSM;
use ark_ff::{BigInt, One, PrimeField, Zero};
use blst::{blst_fp, blst_fp2, blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use cuzk_field::Fr;
use rayon::prelude::*;

/// How many scalars of an MSM are 0, 1 and anything else: the shape that
/// decides a witness-shaped MSM's cost (Groth16 witnesses of hash circuits
/// are almost all bits: cuzk-prover's bundled SHA-256 chain is over 99.9%
/// zeros and ones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScalarShape {
    /// Scalars equal to 0.
    pub zeros: usize,
    /// Scalars equal to 1.
    pub ones: usize,
    /// Every other scalar.
    pub other: usize,
}

/// Scalars a classification chunk (one rayon task).
const CLASSIFY_CHUNK: usize = 1 << 14;

/// The indices of the scalars equal to 1 and of the other nonzero ones, in
/// order; zeros are left out.
fn classify(scalars: &[Fr]) -> (Vec<usize>, Vec<usize>) {
    classify_as(scalars, |i| i)
}

/// [`classify`] with each index i stored as `index(i)` (the GPU path keeps
/// 32-bit indices), on all threads.
pub(crate) fn classify_as<I: Send>(
    scalars: &[Fr],
    index: impl Fn(usize) -> I + Sync,
) -> (Vec<I>, Vec<I>) {
    let one = Fr::one();
    let parts: Vec<(Vec<I>, Vec<I>)> = scalars
        .par_chunks(CLASSIFY_CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let (mut ones, mut other) = (Vec::new(), Vec::new());
            for (k, s) in chunk.iter().enumerate() {
                let i = c * CLASSIFY_CHUNK + k;
                if *s == one {
                    ones.push(index(i));
                } else if !s.is_zero() {
                    other.push(index(i));
                }
            }
            (ones, other)
        })
        .collect();
    let mut ones = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
    let mut other = Vec::with_capacity(parts.iter().map(|p| p.1.len()).sum());
    for (o, r) in parts {
        ones.extend(o);
        other.extend(r);
    }
    (ones, other)
}

/// The [`ScalarShape`] of `scalars` (one parallel pass).
pub fn scalar_shape(scalars: &[Fr]) -> ScalarShape {
    let (ones, other) = classify(scalars);
    ScalarShape {
        zeros: scalars.len() - ones.len() - other.len(),
        ones: ones.len(),
        other: other.len(),
    }
}

/// `sum_i scalars[i] * bases[i]` on all CPU threads, witness-shaped: zero
/// scalars cost nothing, the bases of scalars equal to 1 are summed
/// directly (one mixed addition each instead of one a Pippenger window),
/// and only the other scalars go through blst's Pippenger (O(m / log m)
/// additions for m of them). Allocates the indices of the ones and the
/// others, a copy of the others' bases and scalars, and blst's copy of
/// those bases (m x 96 bytes for G1, m x 192 for G2). Empty slices give
/// the identity.
///
/// # Errors
/// [`crate::Error::InvalidArgument`] when the lengths differ.
pub fn msm<P: MsmCurve>(bases: &[Affine<P>], scalars: &[Fr]) -> Result<Projective<P>> {
    check_lengths(bases.len(), scalars.len())?;
    let (ones, other) = classify(scalars);
    let sum_of_ones = ones
        .par_chunks(4096)
        .map(|idx| {
            idx.iter()
                .fold(Projective::<P>::zero(), |acc, &i| acc + bases[i])
        })
        .reduce(Projective::<P>::zero, |a, b| a + b);
    let rest = if other.len() == scalars.len() {
        P::blst_msm(bases, scalars)
    } else {
        let (b, s): (Vec<Affine<P>>, Vec<Fr>) =
            other.par_iter().map(|&i| (bases[i], scalars[i])).unzip();
        P::blst_msm(&b, &s)
    };
    Ok(sum_of_ones + rest)
}

/// `sum_i scalars[i] * bases[i]` by blst's Pippenger over every scalar, as
/// dense (the baseline of [`msm`]'s witness-shaped split).
///
/// # Errors
/// [`crate::Error::InvalidArgument`] when the lengths differ.
pub fn msm_dense<P: MsmCurve>(bases: &[Affine<P>], scalars: &[Fr]) -> Result<Projective<P>> {
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
