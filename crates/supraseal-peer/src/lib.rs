//! Bench-only shim over supraseal-c2 0.1.2 (crates.io), the CUDA Groth16
//! prover under curio's cuzk daemon: cuzk's benchmark hands it the same
//! proving key (written in bellperson's parameter layout), the same
//! evaluations `A z`, `B z`, `C z`, assignment, r and s as cuzk's prover,
//! and compares the proofs. Not a cuzk library: errors come back as strings.
//!
//! - [`params`]: the key as a bellperson parameter file, and the query
//!   densities supraseal-c2 takes with each proof.
//! - `prove` (feature `gpu`, which builds supraseal-c2 and needs nvcc):
//!   the loaded parameters and proofs through them.
//! - `proof`: supraseal-c2's proof layout read as arkworks points.
//! - [`request`]: the files between the benchmark and the `cuzk-supraseal`
//!   process, in which supraseal-c2 runs.

pub mod params;
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
mod proof;
#[cfg(feature = "gpu")]
pub mod prove;
pub mod request;

pub use params::{write_params, Density};
#[cfg(feature = "gpu")]
pub use prove::{Job, Supraseal};
