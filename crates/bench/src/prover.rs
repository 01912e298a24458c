//! The prover layer: Groth16 proofs of synthetic R1CS (dense and
//! PoRep-shaped) and of a real circuit (the SHA-256 chain, set up by
//! ark-groth16) on the GPU (with each stage's time) and through the CPU
//! path; the GPU proof is checked against the CPU path's proof and
//! ark-groth16's proof for the same randomness (ark-groth16 timed as the
//! CPU reference, a fitted line beyond the sizes it runs), real proofs
//! against ark-groth16's verifier, and PoRep-shaped and real proofs
//! against supraseal-c2's proof of the same inputs (the `cuzk-supraseal`
//! process, when it was built). In `--full`, batches of 10 partitions (4
//! at dense 2^26) on the whole card and under 16 GiB, with their GPU busy
//! fraction, memory peaks and a check that device memory returns to its
//! figure before the batch.

use crate::checks::Verdict;
use crate::cli::Run;
use crate::progress::step;
use crate::report::Record;
use crate::timing::{median, once_ms};
use anyhow::Result;
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::UniformRand;
use cuzk_field::Fr;
use cuzk_prover::{Proof, ProofJob, ProofTimings, Prover};
use rand::Rng;

const LAYER: &str = "prover";
const CPU_PATH: &str = "cuzk prover, CPU path (blst, ark-poly)";
const VERIFIER: &str = "ark-groth16 verifier";
/// A batch row's implementation label: `partitions` partitions, then the
/// budget and the mode (see [`BatchMode`]).
fn batch_impl(partitions: usize, cap: Option<u64>, mode: BatchMode) -> String {
    let mut s =
        format!("cuzk prover, GPU, batch of {partitions} partitions, {BATCH_WORKERS} workers");
    if cap.is_some() {
        s.push_str(", 16 GiB budget");
        s.push_str(match mode {
            BatchMode::Default => "",
            // H's MSM and the witness MSMs one after another
            // ([`cuzk_prover::Prover::with_msm_overlap`] off): the overlap's
            // baseline, in the same run.
            BatchMode::SerialMsms => ", MSMs one after another",
            // Only the bases of the witness queries' non-zero scalars
            // streamed ([`cuzk_prover::Prover::with_nonzero_streaming`]).
            BatchMode::NonZeroBases => ", only non-zero scalars' bases streamed",
            // The batch's witness MSMs in one pass
            // ([`cuzk_prover::MultiGpuProver::with_witness_pass`]).
            BatchMode::WitnessPass => ", witness MSMs in one pass",
        });
    }
    s
}
const GPU_HOST_EVAL: &str = "cuzk prover, GPU, A z B z C z on the CPU (one warm proof)";
/// [`GPU_HOST_EVAL`] where the rows do not fit the host: A z, B z, C z
/// evaluated on the CPU from the prover's compact form, every constraint
/// checked (`Prover::with_check_witness`).
const GPU_COMPACT_EVAL: &str =
    "cuzk prover, GPU, A z B z C z on the CPU from the compact form, witness checked (one warm proof)";
const ARK_GROTH16: &str = "ark-groth16 0.6 (CPU, all cores)";
const GPU_PRECOMPUTED: &str = "cuzk prover, GPU, precomputed bases";

/// The dense size (log2) that also gets a row with the key's bases
/// precomputed (`Prover::with_precomputed_bases`: 11 to 16 shifted copies
/// of each query where the card holds them, made once a key), in `--full`:
/// the issue's 2^24 proof in the prover's fastest configuration.
const PRECOMPUTED_AT: u32 = 24;

/// ark-groth16, the CPU reference of the prover's speed-up (issue 25: "up
/// to the size that finishes in about a minute, with a fitted line
/// beyond"), proves the dense circuits up to this size (log2; estimated
/// a minute at 2^22 on 16 cores, its MSMs most of it) and its proof is
/// checked against cuzk's; the larger sizes get a figure from a line
/// fitted to the measured ones ([`ARK_FITTED`]).
pub(crate) const ARK_MAX: u32 = 22;

/// Whether ark-groth16 proves the dense 2^k circuit (see [`ARK_MAX`]).
pub(crate) fn ark_at(k: u32) -> bool {
    k <= ARK_MAX
}

/// The fitted ark-groth16 figures: t = a n^b through the measured sizes
/// of 2^20 and more (all of them where fewer than two are that large;
/// least squares on log t against log n), for the dense sizes past
/// [`ARK_MAX`].
const ARK_FITTED: &str = "ark-groth16 0.6 (CPU, all cores), fitted a n^b";

/// Sizes (log2 of the constraint domain): `--quick`, default, `--full`
/// (2^22 for ark-groth16's reference; 2^24 and 2^26 on the GPU only:
/// their CPU proofs would take many minutes).
pub(crate) const LOGS: [&[u32]; 3] = [&[14], &[16, 20], &[16, 20, 22, 24, 26]];

/// The CPU path proves up to this size (log2): beyond it one CPU proof
/// takes minutes.
const CPU_MAX: u32 = 20;

/// PoRep-shaped sizes (log2 of the domain): `--quick`, default, `--full`
/// (2^27: Filecoin PoRep C2's partition, a 49 GB key).
pub(crate) const POREP_LOGS: [&[u32]; 3] = [&[14], &[20], &[20, 26, 27]];

/// supraseal-c2 proves PoRep-shaped circuits up to this size (log2): its
/// parameter file of the 2^27 key (49 GB) does not fit the GPU machine's
/// disk beside the bench.
const PEER_MAX: u32 = 26;

/// The GPU proof with A z, B z, C z evaluated on the CPU from the rows
/// (the comparison for GPU evaluation, [`GPU_HOST_EVAL`]) runs up to this
/// size (log2): at 2^27 the rows (about 40 GB) beside the key (49 GB), the
/// three vectors (13 GB) and, on a card that cannot hold the key, the
/// prover's compacted copies (25 GB) leave the 128 GiB host too little
/// margin. Past it the rows go before the first proof, and the comparison
/// is with the CPU's evaluation of the compact form ([`GPU_COMPACT_EVAL`])
/// where the host has room for the vectors.
const HOST_EVAL_MAX: u32 = 26;

/// SHA-256 chain sizes (log2 of the domain; ark-groth16's setup took
/// 2.5 s at 2^16 on 2 cores): `--quick`, default, `--full`.
pub(crate) const SHA_LOGS: [&[u32]; 3] = [&[], &[16], &[18]];

