//! Criterion bench: G1 MSM with resident bases (scalars copied in per call),
//! plain and precomputed (`upload_bases_precomputed`), on GPU 0 at 2^16,
//! 2^20 and 2^22 points, and G2 at 2^16 and 2^20; blst on
//! the CPU at 2^16 beside them. Without a GPU it prints a skip line for the
//! GPU part. `cuzk-bench` times the same calls (its figures should agree
//! within 10%).

use ark_bls12_381::{g1, g2};
use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::CurveGroup;
use ark_ff::UniformRand;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use cuzk_msm::{cpu, Fr, GpuMsm, MsmCurve};
use rand::SeedableRng;

fn inputs<P: SWCurveConfig>(n: usize) -> (Vec<Affine<P>>, Vec<Fr>) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x4d534d);
    let seeds: Vec<Affine<P>> = (0..16).map(|_| Affine::rand(&mut rng)).collect();
    let m = n.min(1 << 16);
    let mut acc = Projective::<P>::from(seeds[0]);
    let walk: Vec<Projective<P>> = (0..m)
        .map(|i| {
            acc += seeds[i % 16];
            acc
        })
        .collect();
    let base = Projective::normalize_batch(&walk);
    let points = (0..n).map(|i| base[i % m]).collect();
    let scalars = (0..n).map(|_| Fr::rand(&mut rng)).collect();
    (points, scalars)
}

fn curve<P: MsmCurve>(c: &mut Criterion, gpu: Option<&GpuMsm>, logs: &[u32]) {
    let mut g = c.benchmark_group(format!("msm_{}", P::NAME));
    g.sample_size(10)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    for &log_n in logs {
        let (p, s) = inputs::<P>(1 << log_n);
        if log_n == 16 {
            g.bench_with_input(BenchmarkId::new("blst_cpu", log_n), &log_n, |b, _| {
                b.iter(|| cpu::msm(&p, &s).expect("msm"))
            });
        }
        if let Some(gpu) = gpu {
            let fixed = gpu.upload_bases(&p).expect("upload");
            g.bench_with_input(
                BenchmarkId::new("cuzk_gpu_resident", log_n),
                &log_n,
                |b, _| b.iter(|| fixed.msm(&s).expect("msm")),
            );
            drop(fixed);
            let pre = gpu
                .upload_bases_precomputed(&p, None)
                .expect("precomputed upload");
            if pre.precomputed_window_bits().is_some() {
                g.bench_with_input(
                    BenchmarkId::new("cuzk_gpu_precomputed", log_n),
                    &log_n,
                    |b, _| b.iter(|| pre.msm(&s).expect("msm")),
                );
            }
        }
    }
    g.finish();
}

fn bench(c: &mut Criterion) {
    let gpu = match GpuMsm::new(0) {
        Ok(g) => Some(g),
        Err(e) => {
            println!("SKIPPED msm GPU bench: no GPU ({e})");
            None
        }
    };
    curve::<g1::Config>(c, gpu.as_ref(), &[16, 20, 22]);
    curve::<g2::Config>(c, gpu.as_ref(), &[16, 20]);
}

criterion_group!(benches, bench);
criterion_main!(benches);
