//! `cuzk-bench`: the main job (`cargo xtask bench`, or `./run-bench` from a
//! bundle). Benchmarks each layer on the GPU beside CPU references on the
//! same machine, prints a table and writes `report.json` and `report.md`.
//!
//! Layers so far: `field` (element-wise field and point operations). The
//! GPU figure is the median kernel time (CUDA events) over data already on
//! the device; the CPU figures are wall time of one thread: arkworks, and
//! cuzk's host build of the same device formulas.

use anyhow::{Context, Result};
use ark_ec::AffineRepr;
use ark_ff::AdditiveGroup;
use ark_ff::{Field, UniformRand};
use clap::Parser;
use comfy_table::{presets::UTF8_FULL, Table};
use cuzk_field::{
    ops, Backend, DeviceRepr, Fp, Fp2, Fr, G1Affine, G1Projective, G1Xyzz, G2Affine, G2Projective,
    G2Xyzz, Kind, Op,
};
use rand::SeedableRng;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser)]
#[command(about = "cuzk benchmark: GPU kernels beside CPU references")]
struct Args {
    /// A short run (about a minute, small sizes).
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// Up to the largest sizes (NTT 2^28, G1 MSM 2^26, G2 MSM 2^24).
    #[arg(long)]
    full: bool,
    /// Comma-separated layers to run (available: field, alloc, ntt, msm, prover).
    #[arg(long)]
    only: Option<String>,
    /// Report folder.
    #[arg(long, default_value = "target/cuzk-report")]
    out: PathBuf,
    /// A criterion output folder (CRITERION_HOME of a run of the msm and
    /// ntt criterion benches): compare its medians with this run's figures
    /// for the same calls, print the ratios, flag those more than 10% apart,
    /// and write `criterion_agreement.json`.
    #[arg(long)]
    check_criterion: Option<PathBuf>,
}

mod report;
use report::Figure;

/// The run's progress bar (stderr); hidden when stderr is not a terminal,
/// where each step is printed as a line instead.
static PROGRESS: std::sync::OnceLock<indicatif::ProgressBar> = std::sync::OnceLock::new();

