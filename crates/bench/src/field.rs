//! The field layer: element-wise field and point operations on the GPU
//! (resident data, CUDA events), through cuzk's host build and through
//! arkworks (one CPU thread); cuzk's outputs are checked against arkworks.

use crate::cli::{Run, Size};
use crate::progress::step;
use crate::report::Record;
use crate::timing::wall_ms;
use anyhow::{Context, Result};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{AdditiveGroup, Field, UniformRand};
use cuzk_field::{
    ops, Backend, DeviceRepr, Fp, Fp2, Fr, G1Affine, G1Projective, G1Xyzz, G2Affine, G2Projective,
    G2Xyzz, Kind, Op,
};
use rayon::prelude::*;
use std::fmt::Debug;

const LAYER: &str = "field";
/// The first of the seed's streams the layer draws from (12 of them).
const STREAM: u64 = 1000;
const ARK: &str = "arkworks (CPU, 1 thread)";
const ARK_JAC: &str = "arkworks Jacobian mixed add (CPU, 1 thread)";
/// The reference of every field check.
const ARKWORKS: &str = "arkworks";

struct Case<A, B> {
    kind: Kind,
    op: Op,
    a: Vec<A>,
    b: Vec<B>,
}

/// Times `case` on the GPU (n_gpu elements, resident), through the host
/// build (n_cpu elements) and through the arkworks reference `reference(i)`
/// (element i, n_cpu of them), and records the three figures; checks the
/// host build's and the GPU's outputs on the first n_cpu elements against
/// `expected(i)`.
fn bench_case<A: DeviceRepr, B: DeviceRepr, O: DeviceRepr + Default + PartialEq + Debug, R>(
    run: &Run,
    rec: &mut Record,
    (n_gpu, n_cpu): (usize, usize),
    case: Case<A, B>,
    reference_name: &'static str,
    mut reference: impl FnMut(usize) -> R,
    expected: impl Fn(usize) -> O,
) -> Result<()> {
    let name = format!("{:?} {:?}", case.kind, case.op);
    step(format!("bench field: {name}"));
    let b_len = |n| if case.op.reads_b() { n } else { 0 };
    let (a, b) = (&case.a[..n_cpu], &case.b[..b_len(n_cpu)]);
    let ms = wall_ms(3, || {
        for i in 0..n_cpu {
            std::hint::black_box(reference(i));
        }
    });
    rec.figure(LAYER, name.clone(), reference_name, n_cpu, ms, "wall");
    let want: Vec<O> = (0..n_cpu).map(&expected).collect();
    let mut out = vec![O::default(); n_cpu];
    let ms = wall_ms(3, || {
        ops::apply(Backend::Cpu, case.kind, case.op, a, b, &mut out).expect("host apply")
    });
    rec.figure(
        LAYER,
        name.clone(),
        "cuzk host build (CPU, 1 thread)",
        n_cpu,
        ms,
        "wall",
    );
    if rec.checks.inject(LAYER) {
        out[0] = out[1];
    }
    rec.checks.slices(
        LAYER,
        format!("{name}: cuzk host build"),
        ARKWORKS,
        &out,
        &want,
    );
    let check_gpu = format!("{name}: cuzk GPU");
    let Some(device) = run.gpu else {
        rec.checks.skip(LAYER, check_gpu, ARKWORKS, n_cpu, "no GPU");
        return Ok(());
    };
    let mut out = vec![O::default(); n_cpu];
    ops::apply(Backend::Gpu { device }, case.kind, case.op, a, b, &mut out)
        .with_context(|| format!("GPU {name}"))?;
    rec.checks.slices(LAYER, check_gpu, ARKWORKS, &out, &want);
    let ms = gpu_kernel_ms(device, &case, n_gpu).with_context(|| format!("GPU bench of {name}"))?;
    rec.figure(
        LAYER,
        name,
        "cuzk GPU",
        n_gpu,
        ms,
        "device (CUDA events), data resident",
    );
    Ok(())
}

/// Median kernel time in ms of `case` over its first `n` elements, resident
/// on `device` (cuzk-field's `gpu_bench`).
fn gpu_kernel_ms<A: DeviceRepr, B: DeviceRepr>(
    device: i32,
    case: &Case<A, B>,
    n: usize,
) -> Result<f64> {
    let b = if case.op.reads_b() {
        &case.b[..n]
    } else {
        &case.b[..0]
    };
    let ms = ops::gpu_bench(device, case.kind, case.op, &case.a[..n], b, 20)?;
    Ok(f64::from(ms))
}

/// `n` elements of `pool` taken with stride 7 from element `s` on,
/// cycling (drawn on all cores): operands from a small pool of random
/// points.
fn cycle<T: Copy + Send + Sync>(pool: &[T], n: usize, s: usize) -> Vec<T> {
    (0..n)
        .into_par_iter()
        .map(|i| pool[(i * 7 + s) % pool.len()])
        .collect()
}

