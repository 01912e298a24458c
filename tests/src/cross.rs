//! Cross-check of the field layer's element-wise operations against
//! arkworks: inputs are the edge values (every pair of them, for binary
//! operations) followed by fresh random elements; every output element is
//! compared with arkworks' result.

use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::{AffineRepr, CurveGroup, PrimeGroup};
use ark_ff::{AdditiveGroup, BigInt, Field, MontBackend, MontConfig, PrimeField, UniformRand};
use cuzk_field::{ops, Backend, DeviceRepr, Fp, Fp2, Fr, Kind, Op, Xyzz};
use rand::Rng;
use std::fmt::Debug;

/// Every (kind, op) pair the field layer supports.
pub const ALL_OPS: &[(Kind, Op)] = &[
    (Kind::Fr, Op::Add),
    (Kind::Fr, Op::Sub),
    (Kind::Fr, Op::Neg),
    (Kind::Fr, Op::Mul),
    (Kind::Fr, Op::Sqr),
    (Kind::Fr, Op::Inv),
    (Kind::Fr, Op::Pow),
    (Kind::Fp, Op::Add),
    (Kind::Fp, Op::Sub),
    (Kind::Fp, Op::Neg),
    (Kind::Fp, Op::Mul),
    (Kind::Fp, Op::Sqr),
    (Kind::Fp, Op::Inv),
    (Kind::Fp, Op::Pow),
    (Kind::Fp2, Op::Add),
    (Kind::Fp2, Op::Sub),
    (Kind::Fp2, Op::Neg),
    (Kind::Fp2, Op::Mul),
    (Kind::Fp2, Op::Sqr),
    (Kind::Fp2, Op::Inv),
    (Kind::G1, Op::JacDbl),
    (Kind::G1, Op::JacAdd),
    (Kind::G1, Op::JacMadd),
    (Kind::G1, Op::XyzzDbl),
    (Kind::G1, Op::XyzzAdd),
    (Kind::G1, Op::XyzzMadd),
    (Kind::G2, Op::JacDbl),
    (Kind::G2, Op::JacAdd),
    (Kind::G2, Op::JacMadd),
    (Kind::G2, Op::XyzzDbl),
    (Kind::G2, Op::XyzzAdd),
    (Kind::G2, Op::XyzzMadd),
];

/// Runs (kind, op) on `backend` over the edge cases plus `n_random` fresh
/// random cases, compares each output with arkworks, and returns the number
/// of cases checked, or a description of the first mismatch.
pub fn cross_check<R: Rng>(
    backend: Backend,
    kind: Kind,
    op: Op,
    rng: &mut R,
    n_random: usize,
) -> Result<usize, String> {
    match kind {
        Kind::Fr => field_case::<Fr, _>(
            backend,
            kind,
            op,
            rng,
            n_random,
            &prime_edges::<ark_bls12_381::FrConfig, 4>(),
        ),
        Kind::Fp => field_case::<Fp, _>(
            backend,
            kind,
            op,
            rng,
            n_random,
            &prime_edges::<ark_bls12_381::FqConfig, 6>(),
        ),
        Kind::Fp2 => field_case::<Fp2, _>(backend, kind, op, rng, n_random, &fp2_edges()),
        Kind::G1 => point_case::<ark_bls12_381::g1::Config, _>(backend, kind, op, rng, n_random),
        Kind::G2 => point_case::<ark_bls12_381::g2::Config, _>(backend, kind, op, rng, n_random),
    }
}

/// Edge values of a prime field: 0, 1, 2, -1 (m - 1), -2, (m - 1)/2, and
/// the raw Montgomery encodings 1 and m - 1 (the smallest and largest
/// canonical limb patterns).
pub fn prime_edges<T: MontConfig<N>, const N: usize>() -> Vec<ark_ff::Fp<MontBackend<T, N>, N>> {
    type F<T, const N: usize> = ark_ff::Fp<MontBackend<T, N>, N>;
    let mut m1 = T::MODULUS;
    m1.0[0] -= 1; // odd modulus: no borrow
    let mut raw_one = BigInt::<N>::zero_();
    raw_one.0[0] = 1;
    vec![
        F::<T, N>::ZERO,
        F::ONE,
        F::from(2u64),
        -F::<T, N>::ONE,
        -F::<T, N>::from(2u64),
        F::from(F::<T, N>::MODULUS_MINUS_ONE_DIV_TWO),
        F::new_unchecked(raw_one),
        F::new_unchecked(m1),
    ]
}

trait ZeroBig {
    fn zero_() -> Self;
}
impl<const N: usize> ZeroBig for BigInt<N> {
    fn zero_() -> Self {
        BigInt([0u64; N])
    }
}

