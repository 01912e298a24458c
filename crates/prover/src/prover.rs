//! [`Prover`]: a Groth16 prover for one proving key, on a GPU or the CPU.

use crate::assignment::{CompactAssignment, DeviceAssignment};
use crate::device_r1cs::DeviceR1cs;
use crate::memory::{self, PROVER_FULL_TWIDDLE_MAX_BYTES};
use crate::query::{Masked, NonZero, Query, Residency};
use crate::r1cs::{synthesize, ProofJob};
use crate::sparse::SparseR1cs;
use crate::timings::{ms, ProofTimings};
use crate::{qap, Backend, Error, Fr, Proof, ProvingKey, Result};
use ark_bls12_381::{g1, g2};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{AdditiveGroup, Field, UniformRand};
use ark_relations::gr1cs::ConstraintSynthesizer;
use cuzk_alloc::{
    BudgetConfig, DeviceBuffer, DeviceMemory, Event, PinnedBuffer, PinnedPool, Reservation,
};
use cuzk_msm::GpuMsm;
use cuzk_ntt::GpuNtt;
use rayon::prelude::*;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The GPU side of a prover: engines sharing one memory budget.
struct Gpu {
    ntt: GpuNtt,
    msm: GpuMsm,
    /// An engine of its own (streams, staging) without witness-shaped
    /// classification, for H's MSM (its coefficients are uniform), which
    /// may run beside `msm`'s ([`Prover::with_msm_overlap`]).
    dense: GpuMsm,
    /// The device clock's epoch ([`Prover::device_clock_ms`]): a CUDA
    /// event recorded on the NTT stream, and its time in milliseconds from
    /// the first one, recorded when the prover was built. It moves forward
    /// every [`EPOCH_SPAN_MS`], so that the f32 milliseconds CUDA measures
    /// from it stay finer than 0.25 ms in a long-lived process.
    epoch: Mutex<(Event, f64)>,
    /// Pinned host buffers for assignments on their way to the device
    /// (the CPU stage copies a job's assignment into one, so that the GPU
    /// stage uploads it by DMA at full PCIe speed); reused across proofs.
    pinned: PinnedPool<Fr>,
}

/// Pinned assignment buffers a GPU prover keeps idle for reuse (the seed
/// workload's two workers; more are made while more are in flight, and
/// dropped after use). Each is the assignment's size: 2.6 GB at 2^27.
const PINNED_POOL: usize = 2;

/// How far, in milliseconds, the device clock's epoch may lag before it
/// moves forward (one hour: f32 milliseconds there are 0.25 ms apart).
const EPOCH_SPAN_MS: f32 = 3.6e6;

/// Device memory, in bytes, that the witness MSMs (A, B, L) get beside
/// their gathered scalars when they run beside H's MSM
/// ([`Prover::with_msm_overlap`]): 2 GiB. Streamed, they are copy-bound
/// (their bases are bits' points: short kernels), so chunks of a few
/// hundred MiB keep PCIe busy; the rest of the stage's memory goes to H's
/// compute-bound MSM, whose chunks and plan gain from every byte.
const WITNESS_SHARE_BYTES: u64 = 2 << 30;

/// Device memory, in bytes, an overlapped MSM stage leaves outside its two
/// shares for small allocations of the proof's other steps: 64 MiB.
const OVERLAP_SLACK_BYTES: u64 = 64 << 20;

/// The sums of the witness MSMs of a proof.
pub(crate) struct WitnessSums {
    a: g1::G1Projective,
    b_g2: g2::G2Projective,
    /// `None` when r = 0 (B in G1 is not needed).
    b_g1: Option<g1::G1Projective>,
    l: g1::G1Projective,
}

impl Gpu {
    /// `z` copied (on all cores) into a pinned buffer from the pool, or a
    /// new one; `None` when pinned memory cannot be had.
    fn pin(&self, z: &[Fr]) -> Option<PinnedBuffer<Fr>> {
        let mut buf = match self.pinned.take(z.len()) {
            Ok(b) => b,
            Err(e) => {
                tracing::debug!(
                    target: "cuzk_prover",
                    "no pinned buffer for an assignment of {} variables ({e}); uploading \
                     from pageable memory",
                    z.len()
                );
                return None;
            }
        };
        buf.par_chunks_mut(1 << 16)
            .zip(z.par_chunks(1 << 16))
            .for_each(|(d, s)| d.copy_from_slice(s));
        Some(buf)
    }

    /// Gives a pinned buffer back to the pool (at most [`PINNED_POOL`]
    /// kept).
    fn unpin(&self, buf: PinnedBuffer<Fr>) {
        self.pinned.give(buf);
    }

    /// Milliseconds from the epoch to an event recorded now on the NTT
    /// stream (after the work queued there), waited for.
    fn clock_ms(&self) -> Result<f64> {
        let e = Event::new(self.ntt.memory().device())?;
        e.record(self.ntt.stream())?;
        let mut epoch = self.epoch.lock().unwrap_or_else(|p| p.into_inner());
        let since = epoch.0.elapsed_ms(&e)?;
        let now = epoch.1 + f64::from(since);
        if since > EPOCH_SPAN_MS {
            *epoch = (e, now);
        }
        Ok(now)
    }
}

/// A proof after its CPU stage (the checks and the evaluations `A z`,
/// `B z`, `C z`), ready for its GPU stage.
pub(crate) struct Prepared {
    log_n: u32,
    /// The evaluations on the host; `None` when the GPU evaluates them
    /// from the prover's R1CS ([`Prover::with_r1cs`]) in the GPU stage.
    abc: Option<[Vec<Fr>; 3]>,
    /// With `abc` `None`: the assignment in compact form, when at most
    /// half of its values are neither 0 nor 1 (what the GPU stage then
    /// uploads: about 1/100 of the dense bytes for a witness of bits).
    z_compact: Compacted,
    /// With `abc` `None` and no compact form: the assignment copied into
    /// pinned host memory, when pinned memory could be had (else the GPU
    /// stage uploads it from the job's own, pageable, vector).
    z_pinned: Option<PinnedBuffer<Fr>>,
    /// With `abc` `None`: the non-zero scalars of each streamed witness
    /// query, whose bases alone then cross PCIe.
    nonzero: WitnessNonZero,
    /// Whether the GPU stage leaves the witness MSMs to a batch's witness
    /// pass (set by a [`crate::MultiGpuProver`] lane once the proof's
    /// masks are made, see [`Prover::witness_masks`]).
    pub(crate) defer_witness: bool,
    timings: ProofTimings,
    /// Whether the proof was admitted to its GPU stage as the only one its
    /// device admits at once (set by a [`crate::MultiGpuProver`] lane after
    /// admission): if it then finds no other proof in a GPU stage on its
    /// device (of any prover sharing the memory), it may evaluate C z into
    /// a third vector beside B z's NTTs where the budget holds it.
    pub(crate) sole: bool,
}

/// A proof's scalars of each witness query as [`Masked`] for a batch's
/// witness pass ([`Prover::witness_masks`]; `None` for an empty query and
/// for B in G1 when r is zero).
#[derive(Debug, Default)]
pub(crate) struct WitnessMasks {
    a: Option<Masked>,
    b_g1: Option<Masked>,
    b_g2: Option<Masked>,
    l: Option<Masked>,
}

/// A job's assignment in compact form ([`CompactAssignment::of`]), made
/// once and shared by a batch's witness masks and the proof's GPU stage:
/// `None` where the job is not evaluated on the GPU or its assignment is
/// not mostly 0s and 1s.
pub(crate) type Compacted = Option<Arc<CompactAssignment>>;

/// A proof after its GPU stage: H's MSM, and the witness MSMs' sums unless
/// they wait for the batch's witness pass (`sums` `None`).
pub(crate) struct Staged {
    h_acc: g1::G1Projective,
    pub(crate) sums: Option<WitnessSums>,
    pub(crate) timings: ProofTimings,
}

