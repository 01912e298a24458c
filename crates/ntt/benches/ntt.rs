//! Criterion bench: forward NTT (natural in, bit-reversed out) of
//! device-resident data on GPU 0 at 2^16, 2^20, 2^24 and 2^26 elements, and
//! ark-poly on the CPU at 2^16 beside it. Without a GPU it prints a skip
//! line for the GPU part. `cuzk-bench` times the same calls (its figures
//! should agree within 10%).

use ark_ff::UniformRand;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use cuzk_alloc::Strategy;
use cuzk_ntt::{cpu, Fr, GpuNtt, NttOptions, Order};
use rand::SeedableRng;

fn bench(c: &mut Criterion) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x4e5454);
    let data: Vec<Fr> = (0..1usize << 16).map(|_| Fr::rand(&mut rng)).collect();
    let mut g = c.benchmark_group("ntt_forward");
    g.sample_size(10)
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    g.bench_with_input(BenchmarkId::new("ark_poly_cpu", 16), &16, |b, _| {
        let mut v = data.clone();
        b.iter(|| cpu::ntt(&mut v, 16, NttOptions::forward()).expect("ntt"))
    });
    let gpu = match GpuNtt::new(0) {
        Ok(g) => g,
        Err(e) => {
            println!("SKIPPED ntt GPU bench: no GPU ({e})");
            return;
        }
    };
    for log_n in [16u32, 20, 24, 26] {
        let n = 1usize << log_n;
        let host: Vec<Fr> = (0..n).map(|i| data[i % data.len()]).collect();
        let mut d = gpu
            .memory()
            .alloc::<Fr>(n, Strategy::Sync, gpu.stream(), None)
            .expect("alloc");
        d.copy_from_host(&host).expect("copy");
        let opts = NttOptions::forward().with_order(Order::NR);
        g.bench_with_input(
            BenchmarkId::new("cuzk_gpu_resident_nr", log_n),
            &log_n,
            |b, _| {
                b.iter(|| {
                    gpu.ntt_device(&mut d, log_n, opts).expect("ntt");
                    gpu.stream().synchronize().expect("sync")
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
