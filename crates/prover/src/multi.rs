//! Several GPUs, several workers a GPU: [`MultiGpuProver`].
//!
//! One lane a device: one `DeviceMemory` (so one budget), one [`Prover`]
//! (the key uploaded once on that device) and `gpu_workers_per_device`
//! worker threads sharing it. Partition i of a batch goes to the lane its
//! assignment names and to no other.
//!
//! Workers of one lane are admitted to a proof's GPU stage through the
//! device's admission gate: as many proofs at once as working sets
//! ([`Prover::working_set_bytes`]) fit the device budget beside the key
//! when the lane was built (at least one, at most the number of workers;
//! a lane built while another proof on the device held memory is measured
//! again when the device is next idle). The gate counts proofs, not bytes:
//! the NTT and MSM engines claim their buffers from the device budget as
//! they allocate them, and a reservation of the same bytes there would
//! count them twice. Lanes of several
//! provers over one `DeviceMemory` (a proving service's circuits on one
//! GPU) share the gate, at the fewest places any of them allows. So on a
//! card where only one working set fits beside the key, the second worker
//! waits for the first (its CPU stage still overlaps the first's GPU
//! stage: the evaluation of `A z, B z, C z`, or with the circuit's R1CS on
//! the GPU ([`MultiGpuProver::with_r1cs`]) only its assignment's compact
//! form, or for a witness not mostly bits the copy of it into pinned
//! memory), and no proof runs out of memory for want of a plan.

use crate::admission::Registration;
use crate::prover::{Compacted, Staged, WitnessMasks, WitnessSums};
use crate::{Error, Proof, ProofJob, ProofTimings, Prover, ProvingKey, Result, SparseR1cs};
use cuzk_alloc::DeviceMemory;
use cuzk_alloc::Reservation;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Default number of worker threads a GPU (`gpu_workers_per_device`).
pub const DEFAULT_GPU_WORKERS_PER_DEVICE: usize = 2;

/// Device memory a lane reserves for a batch's witness pass beside its
/// GPU stages, at most: 2.5 GiB, two 512 MiB chunks of bases and as much
/// again, the masks, their partial sums and pattern buckets.
const PASS_ROOM_BYTES: u64 = 5 << 29;

/// What a lane that admits one proof at a time leaves beyond the proof's
/// H stage for its small allocations, beside a witness pass's room: 1 GiB.
const PASS_STAGE_SLACK_BYTES: u64 = 1 << 30;

/// The least room worth a witness pass beside the GPU stages: 1.25 GiB
/// (a stream's 16 masks in G2: their partial sums and pattern buckets,
/// about 1 GB, their rows, and two chunks of 2^16 G2 bases and as much
/// again, 48 MiB); with less the pass runs after them.
const PASS_MIN_ROOM_BYTES: u64 = 5 << 28;

/// Default longest wait of a worker for admission to a GPU stage: one hour.
const DEFAULT_ADMISSION_TIMEOUT: Duration = Duration::from_secs(3600);

/// One partition's outcome: the proof, its timings and the device (CUDA
/// ordinal; the lane's index for [`MultiGpuProver::cpu`]) that proved it.
pub type MultiProof = (Proof, ProofTimings, i32);

/// One device: its memory, its prover, its place at the device's
/// admission gate.
struct Lane {
    /// Admission to a GPU stage: the proofs at once its measure allows,
    /// fewer where another prover's lane on the same memory allows fewer.
    /// Declared first: unregistered before the memory can go.
    gate: Registration,
    device: i32,
    memory: Option<Arc<DeviceMemory>>,
    prover: Prover,
    /// This lane's proofs in a GPU stage now, and the most so far.
    in_stage: AtomicUsize,
    peak: AtomicUsize,
}

impl Lane {
    fn new(
        device: i32,
        memory: Option<Arc<DeviceMemory>>,
        prover: Prover,
        workers: usize,
    ) -> Result<Self> {
        let ticket = prover.working_set_bytes().max(1);
        let slots = match &memory {
            Some(m) => {
                let room = m.budget().available_bytes()? / ticket;
                usize::try_from(room)
                    .unwrap_or(usize::MAX)
                    .clamp(1, workers)
            }
            None => workers,
        };
        let probe = memory.as_ref().map(|m| {
            let m = Arc::downgrade(m);
            Arc::new(move || m.upgrade().and_then(|m| m.budget().available_bytes().ok()))
                as crate::admission::Probe
        });
        let gate = Registration::new(
            memory.as_ref().map(|m| Arc::as_ptr(m) as usize),
            ticket,
            workers,
            slots,
            probe,
        );
        Ok(Lane {
            gate,
            device,
            memory,
            prover,
            in_stage: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        })
    }

