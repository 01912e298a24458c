//! The witness layer: MSMs over witness-shaped scalars (the SHA-256
//! chain's shape, about 58% zeros, 42% ones and 0.06% other; and 99% zeros
//! and ones), G1 at 2^20..2^26 and G2 at 2^20..2^24, beside the dense
//! figures of the msm layer and uniform scalars of the same sizes: cuzk on
//! the GPU (resident bases; witness-shaped by default, forced dense, and
//! with the scalars already on the device) and cuzk's witness-shaped CPU
//! path beside blst's dense Pippenger on the same scalars. Every result is
//! checked against blst.

use crate::cli::Run;
use crate::progress::step;
use crate::report::Record;
use crate::timing::{once_ms, wall_ms};
use anyhow::Result;
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::CurveGroup;
use ark_ff::{One, UniformRand, Zero};
use cuzk_alloc::{DeviceBuffer, Strategy, Stream};
use cuzk_field::Fr;
use cuzk_msm::{GpuMsm, MsmConfig, MsmCurve, WitnessShaped};
use rand::{Rng, SeedableRng};

const LAYER: &str = "witness";
const BLST: &str = "blst Pippenger (CPU)";
const BLST_FOLDED: &str = "blst Pippenger (CPU), scalars folded onto the distinct bases";

/// Sizes (log2) of the G1 and G2 ladders: `--quick`, default, `--full`.
pub(crate) const LOGS: [(&[u32], &[u32]); 3] =
    [(&[16], &[]), (&[20, 22], &[20]), (&[20, 24, 26], &[20, 24])];

/// The witness shapes: name, share of zeros and of ones in millionths
/// (the rest uniform).
const SHAPES: [(&str, u32, u32); 3] = [
    ("SHA-256-chain-shaped scalars", 581_800, 417_600),
    ("99% 0/1 scalars", 580_000, 410_000),
    ("uniform scalars", 0, 0),
];

/// The CPU path's witness-shaped figure is taken up to this size.
const CPU_MAX: u32 = 22;

/// Witness-shaped MSMs (module docs).
pub(crate) fn bench(run: &Run, rec: &mut Record) -> Result<()> {
    let (g1, g2) = run.size.pick(LOGS[0], LOGS[1], LOGS[2]);
    curve::<ark_bls12_381::g1::Config>(run, rec, g1, 13)?;
    curve::<ark_bls12_381::g2::Config>(run, rec, g2, 14)?;
    Ok(())
}

/// `n` scalars of a witness shape (`zeros` and `ones` in millionths, the
/// rest uniform), drawn as `Run::random_with` draws.
fn shaped(run: &Run, stream: u64, n: usize, zeros: u32, ones: u32) -> Vec<Fr> {
    run.random_with(stream, n, |r| {
        let u = r.gen_range(0..1_000_000u32);
        if u < zeros {
            Fr::zero()
        } else if u < zeros + ones {
            Fr::one()
        } else {
            Fr::rand(r)
        }
    })
}