/// supraseal-c2's timed proofs after its first (which waits for its
/// parameter load) at 2^k: one at 2^26 and beyond, where its host-side
/// work makes a proof take many seconds.
fn peer_reps(k: u32) -> usize {
    if k >= 26 {
        1
    } else {
        3
    }
}

/// Partitions a batch row proves, with [`BATCH_WORKERS`] workers (the seed
/// workload's 10), but for [`SHORT_BATCH`].
const BATCH_PARTITIONS: usize = 10;
/// The batch size (log2 domain, PoRep-shaped) whose rows prove
/// [`SHORT_BATCH_PARTITIONS`] partitions: dense 2^26, the slowest
/// partitions of the layer, where ten would take a large share of its 10
/// minutes (BENCHMARKS.md); two a worker after the warm-up still give the
/// steady rate.
const SHORT_BATCH: (u32, bool) = (26, false);
/// Partitions of [`SHORT_BATCH`]'s rows.
const SHORT_BATCH_PARTITIONS: usize = 4;

/// Partitions of the 2^k batch rows (PoRep-shaped or dense).
fn batch_partitions(k: u32, porep: bool) -> usize {
    if (k, porep) == SHORT_BATCH {
        SHORT_BATCH_PARTITIONS
    } else {
        BATCH_PARTITIONS
    }
}
/// Workers on the GPU in a batch row (the seed workload's 2).
const BATCH_WORKERS: usize = 2;
/// Disk left free when caching a PoRep-shaped key (supraseal-c2's
/// parameter files of the same size go there too).
const KEEP_FREE_BYTES: u64 = 24 << 30;

/// The seed workload's card: a 16 GiB budget for the capped batch rows.
const CARD_16_GIB: u64 = 16 << 30;

/// The sizes (log2 domain, PoRep-shaped) that get batch rows in `--full`,
/// each on the whole card and under a 16 GiB budget (the seed workload's
/// card).
const BATCHES: [(u32, bool); 5] = [
    (20, false),
    (24, false),
    (26, false),
    (26, true),
    (27, true),
];

/// The batch size (log2 domain, PoRep-shaped) that also gets two rows
/// under 16 GiB beside the default's with `--variants`: the MSMs one after
/// another (the overlap's baseline), and only the non-zero scalars' bases
/// streamed.
const SERIAL_BATCH: (u32, bool) = (26, true);

/// How a batch row's prover runs its MSMs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BatchMode {
    /// The defaults: H's MSM beside the witness MSMs where it applies,
    /// every base streamed.
    Default,
    /// The MSMs one after another ([`cuzk_prover::Prover::with_msm_overlap`]
    /// off).
    SerialMsms,
    /// Only the non-zero scalars' bases of the witness queries streamed
    /// ([`cuzk_prover::Prover::with_nonzero_streaming`] on).
    NonZeroBases,
    /// The batch's witness MSMs in one pass
    /// ([`cuzk_prover::MultiGpuProver::with_witness_pass`]).
    WitnessPass,
}

/// The batch size (log2 domain, PoRep-shaped) that also gets a row under
/// 16 GiB with the witness pass: the seed workload's partition.
const PASS_BATCH: (u32, bool) = (27, true);

/// Batch rows in a `--full` run (progress steps): each size's two (16 GiB
/// and the whole card), the witness pass's, and with `--variants` two more.
fn batch_rows(variants: bool) -> usize {
    BATCHES.len() * 2 + 1 + if variants { 2 } else { 0 }
}

/// Progress steps of the prover layer in `run`: a circuit's key and its
/// proofs, ark-groth16, supraseal-c2, the SHA-256 chain's setup, proofs
/// and peer, and the batch rows.
pub(crate) fn steps(run: &Run) -> usize {
    let size = run.size;
    let dense = size.pick(LOGS[0], LOGS[1], LOGS[2]);
    let porep = size.pick(POREP_LOGS[0], POREP_LOGS[1], POREP_LOGS[2]);
    let sha = size.pick(SHA_LOGS[0], SHA_LOGS[1], SHA_LOGS[2]);
    let batches = if size == crate::cli::Size::Full {
        batch_rows(run.variants)
    } else {
        0
    };
    2 * dense.len()
        + dense.iter().filter(|&&k| ark_at(k)).count()
        + 2 * porep.len()
        + porep.iter().filter(|&&k| k <= PEER_MAX).count()
        + 3 * sha.len()
        + batches
        + usize::from(dense.contains(&PRECOMPUTED_AT) && size == crate::cli::Size::Full)
}

/// What a row checks beyond the CPU path.
#[derive(Default)]
struct Extra<'a> {
    /// Compare with supraseal-c2 (PoRep-shaped and real circuits).
    peer: bool,
    /// Also prove a batch of `partitions` through `MultiGpuProver` under
    /// each of these budget caps (`None`: the whole card), its prover in
    /// each mode ([`batch_for`]).
    batch: Vec<(Option<u64>, BatchMode)>,
    /// Partitions of each batch row ([`batch_partitions`]).
    partitions: usize,
    /// Also prove with ark-groth16 (one proof, timed): its proof must
    /// equal cuzk's.
    ark: bool,
    /// Also prove with the key's bases precomputed ([`GPU_PRECOMPUTED`]).
    precomputed: bool,
    /// A real key: every proof must pass ark-groth16's verifier against
    /// these public inputs.
    verify: Option<(
        &'a ark_groth16::PreparedVerifyingKey<ark_bls12_381::Bls12_381>,
        Vec<Fr>,
    )>,
}

/// The CPU path proves PoRep-shaped circuits up to this size (log2); the
/// larger ones are timed on the GPU only, unchecked.
const POREP_CPU_MAX: u32 = 20;

