//! Proves a real or a synthetic circuit with cuzk-prover and prints the stage times.
//!
//! Needs the `test-utils` (the synthetic circuit and key) and `circuits`
//! (the SHA-256 chain) features:
//!
//! ```text
//! cargo run --release -p cuzk-prover --features test-utils,circuits --example prove -- --circuit sha256 --log-constraints 16
//! cargo run --release -p cuzk-prover --features test-utils,circuits --example prove -- --circuit synthetic --log-constraints 24
//! ```
//!
//! - `sha256`: `cuzk_prover::circuits::Sha256Chain`, a chain of SHA-256
//!   hashes of 32 bytes (one compression each, ark-crypto-primitives' R1CS
//!   gadget), as many as fit 2^k constraints; the final digest is public.
//!   Setup by ark-groth16 (the key is cached under `target/cuzk-keys/`);
//!   each proof is verified by ark-groth16.
//! - `synthetic`: a random R1CS filling 2^k (matrices built directly) and a
//!   key of random points (fast setup): proofs are timed, not verified.
//! - `porep`: `cuzk_prover::synthetic::PorepShaped`, Filecoin PoRep C2's
//!   shape (a witness of bits, sparse A and B queries) filling 2^k, with a
//!   key of random points: timed, not verified. Synthetic keys are cached
//!   under the keys directory where the disk keeps 16 GiB free. A batch of 10 partitions
//!   at 2^27 with 2 workers under a 16 GiB budget:
//!   `CUZK_DEVICE_MEMORY_LIMIT=16GiB prove --circuit porep
//!   --log-constraints 27 --batch --proofs 10 --workers 2`.
//!
//! The GPU is used when there is one (`--cpu` forces the CPU). Set
//! `RUST_LOG=cuzk_prover=info` for the prover's own tracing.
//!
//! `--batch` proves the proofs as one batch of partitions; with
//! `--devices N` (GPUs 0..N) or `--workers W` (workers a GPU) above 1 it
//! goes through `MultiGpuProver`, partitions round-robin over the GPUs, and
//! prints the device of each proof. It then checks that device memory in
//! use is back within 1 MiB of its figure after the warm-up proof (an
//! error otherwise) and prints the figures before the prover and after its
//! drop:
//!
//! ```text
//! cargo run --release -p cuzk-prover --features test-utils,circuits --example prove -- --circuit sha256 --log-constraints 18 \
//!     --batch --proofs 8 --devices 2 --workers 2
//! ```

use anyhow::{bail, Context, Result};
use ark_bls12_381::{Bls12_381, Fr};
use ark_ff::UniformRand;
use ark_groth16::Groth16;
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use clap::{Parser, ValueEnum};
use cuzk_prover::circuits::Sha256Chain;
use cuzk_prover::synthetic::{random_key_for, RandomCircuit};
use cuzk_prover::{
    synthesize, BatchOptions, CircuitJob, ConstraintMatrices, MultiGpuProver, ProofJob,
    ProofTimings, Prover, ProvingKey, SparseR1cs,
};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CircuitKind {
    /// A chain of SHA-256 compressions (verified proofs).
    Sha256,
    /// A random R1CS with a random-point key (timed, not verified).
    Synthetic,
    /// A PoRep-shaped R1CS (a witness of bits as the SHA-256 chain's,
    /// sparse A and B) with a random-point key (timed, not verified).
    Porep,
}

