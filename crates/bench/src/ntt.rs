//! The NTT layer: forward NTTs over Fr on the GPU (device-resident and
//! host-to-host), sppark's on the same card, and ark-poly on all CPU cores;
//! cuzk's outputs (GPU and CPU path) are checked against ark-poly's and
//! sppark's.

use crate::cli::Run;
use crate::progress::step;
use crate::report::Record;
use crate::timing::{event_ms, once_ms, wall_ms};
use anyhow::Result;
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};
use cuzk_field::Fr;
use cuzk_ntt::{GpuNtt, NttOptions, Order};

const LAYER: &str = "ntt";
const ARK_POLY: &str = "ark-poly";
#[cfg(feature = "sppark")]
const SPPARK: &str = "sppark 0.1.16";

/// Sizes (log2) of the ladder: `--quick`, default, `--full`.
pub(crate) const LOGS: [&[u32]; 3] = [&[16, 20], &[16, 20, 24, 26, 27], &[16, 20, 24, 26, 27, 28]];

/// NTT at a ladder of sizes: GPU device-resident (wall time around the
/// queued transform plus a stream synchronize, and CUDA events around it as
/// the sppark peer is timed; median of 5 after a warm-up), GPU host-to-host
/// (copies included, from pageable and from pinned host memory), and
/// ark-poly on all CPU cores, whose output is the reference at every size
/// (timed as a median of 3 up to 2^24, beyond that by its one run).
/// cuzk-ntt's CPU path is checked up to 2^24 (2^20 in a quick run).
pub(crate) fn bench(run: &Run, rec: &mut Record) -> Result<()> {
    let logs = run.size.pick(LOGS[0], LOGS[1], LOGS[2]);
    let cpu_max = run.size.pick(20, 24, 24);
    let engine = match run.gpu {
        Some(d) => Some(GpuNtt::new(d)?),
        None => None,
    };
    for &log_n in logs {
        let n = 1usize << log_n;
        // Stream 2 + log_n: each size's input is its own draw.
        let data = run.random_fr(2 + u64::from(log_n), n);
        let name = format!("NTT forward 2^{log_n}");
        step(format!("bench ntt: ark-poly 2^{log_n}"));
        let domain = Radix2EvaluationDomain::<Fr>::new(n).expect("a power-of-two domain");
        let (ms, want_nn) = if log_n <= 24 {
            let mut v = data.clone();
            let ms = wall_ms(3, || domain.fft_in_place(&mut v));
            (ms, domain.fft(&data))
        } else {
            once_ms(|| domain.fft(&data))
        };
        rec.figure(
            LAYER,
            name.clone(),
            "ark-poly (CPU, all cores)",
            n,
            ms,
            "wall",
        );
        // ark-poly's output in bit-reversed order.
        let want_nr = bit_reversed(&want_nn, log_n);
        if log_n <= cpu_max {
            // cuzk-ntt's CPU path, bit-reversed out.
            let mut ours = data.clone();
            cpu_ntt(&mut ours, log_n, Order::NR)?;
            corrupt_if_injected(rec, &mut ours);
            rec.checks.slices(
                LAYER,
                format!("{name}: cuzk CPU path (NR)"),
                ARK_POLY,
                &ours,
                &want_nr,
            );
        }
        let Some(g) = &engine else {
            for order in ["NN", "NR"] {
                rec.checks.skip(
                    LAYER,
                    format!("{name}: cuzk GPU ({order})"),
                    ARK_POLY,
                    n,
                    "no GPU",
                );
            }
            continue;
        };
        step(format!("bench ntt: GPU 2^{log_n}"));
        device_resident(g, rec, &data, log_n, &name)?;
        // The checks: host to host, natural and bit-reversed order.
        let mut nn = data.clone();
        g.ntt(&mut nn, log_n, NttOptions::forward())?;
        corrupt_if_injected(rec, &mut nn);
        let mut nr = data.clone();
        g.ntt(&mut nr, log_n, NttOptions::forward().with_order(Order::NR))?;
        let what = format!("{name}: cuzk GPU (NN)");
        rec.checks.slices(LAYER, what, ARK_POLY, &nn, &want_nn);
        let what = format!("{name}: cuzk GPU (NR)");
        rec.checks.slices(LAYER, what, ARK_POLY, &nr, &want_nr);
        drop((want_nn, want_nr, nr));
        sppark_peer(rec, &data, &nn, &name);
        drop(nn);
        let mut v = data.clone();
        let ms = wall_ms(3, || {
            g.ntt(&mut v, log_n, NttOptions::forward()).expect("ntt")
        });
        rec.figure(
            LAYER,
            name.clone(),
            "cuzk GPU host-to-host (NN, copies incl.)",
            n,
            ms,
            "wall, host to host",
        );
        drop(v);
        // The same from pinned host memory: direct copies, no staging on
        // the host.
        match cuzk_alloc::PinnedBuffer::<Fr>::new(n) {
            Ok(mut p) => {
                p.copy_from_slice(&data);
                let ms = wall_ms(3, || pinned_ntt(g, &mut p, log_n).expect("ntt"));
                rec.figure(
                    LAYER,
                    name.clone(),
                    "cuzk GPU host-to-host, pinned (NN, copies incl.)",
                    n,
                    ms,
                    "wall, host to host",
                );
            }
            Err(e) => crate::progress::say(format!(
                "bench ntt: no pinned host figure at 2^{log_n}: {e}"
            )),
        }
    }
    Ok(())
}