/// Announces one benchmark step (layer and size).
fn step(msg: String) {
    match PROGRESS.get() {
        Some(pb) if !pb.is_hidden() => {
            pb.set_message(msg);
            pb.inc(1);
        }
        _ => eprintln!("{msg}"),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Wall time in ms of `f`: median of at least `reps` runs (more for short
/// calls, up to 50) after a warm-up of at least one call and 200 ms.
fn wall_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    // Warm-up: at least one call and at least 200 ms of calls, so that a
    // GPU that idled at low clocks (while a CPU reference ran) is back at
    // its boost clock before the timed calls; then at least `reps` timed
    // calls and, for short calls, more until 200 ms were timed (at most 50).
    let warm = Instant::now();
    f();
    while warm.elapsed().as_secs_f64() < 0.2 {
        f();
    }
    let mut times = Vec::with_capacity(reps);
    let mut spent = 0.0;
    while times.len() < reps || (spent < 200.0 && times.len() < 50) {
        let t = Instant::now();
        f();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        spent += ms;
        times.push(ms);
    }
    median(times)
}

/// As [`wall_ms`], timed by CUDA events on `stream` around each call
/// (`f` queues work there): device time from the first queued operation to
/// the last, the way the sppark peer's figures are taken; ms, median.
fn event_ms(reps: usize, stream: &cuzk_alloc::Stream, mut f: impl FnMut()) -> Result<f64> {
    let (start, stop) = (
        cuzk_alloc::Event::new(stream.device())?,
        cuzk_alloc::Event::new(stream.device())?,
    );
    let warm = Instant::now();
    f();
    stream.synchronize()?;
    while warm.elapsed().as_secs_f64() < 0.2 {
        f();
        stream.synchronize()?;
    }
    let mut times = Vec::with_capacity(reps);
    let mut spent = 0.0;
    while times.len() < reps || (spent < 200.0 && times.len() < 50) {
        start.record(stream)?;
        f();
        stop.record(stream)?;
        let ms = f64::from(start.elapsed_ms(&stop)?);
        spent += ms;
        times.push(ms);
    }
    Ok(median(times))
}

struct Case<A, B> {
    kind: Kind,
    op: Op,
    a: Vec<A>,
    b: Vec<B>,
}

/// Times `case` on the GPU (n_gpu elements, resident), through the host
/// build (n_cpu elements) and through the arkworks reference `reference(i)`
/// (element i, n_cpu of them), and records the three figures.
fn bench_case<A: DeviceRepr, B: DeviceRepr, O: DeviceRepr + Default, R>(
    figs: &mut Vec<Figure>,
    gpu: Option<i32>,
    (n_gpu, n_cpu): (usize, usize),
    case: Case<A, B>,
    reference_name: &'static str,
    mut reference: impl FnMut(usize) -> R,
) -> Result<()> {
    let name = format!("{:?} {:?}", case.kind, case.op);
    step(format!("bench field: {name}"));
    let (a, b) = (
        &case.a[..n_cpu],
        if case.op.reads_b() {
            &case.b[..n_cpu]
        } else {
            &case.b[..0]
        },
    );
    let ms = wall_ms(3, || {
        for i in 0..n_cpu {
            std::hint::black_box(reference(i));
        }
    });
    figs.push(Figure {
        layer: "field",
        name: name.clone(),
        implementation: reference_name,
        elements: n_cpu,
        median_ms: ms,
        timing: "wall",
    });
    let mut out = vec![O::default(); n_cpu];
    let ms = wall_ms(3, || {
        ops::apply(Backend::Cpu, case.kind, case.op, a, b, &mut out).expect("host apply")
    });
    figs.push(Figure {
        layer: "field",
        name: name.clone(),
        implementation: "cuzk host build (CPU, 1 thread)",
        elements: n_cpu,
        median_ms: ms,
        timing: "wall",
    });
    if let Some(device) = gpu {
        let b = if case.op.reads_b() {
            &case.b[..n_gpu]
        } else {
            &case.b[..0]
        };
        let ms = ops::gpu_bench(device, case.kind, case.op, &case.a[..n_gpu], b, 20)
            .with_context(|| format!("GPU bench of {name}"))?;
        figs.push(Figure {
            layer: "field",
            name,
            implementation: "cuzk GPU",
            elements: n_gpu,
            median_ms: ms as f64,
            timing: "device (CUDA events), data resident",
        });
    }
    Ok(())
}

const ARK: &str = "arkworks (CPU, 1 thread)";
const ARK_JAC: &str = "arkworks Jacobian mixed add (CPU, 1 thread)";

fn field_layer(figs: &mut Vec<Figure>, gpu: Option<i32>, quick: bool, full: bool) -> Result<()> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0xc0ffee);
    let n_gpu = if full {
        1 << 24
    } else if quick {
        1 << 18
    } else {
        1 << 22
    };
    let n_cpu = if quick { 1 << 10 } else { 1 << 14 };
    let n = if gpu.is_some() {
        n_gpu.max(n_cpu)
    } else {
        n_cpu
    };
    let n_gpu = n;
    let sizes = (n_gpu, n_cpu);
    macro_rules! field {
        ($t:ty, $kind:ident, $op:ident, $f:expr) => {{
            let a: Vec<$t> = (0..n).map(|_| <$t>::rand(&mut rng)).collect();
            let b: Vec<$t> = (0..n).map(|_| <$t>::rand(&mut rng)).collect();
            let f = $f;
            let (ra, rb) = (a.clone(), b.clone());
            bench_case::<_, _, $t, _>(
                figs,
                gpu,
                sizes,
                Case {
                    kind: Kind::$kind,
                    op: Op::$op,
                    a,
                    b,
                },
                ARK,
                |i| f(&ra[i], &rb[i]),
            )?;
        }};
    }
    field!(Fr, Fr, Mul, |x: &Fr, y: &Fr| *x * y);
    field!(Fr, Fr, Add, |x: &Fr, y: &Fr| *x + y);
    field!(Fp, Fp, Mul, |x: &Fp, y: &Fp| *x * y);
    field!(Fp2, Fp2, Mul, |x: &Fp2, y: &Fp2| *x * y);
    field!(Fr, Fr, Inv, |x: &Fr, _: &Fr| x
        .inverse()
        .unwrap_or_default());
    // Points: random points are costly to draw on the CPU, so draw a pool
    // and repeat it. arkworks has no XYZZ coordinates: its reference for the
    // XYZZ rows is its own mixed addition (Jacobian += affine).
    let pool = 1 << 12;
    let g1: Vec<G1Affine> = (0..pool).map(|_| G1Affine::rand(&mut rng)).collect();
    let g2: Vec<G2Affine> = (0..pool).map(|_| G2Affine::rand(&mut rng)).collect();
    let rep1 = |s: usize| (0..n).map(|i| g1[(i * 7 + s) % pool]).collect::<Vec<_>>();
    let rep2 = |s: usize| (0..n).map(|i| g2[(i * 7 + s) % pool]).collect::<Vec<_>>();
    let (p1, q1) = (rep1(0), rep1(1));
    let jp1: Vec<G1Projective> = p1.iter().map(|p| p.into_group().double()).collect();
    let a1: Vec<G1Xyzz> = p1
        .iter()
        .map(|p| G1Xyzz::from_affine_scaled(p, Fp::from(3u64)))
        .collect();
    bench_case::<_, _, G1Xyzz, _>(
        figs,
        gpu,
        sizes,
        Case {
            kind: Kind::G1,
            op: Op::XyzzMadd,
            a: a1,
            b: q1.clone(),
        },
        ARK_JAC,
        |i| jp1[i] + q1[i],
    )?;
    let jq1: Vec<G1Projective> = q1.iter().map(|p| p.into_group().double()).collect();
    bench_case::<_, _, G1Projective, _>(
        figs,
        gpu,
        sizes,
        Case {
            kind: Kind::G1,
            op: Op::JacAdd,
            a: jp1.clone(),
            b: jq1.clone(),
        },
        ARK,
        |i| jp1[i] + jq1[i],
    )?;
    let (p2, q2) = (rep2(0), rep2(1));
    let jp2: Vec<G2Projective> = p2.iter().map(|p| p.into_group().double()).collect();
    let a2: Vec<G2Xyzz> = p2
        .iter()
        .map(|p| G2Xyzz::from_affine_scaled(p, Fp2::from(3u64)))
        .collect();
    bench_case::<_, _, G2Xyzz, _>(
        figs,
        gpu,
        sizes,
        Case {
            kind: Kind::G2,
            op: Op::XyzzMadd,
            a: a2,
            b: q2.clone(),
        },
        ARK_JAC,
        |i| jp2[i] + q2[i],
    )?;
    Ok(())
}

