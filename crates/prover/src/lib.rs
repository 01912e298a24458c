//! cuzk-prover: a Groth16 prover over BLS12-381 composed of cuzk's NTT
//! (`cuzk-ntt`), MSM (`cuzk-msm`) and device-memory (`cuzk-alloc`) layers,
//! whose proofs ark-groth16 0.6 verifies.
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
//! Entry points: [`Prover::prove`] (a circuit, synthesized here),
//! [`Prover::prove_with_matrices`] (matrices and assignment already at hand),
//! [`Prover::prove_timed`] (with a [`ProofTimings`] breakdown, also emitted
//! through `tracing` at target `cuzk_prover`), [`Prover::prove_batch`]
//! (several partitions against one key).
//!
//! ```no_run
//! # fn demo(pk: ark_groth16::ProvingKey<ark_bls12_381::Bls12_381>,
//! #         circuit: impl ark_relations::gr1cs::ConstraintSynthesizer<cuzk_prover::Fr>)
//! # -> cuzk_prover::Result<()> {
//! let prover = cuzk_prover::Prover::new(pk)?; // GPU when there is one
//! let proof = prover.prove(circuit, &mut rand::thread_rng())?;
//! # let _ = proof; Ok(()) }
//! ```

mod multi;
pub mod qap;
pub mod synthetic;

pub use multi::{MultiGpuProver, MultiProof, DEFAULT_GPU_WORKERS_PER_DEVICE};

use ark_bls12_381::{g1, g2, Bls12_381};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{AdditiveGroup, Field, UniformRand};
use ark_relations::gr1cs::{
    ConstraintSynthesizer, ConstraintSystem, Matrix, OptimizationGoal, SynthesisMode,
    R1CS_PREDICATE_LABEL,
};
use cuzk_alloc::{BudgetConfig, DeviceMemory};
pub use cuzk_field::{Backend, Error, Fr, Result};
use cuzk_msm::{FixedBases, GpuMsm, MsmCurve};
use cuzk_ntt::GpuNtt;
use std::sync::Arc;
use std::time::Instant;

/// A Groth16 proof over BLS12-381 (ark-groth16's type).
pub type Proof = ark_groth16::Proof<Bls12_381>;
/// A Groth16 proving key over BLS12-381 (ark-groth16's type).
pub type ProvingKey = ark_groth16::ProvingKey<Bls12_381>;

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

/// Where each stage of a proof went, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProofTimings {
    /// Circuit synthesis (zero when the matrices and assignment were given).
    pub witness_ms: f64,
    /// Evaluating `A z`, `B z`, `C z` on the constraints (and the
    /// satisfiability check when asked).
    pub eval_ms: f64,
    /// The quotient H: seven NTTs and the coset division.
    pub h_ntt_ms: f64,
    /// MSM of the A query (G1).
    pub msm_a_ms: f64,
    /// MSM of the B query in G2.
    pub msm_b_g2_ms: f64,
    /// MSM of the B query in G1 (zero when r = 0).
    pub msm_b_g1_ms: f64,
    /// MSM of the H query (G1).
    pub msm_h_ms: f64,
    /// MSM of the L query (G1).
    pub msm_l_ms: f64,
    /// Assembling A, B, C from the MSMs and the key.
    pub assembly_ms: f64,
}

impl ProofTimings {
    /// Sum of every stage, milliseconds.
    pub fn total_ms(&self) -> f64 {
        self.witness_ms
            + self.eval_ms
            + self.h_ntt_ms
            + self.msm_a_ms
            + self.msm_b_g2_ms
            + self.msm_b_g1_ms
            + self.msm_h_ms
            + self.msm_l_ms
            + self.assembly_ms
    }