    /// One proof: the CPU stage, then the GPU stage once admitted. A proof
    /// that the GPU evaluates and that finds its device idle (no proof of
    /// any lane on it in a GPU stage, none waiting, as at a batch's start) is
    /// admitted at once and goes to the GPU without pinning its assignment
    /// first: nothing would overlap that copy. Every other proof pins
    /// during its wait; so do all with `pin_always` (a warm-up, which must
    /// leave the pinned buffers a batch will use). An assignment sent
    /// compact (mostly 0s and 1s) is never pinned: its form is small.
    fn prove(&self, job: &ProofJob<'_>, timeout: Duration, pin_always: bool) -> Result<MultiProof> {
        let staged = self.stage(job, timeout, pin_always, || (false, None))?;
        self.complete(job, staged, None)
    }

    /// [`Lane::prove`] through the GPU stage: `defer` (asked before the
    /// CPU stage) says whether the proof's witness MSMs wait for a batch's
    /// witness pass, and gives the assignment's compact form when the
    /// masks were read from it (the CPU stage then need not make it).
    fn stage(
        &self,
        job: &ProofJob<'_>,
        timeout: Duration,
        pin_always: bool,
        defer: impl FnOnce() -> (bool, Option<Compacted>),
    ) -> Result<Staged> {
        let idle = !pin_always && self.prover.evaluates_on_gpu(job) && self.gate.idle();
        let now = if idle { self.gate.try_admit() } else { None };
        let (defer_witness, compacted) = defer();
        let mut prepared = self.prover.prepare(job, 0.0, now.is_none(), compacted)?;
        prepared.defer_witness = defer_witness;
        let admitted = match now {
            Some(admitted) => admitted,
            None => self.gate.admit(timeout)?,
        };
        // The only proof its device admits at once: its H stage may take
        // more than the working set's two vectors where the budget holds
        // them.
        prepared.sole = admitted.sole() && self.memory.is_some();
        let _counted = InStage::enter(&self.in_stage, &self.peak);
        self.prover.gpu_stage(job, prepared)
    }
}