/// Allocation + free latency per strategy and size (GPU only): median wall
/// time of a whole cycle (async frees followed by a stream synchronize).
fn alloc_layer(figs: &mut Vec<Figure>, gpu: Option<i32>, quick: bool) -> Result<()> {
    use cuzk_alloc::{BudgetConfig, DeviceMemory, Strategy, Stream};
    let Some(device) = gpu else {
        step("bench alloc: needs a GPU; skipped".into());
        return Ok(());
    };
    let mem = DeviceMemory::new(device, BudgetConfig::default(), u64::MAX)?;
    let stream = Stream::new(device)?;
    let reps = if quick { 5 } else { 20 };
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
            figs.push(Figure {
                layer: "alloc",
                name: format!("alloc+free {} MiB", bytes >> 20),
                implementation: strategy_name(strategy),
                elements: bytes,
                median_ms: ms,
                timing: "wall, whole alloc+free cycle",
            });
        }
    }
    mem.trim()?;
    Ok(())
}

/// NTT at a ladder of sizes: GPU device-resident (wall time around the
/// queued transform plus a stream synchronize, and CUDA events around it as
/// the sppark peer is timed; median of 5 after a warm-up),
/// GPU host-to-host (copies included, from pageable and from pinned host
/// memory), and ark-poly on all CPU cores.
fn ntt_layer(figs: &mut Vec<Figure>, gpu: Option<i32>, quick: bool, full: bool) -> Result<()> {
    use cuzk_ntt::{GpuNtt, NttOptions, Order};
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x5eed);
    let logs: &[u32] = if quick {
        &[16, 20]
    } else if full {
        &[16, 20, 24, 26, 27, 28]
    } else {
        &[16, 20, 24, 26, 27]
    };
    let cpu_max = if quick { 20 } else { 24 };
    let engine = match gpu {
        Some(d) => Some(GpuNtt::new(d)?),
        None => None,
    };
    for &log_n in logs {
        let n = 1usize << log_n;
        let data: Vec<Fr> = (0..n).map(|_| Fr::rand(&mut rng)).collect();
        let name = format!("NTT forward 2^{log_n}");
        if log_n <= cpu_max {
            step(format!("bench ntt: ark-poly 2^{log_n}"));
            let domain =
                <ark_poly::Radix2EvaluationDomain<Fr> as ark_poly::EvaluationDomain<Fr>>::new(n)
                    .expect("domain");
            let mut v = data.clone();
            let ms = wall_ms(3, || {
                ark_poly::EvaluationDomain::fft_in_place(&domain, &mut v)
            });
            figs.push(Figure {
                layer: "ntt",
                name: name.clone(),
                implementation: "ark-poly (CPU, all cores)",
                elements: n,
                median_ms: ms,
                timing: "wall",
            });
        }
        let Some(g) = &engine else { continue };
        step(format!("bench ntt: GPU 2^{log_n}"));
        let mut d = g
            .memory()
            .alloc::<Fr>(n, cuzk_alloc::Strategy::Async, g.stream(), None)?;
        d.copy_from_host(&data)?;
        // Wall time around the call and a stream synchronize; then the same
        // transforms timed as the sppark peer is (CUDA events around each
        // call on its stream), for a like-for-like comparison.
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
            figs.push(Figure {
                layer: "ntt",
                name: name.clone(),
                implementation: label,
                elements: n,
                median_ms: ms,
                timing,
            });
        }
        if log_n >= 24 {
            // Kernel variants (csrc/ntt/ntt.cu): time each, and check that
            // each gives variant 0's output.
            let mut reference: Option<Vec<Fr>> = None;
            for (variant, label) in [
                (0, "cuzk GPU NR, variant 0 (radix-2, default)"),
                (1, "cuzk GPU NR, variant 1 (radix-4 regs, 2 blocks/SM)"),
                (2, "cuzk GPU NR, variant 2 (radix-8 regs, 2 blocks/SM)"),
                (3, "cuzk GPU NR, variant 3 (radix-8 regs, 1 block/SM)"),
            ] {
                std::env::set_var("CUZK_NTT_VARIANT", variant.to_string());
                let opts = NttOptions::forward().with_order(Order::NR);
                d.copy_from_host(&data)?;
                g.ntt_device(&mut d, log_n, opts)?;
                g.stream().synchronize()?;
                let mut out = vec![Fr::from(0u64); n];
                d.copy_to_host(&mut out)?;
                match &reference {
                    None => reference = Some(out),
                    Some(r) if *r != out => eprintln!("bench ntt: MISMATCH: variant {variant} differs from variant 0 at 2^{log_n}"),
                    Some(_) => {}
                }
                let ms = wall_ms(5, || {
                    g.ntt_device(&mut d, log_n, opts).expect("ntt");
                    g.stream().synchronize().expect("sync");
                });
                figs.push(Figure {
                    layer: "ntt",
                    name: name.clone(),
                    implementation: label,
                    elements: n,
                    median_ms: ms,
                    timing: "device-resident, wall with stream sync",
                });
            }
            std::env::remove_var("CUZK_NTT_VARIANT");
        }
        #[cfg(feature = "sppark")]
        {
            // The peer: sppark's forward NTT (NN) on the same card, CUDA
            // events; its output must equal ours.
            match cuzk_sppark_peer::ntt_forward_nn(&data, 5) {
                Ok((ms, out)) => {
                    let mut ours = data.clone();
                    g.ntt(&mut ours, log_n, NttOptions::forward())?;
                    if ours != out {
                        eprintln!("bench ntt: MISMATCH: sppark's NTT output differs from cuzk's at 2^{log_n}");
                    }
                    figs.push(Figure {
                        layer: "ntt",
                        name: name.clone(),
                        implementation: "sppark 0.1.16 GPU (NN)",
                        elements: n,
                        median_ms: ms as f64,
                        timing: "device-resident, CUDA events",
                    });
                }
                Err(e) => eprintln!("bench ntt: sppark peer failed at 2^{log_n}: {e}"),
            }
        }
        drop(d);
        let mut v = data.clone();
        let ms = wall_ms(3, || {
            g.ntt(&mut v, log_n, NttOptions::forward()).expect("ntt")
        });
        figs.push(Figure {
            layer: "ntt",
            name: name.clone(),
            implementation: "cuzk GPU host-to-host (NN, copies incl.)",
            elements: n,
            median_ms: ms,
            timing: "wall, host to host",
        });
        // The same from pinned host memory (issue 4's host-to-host figure):
        // direct copies, no staging on the host.
        match cuzk_alloc::PinnedBuffer::<Fr>::new(n) {
            Ok(mut p) => {
                p.copy_from_slice(&data);
                let ms = wall_ms(3, || {
                    g.ntt_pinned(&mut p, log_n, NttOptions::forward())
                        .expect("ntt")
                });
                figs.push(Figure {
                    layer: "ntt",
                    name: name.clone(),
                    implementation: "cuzk GPU host-to-host, pinned (NN, copies incl.)",
                    elements: n,
                    median_ms: ms,
                    timing: "wall, host to host",
                });
            }
            Err(e) => eprintln!("bench ntt: no pinned host figure at 2^{log_n}: {e}"),
        }
    }
    Ok(())
}