#[derive(Parser, Debug)]
#[command(about = "Groth16 proofs over BLS12-381 with cuzk-prover")]
struct Args {
    /// Which circuit.
    #[arg(long, value_enum, default_value = "sha256")]
    circuit: CircuitKind,
    /// The circuit fills a domain of 2^k (constraints plus public inputs):
    /// 1 to 32 (Fr's roots of unity; sha256 from 16, one compression), as
    /// far as host memory allows (the PoRep-shaped 2^27's key alone is
    /// about 47 GiB).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=32))]
    log_constraints: u32,
    /// How many proofs (the first includes one-time costs on the GPU).
    #[arg(long, default_value_t = 2)]
    proofs: usize,
    /// Prove on the CPU even when a GPU is present.
    #[arg(long)]
    cpu: bool,
    /// Seed of the inputs, the key (synthetic) and r, s.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where proving keys are cached.
    #[arg(long)]
    keys_dir: Option<PathBuf>,
    /// Check the witness satisfies the constraints before proving.
    #[arg(long)]
    check_witness: bool,
    /// Stream only the bases of non-zero scalars of a streamed witness
    /// query (`Prover::with_nonzero_streaming(true)`; default: every base).
    #[arg(long)]
    stream_nonzero_bases: bool,
    /// With --batch and a MultiGpuProver (--devices or --workers above 1;
    /// ignored otherwise): the witness MSMs of the batch in one pass a GPU,
    /// each witness query's bases streamed once for up to 16 partitions
    /// (`MultiGpuProver::with_witness_pass(true)`). The MSM A, B, L columns
    /// are then the pass's times, shared by its proofs.
    #[arg(long)]
    witness_pass: bool,
    /// sha256: prove the proofs as one batch of partitions (different
    /// preimages), synthesis of the next overlapping the current proof.
    #[arg(long)]
    batch: bool,
    /// With --batch: GPUs 0..N share the partitions (MultiGpuProver when
    /// N > 1 or --workers > 1); with --cpu, N lanes on the CPU.
    #[arg(long, default_value_t = 1)]
    devices: usize,
    /// With --batch: worker threads a GPU, sharing its memory budget (with
    /// --cpu, a CPU lane).
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Precompute the key's queries on the GPU (faster MSMs for W times
    /// their memory; see `Prover::with_precomputed_bases`). One worker only.
    #[arg(long)]
    precompute: bool,
    /// Evaluate A z, B z, C z on the CPU. By default the partitions of a
    /// batch (and synthetic proofs) share one R1CS that the GPU evaluates,
    /// the whole proof staying on the device (`Prover::with_r1cs`).
    #[arg(long)]
    cpu_eval: bool,
}

impl Args {
    /// A MultiGpuProver (on the CPU with --cpu: `MultiGpuProver::cpu`,
    /// --devices lanes of --workers workers).
    fn multi(&self) -> bool {
        self.batch && (self.devices > 1 || self.workers > 1)
    }
}

/// The compact R1CS of `matrices` for evaluation on the GPU, unless
/// `--cpu-eval` or `--cpu`.
fn sparse(args: &Args, matrices: Arc<ConstraintMatrices>) -> Result<Option<Arc<SparseR1cs>>> {
    if args.cpu_eval || args.cpu {
        return Ok(None);
    }
    let t = Instant::now();
    let s = SparseR1cs::new(matrices)?;
    println!(
        "r1cs: compact form for GPU evaluation, {} chunks, {:.2} GiB, built in {:.2} s",
        s.num_chunks(),
        s.bytes() as f64 / f64::from(1u32 << 30),
        t.elapsed().as_secs_f64()
    );
    Ok(Some(Arc::new(s)))
}

/// Disk left free when caching a synthetic key (the rest of a run's files,
/// supraseal-c2's parameters among them, need room too).
const KEEP_FREE_BYTES: u64 = 16 << 30;

fn keys_dir(args: &Args) -> PathBuf {
    args.keys_dir.clone().unwrap_or_else(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
        target.join("cuzk-keys")
    })
}

fn load_or_setup(path: &PathBuf, setup: impl FnOnce() -> Result<ProvingKey>) -> Result<ProvingKey> {
    if let Ok(bytes) = std::fs::read(path) {
        let t = Instant::now();
        // Our own cache: trusted, so unchecked (no subgroup checks).
        match ProvingKey::deserialize_uncompressed_unchecked(bytes.as_slice()) {
            Ok(pk) => {
                println!(
                    "key: loaded {} ({:.1} MiB) in {:.2} s",
                    path.display(),
                    bytes.len() as f64 / (1 << 20) as f64,
                    t.elapsed().as_secs_f64()
                );
                return Ok(pk);
            }
            Err(e) => println!("key: cache {} unreadable ({e}); setting up", path.display()),
        }
    }
    let t = Instant::now();
    let pk = setup()?;
    println!("key: setup in {:.2} s", t.elapsed().as_secs_f64());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut bytes = Vec::new();
    pk.serialize_uncompressed(&mut bytes)?;
    std::fs::write(path, &bytes).with_context(|| format!("writing {}", path.display()))?;
    println!("key: cached at {}", path.display());
    Ok(pk)
}

