//! Batches of proofs against one key: [`Prover::prove_batch`], its entries and options.

use crate::prover::Prepared;
use crate::r1cs::{synthesize, ProofJob, Synthesized};
use crate::timings::ProofTimings;
use crate::{Backend, Error, Fr, Proof, Prover, Result};
use ark_relations::gr1cs::ConstraintSynthesizer;

/// One entry of a batch for [`Prover::prove_batch`]: a synthesized
/// [`ProofJob`] (or a reference to one), or a [`CircuitJob`] that the batch
/// synthesizes on its preparing thread.
pub trait BatchJob: Send {
    /// The entry once synthesized: what its [`ProofJob`] borrows from.
    type Witness: Send;

    /// Whether [`BatchJob::synthesize`] does work (synthesis), which makes
    /// a pipelined batch pay on the CPU too.
    const SYNTHESIZES: bool = false;

    /// Synthesizes the entry (a [`ProofJob`] is its own witness); `check`
    /// is the prover's witness check ([`Prover::with_check_witness`]).
    ///
    /// # Errors
    /// As [`synthesize`].
    fn synthesize(self, check: bool) -> Result<Self::Witness>;

    /// The proof job of a synthesized entry.
    fn job(witness: &Self::Witness) -> ProofJob<'_>;

    /// Time the synthesis took, milliseconds (zero for an entry given
    /// synthesized).
    fn synthesis_ms(witness: &Self::Witness) -> f64 {
        let _ = witness;
        0.0
    }
}

impl<'a> BatchJob for ProofJob<'a> {
    type Witness = ProofJob<'a>;
    fn synthesize(self, _check: bool) -> Result<ProofJob<'a>> {
        Ok(self)
    }
    fn job(witness: &Self::Witness) -> ProofJob<'_> {
        *witness
    }
}

impl<'a> BatchJob for &ProofJob<'a> {
    type Witness = ProofJob<'a>;
    fn synthesize(self, _check: bool) -> Result<ProofJob<'a>> {
        Ok(*self)
    }
    fn job(witness: &Self::Witness) -> ProofJob<'_> {
        *witness
    }
}

/// A circuit to synthesize and prove with randomness `r` and `s`, as an
/// entry of [`Prover::prove_batch`].
#[derive(Clone, Debug)]
pub struct CircuitJob<C> {
    /// The circuit (a partition of the key's circuit).
    pub circuit: C,
    /// Groth16's randomness r.
    pub r: Fr,
    /// Groth16's randomness s.
    pub s: Fr,
}

impl<C: ConstraintSynthesizer<Fr> + Send> BatchJob for CircuitJob<C> {
    type Witness = (Synthesized, Fr, Fr);
    const SYNTHESIZES: bool = true;
    fn synthesize(self, check: bool) -> Result<(Synthesized, Fr, Fr)> {
        Ok((synthesize(self.circuit, check)?, self.r, self.s))
    }
    fn job(witness: &(Synthesized, Fr, Fr)) -> ProofJob<'_> {
        witness.0.job(witness.1, witness.2)
    }
    fn synthesis_ms(witness: &(Synthesized, Fr, Fr)) -> f64 {
        witness.0.synthesis_ms
    }
}

/// How [`Prover::prove_batch`] runs its jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchOptions {
    /// Run the batch as a two-stage pipeline: a second thread synthesizes
    /// (for circuits), checks and evaluates `A z, B z, C z` of job i+1 (CPU
    /// work) while the calling thread runs job i's NTTs, MSMs and assembly
    /// (GPU work); at most three jobs' evaluations are held at once.
    /// `None` (the default): pipelined on the GPU, and on the CPU when the
    /// batch synthesizes circuits; one job after another otherwise.
    pub pipelined: Option<bool>,
}

impl Prover {
    /// Proofs of several partitions (jobs or circuits of this key, see
    /// [`BatchJob`]) and their timings, one result each, in order: a
    /// failing job does not stop the others. Each proof is as
    /// [`Prover::prove_job`] would make it for the same job; timings are
    /// emitted through `tracing` as there.
    ///
    /// Further overlap, not done here: the G2 MSM on the CPU while the GPU
    /// does the G1 MSMs, and uploads from pinned buffers on a second stream;
    /// two provers sharing one `DeviceMemory` (two workers a GPU, see
    /// [`crate::MultiGpuProver`]) overlap whole proofs.
    pub fn prove_batch<J: BatchJob>(
        &self,
        jobs: impl IntoIterator<Item = J>,
        options: &BatchOptions,
    ) -> Vec<Result<(Proof, ProofTimings)>> {
        let jobs: Vec<J> = jobs.into_iter().collect();
        let on_gpu = matches!(self.backend(), Backend::Gpu { .. });
        let pipelined = options.pipelined.unwrap_or(on_gpu || J::SYNTHESIZES);
        let span = tracing::info_span!(
            target: "cuzk_prover",
            "prove_batch",
            jobs = jobs.len(),
            pipelined
        );
        let _g = span.enter();
        let check = self.check_witness;
        // A job prepared while the one before is on the GPU pins its
        // assignment; the first, and every job when not pipelined, starts
        // its GPU stage at once and does not.
        let prepare = |j: J, pin: bool| -> Result<(J::Witness, Prepared)> {
            let w = j.synthesize(check)?;
            let p = self.prepare(&J::job(&w), J::synthesis_ms(&w), pin, None)?;
            Ok((w, p))
        };
        if !pipelined || jobs.len() < 2 {
            return jobs
                .into_iter()
                .map(|j| {
                    let (w, p) = prepare(j, false)?;
                    self.finish(&J::job(&w), p)
                })
                .collect();
        }
        let n = jobs.len();
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Result<(J::Witness, Prepared)>>(1);
            scope.spawn(move || {
                for (i, j) in jobs.into_iter().enumerate() {
                    if tx.send(prepare(j, i > 0)).is_err() {
                        break;
                    }
                }
            });
            (0..n)
                .map(|_| {
                    let (w, p) = rx.recv().map_err(|_| {
                        Error::Internal("the batch's preparing thread stopped early".into())
                    })??;
                    self.finish(&J::job(&w), p)
                })
                .collect()
        })
    }
}
