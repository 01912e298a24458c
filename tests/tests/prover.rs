//! cuzk-prover's proofs checked against ark-groth16 0.6 (CPU) and its GPU path against its CPU path.
//!
//! For random satisfiable circuits
//! (multiplications, additions with constants, zero coefficients, empty
//! rows, public inputs, unused variables) a proof equals ark-groth16's
//! `create_proof_with_reduction_and_matrices` for the same r and s (r = 0
//! included), proofs with random r and s verify, a witness that does not
//! match the key is an error, batches prove each partition; on a GPU the
//! GPU path gives the CPU path's proofs (those tests are ignored, "needs a
//! GPU", unless run with `--include-ignored`).

use ark_bls12_381::Bls12_381;
use ark_ff::{AdditiveGroup, Field, UniformRand};
use ark_groth16::{prepare_verifying_key, Groth16};
use ark_snark::SNARK;
use cuzk_alloc::{BudgetConfig, DeviceMemory};
use cuzk_prover::synthetic::RandomCircuit;
use cuzk_prover::{
    synthesize, Backend, BatchOptions, CircuitJob, ConstraintMatrices, Error, Fr, MultiGpuProver,
    Proof, ProofJob, Prover, ProvingKey, Synthesized,
};
use cuzk_tests::{gpu_or_skip, report, rng};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn setup(c: RandomCircuit, rng: &mut ChaCha20Rng) -> ProvingKey {
    Groth16::<Bls12_381>::generate_random_parameters_with_reduction(c, rng).expect("setup")
}

/// ark-groth16's proof from the same matrices, assignment, r and s.
fn reference(pk: &ProvingKey, w: &Synthesized, r: Fr, s: Fr) -> Proof {
    Groth16::<Bls12_381>::create_proof_with_reduction_and_matrices(
        pk,
        r,
        s,
        &w.matrices.to_ark(),
        w.num_inputs,
        w.matrices.num_constraints,
        &w.full_assignment,
    )
    .expect("ark-groth16 proves")
}

fn verifies(pk: &ProvingKey, inputs: &[Fr], proof: &Proof) -> bool {
    let pvk = prepare_verifying_key(&pk.vk);
    Groth16::<Bls12_381>::verify_proof(&pvk, proof, inputs).expect("verify runs")
}

fn circuit_strategy() -> impl Strategy<Value = RandomCircuit> {
    (0usize..4, 1usize..70, 0usize..12, any::<(u64, u64)>()).prop_map(
        |(num_inputs, num_constraints, num_unused, (seed, values_seed))| RandomCircuit {
            num_inputs,
            num_constraints,
            num_unused,
            seed,
            values_seed,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// The proof equals ark-groth16's for the same r, s (and r = 0, s = 0).
    #[test]
    fn equals_ark_groth16(c in circuit_strategy(), seed in any::<u64>()) {
        let _serial = serial();
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let pk = setup(c, &mut rng);
        let w = synthesize(c, true).unwrap();
        let prover = Prover::new(pk.clone()).unwrap().with_check_witness(true);
        let cpu = Prover::cpu(pk.clone()).unwrap();
        for (r, s) in [
            (Fr::rand(&mut rng), Fr::rand(&mut rng)),
            (Fr::ZERO, Fr::rand(&mut rng)),
            (Fr::ZERO, Fr::ZERO),
        ] {
            let want = reference(&pk, &w, r, s);
            let got = prover
                .prove_job(&w.job(r, s))
                .unwrap()
                .0;
            prop_assert_eq!(&got, &want);
            let got_cpu = cpu
                .prove_job(&w.job(r, s))
                .unwrap()
                .0;
            prop_assert_eq!(&got_cpu, &want);
        }
        // Built without ark-relations, the same system proves the same.
        let d = c.matrices().unwrap();
        prop_assert_eq!(&d.full_assignment, &w.full_assignment);
        let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
        let got = prover
            .prove_job(&d.job(r, s))
            .unwrap()
            .0;
        prop_assert_eq!(got, reference(&pk, &w, r, s));
    }
}

/// Random r, s: proofs verify with ark-groth16 (`verify_proof` and the
/// SNARK trait's `verify`), and not for other inputs.
#[test]
fn random_proofs_verify() {
    let _serial = serial();
    let mut rng = rng("random_proofs_verify");
    for (ni, nc, nu) in [(0, 1, 0), (1, 3, 0), (3, 40, 5), (2, 200, 40), (5, 123, 0)] {
        let c = RandomCircuit {
            num_inputs: ni,
            num_constraints: nc,
            num_unused: nu,
            seed: rng.gen(),
            values_seed: rng.gen(),
        };
        let pk = setup(c, &mut rng);
        let prover = Prover::new(pk.clone()).unwrap();
        let (proof, t) = prover.prove(c, &mut rng).unwrap();
        assert!(t.total_ms() > 0.0 && t.witness_ms >= 0.0);
        let w = c.matrices().unwrap();
        assert!(verifies(&pk, w.public_inputs(), &proof), "{c:?}");
        assert!(Groth16::<Bls12_381>::verify(&pk.vk, w.public_inputs(), &proof).unwrap());
        if ni > 0 {
            let mut wrong = w.public_inputs().to_vec();
            wrong[0] += Fr::ONE;
            assert!(!verifies(&pk, &wrong, &proof));
        }
    }
}

/// Many unused witnesses: the A / B / L queries are mostly identities and
/// the prover skips them; proofs still equal ark-groth16's and verify.
#[test]
fn sparse_queries() {
    let _serial = serial();
    let mut rng = rng("sparse_queries");
    let c = RandomCircuit {
        num_inputs: 2,
        num_constraints: 30,
        num_unused: 300,
        seed: rng.gen(),
        values_seed: rng.gen(),
    };
    let pk = setup(c, &mut rng);
    let w = synthesize(c, true).unwrap();
    let prover = Prover::new(pk.clone()).unwrap();
    let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let p = prover.prove_job(&w.job(r, s)).unwrap().0;
    assert_eq!(p, reference(&pk, &w, r, s));
    assert!(verifies(&pk, w.public_inputs(), &p));
}

/// A proof job from its parts (as ark-groth16's
/// `create_proof_with_reduction_and_matrices` takes them).
fn job_for<'a>(
    matrices: &'a ConstraintMatrices,
    full_assignment: &'a [Fr],
    num_inputs: usize,
    r: Fr,
    s: Fr,
) -> ProofJob<'a> {
    ProofJob {
        matrices,
        full_assignment,
        num_inputs,
        r,
        s,
    }
}

