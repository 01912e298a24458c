//! The R1CS front end: constraint matrices, synthesis with ark-relations, proof jobs.

use crate::timings::ms;
use crate::{Error, Fr, Result};
use ark_ff::{One, Zero};
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, Matrix, OptimizationGoal, SynthesisMode,
    R1CS_PREDICATE_LABEL,
};
use rayon::prelude::*;
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

    /// Whether the rows are here: false for the row-less matrices of
    /// [`crate::SparseR1cs::without_rows`] (constraints, no rows), which
    /// only a prover holding that compact form proves.
    pub fn has_rows(&self) -> bool {
        self.num_constraints == 0 || !(self.a.is_empty() && self.b.is_empty() && self.c.is_empty())
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

    /// How the witness part of the full assignment (indices `num_inputs..`)
    /// splits into zeros, ones and other values; all zero counts when
    /// `num_inputs` is past the assignment.
    pub fn witness_shape(&self) -> WitnessShape {
        WitnessShape::of(self.full_assignment.get(self.num_inputs..).unwrap_or(&[]))
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

/// Counts of zeros, ones and other values among field elements (a
/// witness): the MSMs of a proof skip zeros and add ones without a scalar
/// multiplication, so this shape, not only the size, sets their cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WitnessShape {
    /// Values equal to 0.
    pub zeros: usize,
    /// Values equal to 1.
    pub ones: usize,
    /// Every other value.
    pub other: usize,
}

impl WitnessShape {
    /// The shape of `values` (counted in parallel).
    pub fn of(values: &[Fr]) -> Self {
        values
            .par_iter()
            .with_min_len(1 << 14)
            .fold(WitnessShape::default, |mut s, v| {
                if v.is_zero() {
                    s.zeros += 1;
                } else if v.is_one() {
                    s.ones += 1;
                } else {
                    s.other += 1;
                }
                s
            })
            .reduce(WitnessShape::default, |a, b| WitnessShape {
                zeros: a.zeros + b.zeros,
                ones: a.ones + b.ones,
                other: a.other + b.other,
            })
    }

    /// Values counted: `zeros + ones + other`.
    pub fn total(&self) -> usize {
        self.zeros + self.ones + self.other
    }

    /// The fraction of values that are 0 or 1, in `[0, 1]`; 0 when there
    /// are none.
    pub fn fraction_zero_one(&self) -> f64 {
        match self.total() {
            0 => 0.0,
            n => (self.zeros + self.ones) as f64 / n as f64,
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
    if check {
        if let Some(i) = first_unsatisfied(&matrices, &full_assignment) {
            return Err(Error::InvalidArgument(format!(
                "the circuit's assignment does not satisfy constraint {i} of {}: <A_{i}, z> * \
                 <B_{i}, z> != <C_{i}, z> (z the assignment the circuit's synthesis made)",
                matrices.num_constraints
            )));
        }
    }
    Ok(Synthesized {
        matrices,
        full_assignment,
        num_inputs,
        synthesis_ms: ms(t),
    })
}

/// The first constraint i of `m` with `<A_i, z> * <B_i, z> != <C_i, z>`
/// (a column past `z` counts as unsatisfied), on all cores.
pub(crate) fn first_unsatisfied(m: &ConstraintMatrices, z: &[Fr]) -> Option<usize> {
    let dot = |row: &Vec<(Fr, usize)>| -> Option<Fr> {
        row.iter()
            .try_fold(Fr::zero(), |acc, &(c, j)| Some(acc + c * z.get(j)?))
    };
    (0..m.num_constraints).into_par_iter().find_first(|&i| {
        match (dot(&m.a[i]), dot(&m.b[i]), dot(&m.c[i])) {
            (Some(a), Some(b), Some(c)) => a * b != c,
            _ => true,
        }
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

impl ProofJob<'_> {
    /// The evaluations `A z`, `B z`, `C z` of this job's constraints over the
    /// QAP's domain (2^k elements each, the smallest power of two holding
    /// the constraints and the instance variables): row i of each matrix
    /// against the full assignment, then the instance variables in `A z`
    /// after the constraints (libsnark's input-consistency rows), zeros
    /// after that. This is what the quotient H is computed from; other
    /// provers take it as their input too.
    ///
    /// With `check`, a constraint with `(A z)(B z) != C z` is an error.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for matrices that disagree with the
    /// assignment or the constraint count, a domain past 2^32, or, with
    /// `check`, an unsatisfied constraint (the message names it).
    pub fn evaluations(&self, check: bool) -> crate::Result<[Vec<Fr>; 3]> {
        let log_n = crate::qap::domain_log_size(self.matrices.num_constraints, self.num_inputs)?;
        crate::qap::evaluate(
            self.matrices,
            self.full_assignment,
            self.num_inputs,
            log_n,
            check,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::UniformRand;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Counts over a seeded mix of 0, 1 and random values, tallied as the
    /// values are drawn; the instance part (0s and 1s too) is not counted.
    #[test]
    fn witness_shape_counts_the_witness_part() {
        let mut rng = ChaCha20Rng::seed_from_u64(0x5a11);
        let num_inputs = 5;
        let mut z = vec![Fr::one(), Fr::zero(), Fr::zero(), Fr::one(), Fr::from(7u64)];
        let mut want = WitnessShape::default();
        for _ in 0..50_000 {
            match rng.gen_range(0..3) {
                0 => {
                    z.push(Fr::zero());
                    want.zeros += 1;
                }
                1 => {
                    z.push(Fr::one());
                    want.ones += 1;
                }
                // A uniform element is 0 or 1 with probability 2^-254.
                _ => {
                    z.push(Fr::rand(&mut rng));
                    want.other += 1;
                }
            }
        }
        let w = Synthesized {
            matrices: ConstraintMatrices::default(),
            full_assignment: z,
            num_inputs,
            synthesis_ms: 0.0,
        };
        let got = w.witness_shape();
        assert_eq!(got, want);
        assert_eq!(got.total(), 50_000);
        let frac = (want.zeros + want.ones) as f64 / 50_000.0;
        assert_eq!(got.fraction_zero_one(), frac);
        assert!(frac > 0.6 && frac < 0.73, "{frac}");

        let empty = Synthesized {
            num_inputs: 60_000,
            ..w
        };
        assert_eq!(empty.witness_shape(), WitnessShape::default());
        assert_eq!(empty.witness_shape().fraction_zero_one(), 0.0);
    }
}
