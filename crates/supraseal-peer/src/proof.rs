//! Proofs in supraseal-c2's layout (sppark's host types) read as arkworks
//! values.
//!
//! sppark's host layout is arkworks' in-memory layout too: little-endian
//! 64-bit limbs in Montgomery form (R = 2^384 for Fp), an Fp2 as (c0, c1),
//! an affine point as (x, y), with (0, 0) for the identity.

use ark_bls12_381::{Bls12_381, Fq, Fq2, G1Affine, G2Affine};
use ark_ff::BigInt;
use ark_groth16::Proof;

/// A proof as supraseal-c2 writes it (`groth16_proof`): affine A (G1),
/// B (G2), C (G1), Montgomery limbs.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct RawProof {
    a: [[u64; 6]; 2],
    b: [[[u64; 6]; 2]; 2],
    c: [[u64; 6]; 2],
}

fn fq(l: [u64; 6]) -> Fq {
    Fq::new_unchecked(BigInt(l))
}

fn g1(p: [[u64; 6]; 2]) -> G1Affine {
    if p == [[0; 6]; 2] {
        return G1Affine::identity();
    }
    G1Affine::new_unchecked(fq(p[0]), fq(p[1]))
}

fn g2(p: [[[u64; 6]; 2]; 2]) -> G2Affine {
    if p == [[[0; 6]; 2]; 2] {
        return G2Affine::identity();
    }
    let f = |v: [[u64; 6]; 2]| Fq2::new(fq(v[0]), fq(v[1]));
    G2Affine::new_unchecked(f(p[0]), f(p[1]))
}

impl RawProof {
    pub(crate) fn to_ark(self) -> Proof<Bls12_381> {
        Proof {
            a: g1(self.a),
            b: g2(self.b),
            c: g1(self.c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_bls12_381::Fr;
    use ark_ec::{AffineRepr, CurveGroup};
    use ark_ff::UniformRand;
    use rand::SeedableRng;

    /// The raw layout read back is the point: arkworks' own limbs in,
    /// the same affine point out, the identity as (0, 0).
    #[test]
    fn raw_proofs_read_as_arkworks_points() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x5e1d);
        let a = (G1Affine::generator() * Fr::rand(&mut rng)).into_affine();
        let b = (G2Affine::generator() * Fr::rand(&mut rng)).into_affine();
        let raw = RawProof {
            a: [a.x.0 .0, a.y.0 .0],
            b: [[b.x.c0.0 .0, b.x.c1.0 .0], [b.y.c0.0 .0, b.y.c1.0 .0]],
            c: [[0; 6]; 2],
        };
        let p = raw.to_ark();
        assert_eq!(p.a, a);
        assert_eq!(p.b, b);
        assert!(p.c.is_zero());
        assert_eq!(std::mem::size_of::<RawProof>(), 96 + 192 + 96);
    }
}