/// Edge values of Fp2: pairs of Fp edges, u, and 1 + u (the G2 twist's
/// nonresidue).
pub fn fp2_edges() -> Vec<Fp2> {
    let e = prime_edges::<ark_bls12_381::FqConfig, 6>();
    let mut v = vec![Fp2::new(Fp::ZERO, Fp::ONE), Fp2::new(Fp::ONE, Fp::ONE)];
    for (i, &c0) in e.iter().enumerate() {
        v.push(Fp2::new(c0, e[(i + 3) % e.len()]));
    }
    v.push(Fp2::new(e[7], e[7]));
    v
}

fn run<A: DeviceRepr, B: DeviceRepr, O: DeviceRepr + Default + Clone>(
    backend: Backend,
    kind: Kind,
    op: Op,
    a: &[A],
    b: &[B],
) -> Result<Vec<O>, String> {
    let mut out = vec![O::default(); a.len()];
    ops::apply(backend, kind, op, a, b, &mut out)
        .map_err(|e| format!("{kind:?} {op:?} on {backend:?}: {e}"))?;
    Ok(out)
}

fn compare<T: Debug, O: Debug, E: Debug>(
    kind: Kind,
    op: Op,
    inputs: impl Fn(usize) -> T,
    out: &[O],
    expected: impl Fn(usize) -> E,
    eq: impl Fn(&O, &E) -> bool,
) -> Result<usize, String> {
    for (i, o) in out.iter().enumerate() {
        let e = expected(i);
        if !eq(o, &e) {
            return Err(format!(
                "{kind:?} {op:?}: case {i} of {} differs\n  input:    {:?}\n  got:      {o:?}\n  expected: {e:?}",
                out.len(),
                inputs(i)
            ));
        }
    }
    Ok(out.len())
}

fn pairs<T: Clone>(edges: &[T]) -> (Vec<T>, Vec<T>) {
    let mut a = Vec::new();
    let mut b = Vec::new();
    for x in edges {
        for y in edges {
            a.push(x.clone());
            b.push(y.clone());
        }
    }
    (a, b)
}

fn field_case<F: Field + DeviceRepr + Default, R: Rng>(
    backend: Backend,
    kind: Kind,
    op: Op,
    rng: &mut R,
    n: usize,
    edges: &[F],
) -> Result<usize, String> {
    let (mut a, mut b) = pairs(edges);
    for _ in 0..n {
        a.push(F::rand(rng));
        b.push(F::rand(rng));
    }
    match op {
        Op::Pow => {
            // Exponents: plain integers of the element's width.
            let words = std::mem::size_of::<F>() / 8;
            let mut e: Vec<Vec<u64>> = vec![vec![0], vec![1], vec![2], vec![u64::MAX; words]];
            while e.len() < a.len() {
                e.push((0..words).map(|_| rng.gen()).collect());
            }
            let e: Vec<Vec<u64>> = e
                .into_iter()
                .map(|mut w| {
                    w.resize(words, 0);
                    w
                })
                .collect();
            let flat: Vec<u64> = e.iter().flatten().copied().collect();
            // The exponent operand is bytes-compatible with BigInt<words>.
            let out: Vec<F> = match words {
                4 => run(backend, kind, op, &a, as_bigints::<4>(&flat))?,
                6 => run(backend, kind, op, &a, as_bigints::<6>(&flat))?,
                _ => return Err(format!("{kind:?} has no Pow")),
            };
            compare(
                kind,
                op,
                |i| (a[i], &e[i]),
                &out,
                |i| a[i].pow(&e[i]),
                |o, e| o == e,
            )
        }
        Op::Neg | Op::Sqr | Op::Inv => {
            let out: Vec<F> = run(backend, kind, op, &a, &[] as &[F])?;
            let f = |x: &F| match op {
                Op::Neg => -*x,
                Op::Sqr => x.square(),
                _ => x.inverse().unwrap_or(F::ZERO),
            };
            compare(kind, op, |i| a[i], &out, |i| f(&a[i]), |o, e| o == e)
        }
        _ => {
            let out: Vec<F> = run(backend, kind, op, &a, &b)?;
            let f = |x: F, y: F| match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                _ => x * y,
            };
            compare(
                kind,
                op,
                |i| (a[i], b[i]),
                &out,
                |i| f(a[i], b[i]),
                |o, e| o == e,
            )
        }
    }
}

fn as_bigints<const N: usize>(flat: &[u64]) -> &[BigInt<N>] {
    assert_eq!(flat.len() % N, 0);
    // SAFETY: BigInt<N> is a plain `[u64; N]` wrapper (size asserted in
    // cuzk-field); the slice covers exactly flat.len() / N of them.
    unsafe { std::slice::from_raw_parts(flat.as_ptr().cast(), flat.len() / N) }
}

