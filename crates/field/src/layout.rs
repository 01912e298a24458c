//! Element types and their memory layout, shared by arkworks and the GPU.
//!
//! | type | bytes | layout (all limbs little-endian, Montgomery form) |
//! |---|---|---|
//! | [`Fr`] | 32 | 4 x u64 (= 8 x u32 on the GPU), R = 2^256 mod r |
//! | [`Fp`] | 48 | 6 x u64 (= 12 x u32), R = 2^384 mod p |
//! | [`Fp2`] | 96 | `c0 + c1*u`, u^2 = -1 |
//! | [`G1Affine`] / [`G2Affine`] | 96 / 192 | `{x, y}`, identity = (0, 0) |
//! | [`G1Projective`] / [`G2Projective`] | 144 / 288 | Jacobian `{x, y, z}`: (x/z^2, y/z^3), identity z = 0 |
//! | [`G1Xyzz`] / [`G2Xyzz`] | 192 / 384 | `{x, y, zz, zzz}`: (x/zz, y/zzz), zz^3 = zzz^2, identity zz = 0 |
//!
//! The constants are BLS12-381's (IETF draft-irtf-cfrg-pairing-friendly-curves,
//! section 4.2.1): r = 0x73eda753...00000001 (255 bits), p = 0x1a0111ea...aaab
//! (381 bits), G1: y^2 = x^3 + 4 over Fp, G2: y^2 = x^3 + 4(u + 1) over Fp2.

use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::AffineRepr;
use ark_ff::{BigInt, Field, One, Zero};
use std::mem::{align_of, offset_of, size_of};

pub use ark_bls12_381::{Fq as Fp, Fq2 as Fp2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};

/// Types whose memory layout the CUDA device code reads and writes as is.
///
/// # Safety
/// Implementors must be plain data with a layout fixed by this crate's
/// compile-time assertions (size, alignment, field offsets), with no
/// padding bytes (so every byte of a value is initialized and a slice may
/// be viewed as bytes), valid for every bit pattern the device code writes
/// (field elements in Montgomery form below the modulus, points as
/// documented in [`crate::layout`]).
pub unsafe trait DeviceRepr: Copy + Send + Sync + 'static {}

// SAFETY: (this and every impl below) the layouts are asserted at compile time below;
// the types are `Copy` plain data of field elements (or u64 limbs).
unsafe impl DeviceRepr for Fr {}
// SAFETY: see above.
unsafe impl DeviceRepr for Fp {}
// SAFETY: see above.
unsafe impl DeviceRepr for Fp2 {}
// SAFETY: see above.
unsafe impl DeviceRepr for Affine<ark_bls12_381::g1::Config> {}
// SAFETY: see above.
unsafe impl DeviceRepr for Affine<ark_bls12_381::g2::Config> {}
// SAFETY: see above.
unsafe impl DeviceRepr for Projective<ark_bls12_381::g1::Config> {}
// SAFETY: see above.
unsafe impl DeviceRepr for Projective<ark_bls12_381::g2::Config> {}
// SAFETY: see above.
unsafe impl DeviceRepr for G1Xyzz {}
// SAFETY: see above.
unsafe impl DeviceRepr for G2Xyzz {}
// SAFETY: see above; plain u64 limbs (exponents of `Op::Pow`).
unsafe impl DeviceRepr for BigInt<4> {}
// SAFETY: see above.
unsafe impl DeviceRepr for BigInt<6> {}
// SAFETY: plain integers (raw bytes and words).
unsafe impl DeviceRepr for u8 {}
// SAFETY: as above.
unsafe impl DeviceRepr for u32 {}
// SAFETY: as above.
unsafe impl DeviceRepr for u64 {}

