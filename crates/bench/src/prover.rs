//! The prover layer: Groth16 proofs of a synthetic R1CS on the GPU (with
//! each stage's time) and through the CPU path; the GPU proof is checked
//! against the CPU path's proof for the same randomness.

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

/// Sizes (log2 of the constraint domain): `--quick`, default, `--full`.
pub(crate) const LOGS: [&[u32]; 3] = [&[14], &[16, 20], &[16, 20, 22]];

/// The CPU path proves up to this size (log2): every size the bench runs
/// (2^22 takes about 40 s on 16 cores).
const CPU_MAX: u32 = 22;

/// PoRep-shaped sizes (log2 of the domain): `--quick`, default, `--full`.
pub(crate) const POREP_LOGS: [&[u32]; 3] = [&[14], &[20], &[20, 24]];

/// The CPU path proves PoRep-shaped circuits up to this size (log2); the
/// larger ones are timed on the GPU only, unchecked.
const POREP_CPU_MAX: u32 = 20;

/// Groth16 proofs of synthetic R1CS filling 2^k constraints (keys of
/// random points: timed, not verified; the prover's tests and example
/// verify real circuits): dense random circuits, and PoRep-shaped ones (a
/// witness of bits, sparse A and B: `synthetic::PorepShaped`). cuzk's
/// prover on the GPU (median of 3 proofs, with each stage's median as its
/// own figure) and on the CPU (one proof). Both take the same r and s, so
/// their proofs must be equal.
pub(crate) fn bench(run: &Run, rec: &mut Record) -> Result<()> {
    let mut rng = run.rng(5);
    for &k in run.size.pick(LOGS[0], LOGS[1], LOGS[2]) {
        let name = format!("Groth16 proof 2^{k}");
        let (w, pk) = synthetic(k, rng.gen(), &mut rng)?;
        one(run, rec, &mut rng, &name, (w, pk), k <= CPU_MAX)?;
    }
    for &k in run.size.pick(POREP_LOGS[0], POREP_LOGS[1], POREP_LOGS[2]) {
        let name = format!("Groth16 proof 2^{k}, PoRep-shaped");
        step(format!("bench prover: {name}: circuit and key"));
        let c = cuzk_prover::synthetic::PorepShaped::new(k, 1, rng.gen());
        let w = c.matrices()?;
        let pk = cuzk_prover::synthetic::PorepShaped::random_key(&w, &mut rng)?;
        one(run, rec, &mut rng, &name, (w, pk), k <= POREP_CPU_MAX)?;
    }
    Ok(())
}

/// One circuit's figures and check (see [`bench`]); the CPU path's proof
/// is the reference when `cpu`.
fn one(
    run: &Run,
    rec: &mut Record,
    rng: &mut rand_chacha::ChaCha20Rng,
    name: &str,
    (witness, pk): (cuzk_prover::Synthesized, cuzk_prover::ProvingKey),
    cpu: bool,
) -> Result<()> {
    let name = name.to_string();
    {
        step(format!("bench prover: {name}"));
        let (r, s) = (Fr::rand(rng), Fr::rand(rng));
        let job = witness.job(r, s);
        let n = job.matrices.num_constraints;
        let mut want = None;
        if cpu {
            let (ms, proof) = once_ms(|| prove(&Prover::cpu(pk.clone())?, &job));
            rec.figure(LAYER, name.clone(), CPU_PATH, n, ms, "wall");
            want = Some(proof?.0);
        }
        let what = format!("{name}: cuzk prover, GPU");
        if run.gpu.is_none() {
            if cpu {
                rec.checks.skip(LAYER, what, CPU_PATH, n, "no GPU");
            }
            return Ok(());
        }
        let prover = Prover::new(pk)?;
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
            rec.checks.values(LAYER, what, CPU_PATH, n, &got, w);
        }
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
            rec.figure(
                LAYER,
                name.clone(),
                label,
                n,
                median(runs.iter().map(|r| get(&r.1)).collect()),
                "wall, per stage",
            );
        }
    }
    Ok(())
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