    fn emit(&self, backend: &str) {
        tracing::info!(
            target: "cuzk_prover",
            backend,
            witness_ms = self.witness_ms,
            eval_ms = self.eval_ms,
            h_ntt_ms = self.h_ntt_ms,
            msm_a_ms = self.msm_a_ms,
            msm_b_g2_ms = self.msm_b_g2_ms,
            msm_b_g1_ms = self.msm_b_g1_ms,
            msm_h_ms = self.msm_h_ms,
            msm_l_ms = self.msm_l_ms,
            assembly_ms = self.assembly_ms,
            total_ms = self.total_ms(),
            "groth16 proof"
        );
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Skip identity bases in an MSM when at least this fraction (1/8) of them
/// are the identity (variables whose QAP polynomial is zero).
const SPARSE_DIVISOR: usize = 8;

/// Largest twiddle table of one NTT pass a prover's NTT engine keeps, in
/// bytes: 64 MiB, so that at 2^27 only the second pass boundary gets one
/// (20 MiB, tiled Shoup entries), not the first (2 to 10 GiB, and as much
/// again for the inverse root). Those would make the NTTs about 8-11%
/// faster, a few ms of a proof's seconds, for gigabytes more in every
/// worker's working set (cuzk-ntt's default, at least 2 GiB, suits a lone
/// transform).
const PROVER_FULL_TWIDDLE_MAX_BYTES: u64 = 64 << 20;

/// Bytes of a G1 point in XYZZ coordinates (four base-field elements).
const G1_XYZZ_BYTES: u64 = 4 * 48;
/// Bytes of a G2 point in XYZZ coordinates (four elements of Fp2).
const G2_XYZZ_BYTES: u64 = 4 * 96;

/// An over-estimate of `cuzk_msm`'s device scratch for an MSM of `n` points
/// whose bucket points take `xyzz` bytes, every window sorted at once:
/// follows the plan of `csrc/msm` (sort pairs twice, the partial lists,
/// buckets, bucket segments and the tree sum's first level, each counted as
/// large as the buckets) with CUB's sort storage bounded by `16 n + 16 MiB`.
fn msm_scratch_estimate(n: u64, xyzz: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let align = |x: u64| (x + 255) & !255;
    let c = u64::from(cuzk_msm::window_bits(n as usize).max(2));
    let windows = 256u64.div_ceil(c);
    let half = 1u64 << (c - 1);
    let entries = n * windows;
    let pairs = align(entries * 4);
    let l1 = 2 * entries.div_ceil(64);
    let l2 = 2 * l1.div_ceil(16);
    let lists = align(l1 * 4) + align(l1 * xyzz) + align(l2 * 4) + align(l2 * xyzz);
    let cub = 16 * n + (16 << 20);
    let buckets = align(windows * half * xyzz);
    (2 * pairs).max(lists) + 2 * pairs + cub + 3 * buckets
}

/// A proof after its CPU stage.
struct Prepared {
    log_n: u32,
    abc: [Vec<Fr>; 3],
    timings: ProofTimings,
}

/// One query of the key as the MSMs use it: the indices of its non-identity
/// bases when skipping the rest pays, the compacted bases on the host (CPU
/// path) or all of them on the device (GPU path).
struct Query<P: MsmCurve> {
    /// Indices of the non-identity bases, when compacted.
    keep: Option<Vec<u32>>,
    /// The compacted bases on the host (CPU path, when compacted).
    host: Option<Vec<Affine<P>>>,
    /// The (compacted) bases on the GPU.
    gpu: Option<FixedBases<P>>,
}

/// The bases at indices `keep` (a compacted query).
fn gather<P: MsmCurve>(bases: &[Affine<P>], keep: &[u32]) -> Vec<Affine<P>> {
    keep.iter().map(|&i| bases[i as usize]).collect()
}

impl<P: MsmCurve> Query<P> {
    fn new(bases: &[Affine<P>], gpu: Option<&GpuMsm>) -> Result<Self> {
        let zeros = bases.iter().filter(|p| p.is_zero()).count();
        let keep = (bases.len() >= 2 && zeros * SPARSE_DIVISOR >= bases.len()).then(|| {
            (0..bases.len() as u32)
                .filter(|&i| !bases[i as usize].is_zero())
                .collect::<Vec<u32>>()
        });
        let compact = keep.as_ref().map(|k| gather(bases, k));
        let used: &[Affine<P>] = compact.as_deref().unwrap_or(bases);
        let gpu = match gpu {
            Some(g) if !used.is_empty() => Some(g.upload_bases(used)?),
            _ => None,
        };
        let host = if gpu.is_some() { None } else { compact };
        Ok(Query { keep, host, gpu })
    }

    /// Replaces the device bases with precomputed ones
    /// ([`GpuMsm::upload_bases_precomputed`], plain again when the copies do
    /// not fit the budget); `bases` is the full query. Returns whether they
    /// are precomputed. Without device bases nothing changes.
    fn precompute(&mut self, bases: &[Affine<P>], gpu: &GpuMsm) -> Result<bool> {
        if self.gpu.is_none() {
            return Ok(false);
        }
        let compact = self.keep.as_ref().map(|k| gather(bases, k));
        let used: &[Affine<P>] = compact.as_deref().unwrap_or(bases);
        // The plain copy goes first, so that the budget sees its room; if
        // the precomputation fails (say, another worker took the memory in
        // between), the plain bases come back and the prover stays usable.
        self.gpu = None;
        match gpu.upload_bases_precomputed(used, None) {
            Ok(pre) => {
                let done = pre.precomputed_window_bits().is_some();
                self.gpu = Some(pre);
                Ok(done)
            }
            Err(e) => {
                tracing::warn!(
                    target: "cuzk_prover",
                    "precomputing a query of {} points failed ({e}); keeping plain bases",
                    used.len()
                );
                self.gpu = Some(gpu.upload_bases(used)?);
                Ok(false)
            }
        }
    }

    /// `sum_i scalars[i] bases[i]` (`bases` is the full query, `scalars` at
    /// most as long).
    fn msm(&self, bases: &[Affine<P>], scalars: &[Fr]) -> Result<Projective<P>> {
        if scalars.len() > bases.len() {
            return Err(Error::InvalidArgument(format!(
                "{} scalars for a query of {} points",
                scalars.len(),
                bases.len()
            )));
        }
        let gathered: Vec<Fr>;
        let (b, s): (&[Affine<P>], &[Fr]) = match &self.keep {
            Some(k) => {
                gathered = k
                    .iter()
                    .map(|&i| scalars.get(i as usize).copied().unwrap_or(Fr::ZERO))
                    .collect();
                (self.host.as_deref().unwrap_or(&[]), &gathered)
            }
            None => (&bases[..scalars.len().min(bases.len())], scalars),
        };
        match &self.gpu {
            Some(g) if s.len() == g.len() => g.msm(s),
            Some(g) => g.msm_prefix(&s[..s.len().min(g.len())]),
            None => cuzk_msm::cpu::msm(b, &s[..b.len()]),
        }
    }
}

/// The GPU side of a prover: engines sharing one memory budget.
struct Gpu {
    ntt: GpuNtt,
    msm: GpuMsm,
}

/// A Groth16 prover for one proving key. Share it between threads (`&self`
/// methods; GPU work is serialized on its engines' streams).
pub struct Prover {
    pk: ProvingKey,
    gpu: Option<Gpu>,
    a: Query<g1::Config>,
    b_g1: Query<g1::Config>,
    b_g2: Query<g2::Config>,
    h: Query<g1::Config>,
    l: Query<g1::Config>,
    check_witness: bool,
}

impl std::fmt::Debug for Prover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prover")
            .field("backend", &self.backend())
            .field("variables", &self.pk.a_query.len())
            .field("inputs", &self.pk.vk.gamma_abc_g1.len())
            .field("h_query", &self.pk.h_query.len())
            .field("check_witness", &self.check_witness)
            .finish()
    }
}