impl Lane {
    /// A device's share of a batch with a witness pass
    /// ([`MultiGpuProver::with_witness_pass`]): `queue` (indices into
    /// `jobs`) taken in order by `workers` threads, each proof's GPU stage
    /// running H and its MSM only; a thread of its own makes every
    /// proof's masks (in queue order, from the assignment's compact form,
    /// which it hands to the proof; a worker waits for its proof's before
    /// its CPU stage, and leaves the witness MSMs to the pass only where
    /// there are masks); the pass runs beside the workers' GPU stages
    /// within a reservation of the budget taken before them (so that their
    /// plans see the budget without it), or, where no room can be had or
    /// the pass beside fails, after them, admitted as one proof; then the
    /// proofs' assembly.
    fn prove_with_pass(
        &self,
        jobs: &[ProofJob<'_>],
        queue: &[usize],
        workers: usize,
        timeout: Duration,
    ) -> Vec<(usize, Result<MultiProof>)> {
        let decided = Decisions::new(queue.len());
        let room = self.pass_room();
        let next = AtomicUsize::new(0);
        let (staged, beside, masks) = std::thread::scope(|scope| {
            let masks = scope.spawn(|| {
                queue
                    .iter()
                    .enumerate()
                    .map(|(k, &i)| {
                        // The compact form once, for the masks and then
                        // the proof's GPU stage.
                        let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            let c = self.prover.compacted(&jobs[i]);
                            (self.prover.witness_masks(&jobs[i], c.as_deref()), c)
                        }));
                        // Handed over only with masks: the thread runs
                        // ahead of the workers, and a proof without masks
                        // (a witness partly dense) makes its own in its CPU
                        // stage rather than park one here.
                        let (m, c) = match made {
                            Ok((Some(m), c)) => (Some(m), Some(c)),
                            _ => (None, None),
                        };
                        decided.set(k, m.is_some(), c);
                        (i, m)
                    })
                    .collect::<Vec<_>>()
            });
            let (beside, masks) = match room {
                Some(share) => {
                    let h = scope.spawn(move || {
                        let masks = masks.join().unwrap_or_default();
                        let r = self.pass(jobs, &masks, Some(&share), timeout);
                        drop(share);
                        (r, masks)
                    });
                    (Some(h), None)
                }
                None => (None, Some(masks)),
            };
            let handles: Vec<_> = (0..workers.min(queue.len()))
                .map(|_| {
                    scope.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let k = next.fetch_add(1, Ordering::SeqCst);
                            let Some(&i) = queue.get(k) else { break };
                            mine.push((
                                i,
                                self.stage(&jobs[i], timeout, false, || decided.wait(k)),
                            ));
                        }
                        mine
                    })
                })
                .collect();
            let staged: Vec<(usize, Result<Staged>)> = handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect();
            let beside = beside.map(|h| h.join().ok());
            let masks = masks.map(|h| h.join().unwrap_or_default());
            (staged, beside, masks)
        });
        // The pass's sums: from the pass beside the stages, else from one
        // now (admitted as a proof).
        let (pass, masks) = match (beside, masks) {
            (Some(Some((Ok(p), masks))), _) => (Ok(p), masks),
            (Some(Some((Err(e), masks))), _) => {
                tracing::debug!(
                    target: "cuzk_prover",
                    "the witness pass beside the GPU stages failed ({e}); running it after them"
                );
                (self.pass(jobs, &masks, None, timeout), masks)
            }
            (_, Some(masks)) => (self.pass(jobs, &masks, None, timeout), masks),
            _ => (
                Err(Error::Internal("the witness pass's thread panicked".into())),
                Vec::new(),
            ),
        };
        drop(masks);
        let (mut sums, pass_t) = match pass {
            Ok((sums, t)) => (sums, Some(t)),
            Err(e) => {
                tracing::warn!(
                    target: "cuzk_prover",
                    "the batch's witness pass failed ({e}); each proof's witness MSMs run on \
                     their own"
                );
                (Vec::new(), None)
            }
        };
        staged
            .into_iter()
            .map(|(i, r)| {
                let r = r.and_then(|mut st| {
                    if st.sums.is_some() {
                        return self.complete(&jobs[i], st, None);
                    }
                    match sums.iter().position(|(j, _)| *j == i) {
                        Some(k) => {
                            if let Some(t) = &pass_t {
                                t.apply(&mut st.timings);
                            }
                            let s = sums.swap_remove(k).1;
                            self.complete(&jobs[i], st, Some(s))
                        }
                        // No pass sums: the witness MSMs from the host
                        // assignment, admitted as a GPU stage.
                        None => {
                            let _admitted = self.gate.admit(timeout)?;
                            self.complete(&jobs[i], st, None)
                        }
                    }
                });
                (i, r)
            })
            .collect()
    }

    /// A reservation of the lane's budget for a witness pass beside the
    /// GPU stages: [`PASS_ROOM_BYTES`], at most what the budget has beyond
    /// what the proofs the gate admits at once hold (so that their stages
    /// keep the memory their admission counted on): their working sets, or
    /// where the gate admits one proof at a time, its H stage
    /// ([`Prover::h_stage_bytes`]: its witness MSMs wait for the pass) and
    /// [`PASS_STAGE_SLACK_BYTES`]. `None` on the CPU path, below
    /// [`PASS_MIN_ROOM_BYTES`], or when it cannot be had.
    fn pass_room(&self) -> Option<Arc<Reservation>> {
        let m = self.memory.as_ref()?;
        let b = m.budget();
        let stages = match self.gate.places() {
            0 | 1 => self
                .prover
                .h_stage_bytes()
                .saturating_add(PASS_STAGE_SLACK_BYTES),
            n => (n as u64).saturating_mul(self.prover.working_set_bytes()),
        };
        let spare = b.available_bytes().ok()?.saturating_sub(stages);
        let bytes = PASS_ROOM_BYTES.min(spare);
        let room = (bytes >= PASS_MIN_ROOM_BYTES)
            .then(|| b.try_reserve(bytes).ok().map(Arc::new))
            .flatten();
        tracing::debug!(
            target: "cuzk_prover",
            spare,
            room = room.as_ref().map_or(0, |r| r.bytes()),
            "witness pass: {}",
            if room.is_some() { "beside the GPU stages" } else { "after the GPU stages" }
        );
        room
    }

    /// The witness pass over the proofs of `masks` that have them (`jobs`
    /// indices): within `share` beside the GPU stages, or admitted as one
    /// proof without one. Returns each proof's sums and the pass's times.
    fn pass(
        &self,
        jobs: &[ProofJob<'_>],
        masks: &[(usize, Option<WitnessMasks>)],
        share: Option<&Arc<Reservation>>,
        timeout: Duration,
    ) -> Result<(Vec<(usize, WitnessSums)>, PassTimes)> {
        let with: Vec<(usize, &WitnessMasks)> = masks
            .iter()
            .filter_map(|(i, m)| m.as_ref().map(|m| (*i, m)))
            .collect();
        if with.is_empty() {
            return Ok((Vec::new(), PassTimes::default()));
        }
        let _admitted = match share {
            Some(_) => None,
            None => Some(self.gate.admit(timeout)?),
        };
        let device_start = self.prover.device_clock_ms()?;
        let start = std::time::Instant::now();
        let pass_jobs: Vec<&ProofJob<'_>> = with.iter().map(|(i, _)| &jobs[*i]).collect();
        let pass_masks: Vec<&WitnessMasks> = with.iter().map(|(_, m)| *m).collect();
        let mut t = ProofTimings::default();
        let sums = self
            .prover
            .witness_pass(&pass_jobs, &pass_masks, share, &mut t)?;
        let times = PassTimes {
            timings: t,
            proofs: with.len(),
            beside: share.is_some(),
            stage: Some((start, std::time::Instant::now())),
            device: device_start.zip(self.prover.device_clock_ms()?),
        };
        Ok((with.iter().map(|(i, _)| *i).zip(sums).collect(), times))
    }

    /// A staged proof's assembly (see [`Prover::complete`]).
    fn complete(
        &self,
        job: &ProofJob<'_>,
        staged: Staged,
        sums: Option<WitnessSums>,
    ) -> Result<MultiProof> {
        let (proof, timings) = self.prover.complete(job, staged, sums)?;
        Ok((proof, timings, self.device))
    }
}