/// Points by a random walk over a few random seeds (drawing each point
/// uniformly costs a hash-to-curve), normalized in one batch; beyond
/// `distinct` points the walk repeats (MSM work does not depend on it).
fn bench_points<P: ark_ec::short_weierstrass::SWCurveConfig>(
    rng: &mut rand_chacha::ChaCha20Rng,
    n: usize,
    distinct: usize,
) -> Vec<ark_ec::short_weierstrass::Affine<P>> {
    use ark_ec::short_weierstrass::{Affine, Projective};
    use ark_ec::CurveGroup;
    let m = n.min(distinct).max(1);
    let seeds: Vec<Affine<P>> = (0..16).map(|_| Affine::rand(rng)).collect();
    let mut acc = Projective::<P>::from(seeds[0]);
    let walk: Vec<Projective<P>> = (0..m)
        .map(|i| {
            acc += seeds[i % 16];
            acc
        })
        .collect();
    let base = Projective::normalize_batch(&walk);
    (0..n).map(|i| base[i % m]).collect()
}

/// One curve's MSM ladder: cuzk on the GPU with resident bases (uploaded
/// once; scalars copied in per call), with the bases copied in per call and
/// with precomputed bases (plus the precomputation's one-time cost),
/// blst on all CPU cores, arkworks (all cores, up to 2^20), and for G1
/// sppark 0.1.16 (points and scalars copied in per call, and with the points
/// uploaded once and the scalars copied in per call). Wall time of the
/// call, median of 5 (3 or 1 at the largest sizes). Every result must equal
/// blst's.
fn msm_curve<P: cuzk_msm::MsmCurve>(
    figs: &mut Vec<Figure>,
    gpu: Option<i32>,
    logs: &[u32],
    sppark: bool,
) -> Result<()> {
    use ark_ec::short_weierstrass::Projective;
    use ark_ec::{CurveGroup, VariableBaseMSM};
    let Some(&max_log) = logs.iter().max() else {
        return Ok(());
    };
    let max = 1usize << max_log;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x4d534d);
    let points = bench_points::<P>(&mut rng, max, 1 << 20);
    let scalars: Vec<Fr> = (0..max).map(|_| Fr::rand(&mut rng)).collect();
    let engine = match gpu {
        Some(d) => Some(cuzk_msm::GpuMsm::new(d)?),
        None => None,
    };
    for &log_n in logs {
        let n = 1usize << log_n;
        let name = format!("{} MSM 2^{log_n}", P::NAME);
        step(format!("bench msm: {name}"));
        let (p, s) = (&points[..n], &scalars[..n]);
        // blst up to 2^24 for G1 and 2^20 for G2 (G1 2^26 and G2 2^24 take
        // over a minute each on 16 cores, too long for the 10-minute --full
        // run); beyond, cuzk's G1 result is checked against sppark's.
        let mut want = None;
        let blst_max = if P::NAME == "G1" { 24 } else { 20 };
        if log_n <= blst_max {
            let reps = if log_n >= 24 { 1 } else { 3 };
            let mut r = Projective::<P>::default();
            let ms = wall_ms(reps, || {
                r = cuzk_msm::cpu::msm(p, s).expect("equal lengths")
            });
            figs.push(Figure {
                layer: "msm",
                name: name.clone(),
                implementation: "blst Pippenger (CPU, all cores)",
                elements: n,
                median_ms: ms,
                timing: "wall",
            });
            want = Some(r.into_affine());
        }
        if log_n <= 20 {
            let mut got = Projective::<P>::default();
            let ms = wall_ms(if log_n >= 20 { 1 } else { 3 }, || {
                got = Projective::<P>::msm(p, s).expect("equal lengths")
            });
            if Some(got.into_affine()) != want {
                eprintln!("bench msm: MISMATCH: arkworks differs from blst at {name}");
            }
            figs.push(Figure {
                layer: "msm",
                name: name.clone(),
                implementation: "arkworks VariableBaseMSM (CPU, all cores)",
                elements: n,
                median_ms: ms,
                timing: "wall",
            });
        }
        let Some(g) = &engine else { continue };
        let gpu_reps = if log_n >= 26 { 3 } else { 5 };
        let fixed = g.upload_bases(p)?;
        let mut got = Projective::<P>::default();
        let ms = wall_ms(gpu_reps, || got = fixed.msm(s).expect("cuzk msm"));
        if want.is_some_and(|w| w != got.into_affine()) {
            eprintln!("bench msm: MISMATCH: cuzk's GPU MSM differs from blst at {name}");
        }
        let cuzk_result = got.into_affine();
        figs.push(Figure {
            layer: "msm",
            name: name.clone(),
            implementation: "cuzk GPU (resident bases, scalars copied in)",
            elements: n,
            median_ms: ms,
            timing: "wall, scalars host to device",
        });
        drop(fixed);
        let ms = wall_ms(3, || got = g.msm(p, s).expect("cuzk msm"));
        figs.push(Figure {
            layer: "msm",
            name: name.clone(),
            implementation: "cuzk GPU (bases and scalars copied in)",
            elements: n,
            median_ms: ms,
            timing: "wall, host to host",
        });
        // Precomputed bases (one set of buckets for all windows): the
        // one-time precomputation, then MSMs against them.
        let t0 = std::time::Instant::now();
        let pre = g.upload_bases_precomputed(p, None)?;
        let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
        if let Some(c) = pre.precomputed_window_bits() {
            let ms = wall_ms(gpu_reps, || got = pre.msm(s).expect("cuzk msm"));
            if got.into_affine() != cuzk_result {
                eprintln!("bench msm: MISMATCH: cuzk's precomputed MSM differs at {name}");
            }
            figs.push(Figure {
                layer: "msm",
                name: name.clone(),
                implementation: "cuzk GPU (precomputed bases, scalars copied in)",
                elements: n,
                median_ms: ms,
                timing: "wall, scalars host to device",
            });
            figs.push(Figure {
                layer: "msm",
                name: name.clone(),
                implementation: "cuzk GPU precomputation of the bases (once)",
                elements: n,
                median_ms: setup_ms,
                timing: "wall, bases host to device, one run",
            });
            eprintln!("bench msm: {name}: precomputed with c = {c} in {setup_ms:.0} ms");
        } else {
            eprintln!("bench msm: {name}: no room for precomputed bases, skipped");
        }
        drop(pre);
        #[cfg(feature = "sppark")]
        if sppark {
            // The peer exists for G1 only.
            use std::any::Any;
            let p1 = (&points as &dyn Any)
                .downcast_ref::<Vec<G1Affine>>()
                .context("sppark's MSM is G1 only")?;
            let ours = (&cuzk_result as &dyn Any)
                .downcast_ref::<G1Affine>()
                .context("sppark's MSM is G1 only")?;
            let mut got = G1Projective::default();
            let ms = wall_ms(gpu_reps, || {
                got = cuzk_sppark_peer::msm_g1(&p1[..n], s).expect("sppark msm")
            });
            if got.into_affine() != *ours {
                eprintln!("bench msm: MISMATCH: sppark's MSM differs from cuzk's at {name}");
            }
            figs.push(Figure {
                layer: "msm",
                name: name.clone(),
                implementation: "sppark 0.1.16 GPU (copies incl.)",
                elements: n,
                median_ms: ms,
                timing: "wall, host to host",
            });
            // Like for like with cuzk's resident figure: sppark's msm_t with
            // the points uploaded once, scalars copied in per call.
            let (got, mut times) = cuzk_sppark_peer::msm_g1_resident(&p1[..n], s, gpu_reps as u32)
                .map_err(|e| anyhow::anyhow!("sppark resident msm: {e}"))?;
            if got.into_affine() != *ours {
                eprintln!(
                    "bench msm: MISMATCH: sppark's resident MSM differs from cuzk's at {name}"
                );
            }
            times.sort_by(f64::total_cmp);
            figs.push(Figure {
                layer: "msm",
                name,
                implementation: "sppark 0.1.16 GPU (resident points, scalars copied in)",
                elements: n,
                median_ms: times[times.len() / 2],
                timing: "wall, scalars host to device",
            });
        }
        #[cfg(not(feature = "sppark"))]
        let _ = (sppark, name, cuzk_result);
    }
    Ok(())
}