/// Groth16 proofs of synthetic R1CS filling 2^k constraints (keys of
/// random points: timed, not verified; the prover's tests and example
/// verify real circuits): dense random circuits, and PoRep-shaped ones (a
/// witness of bits, sparse A and B: `synthetic::PorepShaped`). cuzk's
/// prover on the GPU (median of 3 proofs, with each stage's median as its
/// own figure), on the CPU (one proof) and ark-groth16 (one proof). All
/// take the same r and s, so their proofs must be equal.
pub(crate) fn bench(run: &Run, rec: &mut Record, flush: &dyn Fn(&Record)) -> Result<()> {
    let mut rng = run.rng(5);
    for &k in run.size.pick(LOGS[0], LOGS[1], LOGS[2]) {
        let name = format!("Groth16 proof 2^{k}");
        step(format!("bench prover: {name}: circuit and key"));
        let (w, pk) = synthetic(k, rng.gen(), &mut rng)?;
        one(
            run,
            rec,
            &mut rng,
            &name,
            (w, pk),
            k <= CPU_MAX,
            Extra {
                batch: batch_for(run, k, false),
                partitions: batch_partitions(k, false),
                ark: ark_at(k),
                precomputed: run.size == crate::cli::Size::Full && k == PRECOMPUTED_AT,
                ..Extra::default()
            },
        )?;
        flush(rec);
    }
    fit_ark(run, rec);
    for &k in run.size.pick(POREP_LOGS[0], POREP_LOGS[1], POREP_LOGS[2]) {
        let name = format!("Groth16 proof 2^{k}, PoRep-shaped");
        step(format!("bench prover: {name}: circuit and key"));
        let seed: u64 = rng.gen();
        let key_seed: u64 = rng.gen();
        let c = cuzk_prover::synthetic::PorepShaped::new(k, 1, seed);
        let w = c.matrices()?;
        let make = || {
            let mut krng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::seed_from_u64(key_seed);
            cuzk_prover::synthetic::PorepShaped::random_key(&w, &mut krng)
        };
        let pk = match &run.key_cache {
            Some(dir) => {
                cuzk_prover::synthetic::cached_key(
                    dir,
                    &format!(
                        "porep{}-2^{k}-i1-s{seed:x}-k{key_seed:x}",
                        cuzk_prover::synthetic::PorepShaped::SHAPE_VERSION
                    ),
                    KEEP_FREE_BYTES,
                    make,
                )?
                .0
            }
            None => make()?,
        };
        let extra = Extra {
            peer: k <= PEER_MAX,
            batch: batch_for(run, k, true),
            partitions: batch_partitions(k, true),
            ..Extra::default()
        };
        one(
            run,
            rec,
            &mut rng,
            &name,
            (w, pk),
            k <= POREP_CPU_MAX,
            extra,
        )?;
        flush(rec);
    }
    for &k in run.size.pick(SHA_LOGS[0], SHA_LOGS[1], SHA_LOGS[2]) {
        use cuzk_prover::circuits::Sha256Chain;
        let fit = Sha256Chain::rounds_for_log_constraints(k)?;
        let plural = if fit.rounds == 1 { "" } else { "s" };
        let name = format!(
            "Groth16 proof 2^{k}, SHA-256 chain ({} compression{plural}, ark-groth16 setup)",
            fit.rounds
        );
        step(format!("bench prover: {name}: setup"));
        let c = Sha256Chain::new(rng.gen(), fit.rounds);
        let pk = ark_groth16::Groth16::<ark_bls12_381::Bls12_381>::generate_random_parameters_with_reduction(
            c.clone(),
            &mut rng,
        )?;
        let pvk = ark_groth16::prepare_verifying_key(&pk.vk);
        let w = cuzk_prover::synthesize(c, true)?;
        let extra = Extra {
            peer: true,
            verify: Some((&pvk, w.public_inputs().to_vec())),
            batch: Vec::new(),
            partitions: 0,
            ark: false,
            precomputed: false,
        };
        one(run, rec, &mut rng, &name, (w, pk), true, extra)?;
        flush(rec);
    }
    Ok(())
}