fn print_timings(i: usize, t: &ProofTimings, wall_s: Option<f64>) {
    let wall = wall_s.map_or("(pipelined)".to_string(), |w| format!("{w:.3} s"));
    println!("proof {i}: {wall}  {t}");
}

fn make_prover(args: &Args, pk: ProvingKey, r1cs: Option<Arc<SparseR1cs>>) -> Result<Prover> {
    let t = Instant::now();
    let p = if args.cpu {
        Prover::cpu(pk)?
    } else {
        Prover::new(pk)?
    }
    .with_check_witness(args.check_witness)
    .with_nonzero_streaming(args.stream_nonzero_bases);
    let (p, pre) = if args.precompute {
        p.with_precomputed_bases()?
    } else {
        (p, 0)
    };
    let p = match r1cs {
        Some(r) => p.with_r1cs(r)?,
        None => p,
    };
    println!(
        "prover: {:?} backend, {pre} of 5 queries precomputed, streamed from host memory: {:?}, \
         ready in {:.2} s",
        p.backend(),
        p.streamed_queries(),
        t.elapsed().as_secs_f64()
    );
    Ok(p)
}

/// Device memory in use (bytes, `cudaMemGetInfo`'s total - free) on each
/// device of a multi-GPU prover: before the prover was built, and after
/// its warm-up proof (kernels loaded, tables made, the key in place). After
/// the batch it must be back within [`LEAK_SLACK`] of the second figure
/// (the issue's "device memory after the batch is within 1 MiB of its
/// start"); the first is printed beside the figure after the prover's
/// drop (the CUDA module code loaded in between stays until the process
/// ends).
struct Baseline {
    memories: Vec<Arc<cuzk_alloc::DeviceMemory>>,
    before_prover: Vec<u64>,
    warm: Vec<u64>,
}

/// How far device memory in use may end above its baseline (the issue's
/// "within 1 MiB of its start").
const LEAK_SLACK: u64 = 1 << 20;

impl Baseline {
    /// Records the memory in use after the warm-up proof.
    fn warmed(&mut self) -> Result<()> {
        self.warm = self
            .memories
            .iter()
            .map(|m| Ok(m.settled_used_bytes()?))
            .collect::<Result<_>>()?;
        Ok(())
    }

    /// After the batch: compares each device's memory in use with its
    /// figure after the warm-up, then drops `multi` and prints what is
    /// left against the figure before the prover.
    ///
    /// # Errors
    /// When a device ends the batch more than [`LEAK_SLACK`] above its
    /// warm-up figure (every device is printed first).
    fn check_release(self, multi: MultiGpuProver) -> Result<()> {
        let after: Vec<u64> = self
            .memories
            .iter()
            .map(|m| Ok(m.settled_used_bytes()?))
            .collect::<Result<_>>()?;
        drop(multi);
        let mut over = Vec::new();
        for (i, m) in self.memories.iter().enumerate() {
            let (warm, end) = (self.warm.get(i).copied().unwrap_or(0), after[i]);
            let grew = end.saturating_sub(warm);
            let dropped = m.settled_used_bytes()?;
            println!(
                "GPU {}: device memory in use {} after the warm-up proof, {} after the batch ({} \
                 more); {} before the prover, {} after its drop",
                m.device(),
                cuzk_alloc::fmt_bytes(warm),
                cuzk_alloc::fmt_bytes(end),
                cuzk_alloc::fmt_bytes(grew),
                cuzk_alloc::fmt_bytes(self.before_prover[i]),
                cuzk_alloc::fmt_bytes(dropped)
            );
            if grew > LEAK_SLACK {
                over.push(format!(
                    "GPU {}: {} more",
                    m.device(),
                    cuzk_alloc::fmt_bytes(grew)
                ));
            }
        }
        if !over.is_empty() {
            bail!(
                "device memory did not return to its figure before the batch (over the {} \
                 allowed): {}",
                cuzk_alloc::fmt_bytes(LEAK_SLACK),
                over.join("; ")
            );
        }
        Ok(())
    }
}

