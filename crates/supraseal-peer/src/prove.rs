//! supraseal-c2's prover over a parameter file of [`crate::write_params`]:
//! the same inputs as cuzk's prover, its proofs as arkworks values.
//!
//! supraseal-c2 takes field elements in arkworks' own in-memory layout
//! (little-endian 64-bit limbs in Montgomery form, as sppark's host types)
//! and writes proofs in its own layout, read back by the `proof` module.

use crate::params::{popcount, Density};
use crate::proof::RawProof;
use ark_bls12_381::{Bls12_381, Fr};
use ark_groth16::Proof;
use std::path::Path;

// supraseal-c2 calls blst's C functions (blst_p1_deserialize); the peer's
// encoder uses the blst crate too, which keeps its library linked.
use blst as _;

/// One proof's inputs, as cuzk's prover takes them (`cuzk_prover::ProofJob`
/// and its evaluations).
#[derive(Clone, Copy, Debug)]
pub struct Job<'a> {
    /// `A z`, `B z`, `C z` over the domain (`ProofJob::evaluations`): at
    /// most the key's domain size each, all of one length.
    pub abc: [&'a [Fr]; 3],
    /// The full assignment: the instance variables (the constant one
    /// first), then the witness.
    pub assignment: &'a [Fr],
    /// Groth16's randomness r.
    pub r: Fr,
    /// Groth16's randomness s.
    pub s: Fr,
}

/// supraseal-c2 with one parameter file loaded (its points in pinned host
/// memory, read on a thread of its own until the first proof needs them).
pub struct Supraseal {
    srs: supraseal_c2::SRS,
    density: Density,
    /// Points of the file's h section: the domain size less one.
    h_points: usize,
}

impl Supraseal {
    /// Loads `path`, written by [`crate::write_params`] with `density`,
    /// for a key over a domain of `h_points + 1` elements.
    ///
    /// # Errors
    /// supraseal-c2's message: no GPU, a missing or malformed file.
    pub fn load(path: &Path, density: Density, h_points: usize) -> Result<Self, String> {
        let srs = supraseal_c2::SRS::try_new(path.to_path_buf(), false).map_err(|e| {
            format!(
                "supraseal-c2 loading {}: {}",
                path.display(),
                String::from(e)
            )
        })?;
        Ok(Supraseal {
            srs,
            density,
            h_points,
        })
    }

    /// Proofs of `jobs`, one batch through supraseal-c2 (its GPU MSMs and
    /// NTTs, its host-side preprocessing and G2 MSM), in order.
    ///
    /// # Errors
    /// A job whose lengths disagree with the key (checked here, before
    /// supraseal-c2's own asserts could abort the process), or
    /// supraseal-c2's failure message.
    pub fn prove(&self, jobs: &[Job<'_>]) -> Result<Vec<Proof<Bls12_381>>, String> {
        let d = &self.density;
        let nv = d.num_inputs + d.num_aux;
        let domain = self.h_points + 1;
        for (k, j) in jobs.iter().enumerate() {
            if j.assignment.len() != nv {
                return Err(format!(
                    "job {k}: {} values in the assignment, the key has {nv} variables",
                    j.assignment.len()
                ));
            }
            let len = j.abc[0].len();
            if j.abc.iter().any(|v| v.len() != len) || len > domain || len == 0 {
                return Err(format!(
                    "job {k}: evaluations of {}, {} and {} elements; give three of equal \
                     length, at most the domain's {domain}",
                    j.abc[0].len(),
                    j.abc[1].len(),
                    j.abc[2].len()
                ));
            }
        }
        let raw: Vec<supraseal_c2::Assignment<Fr>> = jobs
            .iter()
            .map(|j| supraseal_c2::Assignment {
                a_aux_density: d.a_aux.as_ptr().cast(),
                a_aux_bit_len: d.num_aux,
                a_aux_popcount: popcount(&d.a_aux),
                b_inp_density: d.b_inputs.as_ptr().cast(),
                b_inp_bit_len: d.num_inputs,
                b_inp_popcount: popcount(&d.b_inputs),
                b_aux_density: d.b_aux.as_ptr().cast(),
                b_aux_bit_len: d.num_aux,
                b_aux_popcount: popcount(&d.b_aux),
                a: j.abc[0].as_ptr(),
                b: j.abc[1].as_ptr(),
                c: j.abc[2].as_ptr(),
                abc_size: j.abc[0].len(),
                inp_assignment_data: j.assignment.as_ptr(),
                inp_assignment_size: d.num_inputs,
                aux_assignment_data: j.assignment[d.num_inputs..].as_ptr(),
                aux_assignment_size: d.num_aux,
            })
            .collect();
        let r: Vec<Fr> = jobs.iter().map(|j| j.r).collect();
        let s: Vec<Fr> = jobs.iter().map(|j| j.s).collect();
        let mut out = vec![RawProof::default(); jobs.len()];
        // supraseal-c2 reports a failure by panicking with its message.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            supraseal_c2::generate_groth16_proofs(&raw, &r, &s, &mut out, &self.srs)
        }))
        .map_err(|e| {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".into());
            format!("supraseal-c2: {msg}")
        })?;
        Ok(out.into_iter().map(RawProof::to_ark).collect())
    }
}