/// One circuit's figures and check (see [`bench()`]); the CPU path's proof
/// is the reference when `cpu`; `extra` adds the verifier and the peer.
fn one(
    run: &Run,
    rec: &mut Record,
    rng: &mut rand_chacha::ChaCha20Rng,
    name: &str,
    (mut witness, pk): (cuzk_prover::Synthesized, cuzk_prover::ProvingKey),
    cpu: bool,
    extra: Extra<'_>,
) -> Result<()> {
    let name = name.to_string();
    {
        step(format!("bench prover: {name}"));
        // One shared copy of the matrices: the jobs borrow it, and the GPU
        // prover evaluates it from its compact form.
        let matrices = std::sync::Arc::new(std::mem::take(&mut witness.matrices));
        let (r, s) = (Fr::rand(rng), Fr::rand(rng));
        let job = ProofJob {
            matrices: &matrices,
            ..witness.job(r, s)
        };
        let n = job.matrices.num_constraints;
        let verify = |rec: &mut Record, who: &str, p: &Proof| -> Result<()> {
            if let Some((pvk, inputs)) = &extra.verify {
                let ok =
                    ark_groth16::Groth16::<ark_bls12_381::Bls12_381>::verify_proof(pvk, p, inputs)?;
                let what = format!("{name}: {who} proof verifies");
                rec.checks.values(LAYER, what, VERIFIER, n, &ok, &true);
            }
            Ok(())
        };
        let mut want = None;
        if cpu {
            let (ms, proof) = once_ms(|| prove(&Prover::cpu(pk.clone())?, &job));
            rec.figure(LAYER, name.clone(), CPU_PATH, n, ms, "wall");
            let proof = proof?.0;
            verify(rec, "cuzk prover, CPU path", &proof)?;
            want = Some(proof);
        }
        let ark = if extra.ark {
            step(format!("bench prover: {name}: ark-groth16"));
            let abc = matrices.to_ark();
            let (ms, proof) = once_ms(|| {
                ark_groth16::Groth16::<ark_bls12_381::Bls12_381>::create_proof_with_reduction_and_matrices(
                    &pk,
                    r,
                    s,
                    &abc,
                    job.num_inputs,
                    n,
                    job.full_assignment,
                )
            });
            match proof {
                Ok(proof) => {
                    rec.figure(LAYER, name.clone(), ARK_GROTH16, n, ms, "wall");
                    if let Some(w) = &want {
                        rec.checks.proofs(
                            LAYER,
                            format!("{name}: cuzk prover, CPU path"),
                            ARK_GROTH16,
                            n,
                            w,
                            &proof,
                        );
                    }
                    Some(proof)
                }
                // The reference failed: a failed check, not the end of the
                // layer's other rows.
                Err(e) => {
                    rec.checks.record(
                        LAYER,
                        format!("{name}: ark-groth16 proves"),
                        ARK_GROTH16,
                        n,
                        Verdict::Mismatch {
                            detail: format!("ark-groth16 failed: {e}"),
                        },
                    );
                    None
                }
            }
        } else {
            None
        };
        let what = format!("{name}: cuzk prover, GPU");
        if run.gpu.is_none() {
            if cpu {
                rec.checks.skip(LAYER, what, CPU_PATH, n, "no GPU");
            }
            return Ok(());
        }
        let mem = cuzk_alloc::DeviceMemory::from_env(0)?;
        // One copy of the key in host memory for every prover below.
        let pk = std::sync::Arc::new(pk);
        let prover = Prover::with_shared_key(pk.clone(), mem.clone())?;
        let k = n.next_power_of_two().trailing_zeros();
        let host_eval_wanted = k <= HOST_EVAL_MAX;
        let r1cs = cuzk_prover::SparseR1cs::new(matrices.clone())?;
        // Where nothing below reads the rows (no CPU reference, ark-groth16,
        // supraseal-c2 or host evaluation), they go: at 2^27 they are about
        // 40 GB of the host's memory, which the batch rows' streamed key
        // needs. The jobs then borrow the compact form's row-less matrices.
        let rows_needed = cpu || extra.ark || extra.peer || host_eval_wanted;
        let r1cs = std::sync::Arc::new(if rows_needed {
            r1cs
        } else {
            r1cs.without_rows()
        });
        let job = ProofJob {
            matrices: r1cs.matrices(),
            ..witness.job(r, s)
        };
        let mut matrices = rows_needed.then_some(matrices);
        let mut prover = prover.with_r1cs(r1cs.clone())?;
        // The warm-up, on the GPU-evaluation path: tables, pools, the key's
        // first use.
        prove(&prover, &job)?;
        // The path before GPU evaluation, for comparison: one proof whose
        // job holds the full matrices (not the prover's compact form), so
        // A z, B z, C z are evaluated on the CPU; warm from the proof above.
        let host_eval = match (&matrices, host_eval_wanted) {
            (Some(m), true) => {
                let host_job = ProofJob {
                    matrices: m,
                    ..witness.job(r, s)
                };
                let (ms, host_eval) = once_ms(|| prove(&prover, &host_job));
                rec.figure(
                    LAYER,
                    name.clone(),
                    GPU_HOST_EVAL,
                    n,
                    ms,
                    "wall, host to host",
                );
                Some((GPU_HOST_EVAL, host_eval.map(|p| p.0)))
            }
            // Past HOST_EVAL_MAX the rows are gone: the CPU evaluates the
            // prover's compact form instead (the witness check on, which
            // also checks every constraint's A z * B z = C z on the CPU),
            // where the host has room for the three vectors.
            _ => {
                let trimmed = std::time::Instant::now();
                release_free_host_memory();
                crate::progress::say(format!(
                    "  {name}: host memory trimmed in {:.1} s",
                    trimmed.elapsed().as_secs_f64()
                ));
                let need = 3 * (n.next_power_of_two() as u64) * 32 + (8 << 30);
                if cuzk_alloc::host_memory_available().is_some_and(|a| a >= need) {
                    prover = prover.with_check_witness(true);
                    let (ms, host_eval) = once_ms(|| prove(&prover, &job));
                    prover = prover.with_check_witness(false);
                    // Where this proof's time goes (the layer's length).
                    if let Ok((_, t)) = &host_eval {
                        crate::progress::say(format!(
                            "  {name}: the CPU-evaluation proof took {:.1} s: {t}",
                            ms / 1e3
                        ));
                    }
                    rec.figure(
                        LAYER,
                        name.clone(),
                        GPU_COMPACT_EVAL,
                        n,
                        ms,
                        "wall, host to host",
                    );
                    Some((GPU_COMPACT_EVAL, host_eval.map(|p| p.0)))
                } else {
                    None
                }
            }
        };
        let mut runs: Vec<(f64, ProofTimings)> = Vec::new();
        let mut proofs = Vec::new();
        for _ in 0..3 {
            let (ms, proof) = once_ms(|| prove(&prover, &job));
            let (proof, timings) = proof?;
            proofs.push(proof);
            runs.push((ms, timings));
        }
        // Every run is checked: the first proof that differs from the CPU
        // path's (same r and s), else the first.
        let mut got = proofs
            .iter()
            .find(|p| want.as_ref().is_some_and(|w| *p != w))
            .unwrap_or(&proofs[0])
            .clone();
        if rec.checks.inject(LAYER) {
            got.a = (got.a + ark_bls12_381::G1Affine::generator()).into_affine();
        }
        if let Some(w) = &want {
            rec.checks.proofs(LAYER, what.clone(), CPU_PATH, n, &got, w);
        }
        if let Some(a) = &ark {
            rec.checks.proofs(LAYER, what, ARK_GROTH16, n, &got, a);
        }
        let what_eval = format!("{name}: cuzk prover, GPU evaluation of A z, B z, C z");
        // A failed comparison proof is a failed check; the layer goes on.
        match &host_eval {
            Some((against, Ok(h))) => rec.checks.proofs(LAYER, what_eval, against, n, &got, h),
            Some((against, Err(e))) => rec.checks.record(
                LAYER,
                what_eval,
                against,
                n,
                Verdict::Mismatch {
                    detail: format!("the comparison proof failed: {e:#}"),
                },
            ),
            None => rec.checks.skip(
                LAYER,
                what_eval,
                GPU_COMPACT_EVAL,
                n,
                "the CPU evaluation's three vectors do not fit the host beside this key",
            ),
        }
        let on_gpu = runs.iter().all(|r| r.1.eval_on_gpu);
        rec.checks.values(
            LAYER,
            format!("{name}: A z, B z, C z evaluated on the GPU"),
            "Prover::with_r1cs",
            n,
            &on_gpu,
            &true,
        );
        verify(rec, "cuzk prover, GPU", &got)?;
        rec.figure(
            LAYER,
            name.clone(),
            "cuzk prover, GPU",
            n,
            median(runs.iter().map(|r| r.0).collect()),
            "wall, host to host",
        );
        type Stage = (&'static str, fn(&ProofTimings) -> f64);
        let stages: [Stage; 7] = [
            (
                "cuzk GPU stage: H (z upload, A z B z C z, 7 NTTs + quotient)",
                |t| t.h_ntt_ms,
            ),
            ("cuzk GPU stage: MSM A (G1)", |t| t.msm_a_ms),
            ("cuzk GPU stage: MSM B (G2)", |t| t.msm_b_g2_ms),
            ("cuzk GPU stage: MSM B (G1)", |t| t.msm_b_g1_ms),
            ("cuzk GPU stage: MSM H (G1)", |t| t.msm_h_ms),
            ("cuzk GPU stage: MSM L (G1)", |t| t.msm_l_ms),
            (
                "cuzk host stage: job checks, z to pinned memory, assembly (CPU)",
                |t| t.eval_ms + t.assembly_ms,
            ),
        ];
        for (label, get) in stages {
            rec.figure(
                LAYER,
                name.clone(),
                label,
                n,
                median(runs.iter().map(|r| get(&r.1)).collect()),
                "wall, per stage",
            );
        }
        // The precomputed row consumes the prover (the rows after it need
        // none: no peer at its size); a failure there is a failed check,
        // and the layer goes on.
        let prover = if extra.precomputed {
            if let Err(e) = precomputed(rec, &name, n, (prover, &mem), &job, &got) {
                rec.checks.record(
                    LAYER,
                    format!("{name}: {GPU_PRECOMPUTED} proves"),
                    "every proof made",
                    n,
                    Verdict::Mismatch {
                        detail: format!("{e:#}"),
                    },
                );
            }
            None
        } else {
            Some(prover)
        };
        // The single proof's prover goes before the batches (through
        // supraseal-c2's comparison, which writes its key as the peer's
        // parameter file first): a batch row measures the card with its own
        // provers only, and at 2^27 the host could not hold a second
        // prover's copies of the compacted queries (25 GB) beside it.
        match prover {
            Some(prover) if extra.peer => {
                let reps = run
                    .peer_reps
                    .unwrap_or_else(|| peer_reps(n.next_power_of_two().trailing_zeros()));
                peer(rec, &name, n, (prover, mem), &job, &got, &verify, reps)?;
            }
            prover => {
                drop(prover);
                mem.trim()?;
            }
        }
        // The batches read the compact form only: where the rows were kept
        // for the readers above, they go now, on a thread of their own
        // beside the first batch row's setup and warm-up (a few seconds to
        // a quarter of a minute of small frees at 2^24 to 2^26), joined
        // before that row's timed batch.
        let (r1cs, mut freeing) = match std::sync::Arc::try_unwrap(r1cs) {
            Ok(form) if !extra.batch.is_empty() && form.has_rows() => {
                let lean = std::sync::Arc::new(form.without_rows());
                let rows = matrices.take();
                (lean, Some(std::thread::spawn(move || drop(rows))))
            }
            Ok(form) => (std::sync::Arc::new(form), None),
            Err(shared) => {
                crate::progress::say(format!(
                    "  {name}: the compact form is still shared: its rows stay until the size's end"
                ));
                (shared, None)
            }
        };
        let job = ProofJob {
            matrices: r1cs.matrices(),
            ..witness.job(r, s)
        };
        // A row's prover serves the next row too where both have the same
        // budget cap (the 16 GiB rows at 2^27): making one (the key
        // page-locked, the compacted queries copied) and dropping it take
        // seconds that measure nothing.
        let mut held = None;
        for (i, &(cap, mode)) in extra.batch.iter().enumerate() {
            let keep = extra.batch.get(i + 1).is_some_and(|next| next.0 == cap);
            // A batch that fails is a failed check; the layer goes on.
            if let Err(e) = batch(
                rec,
                &name,
                (pk.clone(), &witness, &r1cs),
                (&job, &got),
                rng,
                (cap, mode, extra.partitions),
                (&mut freeing, &mut held, keep),
            ) {
                rec.checks.record(
                    LAYER,
                    format!("{name}: batch ({})", batch_label(cap, mode)),
                    "every partition proved",
                    n,
                    Verdict::Mismatch {
                        detail: format!("{e:#}"),
                    },
                );
            }
        }
        // Everything of this size goes here, before the next size's
        // circuit is built: its key and rows beside the next circuit and
        // its prover would not fit a 128 GiB host at 2^27. The rows' thread
        // joined, the key first (a few large buffers), then any rows left
        // (hundreds of millions of small vectors at 2^26): freed on this
        // thread, since a free racing the next build on every core for the
        // allocator's arenas, or several threads freeing at once, takes
        // longer (BENCHMARKS.md).
        if let Some(f) = freeing {
            f.join()
                .map_err(|_| anyhow::anyhow!("{name}: freeing the rows panicked"))?;
        }
        drop((pk, r1cs, witness));
        drop(matrices);
    }
    Ok(())
}

/// The batch rows of a 2^k circuit (PoRep-shaped or dense) in this run
/// (none outside `--full`; the variants of [`SERIAL_BATCH`] with
/// `--variants`): (budget cap, mode). The capped rows, the seed
/// workload's, come first: a whole-card batch takes the most host memory
/// of the process (the PoRep-shaped 2^27 one about 108 GiB of a 128 GiB
/// host, BENCHMARKS.md), and the rows after it may find too little left.
fn batch_for(run: &Run, k: u32, porep: bool) -> Vec<(Option<u64>, BatchMode)> {
    if run.size != crate::cli::Size::Full || !BATCHES.contains(&(k, porep)) {
        return Vec::new();
    }
    let mut rows = vec![(Some(CARD_16_GIB), BatchMode::Default)];
    if (k, porep) == SERIAL_BATCH && run.variants {
        rows.push((Some(CARD_16_GIB), BatchMode::SerialMsms));
        rows.push((Some(CARD_16_GIB), BatchMode::NonZeroBases));
    }
    if (k, porep) == PASS_BATCH {
        rows.push((Some(CARD_16_GIB), BatchMode::WitnessPass));
    }
    rows.push((None, BatchMode::Default));
    rows
}

/// Adds [`ARK_FITTED`] figures for the dense sizes of this run past
/// [`ARK_MAX`]: t = a n^b by least squares (log t against log n) through
/// ark-groth16's measured dense proofs; nothing with fewer than two.
fn fit_ark(run: &Run, rec: &mut Record) {
    let all: Vec<(f64, f64)> = rec
        .figures
        .iter()
        .filter(|f| f.layer == LAYER && f.implementation == ARK_GROTH16 && f.median_ms > 0.0)
        .map(|f| ((f.elements as f64).ln(), f.median_ms.ln()))
        .collect();
    // Small sizes carry fixed costs (threads, allocation) that bend the
    // line: fit the large ones where there are two.
    let large: Vec<(f64, f64)> = all
        .iter()
        .copied()
        .filter(|&(x, _)| x >= ((1u64 << 19) as f64).ln())
        .collect();
    let points = if large.len() >= 2 { large } else { all };
    let Some((a, b)) = fit_line(&points) else {
        return;
    };
    let sizes: Vec<(String, usize)> = run
        .size
        .pick(LOGS[0], LOGS[1], LOGS[2])
        .iter()
        .filter(|&&k| !ark_at(k))
        .filter_map(|&k| {
            let name = format!("Groth16 proof 2^{k}");
            rec.figures
                .iter()
                .find(|f| f.layer == LAYER && f.name == name)
                .map(|f| (name, f.elements))
        })
        .collect();
    for (name, n) in sizes {
        let ms = (a + b * (n as f64).ln()).exp();
        rec.figure(
            LAYER,
            name,
            ARK_FITTED,
            n,
            ms,
            "fitted to the measured sizes, not run",
        );
    }
}

/// Least-squares line y = a + b x through `points` (at least two distinct
/// x), as (a, b).
fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let m = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + y));
    let (mx, my) = (sx / m, sy / m);
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

