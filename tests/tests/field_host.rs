//! The host build of the device formulas against arkworks, for every field
//! and point operation: proptest draws fresh seeds, each case checks the
//! edge values (every pair, for binary operations) and a batch of random
//! elements. Runs everywhere, GPU or not.

use cuzk_field::{ops, Backend, Fr, Kind, Op};
use cuzk_tests::cross::{cross_check, ALL_OPS};
use proptest::prelude::*;
use rand::SeedableRng;

/// Random elements per proptest case (on top of the edge values).
const BATCH: usize = 64;

fn check(kind: Kind, op: Op, seed: u64) -> Result<(), TestCaseError> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    cross_check(Backend::Cpu, kind, op, &mut rng, BATCH).map_err(TestCaseError::fail)?;
    Ok(())
}

macro_rules! host_tests {
    ($($name:ident: $kind:ident $op:ident,)*) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(16))]
            $(
                #[test]
                fn $name(seed in any::<u64>()) {
                    check(Kind::$kind, Op::$op, seed)?;
                }
            )*
        }
    };
}

host_tests! {
    fr_add: Fr Add, fr_sub: Fr Sub, fr_neg: Fr Neg, fr_mul: Fr Mul, fr_sqr: Fr Sqr, fr_inv: Fr Inv, fr_pow: Fr Pow,
    fp_add: Fp Add, fp_sub: Fp Sub, fp_neg: Fp Neg, fp_mul: Fp Mul, fp_sqr: Fp Sqr, fp_inv: Fp Inv, fp_pow: Fp Pow,
    fp2_add: Fp2 Add, fp2_sub: Fp2 Sub, fp2_neg: Fp2 Neg, fp2_mul: Fp2 Mul, fp2_sqr: Fp2 Sqr, fp2_inv: Fp2 Inv,
    g1_jac_dbl: G1 JacDbl, g1_jac_add: G1 JacAdd, g1_jac_madd: G1 JacMadd,
    g1_xyzz_dbl: G1 XyzzDbl, g1_xyzz_add: G1 XyzzAdd, g1_xyzz_madd: G1 XyzzMadd,
    g2_jac_dbl: G2 JacDbl, g2_jac_add: G2 JacAdd, g2_jac_madd: G2 JacMadd,
    g2_xyzz_dbl: G2 XyzzDbl, g2_xyzz_add: G2 XyzzAdd, g2_xyzz_madd: G2 XyzzMadd,
}

#[test]
fn every_op_has_a_host_test() {
    // The macro list above and ALL_OPS must not drift apart.
    assert_eq!(ALL_OPS.len(), 32);
}

#[test]
fn mismatched_lengths_are_errors() {
    let a = [Fr::from(1u64); 3];
    let b = [Fr::from(2u64); 2];
    let mut out = [Fr::from(0u64); 3];
    let e = ops::apply(Backend::Cpu, Kind::Fr, Op::Mul, &a, &b, &mut out).unwrap_err();
    assert!(
        e.to_string().contains("b has 2 elements but a has 3"),
        "{e}"
    );
    let mut short = [Fr::from(0u64); 2];
    let e = ops::apply(Backend::Cpu, Kind::Fr, Op::Add, &a, &a, &mut short).unwrap_err();
    assert!(e.to_string().contains("out has 2 elements"), "{e}");
}

#[test]
fn wrong_element_types_are_errors() {
    let a = [cuzk_field::Fp::from(1u64); 2];
    let mut out = [Fr::from(0u64); 2];
    let e = ops::apply(Backend::Cpu, Kind::Fr, Op::Add, &a, &a, &mut out).unwrap_err();
    assert!(e.to_string().contains("48 bytes"), "{e}");
    let e = ops::layout(Kind::Fp2, Op::Pow).unwrap_err();
    assert!(matches!(e, cuzk_field::Error::InvalidArgument(_)), "{e}");
    let e = ops::layout(Kind::G1, Op::Mul).unwrap_err();
    assert!(matches!(e, cuzk_field::Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("Mul on G1 is not supported"), "{e}");
}

#[test]
fn unary_ops_refuse_a_b_operand() {
    let a = [Fr::from(3u64); 2];
    let mut out = [Fr::from(0u64); 2];
    let e = ops::apply(Backend::Cpu, Kind::Fr, Op::Neg, &a, &a, &mut out).unwrap_err();
    assert!(e.to_string().contains("reads no b operand"), "{e}");
}

#[test]
fn non_canonical_bytes_are_errors() {
    // r itself (the modulus) is not a canonical encoding.
    let mut a = Vec::new();
    for x in [1u64, 2] {
        a.extend_from_slice(
            &ark_ff::BigInt::<4>::from(x)
                .0
                .map(u64::to_le_bytes)
                .concat(),
        );
    }
    let r = <Fr as ark_ff::PrimeField>::MODULUS;
    a.extend(r.0.iter().flat_map(|l| l.to_le_bytes()));
    let mut out = vec![0u8; a.len()];
    let e = ops::apply_bytes(Backend::Cpu, Kind::Fr, Op::Add, &a, &a, &mut out).unwrap_err();
    assert!(e.to_string().contains("field element 2"), "{e}");
    let e = ops::apply_bytes(
        Backend::Cpu,
        Kind::Fr,
        Op::Add,
        &a[..40],
        &a[..40],
        &mut out[..40],
    )
    .unwrap_err();
    assert!(e.to_string().contains("not a whole number"), "{e}");
    // Canonical bytes go through and give the right sum: Montgomery form is
    // linear, so raw limbs 1 + 1 = raw limbs 2, and 2 + 2 = 4.
    ops::apply_bytes(
        Backend::Cpu,
        Kind::Fr,
        Op::Add,
        &a[..64],
        &a[..64],
        &mut out[..64],
    )
    .unwrap();
    assert_eq!(out[0], 2);
    assert_eq!(out[32], 4);
    assert!(out[1..32].iter().chain(&out[33..64]).all(|&b| b == 0));
}

#[test]
fn empty_input_is_a_no_op() {
    let mut out: [Fr; 0] = [];
    ops::apply(
        Backend::Cpu,
        Kind::Fr,
        Op::Mul,
        &[] as &[Fr],
        &[] as &[Fr],
        &mut out,
    )
    .unwrap();
}

#[test]
fn gpu_entry_points_without_gpu_say_why() {
    // On a machine with a GPU this is a real call; without one it must be an
    // error that names the cause, never a panic.
    let a = [Fr::from(3u64); 4];
    let mut out = [Fr::from(0u64); 4];
    match ops::apply(
        Backend::Gpu { device: 0 },
        Kind::Fr,
        Op::Sqr,
        &a,
        &[] as &[Fr],
        &mut out,
    ) {
        Ok(()) => assert_eq!(out, [Fr::from(9u64); 4]),
        Err(e) => {
            assert!(e.is_no_gpu(), "unexpected error kind: {e}");
            assert!(!e.to_string().is_empty());
        }
    }
}
