//! The allocator layer: allocation + free latency of each cuzk-alloc
//! strategy by size (GPU only; nothing to check against).

use crate::cli::Run;
use crate::progress::step;
use crate::report::Record;
use crate::timing::wall_ms;
use anyhow::Result;
use cuzk_alloc::{BudgetConfig, DeviceMemory, Strategy, Stream};

/// Median wall time of a whole cycle (async frees followed by a stream
/// synchronize) per strategy at 1 MiB, 16 MiB, 256 MiB and 4 GiB.
pub(crate) fn bench(run: &Run, rec: &mut Record) -> Result<()> {
    let Some(device) = run.gpu else {
        step("bench alloc: needs a GPU; skipped".into());
        return Ok(());
    };
    let mem = DeviceMemory::new(device, BudgetConfig::default(), u64::MAX)?;
    let stream = Stream::new(device)?;
    let reps = run.size.pick(5, 20, 20);
    for strategy in Strategy::ALL {
        for shift in [20u32, 24, 28, 32] {
            let bytes = 1usize << shift;
            step(format!("bench alloc: {strategy:?} {} MiB", bytes >> 20));
            let ms = wall_ms(reps, || {
                let b = mem
                    .alloc::<u8>(bytes, strategy, &stream, None)
                    .expect("alloc");
                drop(b);
                stream.synchronize().expect("sync");
            });
            rec.figure(
                "alloc",
                format!("alloc+free {} MiB", bytes >> 20),
                strategy_name(strategy),
                bytes,
                ms,
                "wall, whole alloc+free cycle",
            );
        }
    }
    mem.trim()?;
    Ok(())
}

fn strategy_name(s: Strategy) -> &'static str {
    match s {
        Strategy::Sync => "cuzk Sync (cudaMalloc)",
        Strategy::Async => "cuzk Async (default pool)",
        Strategy::AsyncDedicated => "cuzk AsyncDedicated (own pool)",
        Strategy::Unified => "cuzk Unified (managed)",
    }
}