/// A short-Weierstrass point in XYZZ coordinates (Cohen, Miyaji, Ono 1998;
/// the Explicit-Formulas Database, `g1p/auto-shortw-xyzz.html`): the affine
/// point is (x/zz, y/zzz) with zz^3 = zzz^2; zz = 0 is the identity. Adding
/// into XYZZ costs fewer multiplies than Jacobian, which is why MSM buckets
/// accumulate in it. `#[repr(C)]`, four coordinates of the curve's base field.
#[repr(C)]
pub struct Xyzz<P: SWCurveConfig> {
    /// X coordinate.
    pub x: P::BaseField,
    /// Y coordinate.
    pub y: P::BaseField,
    /// ZZ = Z^2 of the matching Jacobian point.
    pub zz: P::BaseField,
    /// ZZZ = Z^3 of the matching Jacobian point.
    pub zzz: P::BaseField,
}

/// G1 in XYZZ coordinates (192 bytes).
pub type G1Xyzz = Xyzz<ark_bls12_381::g1::Config>;
/// G2 in XYZZ coordinates (384 bytes).
pub type G2Xyzz = Xyzz<ark_bls12_381::g2::Config>;

impl<P: SWCurveConfig> Xyzz<P> {
    /// The identity: (1, 1, 0, 0).
    pub fn identity() -> Self {
        let (one, zero) = (P::BaseField::one(), P::BaseField::zero());
        Xyzz {
            x: one,
            y: one,
            zz: zero,
            zzz: zero,
        }
    }

    /// True for the identity (zz = 0).
    pub fn is_identity(&self) -> bool {
        self.zz.is_zero()
    }

    /// The same point with (zz, zzz) = (l^2, l^3) for a nonzero `l`; all
    /// representatives of a point are equal as group elements. For the
    /// identity (or `l` = 0) returns the identity.
    pub fn from_affine_scaled(p: &Affine<P>, l: P::BaseField) -> Self {
        if p.is_zero() || l.is_zero() {
            return Self::identity();
        }
        let zz = l.square();
        let zzz = zz * l;
        Xyzz {
            x: p.x * zz,
            y: p.y * zzz,
            zz,
            zzz,
        }
    }

    /// The affine point (x/zz, y/zzz); one field inversion each.
    pub fn to_affine(&self) -> Affine<P> {
        if self.is_identity() {
            return Affine::identity();
        }
        let (Some(izz), Some(izzz)) = (self.zz.inverse(), self.zzz.inverse()) else {
            return Affine::identity();
        };
        Affine::new_unchecked(self.x * izz, self.y * izzz)
    }

    /// True when zz^3 = zzz^2 (a valid XYZZ representative) or the identity.
    pub fn is_consistent(&self) -> bool {
        self.is_identity() || self.zz.square() * self.zz == self.zzz.square()
    }
}

// Manual impls: derives would demand `P: Copy` of the curve marker type.
impl<P: SWCurveConfig> Clone for Xyzz<P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: SWCurveConfig> Copy for Xyzz<P> {}
impl<P: SWCurveConfig> std::fmt::Debug for Xyzz<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Xyzz")
            .field("x", &self.x)
            .field("y", &self.y)
            .field("zz", &self.zz)
            .field("zzz", &self.zzz)
            .finish()
    }
}

impl<P: SWCurveConfig> Default for Xyzz<P> {
    /// The identity.
    fn default() -> Self {
        Self::identity()
    }
}

impl<P: SWCurveConfig> From<Affine<P>> for Xyzz<P> {
    fn from(p: Affine<P>) -> Self {
        Self::from_affine_scaled(&p, P::BaseField::one())
    }
}

impl<P: SWCurveConfig> PartialEq for Xyzz<P> {
    /// Equality as group elements (cross-multiplied, no inversion).
    fn eq(&self, other: &Self) -> bool {
        match (self.is_identity(), other.is_identity()) {
            (true, true) => true,
            (false, false) => {
                self.x * other.zz == other.x * self.zz && self.y * other.zzz == other.y * self.zzz
            }
            _ => false,
        }
    }
}
impl<P: SWCurveConfig> Eq for Xyzz<P> {}