/// The field layer: Fr/Fp/Fp2 arithmetic, G1/G2 additions.
pub(crate) fn bench(run: &Run, rec: &mut Record) -> Result<()> {
    let smoke = run.size == Size::Smoke;
    let n_gpu = if smoke {
        1 << 10
    } else {
        run.size.pick(1 << 18, 1 << 22, 1 << 24)
    };
    let n_cpu = if smoke {
        1 << 6
    } else {
        run.size.pick(1 << 10, 1 << 14, 1 << 14)
    };
    let n = if run.gpu.is_some() {
        n_gpu.max(n_cpu)
    } else {
        n_cpu
    };
    let sizes = (n, n_cpu);
    // Inputs are drawn and derived on all cores (2^24 points at --full take
    // minutes on one), each input set from its own stream of the seed.
    macro_rules! field {
        ($t:ty, $kind:ident, $op:ident, $stream:expr, $f:expr) => {{
            let a: Vec<$t> = run.random_with(STREAM + 2 * $stream, n, <$t>::rand);
            let b: Vec<$t> = run.random_with(STREAM + 2 * $stream + 1, n, <$t>::rand);
            let f = $f;
            let (ra, rb) = (a.clone(), b.clone());
            let case = Case {
                kind: Kind::$kind,
                op: Op::$op,
                a,
                b,
            };
            bench_case::<_, _, $t, _>(
                run,
                rec,
                sizes,
                case,
                ARK,
                |i| f(&ra[i], &rb[i]),
                |i| f(&ra[i], &rb[i]),
            )?;
        }};
    }
    field!(Fr, Fr, Mul, 0, |x: &Fr, y: &Fr| *x * y);
    field!(Fr, Fr, Add, 1, |x: &Fr, y: &Fr| *x + y);
    field!(Fp, Fp, Mul, 2, |x: &Fp, y: &Fp| *x * y);
    field!(Fp2, Fp2, Mul, 3, |x: &Fp2, y: &Fp2| *x * y);
    field!(Fr, Fr, Inv, 4, |x: &Fr, _: &Fr| x
        .inverse()
        .unwrap_or_default());
    // Points: random points are costly to draw on the CPU, so draw a pool
    // and repeat it. arkworks has no XYZZ coordinates: its reference for the
    // XYZZ rows' time is its own mixed addition (Jacobian += affine); their
    // outputs are checked against arkworks' sum of the same two points.
    let pool = n.min(1 << 12);
    let g1: Vec<G1Affine> = run.random_chunked(STREAM + 10, pool, 16, G1Affine::rand);
    let g2: Vec<G2Affine> = run.random_chunked(STREAM + 11, pool, 16, G2Affine::rand);
    let (p1, q1) = (cycle(&g1, n, 0), cycle(&g1, n, 1));
    let jp1: Vec<G1Projective> = p1.par_iter().map(|p| p.into_group().double()).collect();
    let a1: Vec<G1Xyzz> = p1
        .par_iter()
        .map(|p| G1Xyzz::from_affine_scaled(p, Fp::from(3u64)))
        .collect();
    let case = Case {
        kind: Kind::G1,
        op: Op::XyzzMadd,
        a: a1,
        b: q1.clone(),
    };
    bench_case(
        run,
        rec,
        sizes,
        case,
        ARK_JAC,
        |i| jp1[i] + q1[i],
        |i| G1Xyzz::from((p1[i] + q1[i]).into_affine()),
    )?;
    let jq1: Vec<G1Projective> = q1.par_iter().map(|p| p.into_group().double()).collect();
    let case = Case {
        kind: Kind::G1,
        op: Op::JacAdd,
        a: jp1.clone(),
        b: jq1.clone(),
    };
    bench_case(
        run,
        rec,
        sizes,
        case,
        ARK,
        |i| jp1[i] + jq1[i],
        |i| jp1[i] + jq1[i],
    )?;
    let (p2, q2) = (cycle(&g2, n, 0), cycle(&g2, n, 1));
    let jp2: Vec<G2Projective> = p2.par_iter().map(|p| p.into_group().double()).collect();
    let a2: Vec<G2Xyzz> = p2
        .par_iter()
        .map(|p| G2Xyzz::from_affine_scaled(p, Fp2::from(3u64)))
        .collect();
    let case = Case {
        kind: Kind::G2,
        op: Op::XyzzMadd,
        a: a2,
        b: q2.clone(),
    };
    bench_case(
        run,
        rec,
        sizes,
        case,
        ARK_JAC,
        |i| jp2[i] + q2[i],
        |i| G2Xyzz::from((p2[i] + q2[i]).into_affine()),
    )?;
    Ok(())
}