/// MSM: G1 at 2^16..2^26 and G2 at 2^16..2^24 (by run length), see
/// [`msm_curve`].
fn msm_layer(figs: &mut Vec<Figure>, gpu: Option<i32>, quick: bool, full: bool) -> Result<()> {
    let (g1, g2): (&[u32], &[u32]) = if quick {
        (&[16], &[])
    } else if full {
        (&[16, 20, 22, 24, 26], &[16, 20, 24])
    } else {
        (&[16, 20, 22], &[16, 20])
    };
    msm_curve::<ark_bls12_381::g1::Config>(figs, gpu, g1, true)?;
    msm_curve::<ark_bls12_381::g2::Config>(figs, gpu, g2, false)?;
    Ok(())
}

/// Groth16 proofs of a synthetic R1CS filling 2^k constraints (key of
/// random points: timed, not verified; the prover's tests and example
/// verify real circuits): cuzk's prover on the GPU (median of 3 proofs,
/// with each stage's median as its own figure) and on the CPU (one proof,
/// up to 2^20).
fn prover_layer(figs: &mut Vec<Figure>, gpu: Option<i32>, quick: bool, full: bool) -> Result<()> {
    use cuzk_prover::synthetic::{random_key_for, RandomCircuit};
    use cuzk_prover::{ProofTimings, Prover};
    let logs: &[u32] = if quick {
        &[14]
    } else if full {
        &[16, 20, 22]
    } else {
        &[16, 20]
    };
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x70726f76);
    for &k in logs {
        let name = format!("Groth16 proof 2^{k}");
        step(format!("bench prover: {name}"));
        let c = RandomCircuit::fill_domain(k, 8, 0, 7);
        let w = c.matrices()?;
        let pk = random_key_for(&w, &mut rng)?;
        let n = w.matrices.num_constraints;
        let job = w.job(Fr::from(3u64), Fr::from(5u64));
        if k <= 20 {
            let cpu = Prover::cpu(pk.clone())?;
            let t = Instant::now();
            cpu.prove_job(&job)?;
            figs.push(Figure {
                layer: "prover",
                name: name.clone(),
                implementation: "cuzk prover, CPU path (blst, ark-poly)",
                elements: n,
                median_ms: t.elapsed().as_secs_f64() * 1e3,
                timing: "wall",
            });
        }
        if gpu.is_none() {
            continue;
        }
        let prover = Prover::new(pk)?;
        let mut runs: Vec<(f64, ProofTimings)> = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let (_, timings) = prover.prove_job(&job)?;
            runs.push((t.elapsed().as_secs_f64() * 1e3, timings));
        }
        figs.push(Figure {
            layer: "prover",
            name: name.clone(),
            implementation: "cuzk prover, GPU",
            elements: n,
            median_ms: median(runs.iter().map(|r| r.0).collect()),
            timing: "wall, host to host",
        });
        type Stage = (&'static str, fn(&ProofTimings) -> f64);
        let stages: [Stage; 7] = [
            ("cuzk GPU stage: H (7 NTTs + quotient)", |t| t.h_ntt_ms),
            ("cuzk GPU stage: MSM A (G1)", |t| t.msm_a_ms),
            ("cuzk GPU stage: MSM B (G2)", |t| t.msm_b_g2_ms),
            ("cuzk GPU stage: MSM B (G1)", |t| t.msm_b_g1_ms),
            ("cuzk GPU stage: MSM H (G1)", |t| t.msm_h_ms),
            ("cuzk GPU stage: MSM L (G1)", |t| t.msm_l_ms),
            ("cuzk GPU stage: evaluation + assembly (CPU)", |t| {
                t.eval_ms + t.assembly_ms
            }),
        ];
        for (label, get) in stages {
            figs.push(Figure {
                layer: "prover",
                name: name.clone(),
                implementation: label,
                elements: n,
                median_ms: median(runs.iter().map(|r| get(&r.1)).collect()),
                timing: "wall, per stage",
            });
        }
    }
    Ok(())
}