/// A Jacobian representative of `p` with z = `l` (x l^2, y l^3, l); the
/// identity stays (1, 1, 0).
fn jacobian<P: SWCurveConfig>(p: &Affine<P>, l: P::BaseField) -> Projective<P> {
    if p.is_zero() {
        return Projective::zero_();
    }
    let l2 = l.square();
    Projective::new_unchecked(p.x * l2, p.y * l2 * l, l)
}

trait ZeroPoint {
    fn zero_() -> Self;
}
impl<P: SWCurveConfig> ZeroPoint for Projective<P> {
    fn zero_() -> Self {
        <Projective<P> as ark_std::Zero>::zero()
    }
}

fn nonzero<F: Field, R: Rng>(rng: &mut R) -> F {
    loop {
        let l = F::rand(rng);
        if !l.is_zero() {
            return l;
        }
    }
}

/// `n` random points of the prime-order subgroup: a few drawn with
/// `UniformRand` (costly on G2: cofactor clearing), then a random walk over
/// them (one addition each), normalized in one batch.
pub fn random_points<P: SWCurveConfig, R: Rng>(rng: &mut R, n: usize) -> Vec<Affine<P>> {
    let seeds: Vec<Affine<P>> = (0..8).map(|_| Affine::rand(rng)).collect();
    let mut acc = Projective::<P>::from(seeds[0]);
    let walk: Vec<Projective<P>> = (0..n)
        .map(|_| {
            acc += seeds[rng.gen_range(0..seeds.len())];
            if rng.gen_ratio(1, 4) {
                acc.double_in_place();
            }
            acc
        })
        .collect();
    Projective::normalize_batch(&walk)
}

fn point_case<P: SWCurveConfig, R: Rng>(
    backend: Backend,
    kind: Kind,
    op: Op,
    rng: &mut R,
    n: usize,
) -> Result<usize, String>
where
    Affine<P>: DeviceRepr,
    Projective<P>: DeviceRepr,
    Xyzz<P>: DeviceRepr,
{
    let g = Projective::<P>::generator();
    let p = Affine::<P>::rand(rng);
    let q = Affine::<P>::rand(rng);
    let o = Affine::<P>::identity();
    // Operand pairs as affine points: identity with itself and others,
    // P == Q, P == -Q, the generator, then random pairs (one in eight equal).
    let mut pa = vec![
        o,
        o,
        p,
        p,
        p,
        p,
        g.into_affine(),
        (g.double()).into_affine(),
    ];
    let mut pb = vec![o, p, o, p, -p, q, g.into_affine(), -(g.into_affine())];
    let ra = random_points::<P, R>(rng, n);
    let rb = random_points::<P, R>(rng, n);
    for i in 0..n {
        pa.push(ra[i]);
        pb.push(if rng.gen_ratio(1, 8) { ra[i] } else { rb[i] });
    }
    let want_add = |i: usize| (pa[i] + pb[i]).into_affine();
    let want_dbl = |i: usize| (pa[i] + pa[i]).into_affine();
    match op {
        Op::JacDbl | Op::JacAdd | Op::JacMadd => {
            let a: Vec<Projective<P>> = pa.iter().map(|x| jacobian(x, nonzero(rng))).collect();
            let out: Vec<Projective<P>> = match op {
                Op::JacDbl => run(backend, kind, op, &a, &[] as &[Projective<P>])?,
                Op::JacAdd => {
                    let b: Vec<Projective<P>> =
                        pb.iter().map(|x| jacobian(x, nonzero(rng))).collect();
                    run(backend, kind, op, &a, &b)?
                }
                _ => run(backend, kind, op, &a, &pb)?,
            };
            let want = |i| {
                if op == Op::JacDbl {
                    want_dbl(i)
                } else {
                    want_add(i)
                }
            };
            compare(
                kind,
                op,
                |i| (pa[i], pb[i]),
                &out,
                want,
                |o, e| o.into_affine() == *e,
            )
        }
        _ => {
            let a: Vec<Xyzz<P>> = pa
                .iter()
                .map(|x| Xyzz::from_affine_scaled(x, nonzero(rng)))
                .collect();
            let out: Vec<Xyzz<P>> = match op {
                Op::XyzzDbl => run(backend, kind, op, &a, &[] as &[Xyzz<P>])?,
                Op::XyzzAdd => {
                    let b: Vec<Xyzz<P>> = pb
                        .iter()
                        .map(|x| Xyzz::from_affine_scaled(x, nonzero(rng)))
                        .collect();
                    run(backend, kind, op, &a, &b)?
                }
                _ => run(backend, kind, op, &a, &pb)?,
            };
            let want = |i| {
                if op == Op::XyzzDbl {
                    want_dbl(i)
                } else {
                    want_add(i)
                }
            };
            compare(
                kind,
                op,
                |i| (pa[i], pb[i]),
                &out,
                want,
                |o, e| o.is_consistent() && o.to_affine() == *e,
            )
        }
    }
}