/// Device-resident figures: NN and NR, wall time with a stream synchronize
/// and CUDA events around each call (as the sppark peer is timed).
fn device_resident(
    g: &GpuNtt,
    rec: &mut Record,
    data: &[Fr],
    log_n: u32,
    name: &str,
) -> Result<()> {
    let n = data.len();
    let mut d = g
        .memory()
        .alloc::<Fr>(n, cuzk_alloc::Strategy::Async, g.stream(), None)?;
    d.copy_from_host(data)?;
    for (order, events, label) in [
        (Order::NN, false, "cuzk GPU, natural order (NN)"),
        (Order::NR, false, "cuzk GPU, bit-reversed out (NR)"),
        (Order::NN, true, "cuzk GPU, natural order (NN), CUDA events"),
        (
            Order::NR,
            true,
            "cuzk GPU, bit-reversed out (NR), CUDA events",
        ),
    ] {
        let opts = NttOptions::forward().with_order(order);
        let (ms, timing) = if events {
            let ms = event_ms(5, g.stream(), || {
                g.ntt_device(&mut d, log_n, opts).expect("ntt")
            })?;
            (ms, "device-resident, CUDA events")
        } else {
            let ms = wall_ms(5, || {
                g.ntt_device(&mut d, log_n, opts).expect("ntt");
                g.stream().synchronize().expect("sync");
            });
            (ms, "device-resident, wall with stream sync")
        };
        rec.figure(LAYER, name, label, n, ms, timing);
    }
    Ok(())
}

/// `v` (of length 2^log_n) in bit-reversed order, gathered on all cores.
fn bit_reversed(v: &[Fr], log_n: u32) -> Vec<Fr> {
    use rayon::prelude::*;
    let shift = usize::BITS - log_n;
    (0..v.len())
        .into_par_iter()
        .map(|i| {
            v[if log_n == 0 {
                i
            } else {
                i.reverse_bits() >> shift
            }]
        })
        .collect()
}

/// With `--inject-mismatch ntt`: changes one element of a cuzk output.
fn corrupt_if_injected(rec: &mut Record, out: &mut [Fr]) {
    if rec.checks.inject(LAYER) {
        out[0] += Fr::from(1u64);
    }
}

/// cuzk-ntt's CPU path (forward, `order`).
fn cpu_ntt(data: &mut [Fr], log_n: u32, order: Order) -> Result<()> {
    cuzk_ntt::cpu::ntt(data, log_n, NttOptions::forward().with_order(order))?;
    Ok(())
}

/// A forward NN NTT of data in pinned host memory (copied by DMA directly).
fn pinned_ntt(g: &GpuNtt, p: &mut cuzk_alloc::PinnedBuffer<Fr>, log_n: u32) -> Result<()> {
    g.ntt(&mut p[..], log_n, NttOptions::forward())?;
    Ok(())
}

/// sppark's forward NTT (NN) on the same card, CUDA events; its output must
/// equal cuzk's (`ours`, NN).
#[cfg(feature = "sppark")]
fn sppark_peer(rec: &mut Record, data: &[Fr], ours: &[Fr], name: &str) {
    let what = format!("{name}: cuzk GPU (NN)");
    match cuzk_sppark_peer::ntt_forward_nn(data, 5) {
        Ok((ms, out)) => {
            rec.checks.slices(LAYER, what, SPPARK, ours, &out);
            rec.figure(
                LAYER,
                name,
                "sppark 0.1.16 GPU (NN)",
                data.len(),
                f64::from(ms),
                "device-resident, CUDA events",
            );
        }
        Err(e) => {
            let why = format!("the sppark peer failed: {e}");
            crate::progress::say(format!("bench ntt: {name}: {why}"));
            rec.checks.skip(LAYER, what, SPPARK, data.len(), why);
        }
    }
}

#[cfg(not(feature = "sppark"))]
fn sppark_peer(_: &mut Record, _: &[Fr], _: &[Fr], _: &str) {}