/// Whether each queued proof of a batch with a witness pass has masks: set
/// once by the thread that makes them, waited for by the workers.
struct Decisions {
    made: Mutex<Vec<Option<Decision>>>,
    ready: Condvar,
}

/// Whether a proof has masks for the pass, and its assignment's compact
/// form when the masks thread made it (taken by the proof's worker).
type Decision = (bool, Option<Compacted>);

impl Decisions {
    fn new(n: usize) -> Self {
        Decisions {
            made: Mutex::new(vec![None; n]),
            ready: Condvar::new(),
        }
    }

    fn set(&self, k: usize, masks: bool, compacted: Option<Compacted>) {
        let mut m = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = m.get_mut(k) {
            *slot = Some((masks, compacted));
        }
        self.ready.notify_all();
    }

    /// Decision `k`, once made (`false` past the last), its compact form
    /// taken out (a second wait gets none).
    fn wait(&self, k: usize) -> Decision {
        let mut m = self.made.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match m.get_mut(k) {
                None => return (false, None),
                Some(Some((v, c))) => return (*v, c.take()),
                Some(None) => m = self.ready.wait(m).unwrap_or_else(|p| p.into_inner()),
            }
        }
    }
}

/// A witness pass's times, copied into each proof it served.
#[derive(Default)]
struct PassTimes {
    /// The pass's witness MSM times (A, B in G1 and G2, L).
    timings: ProofTimings,
    proofs: usize,
    beside: bool,
    stage: Option<(std::time::Instant, std::time::Instant)>,
    device: Option<(f64, f64)>,
}

impl PassTimes {
    fn apply(&self, p: &mut ProofTimings) {
        p.msm_a_ms = self.timings.msm_a_ms;
        p.msm_b_g2_ms = self.timings.msm_b_g2_ms;
        p.msm_b_g1_ms = self.timings.msm_b_g1_ms;
        p.msm_l_ms = self.timings.msm_l_ms;
        p.witness_pass_proofs = self.proofs;
        p.witness_pass_beside = self.beside;
        p.witness_pass_stage = self.stage;
        p.witness_pass_device_ms = self.device;
    }
}

/// A lane's proof in its GPU stage, counted (and the lane's peak kept)
/// until dropped, a panic's unwinding included.
struct InStage<'a>(&'a AtomicUsize);

impl<'a> InStage<'a> {
    fn enter(count: &'a AtomicUsize, peak: &AtomicUsize) -> Self {
        let now = count.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(now, Ordering::SeqCst);
        InStage(count)
    }
}

impl Drop for InStage<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Groth16 proofs of many partitions against one key on several GPUs,
/// several workers a GPU (module docs: how workers of one GPU share its
/// memory budget).
///
/// ```no_run
/// # fn demo(pk: cuzk_prover::ProvingKey, jobs: &[cuzk_prover::ProofJob<'_>])
/// # -> cuzk_prover::Result<()> {
/// let multi = cuzk_prover::MultiGpuProver::new(pk, &[0, 1], 2)?;
/// for r in multi.prove_batch(jobs, None)? {
///     let (proof, timings, device) = r?;
///     # let _ = (proof, timings, device);
/// }
/// # Ok(()) }
/// ```
pub struct MultiGpuProver {
    lanes: Vec<Lane>,
    workers: usize,
    timeout: Duration,
    /// Whether a batch's witness MSMs run in one pass a lane
    /// ([`MultiGpuProver::with_witness_pass`]).
    witness_pass: bool,
}