fn make_multi(
    args: &Args,
    pk: ProvingKey,
    r1cs: Option<Arc<SparseR1cs>>,
) -> Result<(MultiGpuProver, Baseline)> {
    let t = Instant::now();
    // As Prover::new, the CPU where no GPU is usable.
    let no_gpu = match cuzk_field::gpu::device_count() {
        Ok(0) => Some("the CUDA runtime reports 0 devices".to_string()),
        Ok(_) => None,
        Err(e) if e.is_no_gpu() => Some(e.to_string()),
        Err(e) => return Err(e.into()),
    };
    if let (false, Some(why)) = (args.cpu, &no_gpu) {
        println!("no usable GPU ({why}): proving on the CPU");
    }
    if (args.cpu || no_gpu.is_some()) && (args.witness_pass || args.stream_nonzero_bases) {
        println!("--witness-pass and --stream-nonzero-bases are GPU options: ignored on the CPU");
    }
    if args.cpu || no_gpu.is_some() {
        let m = MultiGpuProver::cpu(pk, args.devices, args.workers)?
            .with_check_witness(args.check_witness);
        println!(
            "prover: MultiGpuProver::cpu, {} lanes of {} workers, ready in {:.2} s",
            args.devices,
            args.workers,
            t.elapsed().as_secs_f64()
        );
        let none = Baseline {
            memories: Vec::new(),
            before_prover: Vec::new(),
            warm: Vec::new(),
        };
        return Ok((m, none));
    }
    let devices: Vec<i32> = (0..args.devices as i32).collect();
    let memories = devices
        .iter()
        .map(|&d| cuzk_alloc::DeviceMemory::from_env(d))
        .collect::<cuzk_alloc::Result<Vec<_>>>()?;
    let baseline = Baseline {
        before_prover: memories
            .iter()
            .map(|m| Ok(m.settled_used_bytes()?))
            .collect::<Result<_>>()?,
        warm: Vec::new(),
        memories: memories.clone(),
    };
    let m = MultiGpuProver::with_memories(pk, &memories, args.workers)?
        .with_check_witness(args.check_witness)
        .with_nonzero_streaming(args.stream_nonzero_bases)
        .with_witness_pass(args.witness_pass);
    let m = match r1cs {
        Some(r) => m.with_r1cs(r)?,
        None => m,
    };
    println!(
        "prover: MultiGpuProver on GPUs {devices:?}, {} workers each, proofs admitted at once \
         per GPU {:?}, streamed from host memory: {:?}, ready in {:.2} s",
        args.workers,
        (0..devices.len())
            .map(|l| m.concurrent_proofs(l).unwrap_or(0))
            .collect::<Vec<_>>(),
        m.prover(0)
            .map(|p| p.streamed_queries())
            .unwrap_or_default(),
        t.elapsed().as_secs_f64()
    );
    Ok((m, baseline))
}