// Compile-time layout checks: the CUDA headers rely on every one of these.
const _: () = {
    assert!(size_of::<Fr>() == 32 && align_of::<Fr>() == 8);
    assert!(size_of::<Fp>() == 48 && align_of::<Fp>() == 8);
    assert!(offset_of!(Fr, 0) == 0 && offset_of!(Fp, 0) == 0);
    assert!(size_of::<Fp2>() == 96);
    assert!(offset_of!(Fp2, c0) == 0 && offset_of!(Fp2, c1) == 48);
    assert!(size_of::<G1Affine>() == 96);
    assert!(offset_of!(G1Affine, x) == 0 && offset_of!(G1Affine, y) == 48);
    assert!(size_of::<G2Affine>() == 192);
    assert!(offset_of!(G2Affine, x) == 0 && offset_of!(G2Affine, y) == 96);
    assert!(size_of::<G1Projective>() == 144);
    assert!(offset_of!(G1Projective, x) == 0);
    assert!(offset_of!(G1Projective, y) == 48 && offset_of!(G1Projective, z) == 96);
    assert!(size_of::<G2Projective>() == 288);
    assert!(offset_of!(G2Projective, x) == 0);
    assert!(offset_of!(G2Projective, y) == 96 && offset_of!(G2Projective, z) == 192);
    assert!(size_of::<G1Xyzz>() == 192 && size_of::<G2Xyzz>() == 384);
    assert!(size_of::<BigInt<4>>() == 32 && size_of::<BigInt<6>>() == 48);
};

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::CurveGroup;
    use ark_ff::{PrimeField, UniformRand};
    use rand::SeedableRng;

    /// The raw bytes of a value, as the device reads them.
    fn bytes_of<T: DeviceRepr>(v: &T) -> Vec<u8> {
        // SAFETY: DeviceRepr types are plain data of size_of::<T>() bytes.
        unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
    }

    fn from_bytes<T: DeviceRepr>(b: &[u8]) -> T {
        assert_eq!(b.len(), size_of::<T>());
        // SAFETY: exactly size_of::<T>() bytes of a value of T.
        unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<T>()) }
    }

    #[test]
    fn montgomery_layout_is_what_the_device_expects() {
        // One in Montgomery form is R mod r = 2^256 mod r: its raw limbs are
        // not 1, and reading them back gives one again.
        let one = Fr::from(1u64);
        let raw = bytes_of(&one);
        assert_ne!(raw[0..8], 1u64.to_le_bytes());
        assert_eq!(from_bytes::<Fr>(&raw), one);
        // Canonical integer 5 through into_bigint, and R * 5 through raw limbs.
        assert_eq!(Fr::from(5u64).into_bigint().0[0], 5);
        // The affine identity is all-zero bytes; zero field elements too.
        assert!(bytes_of(&G1Affine::identity()).iter().all(|&b| b == 0));
        assert!(bytes_of(&G2Affine::identity()).iter().all(|&b| b == 0));
        assert!(bytes_of(&Fp::from(0u64)).iter().all(|&b| b == 0));
    }

    #[test]
    fn every_type_round_trips_through_its_bytes() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(rand::random());
        for _ in 0..32 {
            let fr = Fr::rand(&mut rng);
            assert_eq!(from_bytes::<Fr>(&bytes_of(&fr)), fr);
            let fp2 = Fp2::rand(&mut rng);
            assert_eq!(from_bytes::<Fp2>(&bytes_of(&fp2)), fp2);
            let p = G1Projective::rand(&mut rng);
            assert_eq!(from_bytes::<G1Projective>(&bytes_of(&p)), p);
            let a = p.into_affine();
            assert_eq!(from_bytes::<G1Affine>(&bytes_of(&a)), a);
            let q = G2Projective::rand(&mut rng).into_affine();
            assert_eq!(from_bytes::<G2Affine>(&bytes_of(&q)), q);
            let x = G1Xyzz::from_affine_scaled(&a, Fp::rand(&mut rng));
            assert!(x.is_consistent());
            assert_eq!(x.to_affine(), a);
            assert_eq!(from_bytes::<G1Xyzz>(&bytes_of(&x)), x);
            let y = G2Xyzz::from(q);
            assert_eq!(y.to_affine(), q);
        }
        assert!(G1Xyzz::identity().to_affine().is_zero());
        assert_eq!(G1Xyzz::from(G1Affine::identity()), G1Xyzz::identity());
    }
}