impl std::fmt::Debug for MultiGpuProver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiGpuProver")
            .field("devices", &self.devices())
            .field("workers_per_device", &self.workers)
            .field("witness_pass", &self.witness_pass)
            .field(
                "concurrent_proofs",
                &self
                    .lanes
                    .iter()
                    .map(|l| l.gate.places())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// `e` with a pointer to [`MultiGpuProver::cpu`] when it says there is no
/// usable GPU (a build without CUDA, no device); other errors unchanged.
fn cpu_hint(e: Error) -> Error {
    const HINT: &str = "; MultiGpuProver::cpu proves the same batches on the CPU";
    match e {
        Error::NoCudaBuild(m) => Error::NoCudaBuild(format!("{m}{HINT}")),
        Error::NoDevice(m) => Error::NoDevice(format!("{m}{HINT}")),
        e => e,
    }
}

fn check_workers(workers: usize) -> Result<()> {
    if workers == 0 {
        return Err(Error::InvalidArgument(
            "gpu_workers_per_device = 0: give each device at least one worker".into(),
        ));
    }
    Ok(())
}

impl MultiGpuProver {
    /// A prover on each of `devices` (CUDA ordinals, each with a memory
    /// budget from the environment: `CUZK_DEVICE_MEMORY_LIMIT`, ...) with
    /// `gpu_workers_per_device` workers each. Without a GPU,
    /// [`MultiGpuProver::cpu`] runs the same batches on the CPU.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no devices, a device named twice, zero
    /// workers or a malformed key; [`Error::NoCudaBuild`] /
    /// [`Error::NoDevice`] without a usable GPU; errors of a device that
    /// fails (an ordinal out of range, out of memory for the key).
    pub fn new(pk: ProvingKey, devices: &[i32], gpu_workers_per_device: usize) -> Result<Self> {
        check_workers(gpu_workers_per_device)?;
        check_devices(devices)?;
        let memories = devices
            .iter()
            .map(|&d| DeviceMemory::from_env(d))
            .collect::<Result<Vec<_>>>()
            .map_err(cpu_hint)?;
        Self::with_memories(pk, &memories, gpu_workers_per_device)
    }

    /// [`MultiGpuProver::new`] on every device the CUDA runtime reports.
    ///
    /// # Errors
    /// As [`MultiGpuProver::new`]; [`Error::NoDevice`] when it reports none.
    pub fn all_devices(pk: ProvingKey, gpu_workers_per_device: usize) -> Result<Self> {
        let n = cuzk_field::gpu::device_count().map_err(cpu_hint)?;
        if n == 0 {
            return Err(cpu_hint(Error::NoDevice(
                "the CUDA runtime reports 0 devices".into(),
            )));
        }
        let devices: Vec<i32> = (0..n as i32).collect();
        Self::new(pk, &devices, gpu_workers_per_device)
    }

    /// [`MultiGpuProver::new`] configured by the user settings (the only
    /// environment reads of this crate):
    ///
    /// - `CUZK_DEVICES`: the CUDA ordinals to prove on, comma-separated
    ///   (`0,1`; spaces around an entry allowed), each at most once. Unset:
    ///   every device the CUDA runtime reports
    ///   ([`MultiGpuProver::all_devices`]).
    /// - `CUZK_GPU_WORKERS_PER_DEVICE`: worker threads a device, a positive
    ///   integer. Unset: [`DEFAULT_GPU_WORKERS_PER_DEVICE`].
    ///
    /// Each device's memory budget comes from cuzk-alloc's settings
    /// (`CUZK_DEVICE_MEMORY_LIMIT`, `CUZK_DEVICE_MEMORY_MARGIN`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the variable when a value does not
    /// parse (an entry of `CUZK_DEVICES` that is not an integer, a worker
    /// count that is not a non-negative integer), for zero workers or a
    /// device named twice; otherwise as [`MultiGpuProver::new`] (and
    /// [`Error::NoDevice`] when `CUZK_DEVICES` is unset and the runtime
    /// reports no device).
    pub fn from_env(pk: ProvingKey) -> Result<Self> {
        let workers = match std::env::var("CUZK_GPU_WORKERS_PER_DEVICE") {
            Ok(v) => v.trim().parse::<usize>().map_err(|_| {
                Error::InvalidArgument(format!(
                    "CUZK_GPU_WORKERS_PER_DEVICE=`{v}` is not a number of workers"
                ))
            })?,
            Err(_) => DEFAULT_GPU_WORKERS_PER_DEVICE,
        };
        match std::env::var("CUZK_DEVICES") {
            Ok(v) => {
                let devices = v
                    .split(',')
                    .map(|d| {
                        d.trim().parse::<i32>().map_err(|_| {
                            Error::InvalidArgument(format!(
                                "CUZK_DEVICES=`{v}`: `{d}` is not a device ordinal"
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                Self::new(pk, &devices, workers)
            }
            Err(_) => Self::all_devices(pk, workers),
        }
    }

    /// A prover on the device of each of `memories` (one per device: the
    /// workers of a device share its budget), `gpu_workers_per_device`
    /// workers each. The key (owned, or an `Arc` shared with the caller) is
    /// held once in host memory; its resident queries are uploaded once a
    /// device (on all devices at once).
    ///
    /// # Errors
    /// As [`MultiGpuProver::new`] ([`Error::InvalidArgument`] also for two
    /// memories of one device).
    pub fn with_memories(
        pk: impl Into<Arc<ProvingKey>>,
        memories: &[Arc<DeviceMemory>],
        gpu_workers_per_device: usize,
    ) -> Result<Self> {
        check_workers(gpu_workers_per_device)?;
        let devices: Vec<i32> = memories.iter().map(|m| m.device()).collect();
        check_devices(&devices)?;
        // One key in host memory for every GPU's prover.
        let pk: Arc<ProvingKey> = pk.into();
        let provers: Vec<Result<Prover>> = std::thread::scope(|scope| {
            let handles: Vec<_> = memories
                .iter()
                .map(|m| {
                    let pk = pk.clone();
                    scope.spawn(move || Prover::with_shared_key(pk, m.clone()))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::Internal("a key-upload thread panicked".into()))
                    })
                })
                .collect()
        });
        let lanes = memories
            .iter()
            .zip(provers)
            .map(|(m, p)| Lane::new(m.device(), Some(m.clone()), p?, gpu_workers_per_device))
            .collect::<Result<Vec<_>>>()?;
        Ok(MultiGpuProver {
            lanes,
            workers: gpu_workers_per_device,
            timeout: DEFAULT_ADMISSION_TIMEOUT,
            witness_pass: false,
        })
    }

    /// `lanes` CPU provers standing in for devices (lane i reports device
    /// i), `workers_per_lane` workers each, every worker admitted at once:
    /// the same scheduling without a GPU (tests, GPU-less machines).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for zero lanes, zero workers or a
    /// malformed key.
    pub fn cpu(pk: ProvingKey, lanes: usize, workers_per_lane: usize) -> Result<Self> {
        check_workers(workers_per_lane)?;
        if lanes == 0 {
            return Err(Error::InvalidArgument(
                "a multi-device prover of 0 lanes: give at least one".into(),
            ));
        }
        let pk = Arc::new(pk);
        let lanes = (0..lanes)
            .map(|i| {
                let prover = Prover::cpu_shared(pk.clone())?;
                Lane::new(i as i32, None, prover, workers_per_lane)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(MultiGpuProver {
            lanes,
            workers: workers_per_lane,
            timeout: DEFAULT_ADMISSION_TIMEOUT,
            witness_pass: false,
        })
    }

    /// The same prover, checking (or not) each witness before proving (see
    /// [`Prover::with_check_witness`]).
    pub fn with_check_witness(mut self, check: bool) -> Self {
        for l in &mut self.lanes {
            l.prover.check_witness = check;
        }
        self
    }

    /// The same prover with H's MSM beside the witness MSMs on every lane,
    /// or not (see [`Prover::with_msm_overlap`]; default: beside).
    pub fn with_msm_overlap(mut self, overlap: bool) -> Self {
        for l in &mut self.lanes {
            l.prover.overlap_msms = overlap;
        }
        self
    }

    /// The same prover running a batch's witness MSMs (A, B in G1 and G2,
    /// L) in one pass a device, or in each proof's GPU stage (the
    /// default). With the pass, each proof's GPU stage runs H and its MSM
    /// only, and the pass streams each witness query's bases once for up to
    /// 16 of the device's proofs (once a partition without it): each
    /// proof's scalars equal to 1 are summed by bitmask, the few others go
    /// through an MSM of their own
    /// ([`cuzk_msm::GpuMsm::masked_sums_streamed`]). It pays where the
    /// key's witness queries stream (a 2^27 key on a 16 GiB card), whose
    /// bases are then most of what crosses PCIe (figures in
    /// BENCHMARKS.md).
    ///
    /// Applies only to [`MultiGpuProver::prove_batch`], and to proofs whose
    /// witness queries all stream and whose scalars are at most 1/16
    /// neither 0 nor 1 (Groth16 witnesses of bits); others prove as before.
    ///
    /// Costs: the masks, made on a thread of their own from the batch's
    /// start (the first GPU stage waits for its proof's), take n/8 bytes a
    /// query of n bases and 36 bytes a scalar neither 0 nor 1 of host
    /// memory a proof; the pass runs beside the GPU stages within up to
    /// 2.5 GiB of the device budget (at least 1.25 GiB) reserved from the
    /// batch's start where the lane has that much beyond what its admitted
    /// proofs hold, else after them, admitted as one proof. Every proof of
    /// a device is complete only once its pass is.
    ///
    /// How to tell: [`ProofTimings::witness_pass_proofs`] (0 without a
    /// pass) and [`ProofTimings::witness_pass_beside`]; a `cuzk_prover`
    /// debug event says where the pass runs. A pass beside the stages that
    /// fails runs again after them; a pass that fails there is logged as a
    /// warning and each of its proofs runs its own witness MSMs from its
    /// host assignment (every base streamed, slower than without the
    /// pass): no proof fails for it.
    pub fn with_witness_pass(mut self, pass: bool) -> Self {
        self.witness_pass = pass;
        self
    }

    /// The same prover streaming only the bases of non-zero scalars on
    /// every lane, or every base (see [`Prover::with_nonzero_streaming`];
    /// default: every base).
    pub fn with_nonzero_streaming(mut self, nonzero: bool) -> Self {
        for l in &mut self.lanes {
            l.prover.nonzero_streaming = nonzero;
        }
        self
    }

    /// The same prover holding the circuit's R1CS on every lane (see
    /// [`Prover::with_r1cs`]: jobs whose matrices are `r1cs.matrices()`
    /// evaluate `A z`, `B z`, `C z` on their GPU and keep the whole proof
    /// there). One compact form serves every lane; each GPU keeps it
    /// resident or streams it as its budget allows. Each lane's admission
    /// gate is sized again for the new working set.
    ///
    /// # Errors
    /// As [`Prover::with_r1cs`], for the first lane that fails.
    pub fn with_r1cs(self, r1cs: Arc<SparseR1cs>) -> Result<Self> {
        let workers = self.workers;
        let lanes = self
            .lanes
            .into_iter()
            .map(|l| {
                // Resident only beside as many working sets as the lane
                // admits now: residency must not cost a worker its slot.
                let prover = l.prover.with_r1cs_beside(r1cs.clone(), l.gate.places())?;
                Lane::new(l.device, l.memory, prover, workers)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(MultiGpuProver {
            lanes,
            workers,
            timeout: self.timeout,
            witness_pass: self.witness_pass,
        })
    }

    /// The same prover, a worker waiting at most `timeout` for admission to
    /// a GPU stage (default one hour); past it, that partition fails with
    /// [`Error::OutOfMemory`].
    pub fn with_admission_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The devices (CUDA ordinals), in lane order: `assignment` values of
    /// [`MultiGpuProver::prove_batch`] index this list.
    pub fn devices(&self) -> Vec<i32> {
        self.lanes.iter().map(|l| l.device).collect()
    }

    /// Worker threads a device.
    pub fn workers_per_device(&self) -> usize {
        self.workers
    }

    /// The prover of lane `lane` (`None` past the last lane).
    pub fn prover(&self, lane: usize) -> Option<&Prover> {
        self.lanes.get(lane).map(|l| &l.prover)
    }

    /// The device clock of lane `lane`'s GPU ([`Prover::device_clock_ms`]):
    /// read before and after a batch, the window of
    /// [`crate::gpu_busy_fraction_device`] for the timings of that lane's
    /// proofs. `None` past the last lane and for CPU lanes.
    ///
    /// # Errors
    /// CUDA errors.
    pub fn device_clock_ms(&self, lane: usize) -> Result<Option<f64>> {
        match self.lanes.get(lane) {
            Some(l) => l.prover.device_clock_ms(),
            None => Ok(None),
        }
    }

    /// The device memory of lane `lane` (`None` past the last lane and for
    /// CPU lanes).
    pub fn memory(&self, lane: usize) -> Option<&Arc<DeviceMemory>> {
        self.lanes.get(lane).and_then(|l| l.memory.as_ref())
    }

    /// How many proofs lane `lane` admits to the GPU stage at once: the
    /// working sets ([`Prover::working_set_bytes`]) that fit the device
    /// budget beside the key when the prover was built, between 1 and the
    /// workers a device (`None` past the last lane); a lane built while
    /// another proof on its device held memory is measured again when the
    /// device is next idle. Where other provers' lanes share the device's
    /// memory, the device admits the fewest that any of them allows.
    pub fn concurrent_proofs(&self, lane: usize) -> Option<usize> {
        self.lanes.get(lane).map(|l| l.gate.places())
    }

    /// The most proofs lane `lane` has had in its GPU stage at once so far
    /// (`None` past the last lane).
    pub fn peak_concurrent_proofs(&self, lane: usize) -> Option<usize> {
        self.lanes.get(lane).map(|l| l.peak.load(Ordering::SeqCst))
    }

    /// One proof on lane `lane` (the device `devices()[lane]`), for callers
    /// that run their own workers (a proving service): the CPU stage, then
    /// the GPU stage once the lane's admission gate lets it in. At most
    /// `workers_per_device` callers a lane should call it at once; more
    /// only wait longer at the gate.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `lane` is past the last lane; else as
    /// [`Prover::prove_job`], plus [`Error::OutOfMemory`] when the admission
    /// wait times out.
    pub fn prove_on(&self, lane: usize, job: &ProofJob<'_>) -> Result<MultiProof> {
        let l = self.lanes.get(lane).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "lane {lane} of a prover with {} lanes",
                self.lanes.len()
            ))
        })?;
        l.prove(job, self.timeout, false)
    }

    /// Proves `job` once a worker on every lane, all at once, and discards
    /// the proofs: a warm-up before measuring a batch or device memory.
    /// After it each lane's kernels are loaded, its tables made, its key in
    /// place, its engines' pinned staging buffers made, and, where `job`'s
    /// assignment is sent dense, each worker's pinned assignment buffer
    /// exists (its mapping for the GPU takes device memory while the
    /// prover keeps the buffer for the next proof). So a batch that follows
    /// claims no more memory than it gives back, if its witnesses have the
    /// warm-up job's shape: an assignment sent compact (mostly 0s and 1s)
    /// needs no pinned buffer.
    ///
    /// # Errors
    /// The first failed proof's error (as [`MultiGpuProver::prove_on`]);
    /// [`Error::Internal`] when a warm-up thread panicked.
    pub fn warm_up(&self, job: &ProofJob<'_>) -> Result<()> {
        for lane in &self.lanes {
            if !lane.prover.prepare_staging() {
                tracing::debug!(
                    target: "cuzk_prover",
                    device = lane.device,
                    "no pinned staging buffers for the warm-up; pageable copies take the plain path"
                );
            }
        }
        let workers = self.workers.max(1);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..self.lanes.len())
                .flat_map(|lane| (0..workers).map(move |_| lane))
                .map(|lane| {
                    let l = &self.lanes[lane];
                    // Every warm-up proof pins its assignment, as proofs
                    // that wait at the gate will.
                    s.spawn(move || l.prove(job, self.timeout, true).map(drop))
                })
                .collect();
            handles.into_iter().try_for_each(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Internal("a warm-up proof panicked".into())))
            })
        })
    }

    /// Proofs of several partitions against the key: partition i on lane
    /// `assignment[i]` (the device `devices()[assignment[i]]`; default:
    /// round-robin, i modulo the number of devices), each device's
    /// partitions taken in order by its workers. One result each, in input
    /// order, naming the device that proved it; a failing partition does
    /// not stop the others. With [`MultiGpuProver::with_witness_pass`],
    /// each device's proofs end together, after its witness pass.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `assignment` is not one lane a job or
    /// names a lane past the last; each partition's own errors are in its
    /// entry (as [`Prover::prove_job`], plus [`Error::OutOfMemory`] when its
    /// admission wait times out).
    pub fn prove_batch(
        &self,
        jobs: &[ProofJob<'_>],
        assignment: Option<&[usize]>,
    ) -> Result<Vec<Result<MultiProof>>> {
        let plan = plan(jobs.len(), self.lanes.len(), assignment)?;
        let span = tracing::info_span!(
            target: "cuzk_prover",
            "prove_batch_multi",
            jobs = jobs.len(),
            devices = self.lanes.len(),
            workers = self.workers
        );
        let _g = span.enter();
        let mut out: Vec<Option<Result<MultiProof>>> = (0..jobs.len()).map(|_| None).collect();
        let done: Vec<(usize, Result<MultiProof>)> = std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for (lane, queue) in self.lanes.iter().zip(&plan) {
                if self.witness_pass {
                    // One thread a lane: its workers, then its pass.
                    let (workers, timeout) = (self.workers, self.timeout);
                    handles.push(
                        scope.spawn(move || lane.prove_with_pass(jobs, queue, workers, timeout)),
                    );
                    continue;
                }
                let next = Arc::new(AtomicUsize::new(0));
                for _ in 0..self.workers.min(queue.len()) {
                    let next = next.clone();
                    let timeout = self.timeout;
                    handles.push(scope.spawn(move || {
                        let mut mine = Vec::new();
                        loop {
                            let k = next.fetch_add(1, Ordering::SeqCst);
                            let Some(&i) = queue.get(k) else { break };
                            mine.push((i, lane.prove(&jobs[i], timeout, false)));
                        }
                        mine
                    }));
                }
            }
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        for (i, r) in done {
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(r);
            }
        }
        Ok(out
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Error::Internal("a proving worker panicked".into()))))
            .collect())
    }
}