/// How a batch row's budget is named: "whole card" or the cap.
fn budget_name(cap: Option<u64>) -> String {
    cap.map_or("whole card".to_string(), cuzk_alloc::fmt_bytes)
}

/// Host bytes of the points of `pk`'s A and B queries (G1 and G2) that
/// are not the identity: what a prover whose key streams keeps as
/// compacted copies, at most.
fn streamed_host_bytes(pk: &cuzk_prover::ProvingKey) -> u64 {
    fn points<T: AffineRepr>(q: &[T]) -> u64 {
        use rayon::prelude::*;
        (q.par_iter().filter(|p| !p.is_zero()).count() * std::mem::size_of::<T>()) as u64
    }
    points(&pk.a_query) + points(&pk.b_g1_query) + points(&pk.b_g2_query)
}

/// Gives the heap's free memory back to the system (glibc's
/// `malloc_trim`): the rows before a batch free tens of GiB (a prover's
/// copies, another batch's buffers) that glibc's arenas may keep, and
/// MemAvailable, which the batch's host check reads, would not count them.
/// Nothing elsewhere.
fn release_free_host_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the system; it
    // takes no pointers and is thread-safe (glibc locks each arena).
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Peak resident set of this process, bytes (Linux: VmHWM of
/// /proc/self/status; 0 where it cannot be read).
fn host_peak_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Starts a fresh peak of this process's resident set (Linux: writing 5
/// to /proc/self/clear_refs resets VmHWM); ignored where it fails.
fn reset_host_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A batch row's budget, and its mode unless the default.
fn batch_label(cap: Option<u64>, mode: BatchMode) -> String {
    match mode {
        BatchMode::Default => budget_name(cap),
        BatchMode::SerialMsms => format!("{}, MSMs one after another", budget_name(cap)),
        BatchMode::NonZeroBases => format!("{}, non-zero bases only", budget_name(cap)),
        BatchMode::WitnessPass => format!("{}, witness pass", budget_name(cap)),
    }
}

/// `partitions` partitions of `witness` proved by `MultiGpuProver`
/// with [`BATCH_WORKERS`] workers on GPU 0 under a budget capped at `cap`
/// (`None`: the whole card, less the default margin), H's MSM beside the
/// witness MSMs where it applies and every base streamed, or as `mode`
/// says otherwise, after one warm-up
/// proof; partition 0 takes `job`'s r and s, the others their own. Records
/// the time per partition as a figure and the batch (throughput, GPU busy
/// fraction, memory peaks), and checks partition 0's proof against `ours`
/// (the whole-card prover's proof of `job`). The prover comes from `held`
/// where the row before kept one of the same cap, and stays there for the
/// next row with `keep`.
fn batch(
    rec: &mut Record,
    name: &str,
    (pk, witness, r1cs): (
        std::sync::Arc<cuzk_prover::ProvingKey>,
        &cuzk_prover::Synthesized,
        &std::sync::Arc<cuzk_prover::SparseR1cs>,
    ),
    (job, ours): (&ProofJob<'_>, &Proof),
    rng: &mut rand_chacha::ChaCha20Rng,
    (cap, mode, partitions): (Option<u64>, BatchMode, usize),
    (freeing, held, keep): (
        &mut Option<std::thread::JoinHandle<()>>,
        &mut Option<HeldProver>,
        bool,
    ),
) -> Result<()> {
    use cuzk_alloc::{BudgetConfig, DeviceMemory};
    // The row before's prover, where it has this row's cap.
    let reused = match held.take() {
        Some(h) if h.cap == cap => Some(h),
        Some(h) => {
            drop(h.multi);
            h.mem.trim()?;
            None
        }
        None => None,
    };
    debug_assert!(partitions >= BATCH_WORKERS, "{partitions} partitions");
    let n = job.matrices.num_constraints;
    let budget = batch_label(cap, mode);
    step(format!(
        "bench prover: {name}: batch of {partitions}, {BATCH_WORKERS} workers, {budget}"
    ));
    // Every batch pins two assignments a lane; under a cap the prover also
    // keeps host copies of the compacted queries and page-locks the key:
    // skipped, not killed, where the host lacks the room (a kill would lose
    // the whole layer's figures).
    // The heap's free pages go back to the system first (not beside a
    // thread still freeing: each would wait on the other's arena locks).
    let checked = std::time::Instant::now();
    if freeing.as_ref().is_none_or(|f| f.is_finished()) {
        release_free_host_memory();
    }
    let trimmed = checked.elapsed().as_secs_f64();
    {
        // A kept prover's copies are already in host memory.
        let copies = if cap.is_some() && reused.is_none() {
            streamed_host_bytes(&pk)
        } else {
            0
        };
        let need = copies
            + 2 * std::mem::size_of_val(witness.full_assignment.as_slice()) as u64
            + (4 << 30);
        if let Some(avail) = cuzk_alloc::host_memory_available() {
            if avail < need {
                rec.checks.skip(
                    LAYER,
                    format!("{name}: batch ({budget})"),
                    "every partition proved",
                    n,
                    format!(
                        "the host has {} available, the batch needs about {}",
                        cuzk_alloc::fmt_bytes(avail),
                        cuzk_alloc::fmt_bytes(need)
                    ),
                );
                return Ok(());
            }
        }
    }
    let checked = checked.elapsed().as_secs_f64();
    let setup = std::time::Instant::now();
    let was_kept = reused.is_some();
    let (mem, multi) = match reused {
        Some(h) => (h.mem, h.multi),
        None => {
            let mem = DeviceMemory::new(
                0,
                BudgetConfig {
                    cap_bytes: cap,
                    ..BudgetConfig::default()
                },
                u64::MAX,
            )?;
            let multi = cuzk_prover::MultiGpuProver::with_memories(
                pk,
                std::slice::from_ref(&mem),
                BATCH_WORKERS,
            )?
            .with_r1cs(r1cs.clone())?;
            (mem, multi)
        }
    };
    let multi = multi
        .with_msm_overlap(mode != BatchMode::SerialMsms)
        .with_nonzero_streaming(mode == BatchMode::NonZeroBases)
        .with_witness_pass(mode == BatchMode::WitnessPass);
    let rs: Vec<(Fr, Fr)> = std::iter::once((job.r, job.s))
        .chain((1..partitions).map(|_| (Fr::rand(rng), Fr::rand(rng))))
        .collect();
    let jobs: Vec<ProofJob<'_>> = rs
        .iter()
        .map(|&(r, s)| ProofJob {
            matrices: r1cs.matrices(),
            ..witness.job(r, s)
        })
        .collect();
    // A warm-up of one proof a worker, at once: tables, pools, the first
    // use of the key, the code of every kernel the batch launches loaded
    // (it stays on the device until the process ends), and each worker's
    // pinned assignment buffer, whose mapping for the GPU takes device
    // memory (page tables: 2 to 4 MiB at 2^24 to 2^26) while the prover
    // keeps the buffer for the next proof; then device memory's figure
    // before the batch (pools trimmed: the batch's first allocations grow
    // them again, a few milliseconds).
    let ready = setup.elapsed().as_secs_f64();
    multi.warm_up(&jobs[0])?;
    let warm = setup.elapsed().as_secs_f64() - ready;
    // The size's rows, freed beside the setup and warm-up, are gone before
    // the timed batch.
    let joined = std::time::Instant::now();
    if let Some(f) = freeing.take() {
        f.join()
            .map_err(|_| anyhow::anyhow!("{name}: freeing the rows panicked"))?;
    }
    let joined = joined.elapsed().as_secs_f64();
    let baseline = mem.settled_used_bytes()?;
    reset_host_peak();
    let d0 = multi.device_clock_ms(0)?;
    let t0 = std::time::Instant::now();
    let out = multi.prove_batch(&jobs, None)?;
    let t1 = std::time::Instant::now();
    let d1 = multi.device_clock_ms(0)?;
    let mut timings = Vec::new();
    let mut first = None;
    for (i, o) in out.into_iter().enumerate() {
        let (proof, t, _) = o.map_err(|e| anyhow::anyhow!("partition {i}: {e}"))?;
        first.get_or_insert(proof);
        timings.push(t);
    }
    let b = crate::report::Batch {
        layer: LAYER,
        name: name.to_string(),
        partitions,
        workers: BATCH_WORKERS,
        cap_bytes: cap,
        wall_ms: (t1 - t0).as_secs_f64() * 1e3,
        // CUDA events: the union of the proofs' GPU stages on the device's
        // clock over the batch's window on the same clock.
        busy_fraction: match (d0, d1) {
            (Some(a), Some(b)) => cuzk_prover::gpu_busy_fraction_device(&timings, a, b),
            _ => cuzk_prover::gpu_busy_fraction(&timings, t0, t1),
        }
        .unwrap_or(0.0),
        device_peak_bytes: mem.budget().peak_claimed_bytes(),
        host_peak_bytes: host_peak_bytes(),
        streamed_bytes: timings.first().map_or(0, |t| t.streamed_bytes),
        msm_overlapped: !timings.is_empty() && timings.iter().all(|t| t.msm_overlapped),
    };
    let implementation = batch_impl(partitions, cap, mode);
    rec.figure(
        LAYER,
        name,
        implementation.as_str(),
        n,
        b.per_partition_ms(),
        "wall per partition, batch",
    );
    // Where a partition's GPU stage goes (medians over the partitions): the
    // H stage, H's MSM, the witness MSMs (A, B, L), which may run beside
    // H's.
    type Stage = (&'static str, fn(&ProofTimings) -> f64);
    let stages: [Stage; 3] = [
        ("H stage", |t| t.h_ntt_ms),
        ("MSM H", |t| t.msm_h_ms),
        ("MSMs A, B (G1, G2), L", |t| {
            t.msm_a_ms + t.msm_b_g1_ms + t.msm_b_g2_ms + t.msm_l_ms
        }),
    ];
    for (stage, get) in stages {
        rec.figure(
            LAYER,
            format!("{name}, batch stage: {stage}"),
            implementation.as_str(),
            n,
            median(timings.iter().map(get).collect()),
            "median a partition, batch",
        );
    }
    if let Some(c) = cap {
        let peak = b.device_peak_bytes;
        rec.checks.record(
            LAYER,
            format!("{name}: device memory claimed in the batch ({budget})"),
            "the budget cap",
            n,
            if peak <= c {
                Verdict::Equal
            } else {
                Verdict::Mismatch {
                    detail: format!("peak {} over the cap", cuzk_alloc::fmt_bytes(peak)),
                }
            },
        );
    }
    rec.batches.push(b);
    if let Some(p) = &first {
        rec.checks.proofs(
            LAYER,
            format!("{name}: batch partition 0 ({budget})"),
            "cuzk prover, GPU (whole card)",
            n,
            p,
            ours,
        );
    }
    // The seed's check: after the batch, device memory in use is back
    // within 1 MiB of where it was before it.
    let grew = mem.settled_used_bytes()?.saturating_sub(baseline);
    rec.checks.record(
        LAYER,
        format!("{name}: device memory after the batch ({budget})"),
        "device memory before the batch, within 1 MiB",
        n,
        if grew <= 1 << 20 {
            Verdict::Equal
        } else {
            Verdict::Mismatch {
                detail: format!("{} more in use than before", cuzk_alloc::fmt_bytes(grew)),
            }
        },
    );
    let made = if was_kept {
        "prover kept from the row before".to_string()
    } else {
        format!("prover ready in {ready:.1} s")
    };
    let head = format!(
        "  {name}: batch ({budget}): host checked in {checked:.1} s (malloc_trim \
         {trimmed:.1} s), {made}, warm-up {warm:.1} s, rows' free waited for {joined:.1} s, \
         batch {:.1} s",
        (t1 - t0).as_secs_f64()
    );
    if keep {
        crate::progress::say(format!("{head}, prover kept for the next row"));
        *held = Some(HeldProver { cap, mem, multi });
        return Ok(());
    }
    let dropped = std::time::Instant::now();
    drop(multi);
    mem.trim()?;
    // Where a row's time beyond its partitions goes (the layer's length).
    crate::progress::say(format!(
        "{head}, prover dropped in {:.1} s",
        dropped.elapsed().as_secs_f64()
    ));
    // And after the prover's drop every buffer is back (the budget's
    // counters: loaded kernel code does not count here).
    rec.checks.record(
        LAYER,
        format!("{name}: every buffer given back after the batch's prover ({budget})"),
        "DeviceMemory::check_all_returned",
        n,
        match mem.check_all_returned() {
            Ok(()) => Verdict::Equal,
            Err(e) => Verdict::Mismatch {
                detail: e.to_string(),
            },
        },
    );
    Ok(())
}

/// A batch row's prover and its device memory, kept for the next row
/// where that row has the same budget cap.
struct HeldProver {
    cap: Option<u64>,
    mem: std::sync::Arc<cuzk_alloc::DeviceMemory>,
    multi: cuzk_prover::MultiGpuProver,
}

/// The same proofs with the key's bases precomputed
/// (`Prover::with_precomputed_bases`, the proofs' working set held back
/// while the copies are made): a figure (median of three, after a warm-up)
/// and every proof checked against `ours`. The prover is dropped after.
fn precomputed(
    rec: &mut Record,
    name: &str,
    n: usize,
    (prover, mem): (Prover, &std::sync::Arc<cuzk_alloc::DeviceMemory>),
    job: &ProofJob<'_>,
    ours: &Proof,
) -> Result<()> {
    let held = mem.budget().try_reserve(prover.working_set_bytes())?;
    let (prover, queries) = prover.with_precomputed_bases()?;
    drop(held);
    step(format!(
        "bench prover: {name}: precomputed bases ({queries} of 5 queries)"
    ));
    prove(&prover, job)?;
    let mut times = Vec::new();
    let mut proofs = Vec::new();
    for _ in 0..3 {
        let (ms, p) = once_ms(|| prove(&prover, job));
        proofs.push(p?.0);
        times.push(ms);
    }
    // The first proof that differs from `ours`, else the first.
    let first = proofs.iter().find(|p| *p != ours).or(proofs.first());
    rec.figure(
        LAYER,
        name,
        GPU_PRECOMPUTED,
        n,
        median(times),
        "wall, host to host; bases precomputed once a key",
    );
    if let Some(p) = first {
        rec.checks.proofs(
            LAYER,
            format!("{name}: {GPU_PRECOMPUTED}"),
            "cuzk prover, GPU",
            n,
            p,
            ours,
        );
    }
    Ok(())
}

/// supraseal-c2's proof of the same job, checked against cuzk's `ours`
/// and the verifier; `reps` proofs after its first.
#[allow(clippy::too_many_arguments)]
fn peer(
    rec: &mut Record,
    name: &str,
    n: usize,
    prover: (Prover, std::sync::Arc<cuzk_alloc::DeviceMemory>),
    job: &ProofJob<'_>,
    ours: &Proof,
    verify: &dyn Fn(&mut Record, &str, &Proof) -> Result<()>,
    reps: usize,
) -> Result<()> {
    let theirs = crate::supraseal::compare(rec, LAYER, name, n, prover, job, ours, reps)?;
    match theirs {
        Some(p) => verify(rec, crate::supraseal::SUPRASEAL, &p),
        None => Ok(()),
    }
}

/// A synthetic circuit filling 2^k constraints (circuit seed `seed`) and a
/// proving key of random points for it (cuzk-prover's `synthetic` fixtures).
fn synthetic(
    k: u32,
    seed: u64,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<(cuzk_prover::Synthesized, cuzk_prover::ProvingKey)> {
    use cuzk_prover::synthetic::{random_key_for, RandomCircuit};
    let w = RandomCircuit::fill_domain(k, 8, 0, seed).matrices()?;
    let pk = random_key_for(&w, rng)?;
    Ok((w, pk))
}

/// One proof of `job` with its stage timings.
fn prove(prover: &Prover, job: &ProofJob<'_>) -> Result<(Proof, ProofTimings)> {
    Ok(prover.prove_job(job)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_line_recovers_a_power_law() {
        // t = 3 n^1.1 at 2^14, 2^16, 2^20 (log-log: a line).
        let pts: Vec<(f64, f64)> = [14u32, 16, 20]
            .iter()
            .map(|&k| {
                let n = (1u64 << k) as f64;
                (n.ln(), (3.0 * n.powf(1.1)).ln())
            })
            .collect();
        let (a, b) = fit_line(&pts).expect("three distinct sizes");
        assert!((b - 1.1).abs() < 1e-9, "slope {b}");
        assert!((a - 3f64.ln()).abs() < 1e-6, "intercept {a}");
        // Fewer than two points, or one size twice: no line.
        assert!(fit_line(&pts[..1]).is_none());
        assert!(fit_line(&[pts[0], pts[0]]).is_none());
    }

    #[test]
    fn full_batches_cover_issue_25s_sizes_both_ways() {
        let full = |k, porep, variants| {
            batch_for(
                &Run {
                    gpu: None,
                    size: crate::cli::Size::Full,
                    seed: 1,
                    key_cache: None,
                    variants,
                    peer_reps: None,
                },
                k,
                porep,
            )
        };
        for variants in [false, true] {
            let mut rows = 0;
            for (k, porep) in [
                (20, false),
                (24, false),
                (26, false),
                (26, true),
                (27, true),
            ] {
                // The capped rows first, the whole card last.
                let mut want = vec![(Some(16 << 30), BatchMode::Default)];
                if (k, porep) == SERIAL_BATCH && variants {
                    want.push((Some(16 << 30), BatchMode::SerialMsms));
                    want.push((Some(16 << 30), BatchMode::NonZeroBases));
                }
                if (k, porep) == (27, true) {
                    want.push((Some(16 << 30), BatchMode::WitnessPass));
                }
                want.push((None, BatchMode::Default));
                let got = full(k, porep, variants);
                assert_eq!(got, want, "2^{k} porep {porep} variants {variants}");
                rows += got.len();
            }
            assert_eq!(rows, batch_rows(variants), "progress steps");
        }
        let full = |k, porep| full(k, porep, false);
        assert!(full(16, false).is_empty());
        assert!(full(20, true).is_empty());
        // Ten partitions (the seed workload's), four at dense 2^26.
        for (k, porep, partitions) in [
            (24, false, 10),
            (26, false, 4),
            (26, true, 10),
            (27, true, 10),
        ] {
            assert_eq!(
                batch_partitions(k, porep),
                partitions,
                "2^{k} porep {porep}"
            );
        }
        assert_eq!(
            batch_impl(4, Some(16 << 30), BatchMode::WitnessPass),
            "cuzk prover, GPU, batch of 4 partitions, 2 workers, 16 GiB budget, witness MSMs in one pass"
        );
        assert_eq!(
            batch_impl(10, None, BatchMode::Default),
            "cuzk prover, GPU, batch of 10 partitions, 2 workers"
        );
    }
}