/// Compares criterion medians (`DIR/<group>/<function>/<size>/new/estimates.json`)
/// with the figures of this run for the same calls; returns one JSON row a
/// pair, with `agree` false beyond 10%.
fn criterion_agreement(figs: &[Figure], dir: &std::path::Path) -> Result<Vec<serde_json::Value>> {
    let pairs: [(&str, &str, &str, &str); 5] = [
        (
            "ntt_forward",
            "cuzk_gpu_resident_nr",
            "NTT forward",
            "cuzk GPU, bit-reversed out (NR)",
        ),
        (
            "msm_G1",
            "cuzk_gpu_resident",
            "G1 MSM",
            "cuzk GPU (resident bases, scalars copied in)",
        ),
        (
            "msm_G2",
            "cuzk_gpu_resident",
            "G2 MSM",
            "cuzk GPU (resident bases, scalars copied in)",
        ),
        (
            "msm_G1",
            "cuzk_gpu_precomputed",
            "G1 MSM",
            "cuzk GPU (precomputed bases, scalars copied in)",
        ),
        (
            "msm_G2",
            "cuzk_gpu_precomputed",
            "G2 MSM",
            "cuzk GPU (precomputed bases, scalars copied in)",
        ),
    ];
    let mut rows = Vec::new();
    for (group, function, op, implementation) in pairs {
        for f in figs
            .iter()
            .filter(|f| f.implementation == implementation && f.name.starts_with(op))
        {
            let Some(log) = f
                .name
                .rsplit("2^")
                .next()
                .and_then(|x| x.parse::<u32>().ok())
            else {
                continue;
            };
            let path = dir
                .join(group)
                .join(function)
                .join(log.to_string())
                .join("new/estimates.json");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let v: serde_json::Value = serde_json::from_str(&text)?;
            let Some(ns) = v["median"]["point_estimate"].as_f64() else {
                continue;
            };
            let crit_ms = ns / 1e6;
            let ratio = f.median_ms / crit_ms;
            let agree = (ratio - 1.0).abs() <= 0.10;
            println!(
                "criterion agreement: {} / {}: bench {:.3} ms, criterion {:.3} ms, ratio {:.3} {}",
                f.name,
                f.implementation,
                f.median_ms,
                crit_ms,
                ratio,
                if agree { "agree" } else { "DISAGREE (>10%)" }
            );
            rows.push(serde_json::json!({
                "operation": f.name,
                "implementation": f.implementation,
                "bench_ms": f.median_ms,
                "criterion_ms": crit_ms,
                "ratio": ratio,
                "agree": agree,
            }));
        }
    }
    if rows.is_empty() {
        eprintln!(
            "criterion agreement: no matching criterion results under {}",
            dir.display()
        );
    }
    Ok(rows)
}

