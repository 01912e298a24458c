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

/// Groth16 proofs of a synthetic R1CS filling 2^k constraints (key of
/// random points: timed, not verified; the prover's tests and example
/// verify real circuits): cuzk's prover on the GPU (median of 3 proofs,
/// with each stage's median as its own figure) and on the CPU (one proof).
/// Both take the same r and s, so their proofs must be equal.
pub(crate) fn bench(run: &Run, rec: &mut Record) -> Result<()> {
    let mut rng = run.rng(5);
    for &k in run.size.pick(LOGS[0], LOGS[1], LOGS[2]) {
        let name = format!("Groth16 proof 2^{k}");
        step(format!("bench prover: {name}"));
        let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
        let (witness, pk) = synthetic(k, rng.gen(), &mut rng)?;
        let job = witness.job(r, s);
        let n = job.matrices.num_constraints;
        let mut want = None;
        if k <= CPU_MAX {
            let (ms, proof) = once_ms(|| prove(&Prover::cpu(pk.clone())?, &job));
            rec.figure(LAYER, name.clone(), CPU_PATH, n, ms, "wall");
            want = Some(proof?.0);
        }
        let what = format!("{name}: cuzk prover, GPU");
        if run.gpu.is_none() {
            rec.checks.skip(LAYER, what, CPU_PATH, n, "no GPU");
            continue;
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
        match &want {
            Some(w) => rec.checks.values(LAYER, what, CPU_PATH, n, &got, w),
            None => rec.checks.skip(
                LAYER,
                what,
                CPU_PATH,
                n,
                format!("the CPU path proves up to 2^{CPU_MAX} only"),
            ),
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