/// The non-zero scalars of a proof's streamed witness queries
/// ([`Query::nonzero`]; `None` for a query that is resident or mostly
/// non-zero, for B in G1 when r is zero, and for every query of a proof
/// evaluated on the CPU).
#[derive(Debug, Default)]
pub(crate) struct WitnessNonZero {
    a: Option<NonZero>,
    b_g1: Option<NonZero>,
    b_g2: Option<NonZero>,
    l: Option<NonZero>,
}

/// A Groth16 prover for one proving key. Share it between threads (`&self`
/// methods; GPU work is serialized on its engines' streams).
///
/// On a GPU, each of the key's queries (H, L, A, B in G1, B in G2) is
/// resident (uploaded once) where the memory budget holds it beside the
/// proofs' working set, and otherwise streamed from page-locked host memory
/// on every proof ([`cuzk_msm::GpuMsm::msm_streamed`]);
/// [`Prover::streamed_queries`] and [`ProofTimings::streamed_bytes`] say
/// which. The key lives once per process: provers of several GPUs share it
/// ([`Prover::with_shared_key`]).
pub struct Prover {
    // The queries come first: they are dropped before the key, whose
    // slices the streamed ones keep page-locked.
    a: Query<g1::Config>,
    b_g1: Query<g1::Config>,
    b_g2: Query<g2::Config>,
    h: Query<g1::Config>,
    l: Query<g1::Config>,
    gpu: Option<Gpu>,
    /// The circuit's R1CS on the GPU ([`Prover::with_r1cs`]).
    device_r1cs: Option<DeviceR1cs>,
    /// The circuit's R1CS ([`Prover::with_r1cs`]).
    r1cs: Option<Arc<SparseR1cs>>,
    pk: Arc<ProvingKey>,
    pub(crate) check_witness: bool,
    /// Whether H's MSM may run beside the witness MSMs
    /// ([`Prover::with_msm_overlap`]).
    pub(crate) overlap_msms: bool,
    /// Whether a streamed witness query sends only the bases of non-zero
    /// scalars ([`Prover::with_nonzero_streaming`]).
    pub(crate) nonzero_streaming: bool,
}

impl std::fmt::Debug for Prover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prover")
            .field("backend", &self.backend())
            .field("variables", &self.pk.a_query.len())
            .field("inputs", &self.pk.vk.gamma_abc_g1.len())
            .field("h_query", &self.pk.h_query.len())
            .field("check_witness", &self.check_witness)
            .field("overlap_msms", &self.overlap_msms)
            .field("nonzero_streaming", &self.nonzero_streaming)
            .finish()
    }
}

impl Prover {
    /// A prover on GPU 0 when one is usable (its memory budget from
    /// cuzk-alloc's settings, `CUZK_DEVICE_MEMORY_LIMIT` and
    /// `CUZK_DEVICE_MEMORY_MARGIN`), else on the CPU.
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
    /// [`Error::InvalidArgument`] for a malformed key: A and B (G1, G2)
    /// queries of different lengths, inputs and an L query that do not add
    /// up to them, or an H query whose length is not 2^k - 1.
    pub fn cpu(pk: ProvingKey) -> Result<Self> {
        Self::cpu_shared(Arc::new(pk))
    }

    /// [`Prover::cpu`] with a key shared with other provers.
    pub(crate) fn cpu_shared(pk: Arc<ProvingKey>) -> Result<Self> {
        Self::build(pk, None)
    }

    /// A prover on the GPU of `mem`, sharing its budget with other users of
    /// `mem` (other provers, other engines): the key's A, B (G1, G2), H and
    /// L queries uploaded once (96 bytes a G1 point, 192 a G2 point) where
    /// the budget holds them beside one proof's working set
    /// ([`Prover::working_set_bytes`]), the others streamed (see
    /// [`Prover`]).
    ///
    /// # Errors
    /// As [`Prover::new`]; CUDA errors of page-locking the streamed
    /// queries' host memory.
    pub fn with_memory(pk: ProvingKey, mem: Arc<DeviceMemory>) -> Result<Self> {
        Self::with_shared_key(Arc::new(pk), mem)
    }

    /// As [`Prover::with_memory`], for a key shared with other provers
    /// (those of other GPUs: the key's host memory is held once). The
    /// resident queries leave room for one proof's working set: more
    /// workers on the GPU wait for room to enter the GPU stage
    /// ([`crate::MultiGpuProver`]) rather than stream more of the key.
    ///
    /// # Errors
    /// As [`Prover::with_memory`].
    pub fn with_shared_key(pk: Arc<ProvingKey>, mem: Arc<DeviceMemory>) -> Result<Self> {
        let ntt = GpuNtt::with_memory(mem.clone())?
            .with_full_twiddle_limit(PROVER_FULL_TWIDDLE_MAX_BYTES);
        // The witness MSMs' engine: its short kernels run beside H's MSM
        // when the key streams (`with_msm_overlap`), so its streams get
        // the first turn at the SMs.
        let msm = GpuMsm::with_memory_priority(mem, true)?;
        Self::build(pk, Some((ntt, msm)))
    }

    fn build(pk: Arc<ProvingKey>, gpu: Option<(GpuNtt, GpuMsm)>) -> Result<Self> {
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
        if !(pk.h_query.len() as u128 + 1).is_power_of_two() {
            return Err(Error::InvalidArgument(format!(
                "malformed proving key: an H query of {} points, where a QAP domain of 2^k \
                 gives 2^k - 1 (up to 2^32): the key is damaged or not a radix-2 Groth16 key; \
                 make it again with the circuit's setup",
                pk.h_query.len()
            )));
        }
        let m = gpu.as_ref().map(|(_, m)| m);
        // H's coefficients are uniform: its MSM skips classifying them. Its
        // engine has streams of its own, so that it can run beside the
        // others.
        let dense = match m {
            Some(g) => Some(GpuMsm::with_memory(g.memory().clone())?.with_config(
                cuzk_msm::MsmConfig {
                    witness_shaped: cuzk_msm::WitnessShaped::Never,
                    ..*g.config()
                },
            )?),
            None => None,
        };
        // Residency, in the order H, L, A, B G1, B G2 (the sizes counted
        // before compaction): resident while the budget keeps room for a
        // proof's working set beside it, else streamed.
        let reserve = match &gpu {
            Some((ntt, _)) => working_set(&pk, Some(ntt), None),
            None => 0,
        };
        let place = |g: Option<&GpuMsm>, points: usize, point_bytes: usize| -> Result<_> {
            let Some(g) = g else { return Ok(None) };
            let bytes = (points * point_bytes) as u64;
            let room = g.memory().budget().available_bytes()?;
            Ok(Some(if room >= bytes.saturating_add(reserve) {
                Residency::Resident
            } else {
                Residency::Streamed
            }))
        };
        let epoch = match &gpu {
            Some((ntt, _)) => {
                let e = Event::new(ntt.memory().device())?;
                e.record(ntt.stream())?;
                ntt.stream().synchronize()?;
                Some(e)
            }
            None => None,
        };
        let d = dense.as_ref();
        let (p1, p2) = (
            std::mem::size_of::<g1::G1Affine>(),
            std::mem::size_of::<g2::G2Affine>(),
        );
        let h = Query::placed(&pk.h_query, d.zip(place(d, pk.h_query.len(), p1)?))?;
        let l = Query::placed(&pk.l_query, m.zip(place(m, pk.l_query.len(), p1)?))?;
        let a = Query::placed(&pk.a_query[1..], m.zip(place(m, nv - 1, p1)?))?;
        let b_g1 = Query::placed(&pk.b_g1_query[1..], m.zip(place(m, nv - 1, p1)?))?;
        let b_g2 = Query::placed(&pk.b_g2_query[1..], m.zip(place(m, nv - 1, p2)?))?;
        let prover = Prover {
            gpu: gpu
                .zip(dense)
                .zip(epoch)
                .map(|(((ntt, msm), dense), epoch)| Gpu {
                    ntt,
                    msm,
                    dense,
                    epoch: Mutex::new((epoch, 0.0)),
                    pinned: PinnedPool::new(PINNED_POOL),
                }),
            device_r1cs: None,
            r1cs: None,
            pk,
            a,
            b_g1,
            b_g2,
            h,
            l,
            check_witness: false,
            overlap_msms: true,
            nonzero_streaming: false,
        };
        if prover.gpu.is_some() {
            tracing::info!(
                target: "cuzk_prover",
                streamed = ?prover.streamed_queries(),
                streamed_bytes = prover.streamed_bytes(),
                "proving key placed"
            );
        }
        Ok(prover)
    }