impl Prover {
    /// A prover on GPU 0 when one is usable (its memory budget from the
    /// environment, `CUZK_DEVICE_MEMORY_LIMIT`), else on the CPU.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed key; errors of a GPU that
    /// exists but fails (out of memory for the key's queries, CUDA errors).
    pub fn new(pk: ProvingKey) -> Result<Self> {
        let mem = match BudgetConfig::from_env().and_then(|cfg| DeviceMemory::new(0, cfg, u64::MAX))
        {
            Ok(m) => m,
            Err(e) if e.is_no_gpu() => return Self::cpu(pk),
            Err(e) => return Err(e),
        };
        Self::with_memory(pk, mem)
    }

    /// A prover on the CPU only (ark-poly NTTs, blst MSMs).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a malformed key.
    pub fn cpu(pk: ProvingKey) -> Result<Self> {
        Self::build(pk, None)
    }

    /// A prover on the GPU of `mem`, sharing its budget with other users of
    /// `mem` (other provers, other engines): uploads the key's A, B (G1, G2),
    /// H and L queries once (96 bytes a G1 point, 192 a G2 point).
    ///
    /// # Errors
    /// As [`Prover::new`]; [`Error::OutOfMemory`] when the key does not fit.
    pub fn with_memory(pk: ProvingKey, mem: Arc<DeviceMemory>) -> Result<Self> {
        let ntt = GpuNtt::with_memory(mem.clone())?
            .with_full_twiddle_limit(PROVER_FULL_TWIDDLE_MAX_BYTES);
        let msm = GpuMsm::with_memory(mem)?;
        Self::build(pk, Some((ntt, msm)))
    }

