//! The R1CS front end: constraint matrices, synthesis with ark-relations, proof jobs.

use crate::timings::ms;
use crate::{Error, Fr, Result};
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, Matrix, OptimizationGoal, SynthesisMode,
    R1CS_PREDICATE_LABEL,
};
use std::time::Instant;

/// The R1CS matrices of a circuit: one row per constraint, each row a list
/// of `(coefficient, variable index)`, variables indexed as the full
/// assignment (the constant one, the other instance variables, then the
/// witness variables). ark-relations 0.6 hands them out as
/// `to_matrices()[R1CS_PREDICATE_LABEL] = [A, B, C]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConstraintMatrices {
    /// Number of constraints (rows of each matrix).
    pub num_constraints: usize,
    /// The A matrix.
    pub a: Matrix<Fr>,
    /// The B matrix.
    pub b: Matrix<Fr>,
    /// The C matrix.
    pub c: Matrix<Fr>,
}

impl ConstraintMatrices {
    /// Matrices from A, B and C.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when their numbers of rows differ.
    pub fn new(a: Matrix<Fr>, b: Matrix<Fr>, c: Matrix<Fr>) -> Result<Self> {
        if a.len() != b.len() || a.len() != c.len() {
            return Err(Error::InvalidArgument(format!(
                "R1CS matrices of {}, {} and {} rows: A, B and C need one row per constraint each",
                a.len(),
                b.len(),
                c.len()
            )));
        }
        Ok(ConstraintMatrices {
            num_constraints: a.len(),
            a,
            b,
            c,
        })
    }

    /// From ark-relations' `[A, B, C]` (as ark-groth16 takes them).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless there are exactly three matrices of
    /// equal numbers of rows.
    pub fn from_ark(matrices: Vec<Matrix<Fr>>) -> Result<Self> {
        let [a, b, c]: [Matrix<Fr>; 3] = matrices.try_into().map_err(|m: Vec<_>| {
            Error::InvalidArgument(format!(
                "{} R1CS matrices: give A, B and C (an R1CS predicate)",
                m.len()
            ))
        })?;
        Self::new(a, b, c)
    }

    /// `[A, B, C]` as ark-groth16's `create_proof_with_reduction_and_matrices`
    /// takes them (a copy).
    pub fn to_ark(&self) -> Vec<Matrix<Fr>> {
        vec![self.a.clone(), self.b.clone(), self.c.clone()]
    }
}

/// A synthesized circuit: its matrices and the full assignment.
#[derive(Clone, Debug)]
pub struct Synthesized {
    /// The R1CS matrices.
    pub matrices: ConstraintMatrices,
    /// The full assignment z: the constant one, the public inputs, then the
    /// witness.
    pub full_assignment: Vec<Fr>,
    /// Number of instance variables, the constant one included.
    pub num_inputs: usize,
    /// Synthesis time, milliseconds.
    pub synthesis_ms: f64,
}

impl Synthesized {
    /// The public inputs (without the constant one), as `verify_proof` takes
    /// them; empty when `num_inputs` is 0 or past the assignment.
    pub fn public_inputs(&self) -> &[Fr] {
        self.full_assignment.get(1..self.num_inputs).unwrap_or(&[])
    }

    /// A proof job for this witness with randomness `r` and `s`.
    pub fn job(&self, r: Fr, s: Fr) -> ProofJob<'_> {
        ProofJob {
            matrices: &self.matrices,
            full_assignment: &self.full_assignment,
            num_inputs: self.num_inputs,
            r,
            s,
        }
    }
}

/// Synthesizes `circuit` with ark-relations' constraint system in prove mode
/// (matrices constructed, linear combinations inlined, as ark-groth16 does).
///
/// With `check`, an unsatisfied system is an error.
///
/// # Errors
/// [`Error::InvalidArgument`] when synthesis fails, when the system has
/// constraints of predicates other than R1CS, or (with `check`) when it is
/// not satisfied, naming the first unsatisfied constraint.
pub fn synthesize<C: ConstraintSynthesizer<Fr>>(circuit: C, check: bool) -> Result<Synthesized> {
    let t = Instant::now();
    let cs = ConstraintSystem::<Fr>::new_ref();
    cs.set_optimization_goal(OptimizationGoal::Constraints);
    cs.set_mode(SynthesisMode::Prove {
        construct_matrices: true,
        generate_lc_assignments: false,
    });
    let syn = |e: ark_relations::gr1cs::SynthesisError| {
        Error::InvalidArgument(format!("circuit synthesis failed: {e}"))
    };
    circuit.generate_constraints(cs.clone()).map_err(syn)?;
    cs.finalize();
    if check {
        if let Some(which) = cs.which_is_unsatisfied().map_err(syn)? {
            return Err(Error::InvalidArgument(format!(
                "the circuit's constraint system is not satisfied by its assignment \
                 (first unsatisfied constraint: {which})"
            )));
        }
    }
    let mut all = cs.to_matrices().map_err(syn)?;
    let r1cs = all.remove(R1CS_PREDICATE_LABEL).unwrap_or_default();
    if let Some((label, _)) = all.iter().find(|(_, m)| m.iter().any(|m| !m.is_empty())) {
        return Err(Error::InvalidArgument(format!(
            "the circuit uses constraints of predicate {label}; Groth16 proves R1CS only"
        )));
    }
    let matrices = if r1cs.is_empty() {
        ConstraintMatrices::default()
    } else {
        ConstraintMatrices::from_ark(r1cs)?
    };
    let (full_assignment, num_inputs) = {
        let b = cs
            .borrow()
            .ok_or_else(|| Error::Internal("constraint system vanished".into()))?;
        let inst = b.instance_assignment().map_err(syn)?;
        let wit = b.witness_assignment().map_err(syn)?;
        ([inst, wit].concat(), inst.len())
    };
    Ok(Synthesized {
        matrices,
        full_assignment,
        num_inputs,
        synthesis_ms: ms(t),
    })
}

/// One proof to make: matrices, full assignment and the randomness.
#[derive(Clone, Copy, Debug)]
pub struct ProofJob<'a> {
    /// The circuit's R1CS matrices.
    pub matrices: &'a ConstraintMatrices,
    /// The full assignment z (the constant one first).
    pub full_assignment: &'a [Fr],
    /// Number of instance variables, the constant one included.
    pub num_inputs: usize,
    /// Groth16's randomness r (zero: no B in G1, as ark-groth16).
    pub r: Fr,
    /// Groth16's randomness s.
    pub s: Fr,
}