    /// The queries whose bases stream from host memory on every proof
    /// (names among "H", "L", "A", "B G1", "B G2"), and "R1CS" when the
    /// circuit's compact R1CS ([`Prover::with_r1cs`]) streams too; empty on
    /// the CPU path and when everything is resident.
    pub fn streamed_queries(&self) -> Vec<&'static str> {
        [
            ("H", self.h.is_streamed()),
            ("L", self.l.is_streamed()),
            ("A", self.a.is_streamed()),
            ("B G1", self.b_g1.is_streamed()),
            ("B G2", self.b_g2.is_streamed()),
            (
                "R1CS",
                self.device_r1cs
                    .as_ref()
                    .is_some_and(DeviceR1cs::is_streamed),
            ),
        ]
        .into_iter()
        .filter_map(|(n, s)| s.then_some(n))
        .collect()
    }

    /// Bytes of the key's bases that cross PCIe in each proof (the
    /// streamed queries', compacted, B in G1 included although a proof with
    /// r = 0 skips it; 0 when the key is resident).
    fn streamed_bytes(&self) -> u64 {
        let pk = &self.pk;
        let nv = pk.a_query.len();
        self.h.streamed_bytes(pk.h_query.len())
            + self.l.streamed_bytes(pk.l_query.len())
            + self.a.streamed_bytes(nv - 1)
            + self.b_g1.streamed_bytes(nv - 1)
            + self.b_g2.streamed_bytes(nv - 1)
    }

    /// [`Prover::streamed_bytes`] of a proof whose streamed witness queries
    /// send only the bases of `nonzero` scalars.
    fn streamed_bytes_with(&self, nonzero: &WitnessNonZero) -> u64 {
        let pk = &self.pk;
        let nv = pk.a_query.len();
        self.h.streamed_bytes(pk.h_query.len())
            + self
                .l
                .streamed_bytes_with(pk.l_query.len(), nonzero.l.as_ref())
            + self.a.streamed_bytes_with(nv - 1, nonzero.a.as_ref())
            + self.b_g1.streamed_bytes_with(nv - 1, nonzero.b_g1.as_ref())
            + self.b_g2.streamed_bytes_with(nv - 1, nonzero.b_g2.as_ref())
    }

    /// The same prover with the key's queries on the GPU re-uploaded with
    /// precomputed shifted copies ([`GpuMsm::upload_bases_precomputed`]:
    /// faster MSMs against them from about 2^16 points, for W = 11 to 16
    /// times their device memory and a one-time precomputation; figures in
    /// BENCHMARKS.md). Largest query
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
        let Some((gpu, dense)) = self.gpu.as_ref().map(|g| (g.msm.clone(), g.dense.clone())) else {
            return Ok((self, 0));
        };
        let pk = &self.pk;
        let mut n = 0;
        n += usize::from(self.h.precompute(&pk.h_query, &dense)?);
        n += usize::from(self.l.precompute(&pk.l_query, &gpu)?);
        n += usize::from(self.a.precompute(&pk.a_query[1..], &gpu)?);
        n += usize::from(self.b_g1.precompute(&pk.b_g1_query[1..], &gpu)?);
        n += usize::from(self.b_g2.precompute(&pk.b_g2_query[1..], &gpu)?);
        Ok((self, n))
    }

    /// The same prover, checking (or not) that the witness satisfies the
    /// constraints before proving (default: not checked). Checked, an
    /// unsatisfied system is an [`Error::InvalidArgument`] naming the first
    /// unsatisfied constraint, instead of a proof that does not verify.
    /// Costs one field multiplication a constraint (for [`Prover::prove`],
    /// a second pass over the rows after synthesis). It checks the job's
    /// matrices, not the key: a key made for another circuit of the same
    /// shape still gives a proof that does not verify (check proofs with
    /// the verifying key where that can happen).
    pub fn with_check_witness(mut self, check: bool) -> Self {
        self.check_witness = check;
        self
    }

    /// The same prover with H's MSM running beside the witness MSMs (A, B
    /// in G1 and G2, L) or not (default: beside). It applies on the GPU to
    /// proofs evaluated there ([`Prover::with_r1cs`]) when H's query and
    /// every witness query stream from host memory (the memory budget holds
    /// too little of the key: a 16 GiB card at 2^26 and beyond). H's MSM is
    /// compute-bound and the witness MSMs copy-bound (their scalars are
    /// mostly 0 and 1, their kernels short), so run at once on two engines,
    /// the copy engine and the SMs work together instead of taking turns.
    /// The stage's device memory (what the budget has, up to the proof's
    /// MSM-stage share of [`Prover::working_set_bytes`]) is split into two
    /// reservations, one for each side (the witness side gets its gathered
    /// scalars and 2 GiB), so that neither can take memory the other
    /// planned with. Where the budget is too short for both, the MSMs run
    /// one after another as they do with `false`. The proof is the same
    /// either way; [`ProofTimings::msm_overlapped`] says which ran.
    pub fn with_msm_overlap(mut self, overlap: bool) -> Self {
        self.overlap_msms = overlap;
        self
    }

    /// The same prover streaming, for each witness query whose bases
    /// stream from host memory (A, B in G1 and G2, L), only the bases of
    /// the proof's non-zero scalars, or every base (default: every base).
    /// It applies on the GPU to proofs evaluated there
    /// ([`Prover::with_r1cs`]) whose scalars of that query are at least an
    /// eighth zero: a witness of bits, about 58% zeros in the SHA-256
    /// chain, sends that much less of the key over PCIe. The proof's CPU
    /// stage lists the non-zero scalars (4 or 8 bytes a non-zero scalar of
    /// each such query, in host memory until the proof ends); the GPU
    /// reads their bases chunk by chunk from the page-locked key over PCIe
    /// ([`cuzk_msm::GpuMsm::msm_streamed_device_gathered`]; the staging's
    /// host threads gather them instead where the key is not mapped). The
    /// proof is the same either way; [`ProofTimings::streamed_bytes`]
    /// counts the bases' bytes sent (an MSM that, short of device memory,
    /// falls back to host scalars sends every base, not counted there).
    ///
    /// It pays only where the gather moves the non-zero bases faster than
    /// the link moves every base; the host threads' gather did not on a
    /// 16-core host beside a second worker's CPU stage (BENCHMARKS.md has
    /// the figures), hence the default until the GPU's gather is measured.
    pub fn with_nonzero_streaming(mut self, nonzero: bool) -> Self {
        self.nonzero_streaming = nonzero;
        self
    }

    /// The same prover holding the circuit's R1CS: jobs whose
    /// [`ProofJob::matrices`] is `r1cs.matrices()` itself (the same
    /// reference, see [`SparseR1cs::matrices`]) have `A z`, `B z`, `C z`
    /// evaluated on the GPU, and their whole proof stays on the device: the
    /// full assignment crosses PCIe once (as two bitmasks and its other
    /// values where at most half of it is neither 0 nor 1: about 1/100 of
    /// its bytes for a witness of bits), the evaluations and H never leave
    /// the device, and the MSMs read their scalars from the device-resident
    /// assignment. Other jobs, the CPU path, and jobs proved with the
    /// witness check ([`Prover::with_check_witness`]) evaluate on the CPU
    /// as before. On the GPU the compact form is resident when the budget
    /// holds it beside one proof's working set, else streamed from
    /// page-locked host memory on every proof (chunk by chunk, the copy of
    /// the next overlapping the evaluation of this one). Share one
    /// `Arc<SparseR1cs>` between the provers of several GPUs.
    ///
    /// A proof whose GPU evaluation runs out of device memory (a budget
    /// shared with other work) falls back to the CPU's evaluation, with a
    /// warning.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the system does not match the key
    /// (its domain, or variables past the key's); CUDA errors of the
    /// upload. (Page-locking a streamed form that the system refuses is a
    /// warning: those chunks stream from pageable memory.)
    pub fn with_r1cs(self, r1cs: Arc<SparseR1cs>) -> Result<Self> {
        self.with_r1cs_beside(r1cs, 1)
    }

    /// [`Prover::with_r1cs`], the compact form resident only where the
    /// budget keeps room for `proofs` working sets beside it (the proofs
    /// a [`crate::MultiGpuProver`] lane admits at once).
    pub(crate) fn with_r1cs_beside(mut self, r1cs: Arc<SparseR1cs>, proofs: usize) -> Result<Self> {
        let pk = &self.pk;
        let ni = pk.vk.gamma_abc_g1.len();
        let log_n = qap::domain_log_size(r1cs.num_constraints(), ni)?;
        if pk.h_query.len() != (1usize << log_n) - 1 || r1cs.num_variables() > pk.a_query.len() {
            return Err(Error::InvalidArgument(format!(
                "an R1CS of {} constraints over {} variables for a proving key of {} variables \
                 and a domain of {}: the system is for another circuit",
                r1cs.num_constraints(),
                r1cs.num_variables(),
                pk.a_query.len(),
                pk.h_query.len() + 1
            )));
        }
        self.device_r1cs = None;
        if let Some(g) = &self.gpu {
            let reserve = working_set(pk, Some(&g.ntt), Some(2 * r1cs.max_chunk_bytes()))
                .saturating_mul(proofs.max(1) as u64);
            self.device_r1cs = Some(DeviceR1cs::place(
                r1cs.clone(),
                g.ntt.memory().clone(),
                reserve,
            )?);
            tracing::info!(
                target: "cuzk_prover",
                bytes = r1cs.bytes(),
                chunks = r1cs.num_chunks(),
                streamed = self.device_r1cs.as_ref().is_some_and(DeviceR1cs::is_streamed),
                "R1CS placed for evaluation on the GPU"
            );
        }
        self.r1cs = Some(r1cs);
        Ok(self)
    }

    /// The circuit's R1CS given to [`Prover::with_r1cs`].
    pub fn r1cs(&self) -> Option<&Arc<SparseR1cs>> {
        self.r1cs.as_ref()
    }

    /// Whether `job`'s matrices are those of the R1CS this prover holds
    /// ([`Prover::with_r1cs`]), by reference.
    fn holds_matrices(&self, job: &ProofJob<'_>) -> bool {
        self.r1cs
            .as_ref()
            .is_some_and(|r| std::ptr::eq(job.matrices, r.matrices()))
    }

    /// `A z`, `B z`, `C z` of `job` on the CPU (and, with `check`, whether
    /// z satisfies every constraint): from the compact form of the R1CS
    /// this prover holds when the job's matrices are its own and have no
    /// rows ([`SparseR1cs::without_rows`]), else from the job's matrices.
    fn evaluate_on_cpu(&self, job: &ProofJob<'_>, log_n: u32, check: bool) -> Result<[Vec<Fr>; 3]> {
        let z = job.full_assignment;
        match &self.r1cs {
            Some(r) if self.holds_matrices(job) && !r.has_rows() => {
                let abc = r.evaluate(z, job.num_inputs, log_n)?;
                let nc = r.num_constraints();
                if check {
                    let [a, b, c] = &abc;
                    let bad = (0..nc).into_par_iter().find_first(|&i| a[i] * b[i] != c[i]);
                    if let Some(i) = bad {
                        return Err(Error::InvalidArgument(format!(
                            "the witness does not satisfy constraint {i} of {nc}: <A_{i}, z> * \
                             <B_{i}, z> != <C_{i}, z>"
                        )));
                    }
                }
                Ok(abc)
            }
            _ => qap::evaluate(job.matrices, z, job.num_inputs, log_n, check),
        }
    }

    /// Whether `job` is evaluated on the GPU: this prover holds its R1CS
    /// (the same matrices, by reference) on a GPU and the witness check is
    /// off.
    pub(crate) fn evaluates_on_gpu(&self, job: &ProofJob<'_>) -> bool {
        !self.check_witness
            && self
                .device_r1cs
                .as_ref()
                .is_some_and(|d| std::ptr::eq(job.matrices, d.sparse().matrices()))
    }

    /// The proving key.
    pub fn proving_key(&self) -> &ProvingKey {
        &self.pk
    }

    /// Creates the pinned staging buffers of this prover's NTT and MSM
    /// engines now (64 MiB of pinned host memory each, five of them)
    /// instead of at their first staged copy, which may come late in a
    /// batch (a copy of pageable scalars after a device-resident path ran
    /// out of memory): a pinned allocation's mapping for the GPU takes
    /// device memory, and a warmed-up prover must claim no more in a batch
    /// than it gives back. Nothing on the CPU path. Returns whether pinned
    /// memory could be had for all (when not, those copies take the plain
    /// path).
    pub(crate) fn prepare_staging(&self) -> bool {
        self.gpu.as_ref().is_none_or(|g| {
            let ntt = g.ntt.prepare_staging();
            let msm = g.msm.prepare_staging();
            g.dense.prepare_staging() && ntt && msm
        })
    }

    /// An over-estimate of the device memory, in bytes, that one proof's
    /// GPU stage claims from the budget on top of the resident part of the
    /// key (the figure depends only on the key's sizes; on the CPU path
    /// nothing is claimed, but the figure is the same):
    ///
    /// - the H stage: A, B, C on the coset (the quotient replaces A), three
    ///   vectors of 2^log_n scalars (32 bytes each), plus the NTT engine's twiddle
    ///   tables, two-level and full (tables between passes up to 64 MiB
    ///   a pass, [`GpuNtt::full_twiddle_bytes`], for the root and its
    ///   inverse; kept by the engine after the first proof);
    /// - plus the largest MSM of the key (A, B in G1 and G2, H, L, taken
    ///   uncompacted): its scalars and its scratch with every window sorted
    ///   at once, as [`cuzk_msm::scratch_bytes_estimate`] bounds it.
    ///
    /// The two stages overlap only in H's coefficients (the H MSM's
    /// scalars, counted in both); adding them is the over-estimate. A
    /// [`crate::MultiGpuProver`] admits as many proofs at once to a GPU
    /// stage as this figure fits its device's budget beside the key (at
    /// least one); the MSMs shrink their plans (and stream
    /// their bases) to what the budget holds, so a proof also runs where
    /// the budget is smaller than this figure. With the R1CS evaluated on
    /// the GPU the H stage holds z and two vectors; a proof of a lane that
    /// admits one at a time, alone in a GPU stage on its device, takes a
    /// third (C z evaluated beside B z's NTTs) only where the budget has
    /// that much free beyond what it holds.
    pub fn working_set_bytes(&self) -> u64 {
        working_set(
            &self.pk,
            self.gpu.as_ref().map(|g| &g.ntt),
            self.device_r1cs
                .as_ref()
                .map(DeviceR1cs::stream_buffer_bytes),
        )
    }

    /// The H stage's part of [`Prover::working_set_bytes`]: what a proof
    /// whose witness MSMs wait for a batch's witness pass holds at most
    /// ([`crate::MultiGpuProver::with_witness_pass`]), bytes.
    pub(crate) fn h_stage_bytes(&self) -> u64 {
        memory::h_stage_bytes(
            &self.pk,
            full_twiddles(&self.pk, self.gpu.as_ref().map(|g| &g.ntt)),
            self.device_r1cs
                .as_ref()
                .map(DeviceR1cs::stream_buffer_bytes),
        )
    }

    /// This GPU's clock: milliseconds since the prover was built, read
    /// from CUDA events (an event recorded now on the prover's stream, after
    /// the work queued there, against one recorded when it was built);
    /// `None` on the CPU path. The window to give
    /// [`crate::gpu_busy_fraction_device`] with the timings of this
    /// prover's proofs ([`ProofTimings::gpu_stage_device_ms`]).
    ///
    /// # Errors
    /// CUDA errors (including those of failed work on the stream).
    pub fn device_clock_ms(&self) -> Result<Option<f64>> {
        self.gpu.as_ref().map(Gpu::clock_ms).transpose()
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

    /// A proof for `circuit` and its stage timings: synthesizes the circuit
    /// (ark-relations, prove mode; [`synthesize`], with this prover's
    /// witness check), draws r and s from `rng`, proves as
    /// [`Prover::prove_job`]. The timings are also emitted through
    /// `tracing` (target `cuzk_prover`, level INFO).
    ///
    /// # Errors
    /// As [`synthesize`] and [`Prover::prove_job`].
    pub fn prove<C: ConstraintSynthesizer<Fr>, R: rand::RngCore>(
        &self,
        circuit: C,
        rng: &mut R,
    ) -> Result<(Proof, ProofTimings)> {
        let w = synthesize(circuit, self.check_witness)?;
        let r = Fr::rand(rng);
        let s = Fr::rand(rng);
        let job = w.job(r, s);
        let prepared = self.prepare(&job, w.synthesis_ms, false, None)?;
        self.finish(&job, prepared)
    }

    /// A proof of one job (R1CS matrices, the full assignment: the constant
    /// one, the `num_inputs - 1` public inputs, the witness; randomness `r`
    /// and `s`) and its stage timings, also emitted through `tracing`
    /// (target `cuzk_prover`, level INFO). The proof equals ark-groth16's
    /// `create_proof_with_reduction_and_matrices(pk, r, s, [A, B, C],
    /// num_inputs, num_constraints, full_assignment)` for a system that
    /// matches the key.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the assignment, the inputs or the
    /// domain do not match the key, when a matrix names a variable past the
    /// assignment, or (with the witness check) when a constraint is not
    /// satisfied; GPU errors ([`Error::OutOfMemory`], CUDA errors).
    pub fn prove_job(&self, job: &ProofJob<'_>) -> Result<(Proof, ProofTimings)> {
        let prepared = self.prepare(job, 0.0, false, None)?;
        self.finish(job, prepared)
    }

    /// `"gpu"` or `"cpu"`, for `tracing` fields.
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
        // The R1CS this prover holds may have its rows only in compact form.
        if !self.holds_matrices(job) && !m.has_rows() {
            return Err(Error::InvalidArgument(format!(
                "R1CS matrices of {} constraints without their rows \
                 (SparseR1cs::without_rows), and this prover does not hold that compact form: \
                 prove them on the prover given it with Prover::with_r1cs",
                m.num_constraints
            )));
        }
        if !self.holds_matrices(job)
            && (m.a.len() != m.num_constraints
                || m.b.len() != m.num_constraints
                || m.c.len() != m.num_constraints)
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
                 H query has {} points (expected {}): the key and the matrices are for \
                 different circuits",
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

    /// The CPU stage of a proof: checks the job against the key and
    /// evaluates `A z`, `B z`, `C z`. `witness_ms` is the job's synthesis
    /// time (zero when it came synthesized), kept in the timings.
    ///
    /// Where the GPU evaluates, the assignment's compact form is `compacted`
    /// when given (a batch's witness masks made it), else made now
    /// ([`Prover::compacted`]). Otherwise,
    /// with `pin`, the assignment is copied into a pinned buffer now, so
    /// that the GPU stage uploads it by DMA alone. That pays when this
    /// stage runs while another proof holds the GPU; a proof whose GPU
    /// stage can start at once passes `false` and uploads through the NTT
    /// engine's staged copies instead, whose host copies overlap the DMA
    /// (while another upload holds the staging buffers, a plain copy from
    /// pageable memory, slower).
    pub(crate) fn prepare(
        &self,
        job: &ProofJob<'_>,
        witness_ms: f64,
        pin: bool,
        compacted: Option<Compacted>,
    ) -> Result<Prepared> {
        let log_n = self.check_job(job)?;
        let t0 = Instant::now();
        let (mut z_pinned, mut z_compact) = (None, None);
        let abc = match (self.evaluates_on_gpu(job), &self.r1cs) {
            (true, Some(r)) => {
                r.check_assignment(job.full_assignment.len(), job.num_inputs, log_n)?;
                z_compact = compacted.unwrap_or_else(|| self.compacted(job));
                tracing::debug!(
                    target: "cuzk_prover",
                    compact_bytes = z_compact.as_deref().map(CompactAssignment::bytes),
                    dense_bytes = std::mem::size_of_val(job.full_assignment),
                    "the assignment's form for the GPU"
                );
                // An assignment already in page-locked memory (a caller's
                // pinned buffer) goes up from there by DMA.
                if z_compact.is_none()
                    && pin
                    && !cuzk_alloc::is_page_locked(job.full_assignment).unwrap_or(false)
                {
                    z_pinned = self.gpu.as_ref().and_then(|g| g.pin(job.full_assignment));
                }
                None
            }
            _ => Some(self.evaluate_on_cpu(job, log_n, self.check_witness)?),
        };
        let r1cs_bytes = match (&abc, &self.device_r1cs) {
            (None, Some(d)) if d.is_streamed() => d.sparse().bytes(),
            _ => 0,
        };
        // The scalars come from the device-resident assignment only when
        // the GPU evaluates: only then can a streamed query skip the bases
        // of zero scalars.
        let nonzero = match abc {
            None if self.nonzero_streaming => self.witness_nonzero(job),
            _ => WitnessNonZero::default(),
        };
        let streamed_bytes = self.streamed_bytes_with(&nonzero) + r1cs_bytes;
        Ok(Prepared {
            log_n,
            abc,
            z_compact,
            z_pinned,
            nonzero,
            defer_witness: false,
            timings: ProofTimings {
                witness_ms,
                eval_ms: ms(t0),
                streamed_bytes,
                ..ProofTimings::default()
            },
            sole: false,
        })
    }

    /// The device stage of a proof (on the CPU path, the CPU's): H, the
    /// MSMs, the assembly; emits the timings through `tracing`.
    pub(crate) fn finish(
        &self,
        job: &ProofJob<'_>,
        prepared: Prepared,
    ) -> Result<(Proof, ProofTimings)> {
        let staged = self.gpu_stage(job, prepared)?;
        self.complete(job, staged, None)
    }

    /// A staged proof's assembly: its witness sums from its GPU stage, else
    /// `sums` (from a witness pass), else its witness MSMs now from the
    /// host assignment (a pass that failed); emits the timings.
    ///
    /// # Errors
    /// As the witness MSMs ([`Query::msm`]).
    pub(crate) fn complete(
        &self,
        job: &ProofJob<'_>,
        staged: Staged,
        sums: Option<WitnessSums>,
    ) -> Result<(Proof, ProofTimings)> {
        let Staged {
            h_acc,
            sums: own,
            timings: mut t,
        } = staged;
        let sums = match (own, sums) {
            (Some(s), _) | (None, Some(s)) => s,
            (None, None) => {
                self.witness_msms(job, None, None, &WitnessNonZero::default(), &mut t)?
            }
        };
        let pk = &self.pk;
        let (r, s) = (job.r, job.s);
        let t0 = Instant::now();
        let delta_g1 = pk.delta_g1.into_group();
        let g_a = sums.a + pk.a_query[0] + pk.vk.alpha_g1 + delta_g1 * r;
        let g2_b = sums.b_g2 + pk.b_g2_query[0] + pk.vk.beta_g2 + pk.vk.delta_g2 * s;
        let g1_b = match sums.b_g1 {
            Some(acc) => acc + pk.b_g1_query[0] + pk.beta_g1 + delta_g1 * s,
            None => g1::G1Projective::ZERO,
        };
        let g_c = g_a * s + g1_b * r - delta_g1 * (r * s) + sums.l + h_acc;
        let proof = Proof {
            a: g_a.into_affine(),
            b: g2_b.into_affine(),
            c: g_c.into_affine(),
        };
        t.assembly_ms = ms(t0);
        t.emit(self.backend_name());
        Ok((proof, t))
    }

    /// `job`'s assignment in compact form where the GPU evaluates it (the
    /// prover holds its R1CS, [`Prover::with_r1cs`]) and at most half of it
    /// is neither 0 nor 1: one pass over it on rayon's threads.
    pub(crate) fn compacted(&self, job: &ProofJob<'_>) -> Compacted {
        if !self.evaluates_on_gpu(job) || self.r1cs.is_none() {
            return None;
        }
        CompactAssignment::of(job.full_assignment).map(Arc::new)
    }

    /// The scalars of `job`'s witness queries as bitmasks of their ones
    /// and lists of the rest, for a batch's witness pass (see
    /// [`crate::MultiGpuProver::with_witness_pass`]): `None` (the proof's
    /// GPU stage then runs its witness MSMs itself) unless this prover is
    /// on a GPU and every non-empty witness query streams and has at most
    /// 1/16 of its scalars neither 0 nor 1. Reads the bitmasks of
    /// `compact` (the job's [`Prover::compacted`]) when given, else scans
    /// the assignment once a query, on rayon's threads.
    pub(crate) fn witness_masks(
        &self,
        job: &ProofJob<'_>,
        compact: Option<&CompactAssignment>,
    ) -> Option<WitnessMasks> {
        self.gpu.as_ref()?;
        // A job of another shape fails on its own; it stays out of the
        // pass, which takes one key's partitions.
        self.check_job(job).ok()?;
        let z = job.full_assignment;
        let from = |i: usize| z.get(i..).unwrap_or(&[]);
        // Read from the compact form's bitmasks where there is one, else
        // a pass over z's values a query.
        macro_rules! masked {
            ($q:expr, $start:expr) => {
                if $q.is_empty() {
                    None
                } else {
                    Some(match compact {
                        Some(c) => $q.masked_compact(c, $start)?,
                        None => $q.masked(from($start))?,
                    })
                }
            };
        }
        Some(WitnessMasks {
            a: masked!(self.a, 1),
            b_g1: if job.r == Fr::ZERO {
                None
            } else {
                masked!(self.b_g1, 1)
            },
            b_g2: masked!(self.b_g2, 1),
            l: masked!(self.l, job.num_inputs),
        })
    }

    /// The witness MSMs of several staged proofs at once (a batch's witness
    /// pass): for each witness query, its bases stream once for all the
    /// proofs, each proof's ones summed by bitmask and its other scalars
    /// through an MSM of their own ([`Query::masked_msms`]), within `share`
    /// when given. `jobs[i]` is the job of `masks[i]`; every job has the
    /// key's shape.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the jobs' assignments differ in
    /// length; as [`Query::masked_msms`].
    pub(crate) fn witness_pass(
        &self,
        jobs: &[&ProofJob<'_>],
        masks: &[&WitnessMasks],
        share: Option<&Arc<Reservation>>,
        t: &mut ProofTimings,
    ) -> Result<Vec<WitnessSums>> {
        let Some(first) = jobs.first() else {
            return Ok(Vec::new());
        };
        let (vars, inputs) = (first.full_assignment.len(), first.num_inputs);
        if let Some(j) = jobs
            .iter()
            .find(|j| j.full_assignment.len() != vars || j.num_inputs != inputs)
        {
            return Err(Error::InvalidArgument(format!(
                "a witness pass over assignments of {vars} and {} variables ({inputs} and {} \
                 inputs): give one key's partitions",
                j.full_assignment.len(),
                j.num_inputs
            )));
        }
        let pk = &self.pk;
        // Counted as a proof in a GPU stage on its device (see
        // `stage::alone`).
        let _stage = self
            .gpu
            .as_ref()
            .map(|g| crate::stage::Stage::enter(g.ntt.memory()));
        // Each query's sums, one a proof whose mask `pick` gives (zero for
        // the others: an empty query, B in G1 when r is zero).
        fn pass<P: cuzk_msm::MsmCurve>(
            q: &Query<P>,
            bases: &[ark_ec::short_weierstrass::Affine<P>],
            len: usize,
            picked: &[Option<&Masked>],
            share: Option<&Arc<Reservation>>,
        ) -> Result<Vec<ark_ec::short_weierstrass::Projective<P>>>
        where
            ark_ec::short_weierstrass::Affine<P>: cuzk_field::DeviceRepr,
        {
            let some: Vec<&Masked> = picked.iter().flatten().copied().collect();
            let mut sums = if some.is_empty() {
                Vec::new()
            } else {
                q.masked_msms(bases, len, &some, share)?
            }
            .into_iter();
            Ok(picked
                .iter()
                .map(|m| match m {
                    Some(_) => sums.next().unwrap_or_default(),
                    None => Default::default(),
                })
                .collect())
        }
        let t0 = Instant::now();
        let picked = |f: fn(&WitnessMasks) -> Option<&Masked>| -> Vec<Option<&Masked>> {
            masks.iter().map(|m| f(m)).collect()
        };
        let a = pass(
            &self.a,
            &pk.a_query[1..],
            vars - 1,
            &picked(|m| m.a.as_ref()),
            share,
        )?;
        t.msm_a_ms = ms(t0);
        let t0 = Instant::now();
        let b_g2 = pass(
            &self.b_g2,
            &pk.b_g2_query[1..],
            vars - 1,
            &picked(|m| m.b_g2.as_ref()),
            share,
        )?;
        t.msm_b_g2_ms = ms(t0);
        let t0 = Instant::now();
        let b_g1 = pass(
            &self.b_g1,
            &pk.b_g1_query[1..],
            vars - 1,
            &picked(|m| m.b_g1.as_ref()),
            share,
        )?;
        t.msm_b_g1_ms = ms(t0);
        let t0 = Instant::now();
        let l = pass(
            &self.l,
            &pk.l_query,
            vars - inputs,
            &picked(|m| m.l.as_ref()),
            share,
        )?;
        t.msm_l_ms = ms(t0);
        Ok(jobs
            .iter()
            .enumerate()
            .map(|(i, j)| WitnessSums {
                a: a[i],
                b_g2: b_g2[i],
                b_g1: (j.r != Fr::ZERO).then_some(b_g1[i]),
                l: l[i],
            })
            .collect())
    }

    /// The GPU stage of a prepared proof (on the CPU path, the CPU's
    /// work): H and its MSM, and the witness MSMs unless they wait for a
    /// batch's witness pass ([`Prepared::defer_witness`]).
    pub(crate) fn gpu_stage(&self, job: &ProofJob<'_>, prepared: Prepared) -> Result<Staged> {
        let span =
            tracing::debug_span!(target: "cuzk_prover", "prove", backend = self.backend_name());
        let _g = span.enter();
        let Prepared {
            log_n,
            abc,
            z_compact,
            z_pinned,
            mut nonzero,
            defer_witness,
            timings: mut t,
            sole,
        } = prepared;
        let pk = &self.pk;
        let z = job.full_assignment;

        // H first, so that on the GPU its device buffer (the H MSM's
        // scalars, never copied to the host) is freed before the other MSMs
        // (or, when they run beside H's MSM, when both sides are done).
        let _stage = self
            .gpu
            .as_ref()
            .map(|g| crate::stage::Stage::enter(g.ntt.memory()));
        let device_start = self.gpu.as_ref().map(Gpu::clock_ms).transpose()?;
        let t0 = Instant::now();
        let stage_start = t0;
        // The device-resident assignment, when the GPU evaluates the R1CS:
        // uploaded once (compact where the witness is mostly bits), read by
        // the evaluation; written out dense for the witness MSMs of this
        // stage (none when they wait for a batch's witness pass).
        let mut z_dev = None;
        // The GPU's evaluation, or the CPU's when the device path finds the
        // budget short (other work on the GPU took the room).
        let mut device = None;
        let mut h_start = t0;
        let abc = match (&self.gpu, abc, &self.device_r1cs) {
            (Some(g), None, Some(d)) => {
                let on_device = || -> Result<_> {
                    // The compact form, else from the pinned copy by DMA
                    // when the CPU stage made one.
                    let zd = match (&z_compact, &z_pinned) {
                        (Some(c), _) => {
                            DeviceAssignment::upload(c, g.ntt.memory(), g.ntt.stream())?
                        }
                        (None, Some(p)) => DeviceAssignment::Dense(g.ntt.upload(p)?),
                        (None, None) => DeviceAssignment::Dense(g.ntt.upload(z)?),
                    };
                    let third = sole && crate::stage::alone(g.ntt.memory());
                    let h = qap::device_quotient(&g.ntt, d, &zd, job.num_inputs, log_n, third)?;
                    g.ntt.stream().synchronize()?;
                    Ok((zd, h))
                };
                let r = on_device();
                if let Some(p) = z_pinned {
                    g.unpin(p);
                }
                match r {
                    Ok(v) => {
                        device = Some(v);
                        None
                    }
                    Err(Error::OutOfMemory(m)) => {
                        tracing::warn!(
                            target: "cuzk_prover",
                            "the GPU evaluation of A z, B z, C z ran out of device memory ({m}); \
                             evaluating on the CPU"
                        );
                        let te = Instant::now();
                        let abc = self.evaluate_on_cpu(job, log_n, false)?;
                        t.eval_ms += ms(te);
                        // The witness MSMs then take host scalars: every
                        // base of a streamed query goes up.
                        nonzero = WitnessNonZero::default();
                        t.streamed_bytes = self.streamed_bytes();
                        h_start = Instant::now();
                        Some(abc)
                    }
                    Err(e) => return Err(e),
                }
            }
            (_, abc, _) => abc,
        };
        // The witness MSMs' sums, when they ran beside H's.
        let mut beside = None;
        let h_acc = match (&self.gpu, abc, device) {
            (Some(g), None, Some((zd, h))) => {
                // The evaluations and the NTTs are one stretch of device
                // work: counted in the H stage, marked as on the GPU.
                t.eval_on_gpu = true;
                t.h_ntt_ms = ms(t0);
                // Deferred, the witness MSMs wait for the batch's pass: z
                // goes, and H's MSM runs alone with the stage's memory.
                // Else they take z dense (from host scalars where the
                // budget has no room for it).
                let zd = match defer_witness {
                    true => None,
                    false => match zd.into_dense(g.ntt.memory(), g.ntt.stream()) {
                        Ok(d) => Some(d),
                        Err(Error::OutOfMemory(m)) => {
                            tracing::warn!(
                                target: "cuzk_prover",
                                "no room for the dense assignment beside H ({m}); the witness \
                                 MSMs take host scalars"
                            );
                            nonzero = WitnessNonZero::default();
                            // Every witness base streams; the R1CS
                            // streamed already.
                            t.streamed_bytes = self.streamed_bytes()
                                + self
                                    .device_r1cs
                                    .as_ref()
                                    .filter(|d| d.is_streamed())
                                    .map_or(0, |d| d.sparse().bytes());
                            None
                        }
                        Err(e) => return Err(e),
                    },
                };
                let shares = match (defer_witness, &zd) {
                    (false, Some(_)) => self.msm_shares(g, z.len(), &nonzero)?,
                    _ => None,
                };
                let acc = match shares {
                    Some((h_share, w_share)) => {
                        let h_side = || {
                            let t0 = Instant::now();
                            let r = self.h.msm_device(
                                &pk.h_query,
                                &h,
                                0..pk.h_query.len(),
                                Some(&h_share),
                            );
                            (r, ms(t0))
                        };
                        let (acc, sums) = std::thread::scope(|sc| {
                            let spawned = std::thread::Builder::new()
                                .name("cuzk-h-msm".into())
                                .spawn_scoped(sc, h_side);
                            let Ok(h_msm) = spawned else {
                                // No thread to be had: one after the other.
                                let (acc, h_ms) = h_side();
                                t.msm_h_ms = h_ms;
                                let sums = self.witness_msms(
                                    job,
                                    zd.as_ref(),
                                    Some(&w_share),
                                    &nonzero,
                                    &mut t,
                                );
                                return (acc, sums);
                            };
                            t.msm_overlapped = true;
                            let sums = self.witness_msms(
                                job,
                                zd.as_ref(),
                                Some(&w_share),
                                &nonzero,
                                &mut t,
                            );
                            let (acc, h_ms) = h_msm.join().unwrap_or_else(|_| {
                                // Its kernels may still be queued: wait for
                                // the device before their buffers drop.
                                let _ = g.ntt.memory().trim();
                                (Err(Error::Internal("H's MSM panicked".into())), 0.0)
                            });
                            t.msm_h_ms = h_ms;
                            (acc, sums)
                        });
                        beside = Some(sums?);
                        acc?
                    }
                    None => {
                        let t0 = Instant::now();
                        let acc = self
                            .h
                            .msm_device(&pk.h_query, &h, 0..pk.h_query.len(), None)?;
                        t.msm_h_ms = ms(t0);
                        acc
                    }
                };
                z_dev = zd;
                acc
            }
            (Some(g), Some(abc), _) => {
                let h = qap::quotient(&qap::GpuEngine(&g.ntt), abc, log_n, qap::Orders::Reversed)?;
                g.ntt.stream().synchronize()?;
                t.h_ntt_ms = ms(h_start);
                let t0 = Instant::now();
                let acc = self
                    .h
                    .msm_device(&pk.h_query, &h, 0..pk.h_query.len(), None)?;
                t.msm_h_ms = ms(t0);
                acc
            }
            (None, Some(abc), _) => {
                let h = qap::quotient(&qap::CpuEngine, abc, log_n, qap::Orders::Natural)?;
                t.h_ntt_ms = ms(t0);
                let t0 = Instant::now();
                let acc = self.h.msm(&pk.h_query, &h[..pk.h_query.len()])?;
                t.msm_h_ms = ms(t0);
                acc
            }
            _ => {
                return Err(Error::Internal(
                    "a proof prepared for GPU evaluation reached a prover without its R1CS on \
                     a GPU"
                        .into(),
                ))
            }
        };

        let sums = match (beside, defer_witness) {
            (Some(sums), _) => Some(sums),
            (None, true) => None,
            (None, false) => {
                Some(self.witness_msms(job, z_dev.as_ref(), None, &nonzero, &mut t)?)
            }
        };
        drop(z_dev);
        if let Some(g) = &self.gpu {
            t.gpu_stage = Some((stage_start, Instant::now()));
            t.gpu_stage_device_ms = device_start.zip(Some(g.clock_ms()?));
        }
        Ok(Staged {
            h_acc,
            sums,
            timings: t,
        })
    }
}

impl Prover {
    /// The witness MSMs of a proof (A, B in G2, B in G1 unless r = 0, L,
    /// one after another), their times into `t`: against the
    /// device-resident assignment `z_dev` when there is one (within `share`
    /// when given; a streamed query with `nonzero` scalars streams only
    /// their bases), else against the job's host assignment.
    fn witness_msms(
        &self,
        job: &ProofJob<'_>,
        z_dev: Option<&DeviceBuffer<Fr>>,
        share: Option<&Arc<Reservation>>,
        nonzero: &WitnessNonZero,
        t: &mut ProofTimings,
    ) -> Result<WitnessSums> {
        let pk = &self.pk;
        let z = job.full_assignment;
        // An MSM of `bases` against the assignment from variable `start`:
        // from the device-resident copy when there is one, else from host
        // scalars.
        macro_rules! msm_z {
            ($query:expr, $bases:expr, $start:expr, $nonzero:expr) => {
                match (z_dev, &self.gpu) {
                    (Some(zd), Some(g)) => $query.msm_assignment(
                        $bases,
                        zd,
                        $start,
                        &z[$start..],
                        g.ntt.memory(),
                        g.ntt.stream(),
                        share,
                        $nonzero.as_ref(),
                    ),
                    _ => $query.msm($bases, &z[$start..]),
                }
            };
        }
        let t0 = Instant::now();
        let a = msm_z!(self.a, &pk.a_query[1..], 1, nonzero.a)?;
        t.msm_a_ms = ms(t0);

        let t0 = Instant::now();
        let b_g2 = msm_z!(self.b_g2, &pk.b_g2_query[1..], 1, nonzero.b_g2)?;
        t.msm_b_g2_ms = ms(t0);

        let t0 = Instant::now();
        let b_g1 = if job.r == Fr::ZERO {
            None
        } else {
            Some(msm_z!(self.b_g1, &pk.b_g1_query[1..], 1, nonzero.b_g1)?)
        };
        t.msm_b_g1_ms = ms(t0);

        let t0 = Instant::now();
        let l = msm_z!(self.l, &pk.l_query, job.num_inputs, nonzero.l)?;
        t.msm_l_ms = ms(t0);
        Ok(WitnessSums { a, b_g2, b_g1, l })
    }

    /// The non-zero scalars of each streamed witness query of `job`
    /// ([`Query::nonzero`]); B in G1 is skipped when `r` is zero, as its
    /// MSM is.
    fn witness_nonzero(&self, job: &ProofJob<'_>) -> WitnessNonZero {
        let z = job.full_assignment;
        let from = |i: usize| z.get(i..).unwrap_or(&[]);
        WitnessNonZero {
            a: self.a.nonzero(from(1)),
            b_g1: (job.r != Fr::ZERO)
                .then(|| self.b_g1.nonzero(from(1)))
                .flatten(),
            b_g2: self.b_g2.nonzero(from(1)),
            l: self.l.nonzero(from(job.num_inputs)),
        }
    }

    /// Device memory shares for an MSM stage whose H MSM runs beside the
    /// witness MSMs ([`Prover::with_msm_overlap`]): (H's, the witness
    /// MSMs'), reserved from the budget of GPU `g`, for a proof of
    /// `variables` variables whose assignment is on the device and whose
    /// streamed witness queries gather their `nonzero` scalars. `None`
    /// (the MSMs then run one after another) when the overlap is off, when
    /// H's query or a non-empty witness query is resident, or when the
    /// stage's memory cannot hold both sides' floors (a streamed MSM's
    /// least: two chunks of [`cuzk_msm::MIN_CHUNK_POINTS`] points, or one
    /// of all of them, and as much again; the witness side also its largest
    /// gathered scalars).
    ///
    /// The stage gets what the budget has (less 64 MiB of slack), at most
    /// this proof's MSM-stage share of its working set (other admitted
    /// proofs keep theirs); the witness side its gathered scalars and
    /// [`WITNESS_SHARE_BYTES`], at most half of the stage unless its floor
    /// needs more; H's side the rest.
    ///
    /// # Errors
    /// When the device's memory figures cannot be read.
    fn msm_shares(
        &self,
        g: &Gpu,
        variables: usize,
        nonzero: &WitnessNonZero,
    ) -> Result<Option<(Arc<Reservation>, Arc<Reservation>)>> {
        let streams = |streamed: bool, empty: bool| streamed || empty;
        if !self.overlap_msms
            || !self.h.is_streamed()
            || !streams(self.a.is_streamed(), self.a.is_empty())
            || !streams(self.b_g1.is_streamed(), self.b_g1.is_empty())
            || !streams(self.b_g2.is_streamed(), self.b_g2.is_empty())
            || !streams(self.l.is_streamed(), self.l.is_empty())
        {
            return Ok(None);
        }
        let gathered = [
            self.a.gather_bytes(nonzero.a.as_ref()),
            self.b_g1.gather_bytes(nonzero.b_g1.as_ref()),
            self.b_g2.gather_bytes(nonzero.b_g2.as_ref()),
            self.l.gather_bytes(nonzero.l.as_ref()),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        let budget = g.ntt.memory().budget();
        let stage = memory::msm_stage_bytes(
            &self.pk,
            self.device_r1cs
                .as_ref()
                .map(DeviceR1cs::stream_buffer_bytes),
        )
        .saturating_sub(32 * variables as u64);
        let total = budget
            .available_bytes()?
            .saturating_sub(OVERLAP_SLACK_BYTES)
            .min(stage);
        // What a streamed MSM of `points` bases needs at least (see
        // `GpuMsm::msm_streamed`): one chunk buffer of them all, or two of
        // MIN_CHUNK_POINTS; as much again for its plan.
        let floor = |points: usize, point: usize| {
            let min = cuzk_msm::MIN_CHUNK_POINTS;
            let buffers = if points <= min { 1 } else { 2 };
            (2 * buffers * points.min(min) * point) as u64
        };
        let nv = self.pk.a_query.len();
        let w_floor = gathered.saturating_add(floor(nv, std::mem::size_of::<g2::G2Affine>()));
        let h_floor = floor(self.pk.h_query.len(), std::mem::size_of::<g1::G1Affine>());
        let w = gathered
            .saturating_add(WITNESS_SHARE_BYTES)
            .min((total / 2).max(w_floor));
        let h = total.saturating_sub(w);
        if w > total || h < h_floor {
            return Ok(None);
        }
        match (budget.try_reserve(h), budget.try_reserve(w)) {
            (Ok(hr), Ok(wr)) => Ok(Some((Arc::new(hr), Arc::new(wr)))),
            _ => Ok(None),
        }
    }
}

/// [`Prover::working_set_bytes`] of `pk` with the NTT engine `ntt` (its
/// full twiddle tables, for the root and its inverse, at the key's
/// domain; none on the CPU path).
///
/// `device_eval`: with the R1CS evaluated on the GPU, the bytes of its
/// streamed chunks' buffers (see [`memory::working_set_bytes`]).
fn working_set(pk: &ProvingKey, ntt: Option<&GpuNtt>, device_eval: Option<u64>) -> u64 {
    memory::working_set_bytes(pk, full_twiddles(pk, ntt), device_eval)
}

/// Bytes of the NTT engine `ntt`'s full twiddle tables, of the root and its
/// inverse, at the domain of `pk` (0 on the CPU path).
fn full_twiddles(pk: &ProvingKey, ntt: Option<&GpuNtt>) -> u64 {
    let log_n = (pk.h_query.len() as u64 + 1)
        .next_power_of_two()
        .trailing_zeros();
    ntt.map_or(0, |n| 2 * n.full_twiddle_bytes(log_n))
}
