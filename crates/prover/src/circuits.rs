//! Bundled real circuits (feature `circuits`), for examples, tests and benchmarks.
//!
//! [`Sha256Chain`]: a chain of SHA-256 compressions over a secret 32-byte
//! preimage with the final digest public, built with ark-crypto-primitives'
//! SHA-256 R1CS gadget. Its witness is mostly bits, as in hash-heavy
//! production circuits (Filecoin's PoRep), so it gives the prover realistic
//! matrices and witness shapes; its proofs verify with ark-groth16.

use crate::{Error, Fr, Result};
use ark_crypto_primitives::crh::sha256::constraints::Sha256Gadget;
use ark_crypto_primitives::crh::sha256::{digest::Digest, Sha256};
use ark_ff::PrimeField;
use ark_r1cs_std::{eq::EqGadget, uint8::UInt8};
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, ConstraintSystemRef, OptimizationGoal, SynthesisError,
    SynthesisMode,
};

/// `rounds` SHA-256 hashes chained from a secret 32-byte preimage:
/// `d_0 = preimage`, `d_{i+1} = SHA-256(d_i)`, and `d_rounds` is public.
///
/// Each hash of 32 bytes is one SHA-256 compression (the padded message
/// fits one 64-byte block), 39,482 constraints with ark-crypto-primitives'
/// 0.6 gadget (1 compression: 40,906 in all, 16: 633,136). The witness
/// is almost all bits: at 1, 4 and 16 compressions 99.94%, 99.98% and
/// 99.996% of its values are 0 or 1 (about 58% zeros, 42% ones). The public inputs are the digest's 32
/// bytes packed as ark-r1cs-std's `UInt8::new_input_vec` packs them
/// ([`Sha256Chain::public_inputs`]: two field elements).
///
/// With 0 rounds the circuit only makes the preimage public.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sha256Chain {
    preimage: [u8; 32],
    rounds: usize,
}

/// Sizes of a [`Sha256Chain`] circuit, from a setup-mode synthesis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CircuitSize {
    /// Constraints.
    pub num_constraints: usize,
    /// Instance variables, the constant one included.
    pub num_instance_variables: usize,
    /// Witness variables.
    pub num_witness_variables: usize,
}

/// The longest [`Sha256Chain`] whose QAP domain fits 2^log
/// ([`Sha256Chain::rounds_for_log_constraints`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sha256ChainFit {
    /// Compressions of the chain.
    pub rounds: usize,
    /// Constraints of the chain of `rounds`.
    pub num_constraints: usize,
    /// Constraints each compression adds.
    pub constraints_per_compression: usize,
    /// Instance variables, the constant one included (the same for every
    /// number of rounds).
    pub num_instance_variables: usize,
}

impl Sha256Chain {
    /// A chain of `rounds` compressions from `preimage`.
    pub fn new(preimage: [u8; 32], rounds: usize) -> Self {
        Sha256Chain { preimage, rounds }
    }

    /// The secret preimage.
    pub fn preimage(&self) -> &[u8; 32] {
        &self.preimage
    }

    /// Compressions in the chain.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// The chain's final digest, computed natively (RustCrypto's `sha2`);
    /// the preimage itself for 0 rounds.
    pub fn digest(&self) -> [u8; 32] {
        let mut cur = self.preimage;
        for _ in 0..self.rounds {
            cur = Sha256::digest(cur).into();
        }
        cur
    }

    /// The public inputs of a proof (without the constant one), as
    /// ark-groth16's `verify_proof` takes them: the digest's bytes 0..31
    /// as one little-endian integer, then byte 31. This is how
    /// `UInt8::new_input_vec` packs bytes (31 a field element, below the
    /// 255-bit modulus).
    pub fn public_inputs(&self) -> Vec<Fr> {
        let d = self.digest();
        d.chunks(BYTES_PER_INPUT)
            .map(Fr::from_le_bytes_mod_order)
            .collect()
    }

    /// The circuit's sizes, counted by a synthesis in setup mode (no
    /// matrices built; about 0.1 s a compression in release builds).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the gadget fails to synthesize.
    pub fn size(&self) -> Result<CircuitSize> {
        let cs = ConstraintSystem::<Fr>::new_ref();
        cs.set_optimization_goal(OptimizationGoal::Constraints);
        cs.set_mode(SynthesisMode::Setup);
        self.clone()
            .generate_constraints(cs.clone())
            .map_err(|e| Error::InvalidArgument(format!("SHA-256 chain synthesis failed: {e}")))?;
        cs.finalize();
        Ok(CircuitSize {
            num_constraints: cs.num_constraints(),
            num_instance_variables: cs.num_instance_variables(),
            num_witness_variables: cs.num_witness_variables(),
        })
    }