fn invalid<T: std::fmt::Debug>(r: cuzk_prover::Result<T>, what: &str) -> String {
    match r {
        Err(Error::InvalidArgument(m)) => {
            report(&format!("{what}: {m}"));
            m
        }
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

/// A witness that does not match the key, or does not satisfy the system
/// when the check is on, is an InvalidArgument naming the problem.
#[test]
fn mismatched_witness_errors() {
    let _serial = serial();
    let mut rng = rng("mismatched_witness_errors");
    let c = RandomCircuit {
        num_inputs: 2,
        num_constraints: 20,
        num_unused: 1,
        seed: rng.gen(),
        values_seed: rng.gen(),
    };
    let pk = setup(c, &mut rng);
    let w = synthesize(c, true).unwrap();
    let prover = Prover::cpu(pk.clone()).unwrap();
    let checked = Prover::new(pk.clone()).unwrap().with_check_witness(true);
    let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let (m, z, ni) = (&w.matrices, &w.full_assignment, w.num_inputs);

    // Lengths.
    let m1 = invalid(
        prover.prove_job(&job_for(m, &z[..z.len() - 1], ni, r, s)),
        "short assignment",
    );
    assert!(m1.contains("variables"), "{m1}");
    let mut longer = z.clone();
    longer.push(Fr::ONE);
    invalid(
        prover.prove_job(&job_for(m, &longer, ni, r, s)),
        "long assignment",
    );
    let m2 = invalid(prover.prove_job(&job_for(m, z, ni + 1, r, s)), "inputs");
    assert!(m2.contains("instance variables"), "{m2}");

    // Matrices of another circuit (another domain).
    let other = RandomCircuit {
        num_constraints: 200,
        ..c
    };
    let wo = synthesize(other, true).unwrap();
    invalid(
        prover.prove_job(&job_for(&wo.matrices, z, ni, r, s)),
        "other circuit's matrices",
    );
    // A column past the assignment.
    let mut bad = w.matrices.clone();
    bad.a[0].push((Fr::ONE, z.len() + 5));
    invalid(prover.prove_job(&job_for(&bad, z, ni, r, s)), "column");
    // Rows that disagree with num_constraints.
    let mut rows = w.matrices.clone();
    rows.c.pop();
    invalid(prover.prove_job(&job_for(&rows, z, ni, r, s)), "rows");

    // An unsatisfied witness: an error when checked; unchecked, a proof
    // that does not verify.
    let mut tampered = z.clone();
    let last = tampered.len() - 2;
    tampered[last] += Fr::ONE;
    let m3 = invalid(
        checked.prove_job(&job_for(m, &tampered, ni, r, s)),
        "unsatisfied",
    );
    assert!(m3.contains("constraint"), "{m3}");
    let p = prover
        .prove_job(&job_for(m, &tampered, ni, r, s))
        .expect("unchecked proves")
        .0;
    assert!(!verifies(&pk, &tampered[1..ni], &p));

    // A key that does not fit the circuit at all.
    let pk_other = setup(other, &mut rng);
    let p_other = Prover::cpu(pk_other).unwrap();
    invalid(
        p_other.prove_job(&job_for(m, z, ni, r, s)),
        "other circuit's key",
    );

    // A key whose H query fits no QAP domain: refused when the prover is
    // made, not at the first proof.
    for len in [pk.h_query.len() - 1, pk.h_query.len() + 1] {
        let mut bad = pk.clone();
        bad.h_query.resize(len, bad.h_query[0]);
        let e = invalid(Prover::cpu(bad), "H query");
        assert!(e.contains("an H query of"), "{e}");
    }
}

/// A circuit that is not satisfied: `prove` with the check is an error.
#[test]
fn unsatisfied_circuit_errors() {
    use ark_relations::gr1cs::{ConstraintSynthesizer, ConstraintSystemRef, SynthesisError};
    #[derive(Clone, Copy)]
    struct Bad(bool);
    impl ConstraintSynthesizer<Fr> for Bad {
        fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
            use ark_relations::gr1cs::{LinearCombination, Variable};
            let x = cs.new_input_variable(|| Ok(Fr::from(3u64)))?;
            let y = cs.new_witness_variable(|| Ok(Fr::from(if self.0 { 9u64 } else { 10 })))?;
            cs.enforce_r1cs_constraint(
                || LinearCombination::from(x),
                || LinearCombination::from(x),
                || LinearCombination::from(y),
            )?;
            let _ = Variable::One;
            Ok(())
        }
    }
    let _serial = serial();
    let mut rng = rng("unsatisfied_circuit_errors");
    let pk = setup_any(Bad(true), &mut rng);
    let checked = Prover::new(pk.clone()).unwrap().with_check_witness(true);
    let (p, _) = checked.prove(Bad(true), &mut rng).unwrap();
    assert!(verifies(&pk, &[Fr::from(3u64)], &p));
    let m = invalid(checked.prove(Bad(false), &mut rng), "unsatisfied circuit");
    assert!(
        m.contains("does not satisfy constraint 0 of 1: <A_0, z> * <B_0, z> != <C_0, z>"),
        "{m}"
    );
    // Unchecked: a proof, which does not verify.
    let unchecked = Prover::cpu(pk.clone()).unwrap();
    let (p, _) = unchecked.prove(Bad(false), &mut rng).unwrap();
    assert!(!verifies(&pk, &[Fr::from(3u64)], &p));
}

fn setup_any<C: ark_relations::gr1cs::ConstraintSynthesizer<Fr>>(
    c: C,
    rng: &mut ChaCha20Rng,
) -> ProvingKey {
    Groth16::<Bls12_381>::generate_random_parameters_with_reduction(c, rng).expect("setup")
}

/// A batch of partitions against one key: one result each, in order; a bad
/// partition fails alone.
#[test]
fn batch_of_partitions() {
    let _serial = serial();
    let mut rng = rng("batch_of_partitions");
    let base = RandomCircuit {
        num_inputs: 3,
        num_constraints: 50,
        num_unused: 2,
        seed: rng.gen(),
        values_seed: rng.gen(),
    };
    let pk = setup(base, &mut rng);
    let prover = Prover::new(pk.clone()).unwrap();
    // Partitions: the same structure, different values; and a bad one.
    let ws: Vec<Synthesized> = (0..3)
        .map(|_| {
            let part = RandomCircuit {
                values_seed: rng.gen(),
                ..base
            };
            synthesize(part, true).unwrap()
        })
        .collect();
    assert_ne!(ws[0].full_assignment, ws[1].full_assignment);
    let mut bad = ws[0].clone();
    bad.full_assignment.pop();
    let rs: Vec<(Fr, Fr)> = (0..4)
        .map(|_| (Fr::rand(&mut rng), Fr::rand(&mut rng)))
        .collect();
    let jobs = vec![
        ws[0].job(rs[0].0, rs[0].1),
        bad.job(rs[1].0, rs[1].1),
        ws[1].job(rs[2].0, rs[2].1),
        ws[2].job(rs[3].0, rs[3].1),
    ];
    for pipelined in [None, Some(false), Some(true)] {
        let out = prover.prove_batch(&jobs, &BatchOptions { pipelined });
        assert_eq!(out.len(), 4);
        assert!(matches!(out[1], Err(Error::InvalidArgument(_))));
        for (i, w) in [(0usize, &ws[0]), (2, &ws[1]), (3, &ws[2])] {
            let (p, _) = out[i].as_ref().unwrap();
            assert_eq!(*p, reference(&pk, w, rs[i].0, rs[i].1), "job {i}");
            assert!(verifies(&pk, w.public_inputs(), p));
        }
    }
    let none: [ProofJob<'_>; 0] = [];
    assert!(prover
        .prove_batch(none, &BatchOptions::default())
        .is_empty());

    // Whole circuits, synthesized in the pipeline: each proof verifies
    // for its own public inputs.
    let circuits: Vec<RandomCircuit> = (0..4)
        .map(|_| RandomCircuit {
            values_seed: rng.gen(),
            ..base
        })
        .collect();
    let batch = circuits.iter().map(|&circuit| CircuitJob {
        circuit,
        r: Fr::rand(&mut rng),
        s: Fr::rand(&mut rng),
    });
    let out = prover.prove_batch(batch.collect::<Vec<_>>(), &BatchOptions::default());
    assert_eq!(out.len(), 4);
    for (c, o) in circuits.iter().zip(&out) {
        let (p, t) = o.as_ref().unwrap();
        assert!(verifies(&pk, c.matrices().unwrap().public_inputs(), p));
        assert!(t.witness_ms > 0.0);
    }
}

/// On a GPU: the prover picks it, and its proofs equal the CPU path's (and
/// ark-groth16's) on circuits up to 2^12 constraints.
#[test]
#[ignore = "needs a GPU"]
fn gpu_matches_cpu() {
    let _serial = serial();
    let Some(_dev) = gpu_or_skip("gpu_matches_cpu") else {
        return;
    };
    let mut rng = rng("gpu_matches_cpu");
    for log_n in [1u32, 5, 9, 12] {
        let c = RandomCircuit::fill_domain(log_n, 3, 7, rng.gen());
        let pk = setup(c, &mut rng);
        let w = c.matrices().unwrap();
        let gpu = Prover::new(pk.clone()).unwrap();
        assert_eq!(gpu.backend(), Backend::Gpu { device: 0 });
        let cpu = Prover::cpu(pk.clone()).unwrap();
        for _ in 0..2 {
            let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
            let job = w.job(r, s);
            let (g, t) = gpu.prove_job(&job).unwrap();
            let (c_, _) = cpu.prove_job(&job).unwrap();
            assert_eq!(g, c_, "log_n {log_n}");
            assert!(verifies(&pk, w.public_inputs(), &g));
            report(&format!("gpu_matches_cpu: 2^{log_n}: {t:?}"));
        }
    }
}

/// A prover whose queries are precomputed (`with_precomputed_bases`) gives
/// the CPU prover's proofs, which ark-groth16 verifies.
#[test]
#[ignore = "needs a GPU"]
fn gpu_precomputed_bases_match_cpu() {
    let _serial = serial();
    let Some(_dev) = gpu_or_skip("gpu_precomputed_bases_match_cpu") else {
        return;
    };
    let mut rng = rng("gpu_precomputed_bases_match_cpu");
    for log_n in [1u32, 9, 13] {
        let c = RandomCircuit::fill_domain(log_n, 3, 7, rng.gen());
        let pk = setup(c, &mut rng);
        let w = c.matrices().unwrap();
        let (gpu, n) = Prover::new(pk.clone())
            .unwrap()
            .with_precomputed_bases()
            .unwrap();
        assert!(n >= 1, "log_n {log_n}: no query precomputed");
        let cpu = Prover::cpu(pk.clone()).unwrap();
        for _ in 0..2 {
            let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
            let job = w.job(r, s);
            let (g, _) = gpu.prove_job(&job).unwrap();
            assert_eq!(g, cpu.prove_job(&job).unwrap().0, "log_n {log_n}");
            assert!(verifies(&pk, w.public_inputs(), &g));
        }
        report(&format!(
            "gpu_precomputed_bases_match_cpu: 2^{log_n}: {n} queries precomputed, equal, verified"
        ));
    }
}

/// Without a GPU, `Prover::new` falls back to the CPU.
#[test]
fn backend_choice() {
    let _serial = serial();
    let mut rng = rng("backend_choice");
    let c = RandomCircuit {
        num_inputs: 1,
        num_constraints: 4,
        num_unused: 0,
        seed: rng.gen(),
        values_seed: rng.gen(),
    };
    let pk = setup(c, &mut rng);
    let p = Prover::new(pk.clone()).unwrap();
    let want = if cuzk_field::gpu::device_count().is_ok_and(|n| n > 0) {
        Backend::Gpu { device: 0 }
    } else {
        Backend::Cpu
    };
    assert_eq!(p.backend(), want);
    let cpu = Prover::cpu(pk).unwrap();
    assert_eq!(cpu.backend(), Backend::Cpu);
    // Precomputation is a GPU matter: the CPU prover stays as it was.
    let (cpu, n) = cpu.with_precomputed_bases().unwrap();
    assert_eq!((cpu.backend(), n), (Backend::Cpu, 0));
}

/// On a GPU: with every 7th device allocation failing, each proof of a
/// batch either equals the CPU path's or is an out-of-memory error, the
/// device stays usable (all succeed once injection stops), and every byte
/// is returned when the prover is dropped.
#[test]
#[ignore = "needs a GPU"]
fn gpu_injected_failures() {
    let _serial = serial();
    let Some(dev) = gpu_or_skip("gpu_injected_failures") else {
        return;
    };
    let mut rng = rng("gpu_injected_failures");
    let c = RandomCircuit::fill_domain(10, 2, 5, rng.gen());
    let pk = setup(c, &mut rng);
    let w = c.matrices().unwrap();
    let mem = cuzk_alloc::DeviceMemory::from_env(dev).unwrap();
    let gpu = Prover::with_memory(pk.clone(), mem.clone()).unwrap();
    let cpu = Prover::cpu(pk).unwrap();
    let rs: Vec<(Fr, Fr)> = (0..20)
        .map(|_| (Fr::rand(&mut rng), Fr::rand(&mut rng)))
        .collect();
    let jobs: Vec<_> = rs.iter().map(|&(r, s)| w.job(r, s)).collect();
    mem.inject_failures(7);
    let out = gpu.prove_batch(&jobs, &BatchOptions::default());
    mem.inject_failures(0);
    let mut failed = 0;
    for (j, o) in jobs.iter().zip(&out) {
        match o {
            Ok((p, _)) => assert_eq!(*p, cpu.prove_job(j).unwrap().0),
            Err(Error::OutOfMemory(_)) => failed += 1,
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    report(&format!(
        "gpu_injected_failures: {failed} of {} proofs failed",
        jobs.len()
    ));
    assert!(failed > 0);
    for (j, o) in jobs
        .iter()
        .zip(gpu.prove_batch(&jobs, &BatchOptions::default()))
    {
        assert_eq!(o.unwrap().0, cpu.prove_job(j).unwrap().0);
    }
    drop(gpu);
    mem.check_all_returned().unwrap();
}

/// The memory of GPU `dev` with a budget capped at `cap` bytes, `margin`
/// kept free.
fn capped_memory(dev: i32, margin: u64, cap: u64) -> std::sync::Arc<DeviceMemory> {
    DeviceMemory::new(
        dev,
        BudgetConfig {
            margin_bytes: margin,
            cap_bytes: Some(cap),
        },
        u64::MAX,
    )
    .unwrap()
}

/// One GPU test at a time in this file: the injected-failure test compares
/// the device's free memory before and after, which other tests' buffers
/// would move.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static GPU: std::sync::Mutex<()> = std::sync::Mutex::new(());
    GPU.lock().unwrap_or_else(|p| p.into_inner())
}

/// `count` partitions of `base` (same structure, other values) and random
/// r, s for each.
fn partitions(
    base: RandomCircuit,
    count: usize,
    rng: &mut ChaCha20Rng,
) -> (Vec<Synthesized>, Vec<(Fr, Fr)>) {
    let ws = (0..count)
        .map(|_| {
            RandomCircuit {
                values_seed: rng.gen(),
                ..base
            }
            .matrices()
            .unwrap()
        })
        .collect();
    let rs = (0..count).map(|_| (Fr::rand(rng), Fr::rand(rng))).collect();
    (ws, rs)
}

/// Without a GPU: the multi-device prover's scheduling on CPU lanes. Each
/// partition is proved on the lane it was assigned to (round-robin by
/// default), results come back in input order and equal the single
/// prover's proofs, a bad partition fails alone, and malformed
/// configurations or assignments are InvalidArgument.
#[test]
fn multi_device_scheduling_cpu() {
    let mut rng = rng("multi_device_scheduling_cpu");
    let base = RandomCircuit {
        num_inputs: 2,
        num_constraints: 40,
        num_unused: 3,
        seed: rng.gen(),
        values_seed: rng.gen(),
    };
    let pk = setup(base, &mut rng);
    let bad_arg = |r: cuzk_prover::Result<MultiGpuProver>, what: &str| match r {
        Err(Error::InvalidArgument(m)) => report(&format!("{what}: {m}")),
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    };
    bad_arg(MultiGpuProver::cpu(pk.clone(), 0, 2), "no lanes");
    bad_arg(MultiGpuProver::cpu(pk.clone(), 2, 0), "no workers");
    bad_arg(MultiGpuProver::new(pk.clone(), &[], 2), "no devices");
    bad_arg(MultiGpuProver::new(pk.clone(), &[0], 0), "no GPU workers");
    bad_arg(MultiGpuProver::new(pk.clone(), &[0, 0], 2), "device twice");

    let multi = MultiGpuProver::cpu(pk.clone(), 3, 2).unwrap();
    assert_eq!(multi.devices(), vec![0, 1, 2]);
    assert_eq!(multi.workers_per_device(), 2);
    assert_eq!(multi.concurrent_proofs(0), Some(2));
    assert_eq!(multi.concurrent_proofs(3), None);
    assert!(multi.memory(0).is_none());
    let single = Prover::cpu(pk.clone()).unwrap();

    let (ws, rs) = partitions(base, 7, &mut rng);
    let mut bad = ws[4].clone();
    bad.full_assignment.pop();
    let jobs: Vec<_> = (0..7)
        .map(|i| {
            let w = if i == 4 { &bad } else { &ws[i] };
            w.job(rs[i].0, rs[i].1)
        })
        .collect();
    let explicit = [2usize, 2, 0, 1, 2, 0, 1];
    for assignment in [None, Some(&explicit[..])] {
        let out = multi.prove_batch(&jobs, assignment).unwrap();
        assert_eq!(out.len(), 7);
        for (i, o) in out.iter().enumerate() {
            if i == 4 {
                assert!(matches!(o, Err(Error::InvalidArgument(_))), "{o:?}");
                continue;
            }
            let (p, _, device) = o.as_ref().unwrap();
            let lane = assignment.map_or(i % 3, |a| a[i]);
            assert_eq!(*device, lane as i32, "job {i}");
            assert_eq!(*p, single.prove_job(&jobs[i]).unwrap().0, "job {i}");
            assert!(verifies(&pk, ws[i].public_inputs(), p), "job {i}");
        }
    }
    for lane in 0..3 {
        let peak = multi.peak_concurrent_proofs(lane).unwrap();
        assert!((1..=2).contains(&peak), "lane {lane}: {peak}");
    }
    let wrong_len = multi.prove_batch(&jobs, Some(&[0, 1]));
    assert!(matches!(wrong_len, Err(Error::InvalidArgument(_))));
    let out_of_range = multi.prove_batch(&jobs, Some(&[0, 1, 2, 3, 0, 1, 2]));
    assert!(matches!(out_of_range, Err(Error::InvalidArgument(_))));
    assert!(multi.prove_batch(&[], None).unwrap().is_empty());
}

/// On two or more GPUs (skipped with fewer; a failure with fewer when
/// `CUZK_REQUIRE_MULTI_GPU=1`): 8 partitions split across GPUs 0 and 1,
/// 2 workers each, every proof made on the GPU it was assigned to, equal to
/// the CPU prover's proof for the same r, s, and verified by ark-groth16.
#[test]
#[ignore = "needs a GPU"]
fn multi_gpu_partitions() {
    let _serial = serial();
    let Some(_dev) = gpu_or_skip("multi_gpu_partitions") else {
        return;
    };
    let count = cuzk_field::gpu::device_count().unwrap_or(0);
    if count < 2 {
        let why = format!("multi_gpu_partitions: {count} GPU(s), the test needs 2");
        if std::env::var("CUZK_REQUIRE_MULTI_GPU").is_ok_and(|v| v == "1") {
            panic!("{why} and CUZK_REQUIRE_MULTI_GPU=1");
        }
        report(&format!(
            "SKIPPED {why}; set CUZK_REQUIRE_MULTI_GPU=1 to make this a failure"
        ));
        return;
    }
    let mut rng = rng("multi_gpu_partitions");
    let base = RandomCircuit::fill_domain(10, 3, 4, rng.gen());
    let pk = setup(base, &mut rng);
    let cpu = Prover::cpu(pk.clone()).unwrap();
    let multi = MultiGpuProver::new(pk.clone(), &[0, 1], 2).unwrap();
    assert_eq!(multi.devices(), vec![0, 1]);
    assert_eq!(multi.memory(0).unwrap().device(), 0);
    assert_eq!(multi.memory(1).unwrap().device(), 1);
    let (ws, rs) = partitions(base, 8, &mut rng);
    let jobs: Vec<_> = ws.iter().zip(&rs).map(|(w, &(r, s))| w.job(r, s)).collect();
    let alternating: Vec<usize> = (0..8).map(|i| i % 2).collect();
    let swapped: Vec<usize> = (0..8).map(|i| 1 - i % 2).collect();
    for assignment in [&alternating, &swapped] {
        let t = std::time::Instant::now();
        let out = multi.prove_batch(&jobs, Some(assignment)).unwrap();
        let wall_ms = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(out.len(), 8);
        for (i, o) in out.iter().enumerate() {
            let (p, _, device) = o.as_ref().unwrap_or_else(|e| panic!("partition {i}: {e}"));
            assert_eq!(*device, assignment[i] as i32, "partition {i}");
            assert_eq!(*p, cpu.prove_job(&jobs[i]).unwrap().0, "partition {i}");
            assert!(verifies(&pk, ws[i].public_inputs(), p), "partition {i}");
        }
        let devices: Vec<i32> = out.iter().map(|o| o.as_ref().unwrap().2).collect();
        report(&format!(
            "multi_gpu_partitions: 8 partitions of 2^10 on GPUs 0 and 1 (2 workers each), \
             devices {devices:?}, all verified, {wall_ms:.1} ms"
        ));
    }
}

/// On one GPU whose budget is capped to the key plus 1.5 working sets: two
/// workers admit one proof at a time to the GPU stage, and all 6 partitions
/// of a 2^14 circuit prove (no out-of-memory), equal the CPU prover's
/// proofs and verify; the budget's peak stays within its limit. A second
/// prover over the same memory (a service's second circuit) shares the
/// device's admission: batches of both at once never have two GPU stages
/// at the same time.
#[test]
#[ignore = "needs a GPU"]
fn two_workers_under_cap() {
    let _serial = serial();
    let Some(dev) = gpu_or_skip("two_workers_under_cap") else {
        return;
    };
    let mut rng = rng("two_workers_under_cap");
    let base = RandomCircuit::fill_domain(14, 2, 3, rng.gen());
    let pk = setup(base, &mut rng);
    let margin = BudgetConfig::default().margin_bytes;
    // The key's device bytes and a proof's working set, measured on an
    // uncapped budget.
    let (key_bytes, working_set) = {
        let probe = DeviceMemory::new(dev, BudgetConfig::default(), u64::MAX).unwrap();
        let p = Prover::with_memory(pk.clone(), probe.clone()).unwrap();
        (probe.budget().claimed_bytes(), p.working_set_bytes())
    };
    let cap = margin + key_bytes + working_set + working_set / 2;
    let mem = capped_memory(dev, margin, cap);
    let multi = MultiGpuProver::with_memories(pk.clone(), std::slice::from_ref(&mem), 2).unwrap();
    assert_eq!(
        multi.concurrent_proofs(0),
        Some(1),
        "only one working set fits beside the key"
    );
    let cpu = Prover::cpu(pk.clone()).unwrap();
    let (ws, rs) = partitions(base, 6, &mut rng);
    let jobs: Vec<_> = ws.iter().zip(&rs).map(|(w, &(r, s))| w.job(r, s)).collect();
    let out = multi.prove_batch(&jobs, None).unwrap();
    for (i, o) in out.iter().enumerate() {
        let (p, _, device) = o.as_ref().unwrap_or_else(|e| panic!("partition {i}: {e}"));
        assert_eq!(*device, dev);
        assert_eq!(*p, cpu.prove_job(&jobs[i]).unwrap().0, "partition {i}");
        assert!(verifies(&pk, ws[i].public_inputs(), p), "partition {i}");
    }
    let peak = mem.budget().peak_claimed_bytes();
    let limit = mem.budget().limit_bytes().unwrap();
    report(&format!(
        "two_workers_under_cap: 6 proofs of 2^14, 2 workers, cap {} (key {}, working set {}), \
         budget limit {}, peak claimed {} (key + {}), at most {} proof(s) in the GPU stage",
        cuzk_alloc::fmt_bytes(cap),
        cuzk_alloc::fmt_bytes(key_bytes),
        cuzk_alloc::fmt_bytes(working_set),
        cuzk_alloc::fmt_bytes(limit),
        cuzk_alloc::fmt_bytes(peak),
        cuzk_alloc::fmt_bytes(peak.saturating_sub(key_bytes)),
        multi.peak_concurrent_proofs(0).unwrap(),
    ));
    assert!(peak <= limit, "peak {peak} over the limit {limit}");
    assert_eq!(multi.peak_concurrent_proofs(0), Some(1));
    // A second prover of the same key over the same memory, both batches
    // at once: one GPU stage at a time on the device.
    let other = MultiGpuProver::with_memories(pk.clone(), std::slice::from_ref(&mem), 2).unwrap();
    let (mine, theirs) = std::thread::scope(|s| {
        let a = s.spawn(|| multi.prove_batch(&jobs, None).unwrap());
        let b = s.spawn(|| other.prove_batch(&jobs, None).unwrap());
        (a.join().unwrap(), b.join().unwrap())
    });
    let mut stages = Vec::new();
    for (i, o) in mine.iter().chain(&theirs).enumerate() {
        let (p, t, _) = o.as_ref().unwrap_or_else(|e| panic!("proof {i}: {e}"));
        assert_eq!(
            *p,
            cpu.prove_job(&jobs[i % jobs.len()]).unwrap().0,
            "proof {i}"
        );
        stages.push(t.gpu_stage.expect("a GPU stage"));
    }
    stages.sort();
    for w in stages.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "two GPU stages at once on one device: {w:?}"
        );
    }
    let peak = mem.budget().peak_claimed_bytes();
    assert!(
        peak <= limit,
        "two provers: peak {peak} over the limit {limit}"
    );
    report("two_workers_under_cap: two provers over one memory, one GPU stage at a time");
    drop((multi, other));
    mem.check_all_returned().unwrap();
}

/// On one GPU, two workers: 100 proofs with every 23rd device allocation
/// failing; each proof equals the CPU prover's or is OutOfMemory, some of
/// each. With injection off the next proof succeeds; once the prover is
/// dropped every byte is returned and, after a trim, the device's free
/// memory is within 1 MiB of what it was before the prover was built.
#[test]
#[ignore = "needs a GPU"]
fn hundred_proofs_with_injected_failures() {
    let _serial = serial();
    let Some(dev) = gpu_or_skip("hundred_proofs_with_injected_failures") else {
        return;
    };
    let mut rng = rng("hundred_proofs_with_injected_failures");
    let base = RandomCircuit::fill_domain(10, 2, 5, rng.gen());
    let pk = setup(base, &mut rng);
    let w = base.matrices().unwrap();
    let cpu = Prover::cpu(pk.clone()).unwrap();
    let mem = DeviceMemory::new(dev, BudgetConfig::from_env().unwrap(), u64::MAX).unwrap();
    // Warm-up: one proof with a prover then dropped, so that the CUDA
    // runtime's first-use allocations (modules, library storage) happen
    // before the baseline.
    {
        let warm =
            MultiGpuProver::with_memories(pk.clone(), std::slice::from_ref(&mem), 2).unwrap();
        let job = w.job(Fr::rand(&mut rng), Fr::rand(&mut rng));
        let out = warm.prove_batch(&[job], None).unwrap();
        assert_eq!(out[0].as_ref().unwrap().0, cpu.prove_job(&job).unwrap().0);
    }
    mem.trim().unwrap();
    mem.check_all_returned().unwrap();
    let (free_before, total) = mem.mem_get_info().unwrap();

    let multi = MultiGpuProver::with_memories(pk.clone(), std::slice::from_ref(&mem), 2).unwrap();
    let rs: Vec<(Fr, Fr)> = (0..100)
        .map(|_| (Fr::rand(&mut rng), Fr::rand(&mut rng)))
        .collect();
    let jobs: Vec<_> = rs.iter().map(|&(r, s)| w.job(r, s)).collect();
    mem.inject_failures(23);
    let out = multi.prove_batch(&jobs, None).unwrap();
    mem.inject_failures(0);
    assert_eq!(out.len(), 100);
    let mut failed = 0;
    for (j, o) in jobs.iter().zip(&out) {
        match o {
            Ok((p, _, device)) => {
                assert_eq!(*device, dev);
                assert_eq!(*p, cpu.prove_job(j).unwrap().0);
            }
            Err(Error::OutOfMemory(_)) => failed += 1,
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert!(
        failed > 0 && failed < 100,
        "{failed} of 100 failed: want some of each"
    );
    let again = multi.prove_batch(&jobs[..1], None).unwrap();
    let (p, _, _) = again[0].as_ref().expect("proves once injection stops");
    assert_eq!(*p, cpu.prove_job(&jobs[0]).unwrap().0);
    assert!(verifies(&pk, w.public_inputs(), p));
    drop(multi);
    mem.trim().unwrap();
    mem.check_all_returned().unwrap();
    let (free_after, _) = mem.mem_get_info().unwrap();
    let diff = free_after.abs_diff(free_before);
    report(&format!(
        "hundred_proofs_with_injected_failures: {failed} of 100 proofs failed (every 23rd \
         allocation); free memory {} before, {} after (of {}), difference {diff} bytes",
        cuzk_alloc::fmt_bytes(free_before),
        cuzk_alloc::fmt_bytes(free_after),
        cuzk_alloc::fmt_bytes(total),
    ));
    assert!(diff <= 1 << 20, "free memory moved by {diff} bytes");
}

/// A PoRep-shaped partition (a witness of bits, sparse A and B, a key with
/// identity points where A or B is empty): the CPU path's proof equals
/// ark-groth16's for the same r and s.
#[test]
fn porep_shaped_equals_ark_groth16() {
    let mut rng = rng("porep_shaped_equals_ark_groth16");
    let c = cuzk_prover::synthetic::PorepShaped::new(15, 1, rng.gen());
    let w = c.matrices().unwrap();
    assert!(cuzk_prover::synthetic::is_satisfied(&w));
    let pk = cuzk_prover::synthetic::PorepShaped::random_key(&w, &mut rng).unwrap();
    let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let (got, _) = Prover::cpu(pk.clone())
        .unwrap()
        .prove_job(&w.job(r, s))
        .unwrap();
    assert_eq!(got, reference(&pk, &w, r, s));
}

/// The same partition on the GPU: the CPU path's proof.
#[test]
#[ignore = "needs a GPU"]
fn gpu_porep_shaped_matches_cpu() {
    let _serial = serial();
    let Some(_dev) = gpu_or_skip("gpu_porep_shaped_matches_cpu") else {
        return;
    };
    let mut rng = rng("gpu_porep_shaped_matches_cpu");
    for log_n in [15u32, 18] {
        let c = cuzk_prover::synthetic::PorepShaped::new(log_n, 2, rng.gen());
        let w = c.matrices().unwrap();
        let pk = cuzk_prover::synthetic::PorepShaped::random_key(&w, &mut rng).unwrap();
        let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
        let job = w.job(r, s);
        let (g, t) = Prover::new(pk.clone()).unwrap().prove_job(&job).unwrap();
        let (c_, _) = Prover::cpu(pk).unwrap().prove_job(&job).unwrap();
        assert_eq!(g, c_, "2^{log_n}");
        report(&format!("gpu_porep_shaped_matches_cpu: 2^{log_n}: {t:?}"));
    }
}

/// The two circuits of the GPU key tests: a 2^16 random circuit set up by
/// ark-groth16 (its proofs must verify) and a 2^18 PoRep-shaped one with a
/// random-point key: (name, key, witness, verify).
fn key_cases(rng: &mut ChaCha20Rng) -> [(&'static str, ProvingKey, Synthesized, bool); 2] {
    let real = RandomCircuit::fill_domain(16, 2, 3, rng.gen());
    let real_pk = setup(real, rng);
    let porep = cuzk_prover::synthetic::PorepShaped::new(18, 2, rng.gen());
    let porep_w = porep.matrices().unwrap();
    let porep_pk = cuzk_prover::synthetic::PorepShaped::random_key(&porep_w, rng).unwrap();
    [
        (
            "2^16 random circuit (ark-groth16 setup)",
            real_pk,
            real.matrices().unwrap(),
            true,
        ),
        (
            "2^18 PoRep-shaped (random-point key)",
            porep_pk,
            porep_w,
            false,
        ),
    ]
}

/// A key streamed from host memory rather than resident: under a budget
/// that holds part of the key beside a proof's working set, then under one
/// that holds none of it (all five queries streamed), proofs equal the CPU
/// path's for the same r and s (and verify, for the key set up by
/// ark-groth16); each proof reports the streamed bytes; the budget's peak
/// stays under its limit and every byte comes back.
#[test]
#[ignore = "needs a GPU"]
fn gpu_streamed_key_matches_cpu() {
    let _serial = serial();
    let Some(dev) = gpu_or_skip("gpu_streamed_key_matches_cpu") else {
        return;
    };
    let mut rng = rng("gpu_streamed_key_matches_cpu");
    let margin = BudgetConfig::default().margin_bytes;
    let cases = key_cases(&mut rng);
    for (name, pk, w, verify) in cases {
        let (key_bytes, working_set) = {
            let probe = DeviceMemory::new(dev, BudgetConfig::default(), u64::MAX).unwrap();
            let p = Prover::with_memory(pk.clone(), probe.clone()).unwrap();
            assert!(
                p.streamed_queries().is_empty(),
                "{name}: uncapped, all resident"
            );
            (probe.budget().claimed_bytes(), p.working_set_bytes())
        };
        let cpu = Prover::cpu(pk.clone()).unwrap();
        for (extra, all) in [(key_bytes / 2, false), (1 << 20, true)] {
            let cap = margin + working_set + extra;
            let mem = capped_memory(dev, margin, cap);
            let p = Prover::with_memory(pk.clone(), mem.clone()).unwrap();
            let streamed = p.streamed_queries();
            if all {
                assert_eq!(streamed.len(), 5, "{name}: {streamed:?}");
            } else {
                assert!((1..5).contains(&streamed.len()), "{name}: {streamed:?}");
            }
            for _ in 0..2 {
                let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
                let job = w.job(r, s);
                let (got, t) = p.prove_job(&job).unwrap();
                assert_eq!(got, cpu.prove_job(&job).unwrap().0, "{name}, {streamed:?}");
                assert!(t.streamed_bytes > 0, "{name}");
                if verify {
                    assert!(verifies(&pk, w.public_inputs(), &got), "{name}");
                }
            }
            let peak = mem.budget().peak_claimed_bytes();
            let limit = mem.budget().limit_bytes().unwrap();
            assert!(peak <= limit, "{name}: peak {peak} > limit {limit}");
            report(&format!(
                "gpu_streamed_key_matches_cpu: {name}: key {} resident uncapped, cap {}: streamed \
                 {streamed:?}, peak {}",
                cuzk_alloc::fmt_bytes(key_bytes),
                cuzk_alloc::fmt_bytes(cap),
                cuzk_alloc::fmt_bytes(peak)
            ));
            drop(p);
            mem.check_all_returned().unwrap();
        }
    }
}

/// Without a GPU: a prover holding the circuit's R1CS
/// (`Prover::with_r1cs`) proves as before, on the CPU's evaluation, and
/// ark-groth16 makes the same proof; an R1CS of another circuit is refused.
#[test]
fn r1cs_held_by_the_prover_cpu() {
    let mut rng = rng("r1cs_held_by_the_prover_cpu");
    let c = RandomCircuit::fill_domain(10, 2, 3, rng.gen());
    let pk = setup(c, &mut rng);
    let w = c.matrices().unwrap();
    let r1cs = std::sync::Arc::new(
        cuzk_prover::SparseR1cs::new(std::sync::Arc::new(w.matrices.clone())).unwrap(),
    );
    let p = Prover::cpu(pk.clone())
        .unwrap()
        .with_r1cs(r1cs.clone())
        .unwrap();
    assert!(std::ptr::eq(p.r1cs().unwrap().matrices(), r1cs.matrices()));
    let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let job = ProofJob {
        matrices: r1cs.matrices(),
        ..w.job(r, s)
    };
    let (got, t) = p.prove_job(&job).unwrap();
    assert!(!t.eval_on_gpu);
    assert_eq!(got, reference(&pk, &w, r, s));
    assert!(p.streamed_queries().is_empty());

    let other = RandomCircuit::fill_domain(11, 2, 3, rng.gen())
        .matrices()
        .unwrap();
    let wrong = cuzk_prover::SparseR1cs::new(std::sync::Arc::new(other.matrices)).unwrap();
    let e = invalid(
        Prover::cpu(pk)
            .unwrap()
            .with_r1cs(std::sync::Arc::new(wrong)),
        "an R1CS of another circuit",
    );
    assert!(e.contains("another circuit"), "{e}");
}

/// Without a GPU: a prover holding an R1CS without its row-major matrices
/// (`SparseR1cs::without_rows`) proves jobs that borrow the row-less
/// matrices, evaluating from the compact form: the same proof as
/// ark-groth16's. With the witness check it proves the same and refuses an
/// unsatisfied witness naming the constraint; a prover without that R1CS
/// refuses the row-less job for its missing rows.
#[test]
fn r1cs_without_rows_cpu() {
    use std::sync::Arc;
    let mut rng = rng("r1cs_without_rows_cpu");
    let c = RandomCircuit::fill_domain(10, 2, 3, rng.gen());
    let pk = setup(c, &mut rng);
    let w = c.matrices().unwrap();
    let r1cs = Arc::new(
        cuzk_prover::SparseR1cs::new(Arc::new(w.matrices.clone()))
            .unwrap()
            .without_rows(),
    );
    assert!(!r1cs.has_rows());
    assert!(r1cs.matrices().a.is_empty());
    assert_eq!(r1cs.num_constraints(), w.matrices.num_constraints);
    let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    let job = ProofJob {
        matrices: r1cs.matrices(),
        ..w.job(r, s)
    };
    let held = |check: bool| {
        Prover::cpu(pk.clone())
            .unwrap()
            .with_r1cs(r1cs.clone())
            .unwrap()
            .with_check_witness(check)
    };
    let (got, _) = held(false).prove_job(&job).unwrap();
    assert_eq!(got, reference(&pk, &w, r, s));
    assert_eq!(held(true).prove_job(&job).unwrap().0, got);

    let mut bad = w.full_assignment.clone();
    for v in &mut bad[w.num_inputs..] {
        *v += Fr::ONE;
    }
    let e = invalid(
        held(true).prove_job(&ProofJob {
            full_assignment: &bad,
            ..job
        }),
        "an unsatisfied witness against a row-less R1CS",
    );
    assert!(e.contains("does not satisfy constraint"), "{e}");

    let e = invalid(
        Prover::cpu(pk).unwrap().prove_job(&job),
        "row-less matrices on a prover without the R1CS",
    );
    assert!(e.contains("rows"), "{e}");
}

/// Without a GPU: `MultiGpuProver::warm_up` proves a job once a worker on
/// every lane and succeeds, after which a batch proves as ark-groth16
/// does; a job that does not match the key is its error.
#[test]
fn warm_up_proves_on_every_worker_cpu() {
    let mut rng = rng("warm_up_proves_on_every_worker_cpu");
    let c = RandomCircuit::fill_domain(9, 2, 3, rng.gen());
    let pk = setup(c, &mut rng);
    let w = c.matrices().unwrap();
    let multi = MultiGpuProver::cpu(pk.clone(), 2, 2).unwrap();
    let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
    multi.warm_up(&w.job(r, s)).unwrap();
    let out = multi.prove_batch(&[w.job(r, s)], None).unwrap();
    let (got, _, _) = out.into_iter().next().unwrap().unwrap();
    assert_eq!(got, reference(&pk, &w, r, s));
    let short = &w.full_assignment[..w.full_assignment.len() - 1];
    let e = invalid(
        multi.warm_up(&ProofJob {
            full_assignment: short,
            ..w.job(r, s)
        }),
        "a warm-up job of another circuit",
    );
    assert!(e.contains("another circuit"), "{e}");
}

/// `A z`, `B z`, `C z` evaluated on the GPU from the prover's R1CS, the
/// whole proof on the device: for a random circuit set up by ark-groth16
/// (random coefficients; the proofs verify), a PoRep-shaped one (bits,
/// powers of two, compacted A and B queries gathered on the device),
/// proofs equal the CPU path's for the same r and s,
/// with the compact form resident (uncapped) and streamed (a budget that
/// holds one proof's working set and half the key); a job of other
/// matrices, and the witness check, take the CPU's evaluation and give
/// the same proofs; two workers of a MultiGpuProver under the cap prove a
/// batch the same way (one proof admitted at a time, whose H stage then
/// evaluates C z beside b's NTTs where a third vector fits). The budget's
/// peak stays under its limit and every byte comes back.
#[test]
#[ignore = "needs a GPU"]
fn gpu_r1cs_evaluation_matches_cpu() {
    use std::sync::Arc;
    let _serial = serial();
    let Some(dev) = gpu_or_skip("gpu_r1cs_evaluation_matches_cpu") else {
        return;
    };
    let mut rng = rng("gpu_r1cs_evaluation_matches_cpu");
    let margin = BudgetConfig::default().margin_bytes;
    let cases = key_cases(&mut rng);
    for (name, pk, w, verify) in cases {
        let r1cs = Arc::new(cuzk_prover::SparseR1cs::new(Arc::new(w.matrices.clone())).unwrap());
        let job = |rng: &mut ChaCha20Rng| ProofJob {
            matrices: r1cs.matrices(),
            ..w.job(Fr::rand(rng), Fr::rand(rng))
        };
        let cpu = Prover::cpu(pk.clone()).unwrap();
        let (key_bytes, working_set) = {
            let probe = DeviceMemory::new(dev, BudgetConfig::default(), u64::MAX).unwrap();
            let p = Prover::with_memory(pk.clone(), probe.clone())
                .unwrap()
                .with_r1cs(r1cs.clone())
                .unwrap();
            assert!(
                p.streamed_queries().is_empty(),
                "{name}: uncapped, all resident"
            );
            (probe.budget().claimed_bytes(), p.working_set_bytes())
        };
        for capped in [false, true] {
            let mem = if capped {
                capped_memory(dev, margin, margin + working_set + key_bytes / 2)
            } else {
                DeviceMemory::new(dev, BudgetConfig::default(), u64::MAX).unwrap()
            };
            let p = Prover::with_memory(pk.clone(), mem.clone())
                .unwrap()
                .with_r1cs(r1cs.clone())
                .unwrap();
            let streamed = p.streamed_queries();
            assert_eq!(streamed.contains(&"R1CS"), capped, "{name}: {streamed:?}");
            for _ in 0..2 {
                let j = job(&mut rng);
                let (got, t) = p.prove_job(&j).unwrap();
                assert!(t.eval_on_gpu, "{name}");
                assert_eq!(got, cpu.prove_job(&j).unwrap().0, "{name}, {streamed:?}");
                if verify {
                    assert!(verifies(&pk, w.public_inputs(), &got), "{name}");
                }
                // The job's own matrices (another reference): the CPU's
                // evaluation, the same proof.
                let own = ProofJob {
                    matrices: &w.matrices,
                    ..j
                };
                let (again, t) = p.prove_job(&own).unwrap();
                assert!(!t.eval_on_gpu, "{name}");
                assert_eq!(again, got, "{name}");
            }
            let checked = Prover::with_memory(pk.clone(), mem.clone())
                .unwrap()
                .with_r1cs(r1cs.clone())
                .unwrap()
                .with_check_witness(true);
            let j = job(&mut rng);
            let (got, t) = checked.prove_job(&j).unwrap();
            assert!(
                !t.eval_on_gpu,
                "{name}: the witness check evaluates on the CPU"
            );
            assert_eq!(got, cpu.prove_job(&j).unwrap().0, "{name}");
            drop(checked);
            let peak = mem.budget().peak_claimed_bytes();
            let limit = mem.budget().limit_bytes().unwrap();
            assert!(peak <= limit, "{name}: peak {peak} > limit {limit}");
            report(&format!(
                "gpu_r1cs_evaluation_matches_cpu: {name}: R1CS {} in {} chunks, capped {capped}: \
                 streamed {streamed:?}, peak {}",
                cuzk_alloc::fmt_bytes(r1cs.bytes()),
                r1cs.num_chunks(),
                cuzk_alloc::fmt_bytes(peak)
            ));
            drop(p);
            mem.check_all_returned().unwrap();
        }
        // Two workers under the cap, one shared compact form.
        let mem = capped_memory(dev, margin, margin + working_set + key_bytes / 2);
        let multi = MultiGpuProver::with_memories(pk.clone(), std::slice::from_ref(&mem), 2)
            .unwrap()
            .with_r1cs(r1cs.clone())
            .unwrap();
        let jobs: Vec<ProofJob<'_>> = (0..4).map(|_| job(&mut rng)).collect();
        let d0 = multi.device_clock_ms(0).unwrap().expect("a GPU lane");
        let out = multi.prove_batch(&jobs, None).unwrap();
        let d1 = multi.device_clock_ms(0).unwrap().expect("a GPU lane");
        let mut timings = Vec::new();
        for (j, o) in jobs.iter().zip(out) {
            let (got, t, _) = o.unwrap();
            assert!(t.eval_on_gpu, "{name}");
            let (a, b) = t.gpu_stage_device_ms.expect("device times");
            assert!(d0 <= a && a <= b && b <= d1, "{name}: {d0} {a} {b} {d1}");
            assert_eq!(got, cpu.prove_job(j).unwrap().0, "{name}: batch");
            timings.push(t);
        }
        let busy = cuzk_prover::gpu_busy_fraction_device(&timings, d0, d1).unwrap();
        assert!(busy > 0.0 && busy <= 1.0, "{name}: busy {busy}");
        let peak = mem.budget().peak_claimed_bytes();
        let limit = mem.budget().limit_bytes().unwrap();
        assert!(peak <= limit, "{name}: batch peak {peak} > limit {limit}");
        report(&format!(
            "gpu_r1cs_evaluation_matches_cpu: {name}: batch of 2 workers, {:?} admitted at once, \
             peak {}",
            multi.concurrent_proofs(0),
            cuzk_alloc::fmt_bytes(peak)
        ));
        drop(multi);
        mem.check_all_returned().unwrap();
    }
}

/// H's MSM beside the witness MSMs (`Prover::with_msm_overlap`), on a
/// 2^20 PoRep-shaped circuit (random-point key; at smaller sizes a proof's
/// MSM stage is too small to split into two streamed shares): a prover
/// built while the budget held none of the key beside a proof's working
/// set (every query streamed; room is freed after the build) and evaluating
/// on the GPU runs the two sides at once, each within its own share of the
/// budget. Its proofs equal the same prover's with the overlap off (the
/// MSMs one after another) and the CPU path's, for the same r and s; a
/// batch of two workers under the same budget does the same, and so does
/// one whose witness MSMs run in one pass for the batch
/// (`MultiGpuProver::with_witness_pass`), after the GPU stages and, with 2
/// GiB more budget, beside them. The budget's peak stays under its limit
/// and every byte comes back.
#[test]
#[ignore = "needs a GPU"]
fn gpu_overlapped_msms_match_cpu() {
    use std::sync::Arc;
    let _serial = serial();
    let Some(dev) = gpu_or_skip("gpu_overlapped_msms_match_cpu") else {
        return;
    };
    let mut rng = rng("gpu_overlapped_msms_match_cpu");
    let margin = BudgetConfig::default().margin_bytes;
    let c = cuzk_prover::synthetic::PorepShaped::new(20, 2, rng.gen());
    let w = c.matrices().unwrap();
    let pk = cuzk_prover::synthetic::PorepShaped::random_key(&w, &mut rng).unwrap();
    let r1cs = Arc::new(cuzk_prover::SparseR1cs::new(Arc::new(w.matrices.clone())).unwrap());
    let job = |rng: &mut ChaCha20Rng| ProofJob {
        matrices: r1cs.matrices(),
        ..w.job(Fr::rand(rng), Fr::rand(rng))
    };
    let cpu = Prover::cpu(pk.clone()).unwrap();
    let working_set = {
        let probe = DeviceMemory::new(dev, BudgetConfig::default(), u64::MAX).unwrap();
        Prover::with_memory(pk.clone(), probe)
            .unwrap()
            .with_r1cs(r1cs.clone())
            .unwrap()
            .working_set_bytes()
    };
    let room = 256u64 << 20;
    let cap = margin + working_set + room;
    let mem = capped_memory(dev, margin, cap);
    // The key is placed while `room` is held: nothing of it fits.
    let held = mem.budget().try_reserve(room).unwrap();
    // `on`: H's MSM beside the witness MSMs and only the bases of non-zero
    // scalars streamed; `off`: neither.
    let build = |overlap: bool| {
        Prover::with_memory(pk.clone(), mem.clone())
            .unwrap()
            .with_msm_overlap(overlap)
            .with_nonzero_streaming(overlap)
            .with_r1cs(r1cs.clone())
            .unwrap()
    };
    let (on, off) = (build(true), build(false));
    // Two workers over `m`, with or without the batch's witness pass.
    let multi_on = |m: &Arc<DeviceMemory>, pass: bool| {
        MultiGpuProver::with_memories(pk.clone(), std::slice::from_ref(m), 2)
            .unwrap()
            .with_r1cs(r1cs.clone())
            .unwrap()
            .with_witness_pass(pass)
    };
    let (multi, with_pass) = (multi_on(&mem, false), multi_on(&mem, true));
    drop(held);
    let streamed = on.streamed_queries();
    for p in [
        &on,
        &off,
        multi.prover(0).unwrap(),
        with_pass.prover(0).unwrap(),
    ] {
        let streamed = p.streamed_queries();
        assert!(
            ["H", "L", "A", "B G1", "B G2"]
                .iter()
                .all(|q| streamed.contains(q)),
            "every query streamed: {streamed:?}"
        );
    }
    for _ in 0..2 {
        let j = job(&mut rng);
        let (got, t) = on.prove_job(&j).unwrap();
        assert!(t.eval_on_gpu && t.msm_overlapped, "overlapped: {t:?}");
        let (serial, t_off) = off.prove_job(&j).unwrap();
        assert!(
            t_off.eval_on_gpu && !t_off.msm_overlapped,
            "one after another: {t_off:?}"
        );
        // About 58% of the witness is zero: its bases stay on the host.
        assert!(
            t.streamed_bytes < t_off.streamed_bytes,
            "non-zero bases only: {} bytes streamed, every base {}",
            t.streamed_bytes,
            t_off.streamed_bytes
        );
        assert_eq!(got, serial, "overlapped against one after another");
        assert_eq!(got, cpu.prove_job(&j).unwrap().0, "against the CPU path");
    }
    drop((on, off));
    let jobs: Vec<ProofJob<'_>> = (0..4).map(|_| job(&mut rng)).collect();
    let out = multi.prove_batch(&jobs, None).unwrap();
    for (j, o) in jobs.iter().zip(out) {
        let (got, t, _) = o.unwrap();
        assert!(t.msm_overlapped, "batch overlapped: {t:?}");
        assert_eq!(got, cpu.prove_job(j).unwrap().0, "batch");
    }
    drop(multi);
    // The batch's witness MSMs in one pass (each witness query's bases
    // streamed once for the five proofs, one with r = 0: no B in G1).
    let mut jobs: Vec<ProofJob<'_>> = (0..4).map(|_| job(&mut rng)).collect();
    jobs.push(ProofJob {
        r: Fr::from(0u64),
        ..job(&mut rng)
    });
    let d0 = with_pass.device_clock_ms(0).unwrap().expect("a GPU lane");
    let out = with_pass.prove_batch(&jobs, None).unwrap();
    let d1 = with_pass.device_clock_ms(0).unwrap().expect("a GPU lane");
    let mut timings = Vec::new();
    for (j, o) in jobs.iter().zip(out) {
        let (got, t, _) = o.unwrap();
        assert_eq!(t.witness_pass_proofs, jobs.len(), "witness pass: {t:?}");
        let (a, b) = t.witness_pass_device_ms.expect("the pass's device times");
        assert!(d0 <= a && a <= b && b <= d1, "pass: {d0} {a} {b} {d1}");
        assert_eq!(
            got,
            cpu.prove_job(j).unwrap().0,
            "batch with a witness pass"
        );
        timings.push(t);
    }
    let busy = cuzk_prover::gpu_busy_fraction_device(&timings, d0, d1).unwrap();
    assert!(busy > 0.0 && busy <= 1.0, "busy {busy}");
    drop(with_pass);
    // With 2 GiB more budget than the key was placed with (every query
    // still streamed), the pass runs beside the GPU stages, within room
    // reserved beyond the admitted proof's H stage.
    let big = 2u64 << 30;
    let roomy = capped_memory(dev, margin, cap + big);
    let held = roomy.budget().try_reserve(room + big).unwrap();
    let beside = multi_on(&roomy, true);
    drop(held);
    let out = beside.prove_batch(&jobs, None).unwrap();
    for (j, o) in jobs.iter().zip(out) {
        let (got, t, _) = o.unwrap();
        assert_eq!(t.witness_pass_proofs, jobs.len(), "witness pass: {t:?}");
        assert!(t.witness_pass_beside, "the pass beside the stages: {t:?}");
        assert_eq!(got, cpu.prove_job(j).unwrap().0, "batch with a pass beside");
    }
    drop(beside);
    roomy.check_all_returned().unwrap();
    let peak = mem.budget().peak_claimed_bytes();
    let limit = mem.budget().limit_bytes().unwrap();
    assert!(peak <= limit, "peak {peak} > limit {limit}");
    report(&format!(
        "gpu_overlapped_msms_match_cpu: 2^20 PoRep-shaped, cap {}, streamed {streamed:?}, peak {}",
        cuzk_alloc::fmt_bytes(cap),
        cuzk_alloc::fmt_bytes(peak)
    ));
    mem.check_all_returned().unwrap();
}