    fn build(pk: ProvingKey, gpu: Option<(GpuNtt, GpuMsm)>) -> Result<Self> {
        if pk.a_query.is_empty() {
            return Err(Error::InvalidArgument(
                "proving key with an empty A query (it lacks even the constant one)".into(),
            ));
        }
        let nv = pk.a_query.len();
        if pk.b_g1_query.len() != nv || pk.b_g2_query.len() != nv {
            return Err(Error::InvalidArgument(format!(
                "malformed proving key: A query of {nv}, B G1 query of {}, B G2 query of {} points",
                pk.b_g1_query.len(),
                pk.b_g2_query.len()
            )));
        }
        let ni = pk.vk.gamma_abc_g1.len();
        if ni == 0 || ni + pk.l_query.len() != nv {
            return Err(Error::InvalidArgument(format!(
                "malformed proving key: {ni} inputs and an L query of {} points for {nv} variables",
                pk.l_query.len()
            )));
        }
        let m = gpu.as_ref().map(|(_, m)| m);
        let a = Query::new(&pk.a_query[1..], m)?;
        let b_g1 = Query::new(&pk.b_g1_query[1..], m)?;
        let b_g2 = Query::new(&pk.b_g2_query[1..], m)?;
        let h = Query::new(&pk.h_query, m)?;
        let l = Query::new(&pk.l_query, m)?;
        Ok(Prover {
            gpu: gpu.map(|(ntt, msm)| Gpu { ntt, msm }),
            pk,
            a,
            b_g1,
            b_g2,
            h,
            l,
            check_witness: false,
        })
    }

    /// The same prover with the key's queries on the GPU re-uploaded with
    /// precomputed shifted copies ([`GpuMsm::upload_bases_precomputed`]:
    /// every MSM against them 10-25% faster from 2^16 points, for W = 11 to
    /// 16 times their device memory and a one-time precomputation, e.g.
    /// 7.5 s and 71 GB for 2^26 G1 points on an H200). Largest query
    /// first (H, L, A, B in G1, B in G2); each one whose copies, with an
    /// MSM's scratch, do not fit what the memory budget has left stays
    /// plain. Leave room for the proofs' own working set (see
    /// [`Prover::working_set_bytes`]): cap the budget
    /// (`CUZK_DEVICE_MEMORY_LIMIT`) or reserve first when several workers
    /// share a GPU. Returns the prover and how many of the five queries are
    /// precomputed. A query whose precomputation fails keeps plain bases (a
    /// `tracing` warning says why). On the CPU path it changes nothing.
    ///
    /// # Errors
    /// CUDA errors and [`Error::OutOfMemory`] when even a query's plain
    /// bases cannot be uploaded again; the prover is dropped then.
    pub fn with_precomputed_bases(mut self) -> Result<(Self, usize)> {
        let Some(gpu) = self.gpu.as_ref().map(|g| g.msm.clone()) else {
            return Ok((self, 0));
        };
        let pk = &self.pk;
        let mut n = 0;
        n += usize::from(self.h.precompute(&pk.h_query, &gpu)?);
        n += usize::from(self.l.precompute(&pk.l_query, &gpu)?);
        n += usize::from(self.a.precompute(&pk.a_query[1..], &gpu)?);
        n += usize::from(self.b_g1.precompute(&pk.b_g1_query[1..], &gpu)?);
        n += usize::from(self.b_g2.precompute(&pk.b_g2_query[1..], &gpu)?);
        Ok((self, n))
    }

