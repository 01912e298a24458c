//! cuzk-prover against ark-groth16 0.6: for random satisfiable circuits
//! (multiplications, additions with constants, zero coefficients, empty
//! rows, public inputs, unused variables) a proof equals ark-groth16's
//! `create_proof_with_reduction_and_matrices` for the same r and s (r = 0
//! included), proofs with random r and s verify, a witness that does not
//! match the key is an error, batches prove each partition; on a GPU the
//! GPU path gives the CPU path's proofs.

use ark_bls12_381::Bls12_381;
use ark_ff::{AdditiveGroup, Field, UniformRand};
use ark_groth16::{prepare_verifying_key, Groth16};
use ark_snark::SNARK;
use cuzk_prover::synthetic::RandomCircuit;
use cuzk_prover::{synthesize, Backend, Error, Fr, Proof, Prover, ProvingKey, Synthesized};
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
                .prove_with_matrices(&w.matrices, &w.full_assignment, w.num_inputs, r, s)
                .unwrap();
            prop_assert_eq!(&got, &want);
            let got_cpu = cpu
                .prove_with_matrices(&w.matrices, &w.full_assignment, w.num_inputs, r, s)
                .unwrap();
            prop_assert_eq!(&got_cpu, &want);
        }
        // Built without ark-relations, the same system proves the same.
        let d = c.matrices().unwrap();
        prop_assert_eq!(&d.full_assignment, &w.full_assignment);
        let (r, s) = (Fr::rand(&mut rng), Fr::rand(&mut rng));
        let got = prover
            .prove_with_matrices(&d.matrices, &d.full_assignment, d.num_inputs, r, s)
            .unwrap();
        prop_assert_eq!(got, reference(&pk, &w, r, s));
    }
}

/// Random r, s: proofs verify with ark-groth16 (`verify_proof` and the
/// SNARK trait's `verify`), and not for other inputs.
#[test]
fn random_proofs_verify() {
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
        let (proof, t) = prover.prove_timed(c, &mut rng).unwrap();
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
    let p = prover
        .prove_with_matrices(&w.matrices, &w.full_assignment, w.num_inputs, r, s)
        .unwrap();
    assert_eq!(p, reference(&pk, &w, r, s));
    assert!(verifies(&pk, w.public_inputs(), &p));
}