fn strategy_name(s: cuzk_alloc::Strategy) -> &'static str {
    match s {
        cuzk_alloc::Strategy::Sync => "cuzk Sync (cudaMalloc)",
        cuzk_alloc::Strategy::Async => "cuzk Async (default pool)",
        cuzk_alloc::Strategy::AsyncDedicated => "cuzk AsyncDedicated (own pool)",
        cuzk_alloc::Strategy::Unified => "cuzk Unified (managed)",
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let layers: Vec<String> = args
        .only
        .as_deref()
        .unwrap_or("field,alloc,ntt,msm,prover")
        .split(',')
        .map(|s| s.trim().to_owned())
        .collect();
    let (gpu, machine_gpu) = match cuzk_field::gpu::devices() {
        Ok(d) if !d.is_empty() => (
            Some(0),
            format!(
                "{} (sm_{}{}, {} SMs, {:.0} GiB)",
                d[0].name,
                d[0].compute_capability.0,
                d[0].compute_capability.1,
                d[0].sm_count,
                d[0].total_memory_bytes as f64 / (1u64 << 30) as f64
            ),
        ),
        Ok(_) => (None, "none".into()),
        Err(e) => {
            eprintln!("cuzk-bench: no GPU found ({e}); running the CPU paths only");
            (None, format!("none ({e})"))
        }
    };
    let started = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    // Rough step counts per layer, for the progress bar's length and ETA.
    let steps: u64 = layers
        .iter()
        .map(|l| match l.as_str() {
            "field" => 8,
            "alloc" => 16,
            "ntt" => 2 * if args.quick { 2 } else { 6 },
            "msm" => {
                if args.quick {
                    1
                } else if args.full {
                    8
                } else {
                    5
                }
            }
            "prover" => {
                if args.full {
                    3
                } else if args.quick {
                    1
                } else {
                    2
                }
            }
            _ => 0,
        })
        .sum();
    let pb = indicatif::ProgressBar::new(steps);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} {msg} (about {eta} left)",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let _ = PROGRESS.set(pb);
    let mut figs = Vec::new();
    for layer in &layers {
        match layer.as_str() {
            "field" => field_layer(&mut figs, gpu, args.quick, args.full)?,
            "alloc" => alloc_layer(&mut figs, gpu, args.quick)?,
            "ntt" => ntt_layer(&mut figs, gpu, args.quick, args.full)?,
            "msm" => msm_layer(&mut figs, gpu, args.quick, args.full)?,
            "prover" => prover_layer(&mut figs, gpu, args.quick, args.full)?,
            other => eprintln!("cuzk-bench: layer `{other}` is not benchmarked yet; skipping"),
        }
    }

    if let Some(pb) = PROGRESS.get() {
        pb.finish_and_clear();
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL).set_header([
        "layer",
        "operation",
        "implementation",
        "elements",
        "median ms",
        "Melem/s",
        "vs arkworks",
    ]);
    for f in &figs {
        // Elements per second (bytes per second for the allocator).
        let rate = f.elements as f64 / f.median_ms / 1e3;
        table.add_row([
            f.layer.to_string(),
            f.name.clone(),
            f.implementation.to_string(),
            f.elements.to_string(),
            format!("{:.3}", f.median_ms),
            format!("{rate:.2}"),
            report::speedup(&figs, f).map_or("-".into(), |s| format!("{s:.1}x")),
        ]);
    }
    println!("GPU: {machine_gpu}");
    println!("{table}");
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    let command_output = |cmd: &str, args: &[&str]| {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_owned()
            })
    };
    let machine = report::Machine {
        gpu: machine_gpu.clone(),
        cpu: cpu.clone(),
        cpu_threads: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        driver: command_output(
            "nvidia-smi",
            &["--query-gpu=driver_version", "--format=csv,noheader"],
        )
        .unwrap_or_else(|| "none".into()),
        commit: env!("CUZK_GIT_COMMIT").into(),
        date: started.clone(),
    };
    let json = report::to_json(&machine, cuzk_field::cuda_compiled(), &figs);
    report::validate(&json)
        .map_err(|e| anyhow::anyhow!("report does not match its schema: {e}"))?;
    std::fs::write(
        args.out.join("report.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    let mut plots = Vec::new();
    for (file, layer, prefix, title) in [
        ("ntt", "ntt", "", "NTT forward over BLS12-381 Fr"),
        ("msm", "msm", "G1 ", "G1 MSM"),
        ("msm_g2", "msm", "G2 ", "G2 MSM"),
        ("alloc", "alloc", "", "Allocation + free, by strategy"),
    ] {
        let path = args.out.join(format!("{file}.svg"));
        let some: Vec<Figure> = figs
            .iter()
            .filter(|f| f.name.starts_with(prefix))
            .cloned()
            .collect();
        if report::plot_svg(&some, layer, title, &path).map_err(anyhow::Error::msg)? {
            plots.push(format!("![{title}]({file}.svg)"));
        }
    }
    if let Some(dir) = &args.check_criterion {
        let rows = criterion_agreement(&figs, dir)?;
        std::fs::write(
            args.out.join("criterion_agreement.json"),
            serde_json::to_string_pretty(&rows)?,
        )?;
    }
    std::fs::write(
        args.out.join("report.md"),
        format!(
            "# cuzk benchmark report\n\nGPU: {machine_gpu} (driver {})\n\nCPU: {cpu}\n\nCommit: {}, started {}\n\n```\n{table}\n```\n\n{}\n",
            machine.driver,
            machine.commit,
            machine.date,
            plots.join("\n\n")
        ),
    )?;
    println!(
        "report: {} (and report.md, {} plots)",
        args.out.join("report.json").display(),
        plots.len()
    );
    Ok(())
}