    /// The same prover, checking (or not) that the witness satisfies the
    /// constraints before proving (default: not checked). Checked, an
    /// unsatisfied system is an [`Error::InvalidArgument`] instead of a proof
    /// that does not verify. Costs one field multiplication a constraint
    /// (and for [`Prover::prove`], ark-relations' own check).
    pub fn with_check_witness(mut self, check: bool) -> Self {
        self.check_witness = check;
        self
    }

    /// The proving key.
    pub fn proving_key(&self) -> &ProvingKey {
        &self.pk
    }

    /// An over-estimate of the device memory, in bytes, that one proof's
    /// GPU stage claims from the budget on top of the uploaded key (the
    /// figure depends only on the key's sizes; on the CPU path nothing is
    /// claimed, but the figure is the same):
    ///
    /// - the H stage: A, B, C on the coset and the quotient, four vectors of
    ///   2^log_n scalars (32 bytes each), plus the NTT engine's twiddle
    ///   tables, two-level and full (tables between passes up to 64 MiB
    ///   a pass, [`GpuNtt::full_twiddle_bytes`], for the root and its
    ///   inverse; kept by the engine after the first proof);
    /// - plus the largest MSM of the key (A, B in G1 and G2, H, L, taken
    ///   uncompacted): its scalars and its scratch with every window sorted
    ///   at once, after `cuzk_msm`'s plan (window of
    ///   `cuzk_msm::window_bits(n)` bits; CUB's sort storage bounded by 16
    ///   bytes a point plus 16 MiB).
    ///
    /// The two stages do not overlap (the H buffers are freed before the
    /// MSMs); adding them is the over-estimate. Workers reserve this much
    /// before a proof's GPU stage ([`MultiGpuProver`]).
    pub fn working_set_bytes(&self) -> u64 {
        let pk = &self.pk;
        let n = (pk.h_query.len() as u64 + 1).next_power_of_two();
        let log_n = n.trailing_zeros();
        // Twiddle tables: the root, its inverse and two coset shifts, each a
        // table of 2^ceil(log_n/2) and one of 2^floor(log_n/2) powers (and
        // n^-1); counted as six for margin.
        let table = (1u64 << log_n.div_ceil(2)) + (1u64 << (log_n / 2)) + 1;
        // Plus the full twiddle tables of the root and of its inverse.
        let full = self
            .gpu
            .as_ref()
            .map_or(0, |g| 2 * g.ntt.full_twiddle_bytes(log_n));
        let h_stage = 4 * n * 32 + 6 * table * 32 + full;
        let vars = pk.a_query.len().saturating_sub(1) as u64;
        let msm = |m: u64, xyzz: u64| m * 32 + msm_scratch_estimate(m, xyzz);
        let msm_stage = [
            msm(vars, G1_XYZZ_BYTES),
            msm(vars, G2_XYZZ_BYTES),
            msm(pk.h_query.len() as u64, G1_XYZZ_BYTES),
            msm(pk.l_query.len() as u64, G1_XYZZ_BYTES),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        h_stage + msm_stage
    }

    /// Where this prover runs.
    pub fn backend(&self) -> Backend {
        match &self.gpu {
            Some(g) => Backend::Gpu {
                device: g.ntt.memory().device(),
            },
            None => Backend::Cpu,
        }
    }

    /// A proof for `circuit`: synthesizes it (ark-relations, prove mode),
    /// draws r and s from `rng`, proves.
    ///
    /// # Errors
    /// As [`synthesize`] (with this prover's witness check) and
    /// [`Prover::prove_with_matrices`].
    pub fn prove<C: ConstraintSynthesizer<Fr>, R: rand::RngCore>(
        &self,
        circuit: C,
        rng: &mut R,
    ) -> Result<Proof> {
        self.prove_timed(circuit, rng).map(|(p, _)| p)
    }

    /// [`Prover::prove`] with its stage timings (also emitted through
    /// `tracing`, target `cuzk_prover`, level INFO).
    ///
    /// # Errors
    /// As [`Prover::prove`].
    pub fn prove_timed<C: ConstraintSynthesizer<Fr>, R: rand::RngCore>(
        &self,
        circuit: C,
        rng: &mut R,
    ) -> Result<(Proof, ProofTimings)> {
        let w = synthesize(circuit, self.check_witness)?;
        let r = Fr::rand(rng);
        let s = Fr::rand(rng);
        let (proof, mut t) = self.prove_job_inner(&w.job(r, s))?;
        t.witness_ms = w.synthesis_ms;
        t.emit(self.backend_name());
        Ok((proof, t))
    }

    /// A proof from the R1CS matrices and the full assignment (the constant
    /// one, the `num_inputs - 1` public inputs, the witness) with randomness
    /// `r` and `s`: equal to ark-groth16's
    /// `create_proof_with_reduction_and_matrices(pk, r, s, [A, B, C],
    /// num_inputs, num_constraints, full_assignment)` for a system that
    /// matches the key.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the assignment, the inputs or the
    /// domain do not match the key, when a matrix names a variable past the
    /// assignment, or (with the witness check) when a constraint is not
    /// satisfied; GPU errors.
    pub fn prove_with_matrices(
        &self,
        matrices: &ConstraintMatrices,
        full_assignment: &[Fr],
        num_inputs: usize,
        r: Fr,
        s: Fr,
    ) -> Result<Proof> {
        self.prove_job(&ProofJob {
            matrices,
            full_assignment,
            num_inputs,
            r,
            s,
        })
        .map(|(p, _)| p)
    }

    /// One job: a proof and its timings (emitted through `tracing`).
    ///
    /// # Errors
    /// As [`Prover::prove_with_matrices`].
    pub fn prove_job(&self, job: &ProofJob<'_>) -> Result<(Proof, ProofTimings)> {
        let (p, t) = self.prove_job_inner(job)?;
        t.emit(self.backend_name());
        Ok((p, t))
    }

    /// Proofs of several partitions (witnesses of circuits of this key), one
    /// result each, in order: a failing job does not stop the others.
    ///
    /// On the GPU the jobs run as a two-stage pipeline (see
    /// [`Prover::prove_batch_with`]); on the CPU one after another.
    pub fn prove_batch(&self, jobs: &[ProofJob<'_>]) -> Vec<Result<(Proof, ProofTimings)>> {
        self.prove_batch_with(jobs, self.gpu.is_some())
    }

    /// [`Prover::prove_batch`], pipelined or not. Pipelined, a second thread
    /// checks and evaluates `A z, B z, C z` of job i+1 (CPU work) while this
    /// one runs job i's NTTs, MSMs and assembly (GPU work); at most three
    /// jobs' evaluations are held at once. Further overlap, not done here:
    /// the G2 MSM on the CPU (blst) while the GPU does the G1 MSMs, and
    /// uploads from pinned buffers on a second stream; two provers sharing
    /// one `DeviceMemory` (two workers per GPU) overlap whole proofs.
    pub fn prove_batch_with(
        &self,
        jobs: &[ProofJob<'_>],
        pipelined: bool,
    ) -> Vec<Result<(Proof, ProofTimings)>> {
        let span =
            tracing::info_span!(target: "cuzk_prover", "prove_batch", jobs = jobs.len(), pipelined);
        let _g = span.enter();
        if !pipelined || jobs.len() < 2 {
            return jobs.iter().map(|j| self.prove_job(j)).collect();
        }
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Prepared>>(1);
            scope.spawn(move || {
                for j in jobs {
                    if tx.send(self.prepare(j)).is_err() {
                        break;
                    }
                }
            });
            jobs.iter()
                .map(|j| {
                    let prepared = rx.recv().map_err(|_| {
                        Error::Internal("the batch's preparing thread stopped early".into())
                    })??;
                    let (p, t) = self.finish(j, prepared)?;
                    t.emit(self.backend_name());
                    Ok((p, t))
                })
                .collect()
        })
    }

    /// Synthesizes and proves several circuits of this key (partitions),
    /// one result each, in order, with the proof's public inputs: a second
    /// thread synthesizes and evaluates circuit i+1 while this one proves
    /// circuit i. r and s of each proof are drawn from `rng` up front.
    pub fn prove_circuits<C, R>(
        &self,
        circuits: Vec<C>,
        rng: &mut R,
    ) -> Vec<Result<(Proof, ProofTimings, Vec<Fr>)>>
    where
        C: ConstraintSynthesizer<Fr> + Send,
        R: rand::RngCore,
    {
        let rs: Vec<(Fr, Fr)> = circuits
            .iter()
            .map(|_| (Fr::rand(rng), Fr::rand(rng)))
            .collect();
        let n = circuits.len();
        let check = self.check_witness;
        let rs = &rs;
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Result<(Synthesized, Prepared)>>(1);
            scope.spawn(move || {
                for (c, &(r, s)) in circuits.into_iter().zip(rs) {
                    let out = synthesize(c, check).and_then(|w| {
                        let mut p = self.prepare(&w.job(r, s))?;
                        p.timings.witness_ms = w.synthesis_ms;
                        Ok((w, p))
                    });
                    if tx.send(out).is_err() {
                        break;
                    }
                }
            });
            rs.iter()
                .take(n)
                .map(|&(r, s)| {
                    let (w, prepared) = rx.recv().map_err(|_| {
                        Error::Internal("the batch's synthesis thread stopped early".into())
                    })??;
                    let (p, t) = self.finish(&w.job(r, s), prepared)?;
                    t.emit(self.backend_name());
                    Ok((p, t, w.public_inputs().to_vec()))
                })
                .collect()
        })
    }

    fn backend_name(&self) -> &'static str {
        match self.backend() {
            Backend::Gpu { .. } => "gpu",
            Backend::Cpu => "cpu",
        }
    }

    /// Checks that the job's shapes match the key; returns the domain's
    /// size exponent.
    fn check_job(&self, job: &ProofJob<'_>) -> Result<u32> {
        let pk = &self.pk;
        let m = job.matrices;
        let z = job.full_assignment;
        if m.a.len() != m.num_constraints
            || m.b.len() != m.num_constraints
            || m.c.len() != m.num_constraints
        {
            return Err(Error::InvalidArgument(format!(
                "R1CS matrices of {}, {} and {} rows for {} constraints",
                m.a.len(),
                m.b.len(),
                m.c.len(),
                m.num_constraints
            )));
        }
        if z.len() != pk.a_query.len() {
            return Err(Error::InvalidArgument(format!(
                "the assignment has {} variables but the proving key is for {}: \
                 this witness is for another circuit",
                z.len(),
                pk.a_query.len()
            )));
        }
        if job.num_inputs != pk.vk.gamma_abc_g1.len() {
            return Err(Error::InvalidArgument(format!(
                "{} instance variables (the constant one included) but the proving key \
                 is for {}",
                job.num_inputs,
                pk.vk.gamma_abc_g1.len()
            )));
        }
        let log_n = qap::domain_log_size(m.num_constraints, job.num_inputs)?;
        let n = 1usize << log_n;
        if pk.h_query.len() != n - 1 {
            return Err(Error::InvalidArgument(format!(
                "{} constraints and {} inputs make a domain of {n}, but the proving key's \
                 H query has {} points (expected {}): the matrices are for another circuit",
                m.num_constraints,
                job.num_inputs,
                pk.h_query.len(),
                n - 1
            )));
        }
        if self.check_witness && z[0] != Fr::ONE {
            return Err(Error::InvalidArgument(
                "the assignment's first variable (the constant one) is not 1".into(),
            ));
        }
        Ok(log_n)
    }

    fn prove_job_inner(&self, job: &ProofJob<'_>) -> Result<(Proof, ProofTimings)> {
        let prepared = self.prepare(job)?;
        self.finish(job, prepared)
    }

    /// The CPU stage of a proof: checks the job against the key and
    /// evaluates `A z`, `B z`, `C z`.
    fn prepare(&self, job: &ProofJob<'_>) -> Result<Prepared> {
        let log_n = self.check_job(job)?;
        let t0 = Instant::now();
        let abc = qap::evaluate(
            job.matrices,
            job.full_assignment,
            job.num_inputs,
            log_n,
            self.check_witness,
        )?;
        Ok(Prepared {
            log_n,
            abc,
            timings: ProofTimings {
                eval_ms: ms(t0),
                ..ProofTimings::default()
            },
        })
    }

    /// The device stage of a proof (on the CPU path, the CPU's): H, the
    /// MSMs, the assembly.
    fn finish(&self, job: &ProofJob<'_>, prepared: Prepared) -> Result<(Proof, ProofTimings)> {
        let span =
            tracing::debug_span!(target: "cuzk_prover", "prove", backend = self.backend_name());
        let _g = span.enter();
        let Prepared {
            log_n,
            abc,
            timings: mut t,
        } = prepared;
        let pk = &self.pk;
        let z = job.full_assignment;
        let (r, s) = (job.r, job.s);

        let t0 = Instant::now();
        let h = match &self.gpu {
            Some(g) => qap::quotient(&qap::GpuEngine(&g.ntt), abc, log_n, qap::Orders::Reversed)?,
            None => qap::quotient(&qap::CpuEngine, abc, log_n, qap::Orders::Natural)?,
        };
        t.h_ntt_ms = ms(t0);

        let vars = &z[1..];
        let t0 = Instant::now();
        let a_acc = self.a.msm(&pk.a_query[1..], vars)?;
        t.msm_a_ms = ms(t0);

        let t0 = Instant::now();
        let b2_acc = self.b_g2.msm(&pk.b_g2_query[1..], vars)?;
        t.msm_b_g2_ms = ms(t0);

        let t0 = Instant::now();
        let b1_acc = if r == Fr::ZERO {
            None
        } else {
            Some(self.b_g1.msm(&pk.b_g1_query[1..], vars)?)
        };
        t.msm_b_g1_ms = ms(t0);

        let t0 = Instant::now();
        let h_acc = self.h.msm(&pk.h_query, &h[..pk.h_query.len()])?;
        t.msm_h_ms = ms(t0);

        let t0 = Instant::now();
        let l_acc = self.l.msm(&pk.l_query, &z[job.num_inputs..])?;
        t.msm_l_ms = ms(t0);

        let t0 = Instant::now();
        let delta_g1 = pk.delta_g1.into_group();
        let g_a = a_acc + pk.a_query[0] + pk.vk.alpha_g1 + delta_g1 * r;
        let g2_b = b2_acc + pk.b_g2_query[0] + pk.vk.beta_g2 + pk.vk.delta_g2 * s;
        let g1_b = match b1_acc {
            Some(acc) => acc + pk.b_g1_query[0] + pk.beta_g1 + delta_g1 * s,
            None => g1::G1Projective::ZERO,
        };
        let g_c = g_a * s + g1_b * r - delta_g1 * (r * s) + l_acc + h_acc;
        let proof = Proof {
            a: g_a.into_affine(),
            b: g2_b.into_affine(),
            c: g_c.into_affine(),
        };
        t.assembly_ms = ms(t0);
        Ok((proof, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::One;

    #[test]
    fn domain_sizes() {
        assert_eq!(qap::domain_log_size(0, 1).unwrap(), 0);
        assert_eq!(qap::domain_log_size(3, 1).unwrap(), 2);
        assert_eq!(qap::domain_log_size(4, 1).unwrap(), 3);
        assert!(qap::domain_log_size(1 << 32, 1).is_err());
    }

    #[test]
    fn orders_agree_on_cpu() {
        // The GPU's order choice, run through the CPU engine, gives the same
        // quotient as natural order.
        let n = 16usize;
        let v = |k: u64| {
            (0..n as u64)
                .map(|i| Fr::from(i * i + k))
                .collect::<Vec<_>>()
        };
        let abc = [v(1), v(2), v(3)];
        let x = qap::quotient(&qap::CpuEngine, abc.clone(), 4, qap::Orders::Natural).unwrap();
        let y = qap::quotient(&qap::CpuEngine, abc, 4, qap::Orders::Reversed).unwrap();
        assert_eq!(x, y);
        assert_ne!(x[0], Fr::one());
    }
}