fn invalid(r: cuzk_prover::Result<Proof>, what: &str) -> String {
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
        prover.prove_with_matrices(m, &z[..z.len() - 1], ni, r, s),
        "short assignment",
    );
    assert!(m1.contains("variables"), "{m1}");
    let mut longer = z.clone();
    longer.push(Fr::ONE);
    invalid(
        prover.prove_with_matrices(m, &longer, ni, r, s),
        "long assignment",
    );
    let m2 = invalid(prover.prove_with_matrices(m, z, ni + 1, r, s), "inputs");
    assert!(m2.contains("instance variables"), "{m2}");

    // Matrices of another circuit (another domain).
    let other = RandomCircuit {
        num_constraints: 200,
        ..c
    };
    let wo = synthesize(other, true).unwrap();
    invalid(
        prover.prove_with_matrices(&wo.matrices, z, ni, r, s),
        "other circuit's matrices",
    );
    // A column past the assignment.
    let mut bad = w.matrices.clone();
    bad.a[0].push((Fr::ONE, z.len() + 5));
    invalid(prover.prove_with_matrices(&bad, z, ni, r, s), "column");
    // Rows that disagree with num_constraints.
    let mut rows = w.matrices.clone();
    rows.c.pop();
    invalid(prover.prove_with_matrices(&rows, z, ni, r, s), "rows");

    // An unsatisfied witness: an error when checked; unchecked, a proof
    // that does not verify.
    let mut tampered = z.clone();
    let last = tampered.len() - 2;
    tampered[last] += Fr::ONE;
    let m3 = invalid(
        checked.prove_with_matrices(m, &tampered, ni, r, s),
        "unsatisfied",
    );
    assert!(m3.contains("constraint"), "{m3}");
    let p = prover
        .prove_with_matrices(m, &tampered, ni, r, s)
        .expect("unchecked proves");
    assert!(!verifies(&pk, &tampered[1..ni], &p));

    // A key that does not fit the circuit at all.
    let pk_other = setup(other, &mut rng);
    let p_other = Prover::cpu(pk_other).unwrap();
    invalid(
        p_other.prove_with_matrices(m, z, ni, r, s),
        "other circuit's key",
    );
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
    let mut rng = rng("unsatisfied_circuit_errors");
    let pk = setup_any(Bad(true), &mut rng);
    let checked = Prover::new(pk.clone()).unwrap().with_check_witness(true);
    let p = checked.prove(Bad(true), &mut rng).unwrap();
    assert!(verifies(&pk, &[Fr::from(3u64)], &p));
    let m = invalid(checked.prove(Bad(false), &mut rng), "unsatisfied circuit");
    assert!(m.contains("not satisfied"), "{m}");
    // Unchecked: a proof, which does not verify.
    let unchecked = Prover::cpu(pk.clone()).unwrap();
    let p = unchecked.prove(Bad(false), &mut rng).unwrap();
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
    for pipelined in [false, true] {
        let out = prover.prove_batch_with(&jobs, pipelined);
        assert_eq!(out.len(), 4);
        assert!(matches!(out[1], Err(Error::InvalidArgument(_))));
        for (i, w) in [(0usize, &ws[0]), (2, &ws[1]), (3, &ws[2])] {
            let (p, _) = out[i].as_ref().unwrap();
            assert_eq!(*p, reference(&pk, w, rs[i].0, rs[i].1), "job {i}");
            assert!(verifies(&pk, w.public_inputs(), p));
        }
    }
    assert_eq!(prover.prove_batch(&jobs).len(), 4);
    assert!(prover.prove_batch(&[]).is_empty());

    // Whole circuits, synthesized in the pipeline: each proof verifies
    // for its own public inputs.
    let circuits: Vec<RandomCircuit> = (0..4)
        .map(|_| RandomCircuit {
            values_seed: rng.gen(),
            ..base
        })
        .collect();
    let out = prover.prove_circuits(circuits.clone(), &mut rng);
    assert_eq!(out.len(), 4);
    for (c, o) in circuits.iter().zip(&out) {
        let (p, t, inputs) = o.as_ref().unwrap();
        assert_eq!(inputs.as_slice(), c.matrices().unwrap().public_inputs());
        assert!(verifies(&pk, inputs, p));
        assert!(t.witness_ms > 0.0);
    }
}

/// On a GPU: the prover picks it, and its proofs equal the CPU path's (and
/// ark-groth16's) on circuits up to 2^12 constraints.
#[test]
fn gpu_matches_cpu() {
    let Some(_dev) = gpu_or_skip("gpu_matches_cpu") else {
        return;
    };
    let mut rng = rng("gpu_matches_cpu");
    for log_n in [1u32, 5, 9, 12] {
        let c = RandomCircuit::fill_domain(log_n, 3, 7, rng.gen());
        let pk = setup(c, &mut rng);
        let w = c.matrices().unwrap();
        let gpu = Prover::new(pk.clone()).unwrap();
        assert_eq!(gpu.backend(), Backend::Gpu);
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

/// Without a GPU, `Prover::new` falls back to the CPU.
#[test]
fn backend_choice() {
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
        Backend::Gpu
    } else {
        Backend::Cpu
    };
    assert_eq!(p.backend(), want);
    assert_eq!(Prover::cpu(pk).unwrap().backend(), Backend::Cpu);
}

/// On a GPU: with every 7th device allocation failing, each proof of a
/// batch either equals the CPU path's or is an out-of-memory error, the
/// device stays usable (all succeed once injection stops), and every byte
/// is returned when the prover is dropped.
#[test]
fn gpu_injected_failures() {
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
    let out = gpu.prove_batch(&jobs);
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
    for (j, o) in jobs.iter().zip(gpu.prove_batch(&jobs)) {
        assert_eq!(o.unwrap().0, cpu.prove_job(j).unwrap().0);
    }
    drop(gpu);
    mem.check_all_returned().unwrap();
}
