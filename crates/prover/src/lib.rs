//! cuzk-prover: a Groth16 prover over BLS12-381 composed of the field, NTT,
//! MSM and allocator layers.
//!
//! Not implemented yet: this crate holds the workspace's place for the
//! prover (issue "cuzk-prover").

pub use cuzk_field::Fr;