/// Proves `jobs` on `multi` (round-robin over its GPUs) after a warm-up
/// proof a worker on each (then `baseline` takes its second figure), prints each proof's
/// device and timings, and hands the proofs back in order.
fn multi_batch(
    multi: &MultiGpuProver,
    baseline: &mut Baseline,
    jobs: &[ProofJob<'_>],
) -> Result<Vec<ark_groth16::Proof<Bls12_381>>> {
    // A warm-up outside the batch's time: a proof a worker on every GPU,
    // at once (MultiGpuProver::warm_up).
    if let Some(first) = jobs.first() {
        multi.warm_up(first)?;
    }
    baseline.warmed()?;
    let clocks = |m: &MultiGpuProver| -> Result<Vec<Option<f64>>> {
        (0..m.devices().len())
            .map(|l| Ok(m.device_clock_ms(l)?))
            .collect()
    };
    let before = clocks(multi)?;
    let t = Instant::now();
    let out = multi.prove_batch(jobs, None)?;
    let end = Instant::now();
    let after = clocks(multi)?;
    let wall = (end - t).as_secs_f64();
    let mut proofs = Vec::with_capacity(out.len());
    let mut per_device: Vec<(i32, Vec<ProofTimings>)> = Vec::new();
    // (device, partition, GPU stage, witness pass) on the device's clock.
    type Interval = Option<(f64, f64)>;
    let mut stages: Vec<(i32, usize, Interval, Interval)> = Vec::new();
    for (i, o) in out.into_iter().enumerate() {
        let (proof, timings, device) = o.with_context(|| format!("partition {i}"))?;
        print!("{}: ", lane_name(multi, device));
        print_timings(i, &timings, None);
        stages.push((
            device,
            i,
            timings.gpu_stage_device_ms,
            timings.witness_pass_device_ms,
        ));
        match per_device.iter_mut().find(|(d, _)| *d == device) {
            Some((_, ts)) => ts.push(timings),
            None => per_device.push((device, vec![timings])),
        }
        proofs.push(proof);
    }
    println!(
        "batch: {} partitions on {} {} x {} workers in {wall:.3} s ({:.3} s a proof, {:.3} \
         proofs/s)",
        jobs.len(),
        multi.devices().len(),
        if multi.memory(0).is_some() {
            "GPU(s)"
        } else {
            "CPU lane(s)"
        },
        multi.workers_per_device(),
        wall / jobs.len().max(1) as f64,
        jobs.len() as f64 / wall
    );
    let devices = multi.devices();
    if multi.memory(0).is_none() {
        // CPU lanes: no GPU time or device memory to report.
        return Ok(proofs);
    }
    for (device, ts) in &per_device {
        // The lane of this device (results come in partition order).
        let lane = devices.iter().position(|d| d == device).unwrap_or(0);
        // CUDA events where the lane has a device clock, else host clocks.
        let busy = match (before[lane], after[lane]) {
            (Some(a), Some(b)) => cuzk_prover::gpu_busy_fraction_device(ts, a, b),
            _ => cuzk_prover::gpu_busy_fraction(ts, t, end),
        };
        let peak = multi
            .memory(lane)
            .map(|m| m.budget().peak_claimed_bytes())
            .unwrap_or(0);
        println!(
            "GPU {device}: busy {} of the batch's time (union of GPU stages, CUDA events), device memory \
             peak {} claimed, {} streamed a proof",
            busy.map_or("-".to_string(), |b| format!("{:.1}%", 100.0 * b)),
            cuzk_alloc::fmt_bytes(peak),
            cuzk_alloc::fmt_bytes(ts.first().map_or(0, |t| t.streamed_bytes))
        );
        // Where the GPU's time went: each proof's GPU stage and the witness
        // pass, in seconds from the batch's start on the device's clock,
        // in order of start (overlaps and gaps between them show).
        if let Some(t0) = before[lane] {
            let mut spans: Vec<(f64, f64, String)> = stages
                .iter()
                .filter(|s| s.0 == *device)
                .filter_map(|s| s.2.map(|(a, b)| (a, b, format!("proof {}", s.1))))
                .collect();
            let mut passes: Vec<(f64, f64)> = stages
                .iter()
                .filter(|s| s.0 == *device)
                .filter_map(|s| s.3)
                .collect();
            passes.sort_by(|a, b| a.0.total_cmp(&b.0));
            passes.dedup();
            spans.extend(
                passes
                    .into_iter()
                    .map(|(a, b)| (a, b, "witness pass".to_string())),
            );
            spans.sort_by(|a, b| a.0.total_cmp(&b.0));
            let line: Vec<String> = spans
                .iter()
                .map(|(a, b, what)| format!("{what} {:.3}-{:.3}", (a - t0) / 1e3, (b - t0) / 1e3))
                .collect();
            println!(
                "GPU {device}: timeline (s from the batch's start, CUDA events): {}",
                line.join(", ")
            );
        }
    }
    Ok(proofs)
}

/// "GPU d", or "CPU lane d" on a `MultiGpuProver::cpu`.
fn lane_name(multi: &MultiGpuProver, device: i32) -> String {
    if multi.memory(0).is_some() {
        format!("GPU {device}")
    } else {
        format!("CPU lane {device}")
    }
}

fn sha256(args: &Args, rng: &mut ChaCha20Rng) -> Result<()> {
    let k = args.log_constraints;
    let mut preimage = [0u8; 32];
    rng.fill_bytes(&mut preimage);
    let fit = Sha256Chain::rounds_for_log_constraints(k).context("--log-constraints")?;
    let rounds = fit.rounds;
    let circuit = Sha256Chain::new(preimage, rounds);
    println!(
        "circuit: sha256 chain of {rounds} compressions, {} constraints ({} a compression), \
         {} public inputs, domain 2^{k}",
        fit.num_constraints,
        fit.constraints_per_compression,
        fit.num_instance_variables - 1
    );
    let path = keys_dir(args).join(format!("sha256-chain-{rounds}.pk"));
    let pk = load_or_setup(&path, || {
        let mut srng = ChaCha20Rng::seed_from_u64(args.seed ^ 0x5e70);
        Ok(
            Groth16::<Bls12_381>::generate_random_parameters_with_reduction(
                circuit.clone(),
                &mut srng,
            )?,
        )
    })?;
    let pvk = ark_groth16::prepare_verifying_key(&pk.vk);
    if args.multi() {
        let t = Instant::now();
        let parts = (0..args.proofs)
            .map(|_| {
                let mut preimage = [0u8; 32];
                rng.fill_bytes(&mut preimage);
                synthesize(Sha256Chain::new(preimage, rounds), args.check_witness)
            })
            .collect::<cuzk_prover::Result<Vec<_>>>()?;
        println!(
            "synthesis: {} partitions in {:.2} s",
            parts.len(),
            t.elapsed().as_secs_f64()
        );
        // Every partition has the circuit's matrices: one shared copy,
        // evaluated on the GPU.
        let r1cs = match parts.first() {
            Some(w) => sparse(args, Arc::new(w.matrices.clone()))?,
            None => None,
        };
        let (multi, mut baseline) = make_multi(args, pk, r1cs.clone())?;
        let jobs: Vec<_> = parts
            .iter()
            .map(|w| ProofJob {
                matrices: r1cs.as_ref().map_or(&w.matrices, |r| r.matrices()),
                ..w.job(Fr::rand(rng), Fr::rand(rng))
            })
            .collect();
        let proofs = multi_batch(&multi, &mut baseline, &jobs)?;
        for (i, (w, proof)) in parts.iter().zip(&proofs).enumerate() {
            if !Groth16::<Bls12_381>::verify_proof(&pvk, proof, w.public_inputs())? {
                bail!("partition {i} does not verify");
            }
        }
        println!("batch: all {} proofs verified by ark-groth16", proofs.len());
        return baseline.check_release(multi);
    }
    let prover = make_prover(args, pk, None)?;
    if args.batch {
        let parts: Vec<Sha256Chain> = (0..args.proofs)
            .map(|_| {
                let mut preimage = [0u8; 32];
                rng.fill_bytes(&mut preimage);
                Sha256Chain::new(preimage, rounds)
            })
            .collect();
        let batch: Vec<CircuitJob<Sha256Chain>> = parts
            .iter()
            .map(|part| CircuitJob {
                circuit: part.clone(),
                r: Fr::rand(rng),
                s: Fr::rand(rng),
            })
            .collect();
        let t = Instant::now();
        let out = prover.prove_batch(batch, &BatchOptions::default());
        let wall = t.elapsed().as_secs_f64();
        for (i, (part, o)) in parts.iter().zip(out).enumerate() {
            let (proof, timings) = o?;
            print_timings(i, &timings, None);
            if !Groth16::<Bls12_381>::verify_proof(&pvk, &proof, &part.public_inputs())? {
                bail!("partition {i} does not verify");
            }
        }
        println!(
            "batch: {} partitions in {wall:.3} s ({:.3} s a proof), all verified by ark-groth16",
            parts.len(),
            wall / parts.len().max(1) as f64
        );
        return Ok(());
    }
    let inputs = circuit.public_inputs();
    for i in 0..args.proofs {
        let t = Instant::now();
        let (proof, timings) = prover.prove(circuit.clone(), rng)?;
        print_timings(i, &timings, Some(t.elapsed().as_secs_f64()));
        let t = Instant::now();
        let ok = Groth16::<Bls12_381>::verify_proof(&pvk, &proof, &inputs)?;
        println!(
            "proof {i}: ark-groth16 verify: {} ({:.1} ms)",
            if ok { "OK" } else { "FAILED" },
            t.elapsed().as_secs_f64() * 1e3
        );
        if !ok {
            bail!("proof {i} does not verify");
        }
    }
    Ok(())
}

fn synthetic(args: &Args, rng: &mut ChaCha20Rng) -> Result<()> {
    let k = args.log_constraints;
    let porep = args.circuit == CircuitKind::Porep;
    let t = Instant::now();
    let mut w = if porep {
        let c = cuzk_prover::synthetic::PorepShaped::new(k, 1, args.seed);
        c.check()?;
        let need = c.host_bytes_at_least(true);
        if let Some(total) = cuzk_alloc::host_memory_total().filter(|&t| need > t) {
            bail!(
                "a PoRep-shaped circuit of 2^{k} domain and its key need at least {:.0} GiB of \
                 host memory; this host has {:.0} GiB: give a smaller --log-constraints (the \
                 seed workload's is 27)",
                need as f64 / (1u64 << 30) as f64,
                total as f64 / (1u64 << 30) as f64
            );
        }
        c.matrices()?
    } else {
        RandomCircuit::fill_domain(k, 8, 0, args.seed).matrices()?
    };
    if w.matrices.num_constraints == 0 {
        bail!("a domain of 2^{k} holds only the public inputs: give --log-constraints 4 or more");
    }
    println!(
        "circuit: {}, {} constraints, {} variables, {:.1}% of the witness 0 or 1, domain 2^{k}, \
         built in {:.2} s",
        if porep { "PoRep-shaped" } else { "synthetic" },
        w.matrices.num_constraints,
        w.full_assignment.len(),
        100.0 * w.witness_shape().fraction_zero_one(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let name = if porep {
        format!(
            "porep{}-2^{k}-s{}",
            cuzk_prover::synthetic::PorepShaped::SHAPE_VERSION,
            args.seed
        )
    } else {
        format!("synthetic-2^{k}-s{}", args.seed)
    };
    let (pk, origin) =
        cuzk_prover::synthetic::cached_key(&keys_dir(args), &name, KEEP_FREE_BYTES, || {
            let mut krng = ChaCha20Rng::seed_from_u64(args.seed ^ 0x006b_6579);
            if porep {
                cuzk_prover::synthetic::PorepShaped::random_key(&w, &mut krng)
            } else {
                random_key_for(&w, &mut krng)
            }
        })?;
    println!(
        "key: random points, {} in {:.2} s (proofs are timed, not verified)",
        match origin {
            cuzk_prover::synthetic::KeyOrigin::Read => "read from the cache",
            cuzk_prover::synthetic::KeyOrigin::Made { written: true } => "made and cached",
            cuzk_prover::synthetic::KeyOrigin::Made { written: false } => "made (not cached)",
        },
        t.elapsed().as_secs_f64()
    );
    // The matrices move into one shared copy (the jobs borrow it) that the
    // GPU evaluates.
    let matrices = Arc::new(std::mem::take(&mut w.matrices));
    let r1cs = sparse(args, matrices.clone())?;
    let job = |rng: &mut ChaCha20Rng| ProofJob {
        matrices: &matrices,
        full_assignment: &w.full_assignment,
        num_inputs: w.num_inputs,
        r: Fr::rand(rng),
        s: Fr::rand(rng),
    };
    if args.multi() {
        let (multi, mut baseline) = make_multi(args, pk, r1cs)?;
        let jobs: Vec<_> = (0..args.proofs).map(|_| job(rng)).collect();
        multi_batch(&multi, &mut baseline, &jobs)?;
        return baseline.check_release(multi);
    }
    let prover = make_prover(args, pk, r1cs)?;
    let start = Instant::now();
    for i in 0..args.proofs {
        let job = job(rng);
        let t = Instant::now();
        let (_proof, timings) = prover.prove_job(&job)?;
        print_timings(i, &timings, Some(t.elapsed().as_secs_f64()));
    }
    let wall = start.elapsed().as_secs_f64();
    println!(
        "batch: {} proofs one after another in {wall:.3} s ({:.3} s a proof, {:.3} proofs/s)",
        args.proofs,
        wall / args.proofs.max(1) as f64,
        args.proofs as f64 / wall
    );
    Ok(())
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    if args.devices == 0 || args.workers == 0 {
        bail!("--devices and --workers must be at least 1");
    }
    if args.proofs == 0 {
        bail!("--proofs 0: give at least one proof");
    }
    if !args.batch && (args.devices > 1 || args.workers > 1) {
        bail!("--devices and --workers apply to --batch: add --batch");
    }
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    match args.circuit {
        CircuitKind::Sha256 => sha256(&args, &mut rng),
        CircuitKind::Synthetic | CircuitKind::Porep => synthetic(&args, &mut rng),
    }
}