fn check_devices(devices: &[i32]) -> Result<()> {
    if devices.is_empty() {
        return Err(Error::InvalidArgument(
            "a multi-GPU prover of no devices: give at least one".into(),
        ));
    }
    for (i, d) in devices.iter().enumerate() {
        if devices[..i].contains(d) {
            return Err(Error::InvalidArgument(format!(
                "device {d} named twice: the workers of one device share one memory budget, \
                 so give each device once and raise gpu_workers_per_device instead"
            )));
        }
    }
    Ok(())
}

/// Each lane's job indices, in input order.
fn plan(jobs: usize, lanes: usize, assignment: Option<&[usize]>) -> Result<Vec<Vec<usize>>> {
    if lanes == 0 {
        return Err(Error::InvalidArgument("no devices to prove on".into()));
    }
    let mut plan = vec![Vec::new(); lanes];
    match assignment {
        None => (0..jobs).for_each(|i| plan[i % lanes].push(i)),
        Some(a) => {
            if a.len() != jobs {
                return Err(Error::InvalidArgument(format!(
                    "an assignment of {} entries for {jobs} jobs: give one device index a job",
                    a.len()
                )));
            }
            for (i, &l) in a.iter().enumerate() {
                let q = plan.get_mut(l).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "job {i} assigned to device index {l}, but there are {lanes} devices \
                         (indices 0..{lanes})"
                    ))
                })?;
                q.push(i);
            }
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        assert_eq!(plan(5, 2, None).unwrap(), vec![vec![0, 2, 4], vec![1, 3]]);
        assert_eq!(
            plan(4, 3, Some(&[2, 2, 0, 2])).unwrap(),
            vec![vec![2], vec![], vec![0, 1, 3]]
        );
        assert!(matches!(
            plan(2, 2, Some(&[0])),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            plan(2, 2, Some(&[0, 2])),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(plan(1, 0, None), Err(Error::InvalidArgument(_))));
        assert!(plan(0, 1, None).unwrap()[0].is_empty());
        assert!(check_devices(&[0, 1]).is_ok());
        assert!(check_devices(&[]).is_err());
        assert!(check_devices(&[1, 0, 1]).is_err());
    }

    #[test]
    fn no_gpu_errors_point_at_the_cpu_prover() {
        let e = cpu_hint(Error::NoCudaBuild("built without CUDA".into()));
        assert!(matches!(&e, Error::NoCudaBuild(m) if m.contains("MultiGpuProver::cpu")));
        let e = cpu_hint(Error::NoDevice("no device".into()));
        assert!(matches!(&e, Error::NoDevice(m) if m.contains("MultiGpuProver::cpu")));
        let e = cpu_hint(Error::InvalidArgument("x".into()));
        assert!(matches!(&e, Error::InvalidArgument(m) if m == "x"));
    }
}
