//! Criterion bench: allocation + free latency per strategy, 1 MiB to 4 GiB,
//! on GPU 0 (prints a skip line and does nothing without a GPU). Async frees
//! are followed by a stream synchronize so each iteration is a whole cycle.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use cuzk_alloc::{BudgetConfig, DeviceMemory, Strategy, Stream};

fn bench(c: &mut Criterion) {
    let mem = match DeviceMemory::new(0, BudgetConfig::default(), u64::MAX) {
        Ok(m) => m,
        Err(e) => {
            println!("SKIPPED alloc bench: no GPU ({e})");
            return;
        }
    };
    let stream = Stream::new(0).expect("stream");
    let mut g = c.benchmark_group("alloc_free");
    g.sample_size(20);
    for strategy in Strategy::ALL {
        for shift in [20u32, 24, 28, 32] {
            let bytes = 1usize << shift;
            g.bench_with_input(
                BenchmarkId::new(format!("{strategy:?}"), bytes >> 20),
                &bytes,
                |b, &bytes| {
                    b.iter(|| {
                        let buf = mem
                            .alloc::<u8>(bytes, strategy, &stream, None)
                            .expect("alloc");
                        drop(buf);
                        stream.synchronize().expect("sync");
                    })
                },
            );
        }
    }
    g.finish();
    mem.trim().expect("trim");
}

criterion_group!(benches, bench);
criterion_main!(benches);