fn curve<P: MsmCurve>(run: &Run, rec: &mut Record, logs: &[u32], stream: u64) -> Result<()> {
    let Some(&max_log) = logs.iter().max() else {
        return Ok(());
    };
    let max = 1usize << max_log;
    let distinct = crate::msm::DISTINCT.min(max);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(run.seed ^ stream);
    let points = crate::msm::bench_points::<P>(&mut rng, max, distinct);
    let engine = match run.gpu {
        Some(d) => Some(GpuMsm::new(d)?),
        None => None,
    };
    let shaped_scalars: Vec<Vec<Fr>> = SHAPES
        .iter()
        .enumerate()
        .map(|(k, &(_, zeros, ones))| shaped(run, 200 + 10 * stream + k as u64, max, zeros, ones))
        .collect();
    for &log_n in logs {
        let n = 1usize << log_n;
        let name = format!("{} MSM 2^{log_n}", P::NAME);
        let p = &points[..n];
        // Bases uploaded for this size, as the msm layer's dense figures.
        let fixed = match &engine {
            Some(g) => Some(g.upload_bases(p)?),
            None => None,
        };
        // The same bases through an engine that never goes witness-shaped.
        let dense = match &engine {
            Some(g) => Some(
                g.clone()
                    .with_config(MsmConfig {
                        witness_shaped: WitnessShaped::Never,
                        ..*g.config()
                    })?
                    .upload_bases(p)?,
            ),
            None => None,
        };
        for (&(shape, _, _), scalars) in SHAPES.iter().zip(&shaped_scalars) {
            step(format!("bench witness: {name}, {shape}"));
            let s = &scalars[..n];
            let (want, against) = if n <= distinct {
                (cuzk_msm::cpu::msm_dense(p, s)?.into_affine(), BLST)
            } else {
                (
                    crate::msm::folded_msm(p, s, distinct)?.into_affine(),
                    BLST_FOLDED,
                )
            };
            if log_n <= CPU_MAX {
                let mut got = Projective::<P>::default();
                let ms = wall_ms(1, || got = cuzk_msm::cpu::msm(p, s).expect("cpu msm"));
                let ours = corrupt_if_injected(rec, got.into_affine());
                rec.checks.values(
                    LAYER,
                    format!("{name}, {shape}: cuzk CPU path"),
                    against,
                    n,
                    &ours,
                    &want,
                );
                rec.figure(
                    LAYER,
                    format!("{name}, {shape}"),
                    "cuzk CPU path, witness-shaped (all cores)",
                    n,
                    ms,
                    "wall",
                );
                let (ms, _) = once_ms(|| cuzk_msm::cpu::msm_dense(p, s));
                rec.figure(
                    LAYER,
                    format!("{name}, {shape}"),
                    "blst Pippenger, dense (CPU, all cores)",
                    n,
                    ms,
                    "wall",
                );
            }
            let Some(fixed) = &fixed else {
                rec.checks.skip(
                    LAYER,
                    format!("{name}, {shape}: cuzk GPU (resident bases)"),
                    against,
                    n,
                    "no GPU",
                );
                continue;
            };
            // The default (witness-shaped when a sample of the scalars is
            // mostly 0/1), the same scalars forced through Pippenger, and
            // the scalars already on the device.
            let mut got = Projective::<P>::default();
            let ms = wall_ms(5, || got = fixed.msm(s).expect("cuzk msm"));
            let got = corrupt_if_injected(rec, got.into_affine());
            rec.checks.values(
                LAYER,
                format!("{name}, {shape}: cuzk GPU (resident bases)"),
                against,
                n,
                &got,
                &want,
            );
            rec.figure(
                LAYER,
                format!("{name}, {shape}"),
                "cuzk GPU (resident bases, scalars copied in)",
                n,
                ms,
                "wall, scalars host to device",
            );
            if let (Some(dense), Some(engine)) = (&dense, &engine) {
                let mut got = Projective::<P>::default();
                let ms = wall_ms(3, || got = dense.msm(s).expect("cuzk msm, dense"));
                rec.checks.values(
                    LAYER,
                    format!("{name}, {shape}: cuzk GPU, dense path"),
                    against,
                    n,
                    &got.into_affine(),
                    &want,
                );
                rec.figure(
                    LAYER,
                    format!("{name}, {shape}"),
                    "cuzk GPU, dense path (WitnessShaped::Never)",
                    n,
                    ms,
                    "wall, scalars host to device",
                );
                let d = device_scalars(engine, s)?;
                let mut got = Projective::<P>::default();
                let ms = wall_ms(5, || {
                    got = fixed.msm_device(&d, 0..d.len()).expect("cuzk msm, device")
                });
                rec.checks.values(
                    LAYER,
                    format!("{name}, {shape}: cuzk GPU (resident bases and scalars)"),
                    against,
                    n,
                    &got.into_affine(),
                    &want,
                );
                rec.figure(
                    LAYER,
                    format!("{name}, {shape}"),
                    "cuzk GPU (resident bases and scalars)",
                    n,
                    ms,
                    "wall, scalars on the device",
                );
            }
        }
    }
    Ok(())
}

/// `scalars` copied into device memory of `engine`'s GPU.
fn device_scalars(engine: &GpuMsm, scalars: &[Fr]) -> Result<DeviceBuffer<Fr>> {
    let stream = Stream::new(engine.memory().device())?;
    let mut d = engine
        .memory()
        .alloc::<Fr>(scalars.len(), Strategy::Async, &stream, None)?;
    d.copy_from_host(scalars)?;
    Ok(d)
}

/// With `--inject-mismatch witness`: moves one cuzk result off by the
/// generator.
fn corrupt_if_injected<P: MsmCurve>(rec: &mut Record, r: Affine<P>) -> Affine<P> {
    crate::msm::corrupt_point_if_injected(rec, LAYER, r)
}