    /// The most compressions whose constraints plus instance variables
    /// (ark-groth16's QAP domain) fit 2^`log_constraints`, with the sizes
    /// of that chain. Constraints grow by the same number each compression;
    /// the chains of 1 and 2 compressions are counted to find it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `log_constraints` is 63 or more, or
    /// when not even one compression fits (naming the smallest log that
    /// does).
    pub fn rounds_for_log_constraints(log_constraints: u32) -> Result<Sha256ChainFit> {
        if log_constraints >= usize::BITS - 1 {
            return Err(Error::InvalidArgument(format!(
                "a domain of 2^{log_constraints} constraints: give a log below {}",
                usize::BITS - 1
            )));
        }
        let target = 1usize << log_constraints;
        let one = Sha256Chain::new([0; 32], 1).size()?;
        let two = Sha256Chain::new([0; 32], 2).size()?;
        let per = two.num_constraints - one.num_constraints;
        let base = one.num_constraints - per;
        let inputs = one.num_instance_variables;
        if base + per + inputs > target {
            return Err(Error::InvalidArgument(format!(
                "one SHA-256 compression needs {} constraints and instance variables, more \
                 than 2^{log_constraints}: use a log of {} or more",
                base + per + inputs,
                (base + per + inputs).next_power_of_two().trailing_zeros()
            )));
        }
        let rounds = (target - base - inputs) / per;
        Ok(Sha256ChainFit {
            rounds,
            num_constraints: base + rounds * per,
            constraints_per_compression: per,
            num_instance_variables: inputs,
        })
    }
}

/// Bytes packed into one public input (`(MODULUS_BIT_SIZE - 1) / 8`).
const BYTES_PER_INPUT: usize = ((<Fr as PrimeField>::MODULUS_BIT_SIZE - 1) / 8) as usize;

impl ConstraintSynthesizer<Fr> for Sha256Chain {
    fn generate_constraints(self, cs: ConstraintSystemRef<Fr>) -> Result<(), SynthesisError> {
        let expected = self.digest();
        let mut cur = UInt8::new_witness_vec(cs.clone(), &self.preimage)?;
        for _ in 0..self.rounds {
            cur = Sha256Gadget::digest(&cur)?.0;
        }
        let out = UInt8::new_input_vec(cs, &expected)?;
        cur.enforce_equal(&out)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::ToConstraintField;

    /// SHA-256 of 32 zero bytes, a published test value.
    #[test]
    fn digest_of_zero_preimage() {
        let hex = "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925";
        let want: Vec<u8> = (0..32)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
            .collect();
        assert_eq!(Sha256Chain::new([0; 32], 1).digest().as_slice(), want);
        assert_eq!(Sha256Chain::new([9; 32], 0).digest(), [9; 32]);
    }

    /// The public inputs are the synthesized instance (the gadget's own
    /// packing) and ark-ff's `ToConstraintField` of the digest.
    #[test]
    fn public_inputs_match_the_synthesized_instance() {
        let chain = Sha256Chain::new(*b"cuzk: a chain of SHA-256 hashes.", 2);
        let w = crate::synthesize(chain.clone(), true).expect("satisfied");
        let packed: Vec<Fr> = chain.digest().to_field_elements().expect("packing");
        assert_eq!(chain.public_inputs(), packed);
        assert_eq!(chain.public_inputs(), w.public_inputs());
        assert_eq!(w.public_inputs().len(), 2);
        let size = chain.size().expect("size");
        assert_eq!(size.num_constraints, w.matrices.num_constraints);
        assert_eq!(size.num_instance_variables, w.num_inputs);
        assert_eq!(
            size.num_instance_variables + size.num_witness_variables,
            w.full_assignment.len()
        );
        let shape = w.witness_shape();
        assert_eq!(shape.total(), size.num_witness_variables);
    }

    #[test]
    fn rounds_for_log_constraints_fits_the_domain() {
        let fit = Sha256Chain::rounds_for_log_constraints(17).expect("fits");
        assert!(fit.rounds >= 2, "{fit:?}");
        let size = Sha256Chain::new([1; 32], fit.rounds).size().expect("size");
        assert_eq!(size.num_constraints, fit.num_constraints);
        assert_eq!(size.num_instance_variables, fit.num_instance_variables);
        assert!(fit.num_constraints + fit.num_instance_variables <= 1 << 17);
        assert!(
            fit.num_constraints + fit.constraints_per_compression + fit.num_instance_variables
                > 1 << 17
        );
        let e = Sha256Chain::rounds_for_log_constraints(10).expect_err("too small");
        assert!(e.to_string().contains("use a log of 16 or more"), "{e}");
        assert!(Sha256Chain::rounds_for_log_constraints(70).is_err());
    }

    /// Zero/one/other fractions of the witness at 1, 4 and 16 compressions
    /// (for the witness-shaped MSM benchmarks); prints them. Slow in debug
    /// builds: `cargo test --release -p cuzk-prover --features circuits
    /// witness_shape_of_chains -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement: run by hand"]
    fn witness_shape_of_chains() {
        use rand::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x5348_4132);
        for rounds in [1, 4, 16] {
            let mut preimage = [0u8; 32];
            rng.fill_bytes(&mut preimage);
            let w =
                crate::synthesize(Sha256Chain::new(preimage, rounds), false).expect("synthesis");
            let s = w.witness_shape();
            let n = s.total() as f64;
            println!(
                "sha256 chain of {rounds:>2}: {} constraints, {} witness values: zeros {} \
                 ({:.6}), ones {} ({:.6}), other {} ({:.6}); zero or one {:.6}",
                w.matrices.num_constraints,
                s.total(),
                s.zeros,
                s.zeros as f64 / n,
                s.ones,
                s.ones as f64 / n,
                s.other,
                s.other as f64 / n,
                s.fraction_zero_one()
            );
        }
    }
}
