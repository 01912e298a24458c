//! cuzk-prover: a Groth16 prover over BLS12-381 on the GPU whose proofs ark-groth16 verifies.
//!
//! It is composed of cuzk's NTT (`cuzk-ntt`), MSM (`cuzk-msm`) and
//! device-memory (`cuzk-alloc`) layers; ark-groth16 0.6 verifies its proofs.
//!
//! A [`Prover`] holds an `ark_groth16::ProvingKey<Bls12_381>` and, when a GPU
//! is usable, the key's A, B (G1 and G2), H and L queries uploaded once as
//! `cuzk_msm::FixedBases`. For the same `r` and `s` its proofs are equal to
//! ark-groth16's `create_proof_with_reduction_and_matrices` (libsnark's
//! R1CS-to-QAP reduction): the same `H` coefficients, the same MSMs, the
//! same assembly
//!
//! - `A = alpha + sum_i z_i A_i + r delta`
//! - `B = beta + sum_i z_i B_i + s delta` (in G2, and in G1 for `C`)
//! - `C = sum_{i >= l} z_i L_i + sum_j h_j H_j + s A + r B_G1 - r s delta`
//!
//! Entry points, each returning the proof with its [`ProofTimings`] (also
//! emitted through `tracing` at target `cuzk_prover`):
//! [`Prover::prove`] (a circuit, synthesized here, r and s drawn from an
//! RNG), [`Prover::prove_job`] (a [`ProofJob`]: matrices and assignment
//! already at hand, with r and s), [`Prover::prove_batch`] (several
//! partitions against one key, pipelined). [`MultiGpuProver`] spreads a
//! batch over several GPUs and several workers a GPU. Given the circuit's
//! R1CS once ([`Prover::with_r1cs`], a [`SparseR1cs`]), a GPU prover
//! evaluates `A z`, `B z`, `C z` itself and keeps the whole proof on the
//! device: the assignment crosses PCIe once (compact, as bitmasks, for a
//! witness of mostly bits). Where the key streams from
//! host memory (a 2^27 key on a 16 GiB card),
//! [`MultiGpuProver::with_witness_pass`] runs a batch's witness MSMs in
//! one pass a GPU: each witness query's bases cross PCIe once for up to 16
//! partitions instead of once a partition.
//!
//! ```no_run
//! # fn demo(pk: ark_groth16::ProvingKey<ark_bls12_381::Bls12_381>,
//! #         circuit: impl ark_relations::gr1cs::ConstraintSynthesizer<cuzk_prover::Fr>)
//! # -> cuzk_prover::Result<()> {
//! let prover = cuzk_prover::Prover::new(pk)?; // GPU when there is one
//! let (proof, timings) = prover.prove(circuit, &mut rand::thread_rng())?;
//! # let _ = (proof, timings); Ok(()) }
//! ```
//!
//! # Settings
//!
//! The library reads no environment variables of its own except these two,
//! and only in [`MultiGpuProver::from_env`]:
//!
//! - `CUZK_DEVICES`: the CUDA ordinals to prove on, comma-separated (for
//!   example `0,1`; spaces around entries allowed). Unset: every device
//!   the CUDA runtime reports.
//! - `CUZK_GPU_WORKERS_PER_DEVICE`: worker threads a GPU, a positive
//!   integer. Unset: [`DEFAULT_GPU_WORKERS_PER_DEVICE`].
//!
//! A value that does not parse (or names a device twice, or zero workers)
//! is an [`Error::InvalidArgument`] naming the variable. The device memory
//! budget of every GPU prover comes from cuzk-alloc's settings
//! (`CUZK_DEVICE_MEMORY_LIMIT`, `CUZK_DEVICE_MEMORY_MARGIN`).
//!
//! # Features
//!
//! - `cuda`: require CUDA (a missing nvcc is a build error).
//! - `test-utils` (off by default): the `synthetic` module, random
//!   circuits and random-point keys for tests and benchmarks.
//! - `circuits` (off by default): the `circuits` module, real circuits for
//!   examples, tests and benchmarks (a chain of SHA-256 compressions);
//!   adds ark-crypto-primitives and ark-r1cs-std.
//!
//! Always built: [`r1cs_file`], a versioned, checksummed file format for
//! a circuit's R1CS matrices, written and read as a stream.

mod admission;
mod assignment;
mod batch;
#[cfg(feature = "circuits")]
pub mod circuits;
mod device_r1cs;
mod memory;
mod multi;
mod prover;
mod qap;
mod query;
mod r1cs;
pub mod r1cs_file;
mod sparse;
mod stage;
#[cfg(feature = "test-utils")]
pub mod synthetic;
#[allow(unreachable_pub)] // generated bindings: `pub` items of a private module
mod sys;
mod timings;

pub use batch::{BatchJob, BatchOptions, CircuitJob};
pub use cuzk_field::{Backend, Error, Fr, Result};
pub use multi::{MultiGpuProver, MultiProof, DEFAULT_GPU_WORKERS_PER_DEVICE};
pub use prover::Prover;
pub use r1cs::{synthesize, ConstraintMatrices, ProofJob, Synthesized, WitnessShape};
pub use sparse::SparseR1cs;
pub use timings::{gpu_busy_fraction, gpu_busy_fraction_device, ProofTimings};

use ark_bls12_381::Bls12_381;

/// A Groth16 proof over BLS12-381 (ark-groth16's type).
pub type Proof = ark_groth16::Proof<Bls12_381>;
/// A Groth16 proving key over BLS12-381 (ark-groth16's type).
pub type ProvingKey = ark_groth16::ProvingKey<Bls12_381>;
