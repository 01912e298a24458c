//! The engine: the job store, the circuits, and the workers that prove.
//!
//! Each lane (a GPU, or the CPU path without one) has
//! `gpu_workers_per_device` worker threads. A worker claims the next job
//! from the store under a lease (renewed while it proves), loads the
//! circuit if needed, reads the assignment, proves it on its lane, and
//! stores the proof, or the error. Submissions ring a doorbell that wakes
//! idle workers; they also look at the store every half second, for jobs
//! that another daemon queued or whose lease ran out.

use crate::assignment::{self, Assignment};
use crate::circuits::{Lanes, Registry};
use crate::client_file::{AssignmentDirs, Refusal};
use crate::job::{JobRecord, JobState, NewJob, Priority};
use crate::metrics::Metrics;
use crate::store::{JobCursor, JobFilter, JobStore, StoreKind};
use crate::tls::ServerTls;
use crate::{now_us, pb, AuthToken, Config, Error, Result};
use ark_ff::UniformRand;
use ark_serialize::CanonicalSerialize;
use cuzk_alloc::PinnedBuffer;
use cuzk_prover::{Fr, ProofJob};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Jobs a ListJobs page holds when the request gives no limit (0).
pub const LIST_DEFAULT_LIMIT: u32 = 100;

/// The most jobs a ListJobs page holds; a larger limit is refused rather
/// than clamped, as the API refuses other values out of range (a
/// priority outside the enum): the caller learns the bound at once.
pub const LIST_MAX_LIMIT: u32 = 1000;

/// A ListJobs request's `limit` as a page size: 0 is
/// [`LIST_DEFAULT_LIMIT`].
///
/// # Errors
/// [`Error::InvalidArgument`] above [`LIST_MAX_LIMIT`].
pub fn list_limit(limit: u32) -> Result<u32> {
    match limit {
        0 => Ok(LIST_DEFAULT_LIMIT),
        1..=LIST_MAX_LIMIT => Ok(limit),
        _ => Err(Error::InvalidArgument(format!(
            "limit {limit}: give 1 to {LIST_MAX_LIMIT} jobs a page (0: {LIST_DEFAULT_LIMIT}), \
             and follow next_page_token for more"
        ))),
    }
}

/// Where a submitted assignment is.
#[derive(Debug)]
pub enum Payload {
    /// Its bytes (the assignment encoding).
    Bytes(Vec<u8>),
    /// A file the client keeps until the job ends.
    Path(PathBuf),
    /// A file the daemon wrote (a streamed submission), with the BLAKE3
    /// hash of its bytes if it was taken as they arrived (`None`: the file
    /// is read for it when the submission has an idempotency key): moved
    /// into the payload directory and removed when the job ends, or
    /// removed at once when the submission repeats an earlier job; left
    /// to the caller when [`Engine::submit`] fails.
    Owned(PathBuf, Option<blake3::Hash>),
}

impl Payload {
    /// What identifies the payload for idempotency keys, as hex: BLAKE3
    /// of the assignment's bytes, inline or streamed (one assignment sent
    /// either way has one digest), or of the path for a path (the file is
    /// not hashed: at gigabytes, that would cost seconds a submission).
    ///
    /// # Errors
    /// [`Error::Io`] when an owned file without its hash cannot be read.
    pub fn digest(&self) -> Result<String> {
        Ok(match self {
            Payload::Bytes(b) => blake3::hash(b).to_hex().to_string(),
            Payload::Path(p) => {
                let mut h = blake3::Hasher::new();
                h.update(b"cuzk path\0");
                h.update(p.as_os_str().as_encoded_bytes());
                h.finalize().to_hex().to_string()
            }
            Payload::Owned(_, Some(h)) => h.to_hex().to_string(),
            Payload::Owned(p, None) => blake3::Hasher::new()
                .update_reader(
                    std::fs::File::open(p)
                        .map_err(|e| Error::io(format!("reading {}", p.display()), e))?,
                )
                .map_err(|e| Error::io(format!("reading {}", p.display()), e))?
                .finalize()
                .to_hex()
                .to_string(),
        })
    }
}

/// A proof request.
#[derive(Debug)]
pub struct Submit {
    /// The circuit to prove.
    pub circuit_id: String,
    /// Its class.
    pub priority: Priority,
    /// Deduplicates resubmissions; `None`: never deduplicated.
    pub idempotency_key: Option<String>,
    /// The assignment.
    pub payload: Payload,
}

/// One proof's stage times, ms, as stored with the job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Reading the assignment.
    pub load_ms: f64,
    /// From submission to a worker taking the job.
    pub queue_wait_ms: f64,
    /// The prover's stages, as in `cuzk_prover::ProofTimings`: on the
    /// CPU path, evaluating `A z`, `B z`, `C z`; on a GPU (which evaluates
    /// them itself), only the checks of the job's shape.
    pub eval_ms: f64,
    /// The quotient H: seven NTTs and the coset division; on a GPU also
    /// the assignment's upload and the evaluation of `A z`, `B z`, `C z`.
    pub h_ntt_ms: f64,
    /// MSM of the A query.
    pub msm_a_ms: f64,
    /// MSM of the B query in G2.
    pub msm_b_g2_ms: f64,
    /// MSM of the B query in G1.
    pub msm_b_g1_ms: f64,
    /// MSM of the H query.
    pub msm_h_ms: f64,
    /// MSM of the L query.
    pub msm_l_ms: f64,
    /// Assembly of the proof.
    pub assembly_ms: f64,
    /// The prover's stages together.
    pub total_ms: f64,
}

impl From<Timings> for pb::StageTimings {
    fn from(t: Timings) -> Self {
        pb::StageTimings {
            eval_ms: t.eval_ms,
            h_ntt_ms: t.h_ntt_ms,
            msm_a_ms: t.msm_a_ms,
            msm_b_g2_ms: t.msm_b_g2_ms,
            msm_b_g1_ms: t.msm_b_g1_ms,
            msm_h_ms: t.msm_h_ms,
            msm_l_ms: t.msm_l_ms,
            assembly_ms: t.assembly_ms,
            total_ms: t.total_ms,
            load_ms: t.load_ms,
            queue_wait_ms: t.queue_wait_ms,
        }
    }
}

/// Wakes idle workers when a job arrives.
#[derive(Debug, Default)]
struct Doorbell {
    rings: Mutex<u64>,
    cv: Condvar,
}

impl Doorbell {
    fn ring(&self) {
        *self.rings.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.cv.notify_all();
    }

    /// Waits for a ring after `seen`, or `timeout`; returns the count.
    fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let g = self.rings.lock().unwrap_or_else(|p| p.into_inner());
        let (g, _) = self
            .cv
            .wait_timeout_while(g, timeout, |r| *r == seen)
            .unwrap_or_else(|p| p.into_inner());
        *g
    }

    fn count(&self) -> u64 {
        *self.rings.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One lane's counters.
#[derive(Debug, Default)]
struct LaneStats {
    busy_workers: AtomicUsize,
    proofs_done: AtomicU64,
    /// Microseconds in which at least one proof ran, summed over the
    /// closed busy intervals (the open one is added when status is read).
    busy_us: AtomicU64,
    /// When the lane went from idle to busy, microseconds since the epoch.
    busy_since_us: AtomicU64,
}

/// The proving engine (see the module docs).
#[derive(Debug)]
pub struct Engine {
    config: Config,
    store: JobStore,
    registry: Registry,
    owner: String,
    payload_dir: PathBuf,
    /// `assignment_dirs`, resolved and opened at start (empty: any path).
    assignment_dirs: Arc<AssignmentDirs>,
    doorbell: Doorbell,
    changed: tokio::sync::Notify,
    shutdown: AtomicBool,
    started: Instant,
    lanes: Vec<LaneStats>,
    metrics: Metrics,
    rt: tokio::runtime::Handle,
    /// The token of `auth_token_file`, read at start.
    auth_token: Option<AuthToken>,
    /// The TLS settings of `tls_cert_file` and `tls_key_file`, read at
    /// start.
    tls: Option<ServerTls>,
    workers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    /// The jobs workers claimed ahead and have not started proving: (job
    /// id, lease token), a claim of its own should the job's lease pass to
    /// another claim of this daemon. Whoever takes a claim out (its worker
    /// beginning it or giving it back, or a shutdown) hands it on or back,
    /// once.
    ahead: Mutex<std::collections::HashSet<(String, String)>>,
    /// Page-locked buffers for the assignments of GPU lanes' jobs.
    pinned: PinnedPool,
    /// The data directory's lock, held while the engine lives.
    /// The data directory's lock, and the SQLite store's.
    _lock: (std::fs::File, Option<std::fs::File>),
}

impl Engine {
    /// Opens the job store, finds the devices and the circuits, and starts
    /// the workers. On SQLite, jobs that a previous run left running go
    /// back to the queue. Call from a multi-threaded tokio runtime.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad setting, a GPU of `devices`
    /// that is not here ([`Config::check_devices`]), an empty token file or
    /// a TLS file without its certificate or key; [`Error::Io`] when the
    /// token file or a TLS file cannot be read, the data directories
    /// cannot be made, or an assignment directory cannot be opened;
    /// [`Error::Store`] when the store cannot be opened; [`Error::Prover`]
    /// when a device's memory cannot be set up.
    pub async fn start(config: Config) -> Result<Arc<Engine>> {
        config.validate()?;
        config.check_devices()?;
        // Before anything else starts: a bad token or TLS file fails the
        // start.
        let auth_token = config.auth_token()?;
        let tls = config.tls()?;
        let payload_dir = config.payload_dir();
        for d in [&config.data_dir, &payload_dir] {
            std::fs::create_dir_all(d)
                .map_err(|e| Error::io(format!("creating {}", d.display()), e))?;
        }
        // Jobs keep their payload's path: absolute and canonical, so that
        // it names the same file after a restart from another working
        // directory or with the directory spelled another way.
        let payload_dir = std::fs::canonicalize(&payload_dir)
            .map_err(|e| Error::io(format!("resolving {}", payload_dir.display()), e))?;
        let assignment_dirs = AssignmentDirs::new(&config.assignment_dirs)?;
        // One daemon a data directory: a second one would requeue the
        // first's running jobs.
        let lock_path = config.data_dir.join(".lock");
        let lock = std::fs::File::create(&lock_path)
            .map_err(|e| Error::io(format!("creating {}", lock_path.display()), e))?;
        if lock.try_lock().is_err() {
            return Err(Error::FailedPrecondition(format!(
                "another cuzk-daemon uses the data directory {} (it holds {}): give each \
                 daemon its own --data-dir",
                config.data_dir.display(),
                lock_path.display()
            )));
        }
        // One daemon a SQLite file too: a second one with its own data
        // directory but this store would requeue the first's running jobs
        // (several daemons share a queue through PostgreSQL).
        let store_lock = match sqlite_file(&config.database_url()) {
            Some(db) => {
                let p = PathBuf::from(format!("{}.lock", db.display()));
                let f = std::fs::File::create(&p)
                    .map_err(|e| Error::io(format!("creating {}", p.display()), e))?;
                if f.try_lock().is_err() {
                    return Err(Error::FailedPrecondition(format!(
                        "another cuzk-daemon uses the SQLite job store {} (it holds {}): a \
                         SQLite store serves one daemon; give each daemon its own, or share \
                         a PostgreSQL store (--database-url postgres://...)",
                        db.display(),
                        p.display()
                    )));
                }
                Some(f)
            }
            None => None,
        };
        for d in config.key_dirs() {
            if !d.is_dir() {
                tracing::warn!(
                    dir = %d.display(),
                    "the key directory does not exist: no circuit can be found there until \
                     `cuzk keygen --key-dir` writes one"
                );
            }
        }
        let store = JobStore::open(&config.database_url()).await?;
        // Jobs a previous run left running and asked to cancel end here;
        // the engine that counts and logs them does not exist yet.
        let mut left_cancelled = Vec::new();
        if store.kind() == StoreKind::Sqlite {
            let back = store.requeue_running(now_us()).await?;
            let (cancelled, queued): (Vec<_>, Vec<_>) = back
                .into_iter()
                .partition(|j| j.state == JobState::Cancelled);
            if !queued.is_empty() {
                tracing::info!(
                    jobs = queued.len(),
                    "requeued jobs left running by a previous run"
                );
            }
            left_cancelled = cancelled;
            // Files a previous run left behind: uploads cut short, and
            // payloads whose job never made it into the store. Told apart
            // by file name (`<job id>.asg`), not by the path a job stored,
            // which an older store may spell relative or otherwise.
            let live: std::collections::HashSet<std::ffi::OsString> = store
                .live_payloads()
                .await?
                .iter()
                .filter_map(|p| Path::new(p).file_name().map(|n| n.to_owned()))
                .collect();
            let stray: Vec<PathBuf> = std::fs::read_dir(&payload_dir)
                .map_err(|e| Error::io(format!("reading {}", payload_dir.display()), e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| match p.extension().and_then(|x| x.to_str()) {
                    Some("partial") => true,
                    Some("asg") => p.file_name().is_some_and(|n| !live.contains(n)),
                    _ => false,
                })
                .collect();
            for p in &stray {
                let _ = std::fs::remove_file(p);
            }
            if !stray.is_empty() {
                tracing::info!(files = stray.len(), "removed stray payload files");
            }
        }
        let devices = match &config.devices {
            Some(d) => d.clone(),
            None => match cuzk_field::gpu::device_count() {
                Ok(n) => (0..n as i32).collect(),
                Err(e) => {
                    tracing::warn!(
                        "no GPU ({e}): proving on the CPU path, far slower (give --devices cpu \
                         to choose it)"
                    );
                    Vec::new()
                }
            },
        };
        let lanes = if devices.is_empty() {
            Lanes::Cpu(1)
        } else {
            Lanes::Gpu(
                devices
                    .iter()
                    .map(|&d| cuzk_alloc::DeviceMemory::from_env(d))
                    .collect::<cuzk_prover::Result<Vec<_>>>()?,
            )
        };
        let budget = config
            .key_host_budget_bytes
            .unwrap_or_else(|| host_memory_bytes() / 2);
        let registry = Registry::new(
            config.key_dirs(),
            budget,
            lanes.clone(),
            config.gpu_workers_per_device,
            config.verify_keys,
            config.verify_proofs,
        );
        let engine = Arc::new(Engine {
            owner: config.worker_name(),
            payload_dir,
            assignment_dirs: Arc::new(assignment_dirs),
            store,
            registry,
            doorbell: Doorbell::default(),
            changed: tokio::sync::Notify::new(),
            shutdown: AtomicBool::new(false),
            started: Instant::now(),
            lanes: (0..lanes.len()).map(|_| LaneStats::default()).collect(),
            metrics: Metrics::new(),
            rt: tokio::runtime::Handle::current(),
            auth_token,
            tls,
            workers: Mutex::new(Vec::new()),
            ahead: Mutex::new(std::collections::HashSet::new()),
            pinned: PinnedPool::new(
                matches!(lanes, Lanes::Gpu(_)),
                // A worker's current job and the one it loads ahead.
                2 * lanes.len() * config.gpu_workers_per_device,
            ),
            _lock: (lock, store_lock),
            config,
        });
        let mut handles = Vec::new();
        for lane in 0..lanes.len() {
            for w in 0..engine.config.gpu_workers_per_device {
                let e = engine.clone();
                let h = std::thread::Builder::new()
                    .name(format!("cuzk-worker-{lane}-{w}"))
                    .spawn(move || e.worker(lane))
                    .map_err(|e| Error::io("starting a worker thread", e))?;
                handles.push(h);
            }
        }
        *engine.workers.lock().unwrap_or_else(|p| p.into_inner()) = handles;
        for j in &left_cancelled {
            engine.ended(j, None, None);
        }
        if engine.config.retain_finished_secs > 0 {
            // Finished jobs past their retention leave the store, every ten
            // minutes (and once at start).
            let e = Arc::downgrade(&engine);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(600));
                loop {
                    tick.tick().await;
                    let Some(e) = e.upgrade() else { return };
                    if e.shutdown.load(Ordering::SeqCst) {
                        return;
                    }
                    let keep = (e.config.retain_finished_secs as i64).saturating_mul(1_000_000);
                    match e.store.prune(now_us().saturating_sub(keep)).await {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(jobs = n, "pruned finished jobs"),
                        Err(err) => tracing::warn!("pruning finished jobs: {err}"),
                    }
                }
            });
        }
        tracing::info!(
            owner = %engine.owner,
            store = engine.store.shown(),
            lanes = lanes.len(),
            devices = ?devices,
            workers = engine.config.gpu_workers_per_device,
            circuits = ?engine.registry.circuits(),
            assignment_dirs = ?engine.assignment_dirs.shown(),
            "engine started"
        );
        Ok(engine)
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The payload directory, absolute and canonical.
    pub(crate) fn payload_dir(&self) -> &Path {
        &self.payload_dir
    }

    /// The bearer token every gRPC call must carry (`auth_token_file`,
    /// read at start); `None`: no token required.
    pub fn auth_token(&self) -> Option<&AuthToken> {
        self.auth_token.as_ref()
    }

    /// The TLS settings the TCP listener serves with (`tls_cert_file`,
    /// `tls_key_file`, read at start); `None`: plain gRPC.
    pub fn tls(&self) -> Option<&ServerTls> {
        self.tls.as_ref()
    }

    /// The job store.
    pub fn store(&self) -> &JobStore {
        &self.store
    }

    /// The circuits.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// This daemon's name in job rows.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Queues a proof; returns its job id and whether the idempotency key
    /// named an earlier job (then nothing was queued). The job is in the
    /// store, its payload on disk, when this returns.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown circuit; [`Error::InvalidArgument`]
    /// for a malformed assignment or one of the wrong size for the circuit;
    /// [`Error::ResourceExhausted`] past the queue limits; [`Error::Io`],
    /// [`Error::Store`].
    pub async fn submit(&self, req: Submit) -> Result<(String, bool)> {
        let (circuit, priority) = (req.circuit_id.clone(), req.priority);
        let r = self.accept(req).await;
        if let Ok((id, duplicate)) = &r {
            tracing::info!(
                job = %id,
                circuit = %circuit,
                priority = priority.name(),
                duplicate,
                "job accepted"
            );
        }
        r
    }

    /// [`Engine::submit`] but its log line.
    async fn accept(&self, req: Submit) -> Result<(String, bool)> {
        if self.shutdown.load(Ordering::SeqCst) {
            return Err(Error::Unavailable(
                "the daemon is shutting down: submit to another one or retry after restart".into(),
            ));
        }
        let key = req.idempotency_key.clone().filter(|k| !k.is_empty());
        // Only a keyed submission needs its payload's digest; hashed off
        // the async runtime's threads (inline payloads reach
        // max_inline_bytes).
        let (payload, digest) = if key.is_some() {
            let (payload, d) = tokio::task::spawn_blocking(move || {
                let d = req.payload.digest();
                (req.payload, d)
            })
            .await
            .map_err(|e| Error::Internal(format!("payload digest task: {e}")))?;
            (payload, Some(d?))
        } else {
            (req.payload, None)
        };
        if let Some(k) = &key {
            check_key(k)?;
            // A retry of an accepted job is answered before any work.
            if let Some(j) = self.store.by_key(k).await? {
                same_request(&j, k, &req.circuit_id, digest.as_deref().unwrap_or(""))?;
                if let Payload::Owned(p, _) = &payload {
                    let _ = std::fs::remove_file(p);
                }
                return Ok((j.id, true));
            }
        }
        let header = self.r1cs_header(&req.circuit_id)?;
        let id = uuid::Uuid::new_v4().to_string();
        // File work (a decode, an fsync of up to max_inline_bytes) off the
        // async runtime's threads.
        let place = Placement {
            dir: self.payload_dir.clone(),
            assignment_dirs: self.assignment_dirs.clone(),
            id: id.clone(),
            max_inline: self.config.max_inline_bytes,
        };
        let circuit = req.circuit_id.clone();
        let (path, owned, bytes) =
            tokio::task::spawn_blocking(move || place_payload(payload, &header, &circuit, &place))
                .await
                .map_err(|e| Error::Internal(format!("payload task: {e}")))??;
        let cleanup = |path: &Path| {
            if owned {
                let _ = std::fs::remove_file(path);
            }
        };
        let (jobs, queued_bytes) = match self.store.depth().await {
            Ok(d) => d,
            Err(e) => {
                cleanup(&path);
                return Err(e);
            }
        };
        if jobs >= self.config.max_queued_jobs
            || queued_bytes + bytes > self.config.max_queued_bytes
        {
            cleanup(&path);
            return Err(Error::ResourceExhausted(format!(
                "the queue holds {jobs} jobs and {queued_bytes} bytes of assignments (limits \
                 {} and {}): retry later",
                self.config.max_queued_jobs, self.config.max_queued_bytes
            )));
        }
        let job = NewJob {
            id,
            circuit_id: req.circuit_id,
            priority: req.priority,
            idempotency_key: key,
            payload_path: path.display().to_string(),
            payload_owned: owned,
            payload_bytes: bytes,
            payload_digest: digest,
        };
        let r = self.store.insert(&job, now_us()).await;
        match &r {
            Ok((_, true)) | Err(_) => cleanup(&path),
            Ok((_, false)) => {
                self.metrics.submitted(job.priority);
                self.doorbell.ring();
            }
        }
        // A submission with the same key that won the race: the same
        // checks as a retry's.
        if let (Ok((_, true)), Some(k)) = (&r, &job.idempotency_key) {
            if let Some(j) = self.store.by_key(k).await? {
                same_request(
                    &j,
                    k,
                    &job.circuit_id,
                    job.payload_digest.as_deref().unwrap_or(""),
                )?;
            }
        }
        r
    }

    /// Checks a streamed submission's header before its bytes are read:
    /// the daemon takes jobs, the circuit exists, and `assignment_bytes` is
    /// the circuit's assignment size.
    ///
    /// # Errors
    /// [`Error::Unavailable`] while shutting down; [`Error::NotFound`] for
    /// an unknown circuit; [`Error::InvalidArgument`] for another size.
    pub fn check_stream(&self, circuit_id: &str, assignment_bytes: u64) -> Result<()> {
        if self.shutdown.load(Ordering::SeqCst) {
            return Err(Error::Unavailable(
                "the daemon is shutting down: submit to another one or retry after restart".into(),
            ));
        }
        let h = self.r1cs_header(circuit_id)?;
        let want = assignment::HEADER_BYTES as u64
            + assignment::ELEMENT_BYTES as u64 * h.num_variables.saturating_sub(1);
        if assignment_bytes != want {
            return Err(Error::InvalidArgument(format!(
                "a streamed assignment of {assignment_bytes} bytes; circuit `{circuit_id}` \
                 takes {want} ({} public inputs and {} witness values)",
                h.num_inputs.saturating_sub(1),
                h.num_variables.saturating_sub(h.num_inputs)
            )));
        }
        Ok(())
    }

    /// The R1CS header of circuit `id`.
    fn r1cs_header(&self, id: &str) -> Result<cuzk_prover::r1cs_file::Header> {
        let dir = self.registry.dir(id)?;
        cuzk_prover::r1cs_file::read_header(dir.join(crate::circuits::R1CS_FILE)).map_err(|e| {
            Error::FailedPrecondition(format!(
                "circuit `{id}`: its R1CS file cannot be read ({e}); the operator must write it \
                 again (`cuzk keygen`)"
            ))
        })
    }

    /// Whether the daemon serves: `Err` with a one-line reason while it
    /// shuts down or when the job store does not answer a trivial query.
    pub async fn health(&self) -> std::result::Result<(), String> {
        if self.shutdown.load(Ordering::SeqCst) {
            return Err("shutting down".into());
        }
        match tokio::time::timeout(Duration::from_secs(5), self.store.ping()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("the job store does not answer: {e}")),
            Err(_) => Err("the job store does not answer within 5 s".into()),
        }
    }

    /// Stops taking jobs and wakes every waiter: the first step of a
    /// shutdown, before the RPC server drains (AwaitProof calls then
    /// return the jobs' states at once).
    pub fn begin_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.doorbell.ring();
        self.changed.notify_waiters();
    }

    /// Job `id` as it is now (GetJob; [`Engine::wait`] without waiting).
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown id (or one pruned after
    /// `retain_finished_secs`); [`Error::Store`].
    pub async fn job(&self, id: &str) -> Result<JobRecord> {
        self.store.get(id).await?.ok_or_else(|| {
            Error::NotFound(format!(
                "no job {id} in the job store: a job id from submit, or one that ended more \
                 than retain_finished_secs ago and was pruned"
            ))
        })
    }

    /// A page of the jobs matching `filter` (ListJobs): at most `limit`
    /// ([`LIST_DEFAULT_LIMIT`] for 0), newest submission first, without
    /// proofs (see [`JobStore::list`]), and the position after the page's
    /// last job when more match (`None` when this page ends the list).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `limit` above [`LIST_MAX_LIMIT`];
    /// [`Error::Store`].
    pub async fn list_jobs(
        &self,
        filter: &JobFilter,
        limit: u32,
    ) -> Result<(Vec<JobRecord>, Option<JobCursor>)> {
        let limit = list_limit(limit)?;
        // One row more than the page says whether another page follows.
        let mut jobs = self.store.list(filter, limit + 1).await?;
        if jobs.len() <= limit as usize {
            return Ok((jobs, None));
        }
        jobs.truncate(limit as usize);
        let next = jobs.last().map(JobCursor::of);
        Ok((jobs, next))
    }

    /// Job `id` once it ended, or as it is when `timeout` passes.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown id; [`Error::Store`].
    pub async fn wait(&self, id: &str, timeout: Duration) -> Result<JobRecord> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let job = self
                .store
                .get(id)
                .await?
                .ok_or_else(|| Error::NotFound(format!("no job {id}")))?;
            let now = tokio::time::Instant::now();
            if job.state.is_terminal() || now >= deadline || self.shutdown.load(Ordering::SeqCst) {
                return Ok(job);
            }
            // Another daemon may finish it: look again at least every second.
            let poll = (deadline - now).min(Duration::from_secs(1));
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(poll) => {}
            }
        }
    }

    /// Cancels job `id` (see the store's `cancel`); returns its state.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown id; [`Error::Store`].
    pub async fn cancel(&self, id: &str) -> Result<JobState> {
        let (job, now) = self.store.cancel(id, now_us()).await?;
        if now {
            self.ended(&job, None, None);
        } else if job.state == JobState::Running {
            tracing::info!(
                job = %job.id,
                circuit = %job.circuit_id,
                "cancellation asked: the job ends cancelled when its proof completes"
            );
        }
        self.changed.notify_waiters();
        Ok(job.state)
    }

    /// Loads circuit `id` now (on a blocking thread) and, on GPU lanes,
    /// page-locks the workers' buffers for its assignments (two a worker:
    /// the job it proves and the one it loads ahead; 2.4 GiB each for a
    /// PoRep-shaped 2^27 circuit), so that its first jobs wait for
    /// neither.
    ///
    /// # Errors
    /// As `Registry::load`.
    pub async fn preload(self: &Arc<Self>, id: &str) -> Result<pb::LoadedKey> {
        let e = self.clone();
        let id = id.to_string();
        let c = tokio::task::spawn_blocking(move || {
            let c = e.registry.load(&id)?;
            // The workers' page-locked buffers for this circuit's
            // assignments, so that its first jobs do not wait for them.
            e.pinned.fill(c.num_variables);
            Ok::<_, Error>(c)
        })
        .await
        .map_err(|e| Error::Internal(format!("key loading task: {e}")))??;
        Ok(loaded_key(&c))
    }

    /// Evicts circuit `id`'s key ([`Registry::evict`]) on a blocking thread:
    /// dropping tens of GB and returning the heap's free pages to the
    /// system take long enough to stall an async worker.
    ///
    /// # Errors
    /// As [`Registry::evict`].
    pub async fn evict(self: &Arc<Self>, id: &str) -> Result<bool> {
        let e = self.clone();
        let id = id.to_string();
        tokio::task::spawn_blocking(move || e.registry.evict(&id))
            .await
            .map_err(|e| Error::Internal(format!("key eviction task: {e}")))?
    }

    /// The daemon's state, for GetStatus, `cuzk status` and the metrics.
    ///
    /// # Errors
    /// [`Error::Store`].
    pub async fn status(&self) -> Result<pb::GetStatusResponse> {
        let counts = self.store.counts().await?;
        let uptime = self.started.elapsed().as_secs_f64();
        let lanes = self.registry.lanes();
        let devices = self
            .lanes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (total, avail) = match lanes {
                    Lanes::Gpu(m) => (
                        m[i].mem_get_info().map_or(0, |(_, total)| total),
                        m[i].budget().available_bytes().unwrap_or(0),
                    ),
                    Lanes::Cpu(_) => (0, 0),
                };
                let mut busy_us = s.busy_us.load(Ordering::SeqCst);
                if s.busy_workers.load(Ordering::SeqCst) > 0 {
                    let since = s.busy_since_us.load(Ordering::SeqCst);
                    busy_us += (now_us() as u64).saturating_sub(since);
                }
                let busy = busy_us as f64 / 1e6;
                pb::Device {
                    ordinal: lanes.device(i),
                    name: match lanes {
                        Lanes::Gpu(_) => cuzk_field::gpu::device_info(lanes.device(i))
                            .map(|d| d.name)
                            .unwrap_or_default(),
                        Lanes::Cpu(_) => "CPU path".into(),
                    },
                    workers: self.config.gpu_workers_per_device as u32,
                    busy_workers: s.busy_workers.load(Ordering::SeqCst) as u32,
                    proofs_done: s.proofs_done.load(Ordering::SeqCst),
                    memory_total_bytes: total,
                    memory_available_bytes: avail,
                    busy_fraction: if uptime > 0.0 { busy / uptime } else { 0.0 },
                }
            })
            .collect();
        let queues = Priority::ALL
            .iter()
            .rev()
            .map(|&p| {
                let n = |st: JobState, ahead: bool| {
                    counts
                        .iter()
                        .filter(|c| c.0 == p && c.1 == st && c.2 == ahead)
                        .map(|c| c.3)
                        .sum::<u64>()
                };
                pb::QueueClass {
                    priority: pb::Priority::from(p) as i32,
                    queued: n(JobState::Queued, false),
                    running: n(JobState::Running, false),
                    claimed_ahead: n(JobState::Running, true),
                }
            })
            .collect();
        let ended = |st: JobState| {
            counts
                .iter()
                .filter(|c| c.1 == st)
                .map(|c| c.3)
                .sum::<u64>()
        };
        Ok(pb::GetStatusResponse {
            version: env!("CARGO_PKG_VERSION").into(),
            worker: self.owner.clone(),
            uptime_s: uptime,
            devices,
            keys: self
                .registry
                .loaded()
                .iter()
                .map(|c| loaded_key(c))
                .collect(),
            key_host_bytes: self.registry.host_bytes(),
            key_host_budget_bytes: self.registry.budget(),
            queues,
            done: ended(JobState::Done),
            failed: ended(JobState::Failed),
            cancelled: ended(JobState::Cancelled),
            circuits: self.registry.circuits(),
            store: self.store.shown().into(),
        })
    }

    /// Stops taking jobs, waits up to `grace` for running proofs, gives
    /// back the jobs claimed ahead that never started (their attempt not
    /// counted), and closes the store. Returns how many workers were still
    /// proving when `grace` passed (0 for a clean stop); their jobs return
    /// to the queue when their lease runs out (on SQLite: at the next
    /// start).
    pub async fn shutdown(&self, grace: Duration) -> usize {
        self.begin_shutdown();
        // No worker starts a job claimed ahead once the stop began: they go
        // back now, not after the grace, for other daemons sharing the
        // store to take.
        self.give_back_ahead().await;
        let handles = std::mem::take(&mut *self.workers.lock().unwrap_or_else(|p| p.into_inner()));
        let deadline = Instant::now() + grace;
        while handles.iter().any(|h| !h.is_finished()) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let running = handles.iter().filter(|h| !h.is_finished()).count();
        if running > 0 {
            tracing::warn!(
                workers = running,
                "shutdown grace passed with proofs running; their jobs return to the queue"
            );
        }
        for h in handles.into_iter().filter(|h| h.is_finished()) {
            let _ = h.join();
        }
        // Any claimed ahead during the grace (a claim that began before
        // the stop and ended after it gives its job back itself; this is
        // for one whose give-back failed).
        self.give_back_ahead().await;
        self.store.close().await;
        running
    }

    /// Gives the jobs claimed ahead back to the queue, their attempt not
    /// counted (a worker that finds its job gone starts nothing).
    async fn give_back_ahead(&self) {
        let ahead = std::mem::take(&mut *self.ahead.lock().unwrap_or_else(|p| p.into_inner()));
        for (id, lease) in ahead {
            match self.store.unclaim(&id, &lease, now_us()).await {
                Ok(Some(j)) if j.state == JobState::Cancelled => self.ended(&j, None, None),
                Ok(Some(_)) => {
                    tracing::info!(job = %id, "a job claimed ahead went back to the queue")
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    job = %id,
                    "giving back a job claimed ahead: {e}; it returns to the queue when its \
                     lease runs out (SQLite: at the next start), its attempt not counted"
                ),
            }
        }
    }

    /// A worker thread of lane `lane`. With [`Config::load_ahead`], while
    /// it proves a job a helper thread claims the next one and loads its
    /// assignment, so that the GPU does not wait for the file between jobs;
    /// a job claimed ahead when the daemon stops goes back to the queue.
    fn worker(self: Arc<Self>, lane: usize) {
        let mut ahead: Option<Claimed> = None;
        while !self.shutdown.load(Ordering::SeqCst) {
            let seen = self.doorbell.count();
            let claimed = match ahead.take() {
                Some(c) => match self.begin(c) {
                    Some(c) => c,
                    None => continue,
                },
                None => match self.claim(false) {
                    Ok(Some(c)) => c,
                    Ok(None) => {
                        self.doorbell.wait(seen, Duration::from_millis(500));
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!("claiming a job: {e}; retrying in a second");
                        std::thread::sleep(Duration::from_secs(1));
                        continue;
                    }
                },
            };
            let daemon_fault = std::thread::scope(|sc| {
                let next = self
                    .config
                    .load_ahead
                    .then(|| {
                        std::thread::Builder::new()
                            .name("cuzk-load-ahead".into())
                            .spawn_scoped(sc, || self.claim_ahead())
                            .ok()
                    })
                    .flatten();
                let fault = self.run(lane, claimed);
                ahead = next.and_then(|h| h.join().ok()).flatten();
                fault
            });
            if daemon_fault {
                // This host could not prove it (a GPU fault, a key it
                // lacks): back off before the next claim.
                std::thread::sleep(Duration::from_secs(2));
            }
        }
        if let Some(c) = ahead {
            self.give_back(c);
        }
    }

    /// Claims the next job, if any, and starts renewing its lease; `ahead`:
    /// a claim to load while another job is proved, its attempt counted
    /// when [`Engine::begin`] starts it. Jobs the store ends on the way
    /// (see [`JobStore::sweep`]) are counted and logged.
    ///
    /// # Errors
    /// [`Error::Store`].
    fn claim(&self, ahead: bool) -> Result<Option<Claimed>> {
        let lease_us = (self.config.lease_secs * 1_000_000) as i64;
        let max_attempts = i64::from(self.config.max_attempts);
        // Leases run on the database's clock: one clock for every host.
        let (ended, job) = self.rt.block_on(async {
            let now = self.store.now_us().await?;
            let ended = self.store.sweep(now, max_attempts).await?;
            let job = self.store.take(&self.owner, now, lease_us, ahead).await;
            Ok::<_, Error>((ended, job))
        })?;
        for j in &ended {
            self.ended(j, None, j.error.as_deref());
        }
        let job = job?;
        let Some(job) = job else {
            return Ok(None);
        };
        let Some(lease) = job.lease.clone() else {
            return Err(Error::Internal(format!(
                "job {} was claimed without a lease token",
                job.id
            )));
        };
        let renew = self.renew_lease(&job.id, &lease);
        Ok(Some(Claimed {
            job,
            lease,
            renew,
            loaded: None,
        }))
    }

    /// [`Engine::claim`] and the job's assignment loaded, for a worker to
    /// prove after its current job; `None` when no job is queued, the
    /// daemon is stopping, or the store fails (the worker claims again).
    fn claim_ahead(&self) -> Option<Claimed> {
        if self.shutdown.load(Ordering::SeqCst) {
            return None;
        }
        let mut c = self.claim(true).ok().flatten()?;
        self.ahead
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((c.job.id.clone(), c.lease.clone()));
        if self.shutdown.load(Ordering::SeqCst) {
            // The stop came during the claim: the shutdown may have given
            // back the others already.
            self.give_back(c);
            return None;
        }
        let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.load(&c.job)))
            .unwrap_or_else(|_| {
                Err(Fault::Daemon(Error::Internal(
                    "loading an assignment panicked (please report it)".into(),
                )))
            });
        c.loaded = Some(loaded);
        Some(c)
    }

    /// Starts a job claimed ahead: takes it out of the claims ahead and
    /// counts its attempt ([`JobStore::begin`]). `None` when there is
    /// nothing to prove: a shutdown gave it back, its lease passed to
    /// another claim, its cancellation was asked (it ends cancelled), the
    /// daemon is stopping, or the store failed (then it is given back).
    fn begin(&self, c: Claimed) -> Option<Claimed> {
        let mine = self
            .ahead
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(c.job.id.clone(), c.lease.clone()));
        if !mine {
            return None;
        }
        match self.rt.block_on(self.store.begin(&c.job.id, &c.lease)) {
            // Cancelled while it waited, or the stop began: not proved
            // (given back, a cancelled job ends cancelled).
            Ok(Some(job)) if job.cancel_requested || self.shutdown.load(Ordering::SeqCst) => {
                self.ahead
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert((c.job.id.clone(), c.lease.clone()));
                self.give_back(Claimed { job, ..c });
                None
            }
            Ok(Some(job)) => Some(Claimed { job, ..c }),
            Ok(None) => {
                tracing::warn!(
                    job = %c.job.id,
                    "the lease of a job claimed ahead passed to another claim; not proved here"
                );
                None
            }
            Err(e) => {
                tracing::warn!(job = %c.job.id, "starting a job claimed ahead: {e}; giving it back");
                self.ahead
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert((c.job.id.clone(), c.lease.clone()));
                self.give_back(c);
                None
            }
        }
    }

    /// Returns a job claimed ahead and not started to the queue, its
    /// attempt not counted, unless a shutdown did already.
    fn give_back(&self, c: Claimed) {
        let Claimed {
            job, lease, renew, ..
        } = c;
        drop(renew);
        let mine = self
            .ahead
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(job.id.clone(), lease.clone()));
        if !mine {
            return;
        }
        match self
            .rt
            .block_on(self.store.unclaim(&job.id, &lease, now_us()))
        {
            Ok(Some(j)) if j.state == JobState::Cancelled => self.ended(&j, None, None),
            Ok(_) => {}
            Err(e) => tracing::warn!(
                "giving back job {} claimed ahead: {e}; it returns when its lease runs out",
                job.id
            ),
        }
    }

    /// Counts, logs and cleans up after a job that ended, whatever ended
    /// it (a proof, a failure, a cancellation while queued or running, the
    /// store giving up on it): `job` as stored at its end (its state, its
    /// submission, start and end times, its attempts), `proof_ms` the
    /// prover's time when a proof ran, `error` why it failed. Its payload,
    /// which nothing reads any more, is removed if the daemon owns it.
    fn ended(&self, job: &JobRecord, proof_ms: Option<f64>, error: Option<&str>) {
        self.metrics.finished(job.state);
        let end = job.finished_us.unwrap_or_else(now_us);
        // Cancelled while queued: it waited until it ended.
        let queue_wait_ms = (job.started_us.unwrap_or(end) - job.submitted_us).max(0) as f64 / 1e3;
        let (id, circuit, state) = (&job.id, &job.circuit_id, job.state.as_str());
        match (proof_ms, error) {
            // Errors quoted (`?`): a client's path in them cannot start a
            // line of its own in the log.
            (_, Some(e)) => tracing::warn!(
                job = %id, circuit = %circuit, state, attempts = job.attempts,
                queue_wait_ms, error = ?e, "job ended"
            ),
            (Some(proof_ms), None) => tracing::info!(
                job = %id, circuit = %circuit, state, attempts = job.attempts,
                queue_wait_ms, proof_ms, "job ended"
            ),
            (None, None) => tracing::info!(
                job = %id, circuit = %circuit, state, attempts = job.attempts,
                queue_wait_ms, "job ended"
            ),
        }
        if job.payload_owned {
            let _ = std::fs::remove_file(&job.payload_path);
        }
    }

    /// Proves one claimed job and stores the outcome: the proof; a failure
    /// when the job itself is at fault (its assignment); otherwise the job
    /// goes back to the queue for another attempt (at most `max_attempts`
    /// in all). Returns whether the daemon was at fault.
    fn run(&self, lane: usize, claimed: Claimed) -> bool {
        let Claimed {
            job,
            lease,
            renew,
            loaded,
        } = claimed;
        let span = tracing::info_span!("job", id = %job.id, circuit = %job.circuit_id, lane);
        let _g = span.enter();
        let started = job.started_us.unwrap_or_else(now_us);
        let queue_wait_ms = (started - job.submitted_us).max(0) as f64 / 1e3;
        self.metrics.queue_wait(queue_wait_ms / 1e3);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let loaded = match loaded {
                Some(l) => l,
                None => self.load(&job),
            };
            self.prove(lane, loaded?, queue_wait_ms)
        }))
        .unwrap_or_else(|p| {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(Fault::Daemon(Error::Internal(format!(
                "the prover panicked: {what} (please report it)"
            ))))
        });
        let daemon_fault = matches!(outcome, Err(Fault::Daemon(_)));
        // The result is stored while the lease is still renewed; a store
        // that is briefly unreachable is retried for a while.
        let mut stored: Result<Option<JobRecord>> = Err(Error::Internal("not stored".into()));
        for attempt in 0..10 {
            stored = self.rt.block_on(async {
                match &outcome {
                    Ok((proof, timings, device)) => {
                        let json = serde_json::to_string(timings).unwrap_or_default();
                        self.store
                            .complete(&job.id, &lease, proof, &json, i64::from(*device), now_us())
                            .await
                    }
                    Err(Fault::Job(e)) => {
                        self.store
                            .fail(&job.id, &lease, &e.to_string(), now_us())
                            .await
                    }
                    Err(Fault::Daemon(e)) => {
                        self.store
                            .release(&job.id, &lease, &e.to_string(), now_us())
                            .await
                    }
                }
            });
            match &stored {
                Err(e) if attempt < 9 && !self.shutdown.load(Ordering::SeqCst) => {
                    tracing::warn!("storing the result: {e}; retrying");
                    std::thread::sleep(Duration::from_secs(1 << attempt.min(4)));
                }
                _ => break,
            }
        }
        drop(renew);
        match (&outcome, stored) {
            (_, Ok(None)) => {
                tracing::warn!("the job's lease passed to another claim; result dropped")
            }
            (_, Err(e)) => tracing::warn!("storing the result: {e}; the job will be taken again"),
            // Errors quoted (`?`): a client's path in them cannot start a
            // line of its own in the log.
            (Err(Fault::Daemon(e)), Ok(Some(j))) => {
                if j.state == JobState::Cancelled {
                    self.ended(&j, None, None);
                } else {
                    tracing::warn!(job = %job.id, error = ?e.to_string(), "given back to the queue");
                }
            }
            (Ok((_, t, _)), Ok(Some(j))) => {
                self.ended(&j, Some(t.total_ms), None);
                self.metrics.stages(t);
            }
            (Err(Fault::Job(e)), Ok(Some(j))) => self.ended(&j, None, Some(&e.to_string())),
        }
        self.changed.notify_waiters();
        daemon_fault
    }

    /// Job `job`'s circuit (held in use) and assignment, read and checked
    /// against the circuit.
    fn load(&self, job: &JobRecord) -> std::result::Result<Loaded, Fault> {
        let circuit = self
            .registry
            .acquire(&job.circuit_id)
            .map_err(|e| match e {
                // Damaged circuit files stay damaged until someone writes them
                // again: another attempt would load them again (a 2^27 key:
                // tens of GB) to fail the same way.
                Error::FailedPrecondition(_) => Fault::Job(e),
                other => Fault::Daemon(other),
            })?;
        let t = Instant::now();
        let path = Path::new(&job.payload_path);
        let file = if job.payload_owned {
            std::fs::File::open(path).map_err(|e| {
                Fault::Daemon(Error::io(
                    format!("opening assignment {}", path.display()),
                    e,
                ))
            })?
        } else {
            // Opened as the submission opened it: a file swapped since
            // cannot lead outside the assignment directories.
            self.assignment_dirs
                .open(path)
                .map_err(|r| match r {
                    Refusal::Path(e) => Fault::Job(e),
                    Refusal::Unreadable(e) => Fault::Daemon(e),
                })?
                .0
        };
        let shape = (circuit.num_inputs, circuit.num_variables);
        let (z, num_inputs) =
            assignment::read_full_opened_with(file, path, Some(shape), |n| self.pinned.take(n))
                .map_err(|e| match e {
                    // A payload this host cannot open is this host's problem
                    // (another daemon of the cluster may see it); one that does
                    // not decode is the job's.
                    Error::Io { .. } => Fault::Daemon(e),
                    other => Fault::Job(other),
                })?;
        if num_inputs != circuit.num_inputs || z.len() != circuit.num_variables {
            return Err(Fault::Job(Error::InvalidArgument(format!(
                "assignment of {} public inputs and {} witness values; circuit `{}` takes {} and {}",
                num_inputs - 1,
                z.len() - num_inputs,
                job.circuit_id,
                circuit.num_inputs.saturating_sub(1),
                circuit.num_variables.saturating_sub(circuit.num_inputs)
            ))));
        }
        Ok(Loaded {
            circuit,
            z,
            num_inputs,
            load_ms: t.elapsed().as_secs_f64() * 1e3,
        })
    }

    fn prove(
        &self,
        lane: usize,
        loaded: Loaded,
        queue_wait_ms: f64,
    ) -> std::result::Result<(Vec<u8>, Timings, i32), Fault> {
        let Loaded {
            circuit,
            z,
            num_inputs,
            load_ms,
        } = loaded;
        let mut rng = rand::thread_rng();
        let pj = ProofJob {
            matrices: &circuit.matrices,
            full_assignment: &z,
            num_inputs,
            r: Fr::rand(&mut rng),
            s: Fr::rand(&mut rng),
        };
        let stats = &self.lanes[lane];
        if stats.busy_workers.fetch_add(1, Ordering::SeqCst) == 0 {
            stats.busy_since_us.store(now_us() as u64, Ordering::SeqCst);
        }
        let r = circuit.prover.prove_on(lane, &pj);
        // The instance (past the constant one), for the proof's check.
        let public: Vec<Fr> = z[1..num_inputs].to_vec();
        self.pinned.give(z);
        if stats.busy_workers.fetch_sub(1, Ordering::SeqCst) == 1 {
            let since = stats.busy_since_us.load(Ordering::SeqCst);
            stats
                .busy_us
                .fetch_add((now_us() as u64).saturating_sub(since), Ordering::SeqCst);
        }
        let (proof, pt, _) = r.map_err(|e| match e {
            cuzk_prover::Error::InvalidArgument(_) => Fault::Job(Error::Prover(e)),
            other => Fault::Daemon(Error::Prover(other)),
        })?;
        if let Some(pvk) = &circuit.verifier {
            let verified = ark_groth16::Groth16::<ark_bls12_381::Bls12_381>::verify_proof(
                pvk, &proof, &public,
            );
            if !matches!(verified, Ok(true)) {
                return Err(Fault::Job(Error::InvalidArgument(format!(
                    "the proof does not verify against circuit `{}`'s verifying key: the \
                     assignment does not satisfy the circuit's constraints (check the witness), \
                     or the circuit's files were written over while it was loaded (`cuzk evict \
                     {}`)",
                    circuit.id, circuit.id
                ))));
            }
        }
        stats.proofs_done.fetch_add(1, Ordering::SeqCst);
        let mut bytes = Vec::new();
        proof
            .serialize_compressed(&mut bytes)
            .map_err(|e| Fault::Daemon(Error::Internal(format!("serializing a proof: {e}"))))?;
        let timings = Timings {
            load_ms,
            queue_wait_ms,
            eval_ms: pt.eval_ms,
            h_ntt_ms: pt.h_ntt_ms,
            msm_a_ms: pt.msm_a_ms,
            msm_b_g2_ms: pt.msm_b_g2_ms,
            msm_b_g1_ms: pt.msm_b_g1_ms,
            msm_h_ms: pt.msm_h_ms,
            msm_l_ms: pt.msm_l_ms,
            assembly_ms: pt.assembly_ms,
            total_ms: pt.total_ms(),
        };
        Ok((bytes, timings, self.registry.lanes().device(lane)))
    }

    /// Renews the lease `lease_token` on job `id` every third of the lease
    /// until the returned guard is dropped.
    fn renew_lease(&self, id: &str, lease_token: &str) -> LeaseRenewal {
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let store = self.store.clone();
        let (id, owner) = (id.to_string(), lease_token.to_string());
        let lease = Duration::from_secs(self.config.lease_secs);
        self.rt.spawn(async move {
            let mut tick = tokio::time::interval(lease / 3);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = &mut rx => return,
                    _ = tick.tick() => {
                        let renewed = match store.now_us().await {
                            Ok(now) => {
                                store.renew(&id, &owner, now + lease.as_micros() as i64).await
                            }
                            Err(e) => Err(e),
                        };
                        match renewed {
                            Ok(true) => {}
                            Ok(false) => return,
                            Err(e) => tracing::warn!("renewing the lease of job {id}: {e}"),
                        }
                    }
                }
            }
        });
        LeaseRenewal(Some(tx))
    }
}

/// Where and how a submission's payload is put: the payload directory,
/// the directories a path may name (empty: any), the job's id and the
/// largest inline assignment.
struct Placement {
    dir: PathBuf,
    assignment_dirs: Arc<AssignmentDirs>,
    id: String,
    max_inline: u64,
}

/// Checks a submission's payload against the circuit's R1CS `header` and
/// puts it in place: the bytes of an inline assignment (decoded in full,
/// written to the payload directory and synced), a client's path (checked
/// against the assignment directories, left where it is), or a streamed
/// upload (moved into the payload directory). Returns the payload's path,
/// whether the daemon owns it, and its size.
fn place_payload(
    payload: Payload,
    header: &cuzk_prover::r1cs_file::Header,
    circuit_id: &str,
    place: &Placement,
) -> Result<(PathBuf, bool, u64)> {
    let (dir, id, max_inline) = (&place.dir, &place.id, place.max_inline);
    Ok(match payload {
        Payload::Bytes(b) => {
            if b.len() as u64 > max_inline {
                return Err(Error::InvalidArgument(format!(
                    "inline assignment of {} bytes exceeds max_inline_bytes ({max_inline}): \
                     stream it or pass a path",
                    b.len()
                )));
            }
            check_sizes(&b, header, circuit_id)?;
            // Decoded in full: a bad element is refused now, not when a
            // worker reaches the job.
            Assignment::from_bytes(&b)?;
            let p = dir.join(format!("{id}.asg"));
            write_synced(&p, &b)?;
            (p, true, b.len() as u64)
        }
        Payload::Path(p) => {
            let (mut f, p) = place.assignment_dirs.open(&p).map_err(|r| match r {
                Refusal::Path(e) => e,
                Refusal::Unreadable(e) => Error::InvalidArgument(format!(
                    "{e}: give an absolute path the daemon's host can read, or send the \
                         assignment inline or streamed"
                )),
            })?;
            let head = read_head(&mut f, &p).map_err(|e| Error::InvalidArgument(e.to_string()))?;
            check_sizes(&head, header, circuit_id)?;
            let len = f
                .metadata()
                .map_err(|e| Error::io(format!("reading {}", p.display()), e))?
                .len();
            (p, false, len)
        }
        Payload::Owned(p, _) => {
            let mut f = std::fs::File::open(&p)
                .map_err(|e| Error::io(format!("opening {}", p.display()), e))?;
            let head = read_head(&mut f, &p)?;
            check_sizes(&head, header, circuit_id)?;
            let to = dir.join(format!("{id}.asg"));
            std::fs::rename(&p, &to)
                .map_err(|e| Error::io(format!("moving {} to {}", p.display(), to.display()), e))?;
            sync_dir(dir);
            let len = std::fs::metadata(&to)
                .map_err(|e| Error::io(format!("reading {}", to.display()), e))?
                .len();
            (to, true, len)
        }
    })
}

/// A job a worker claimed: its lease (renewed while this lives) and, when
/// claimed ahead, its loaded assignment or why it could not be loaded.
struct Claimed {
    job: JobRecord,
    lease: String,
    renew: LeaseRenewal,
    loaded: Option<std::result::Result<Loaded, Fault>>,
}

/// A job's circuit, held in use, and its full assignment.
struct Loaded {
    circuit: crate::circuits::CircuitUse,
    z: FullAssignment,
    num_inputs: usize,
    load_ms: f64,
}

/// A job's full assignment: in page-locked memory from the engine's
/// [`PinnedPool`] where it could be had (the prover then copies it to the
/// GPU by DMA, without its own pinned copy), else in a vector.
enum FullAssignment {
    Pinned(PinnedBuffer<Fr>),
    Plain(Vec<Fr>),
}

impl std::ops::Deref for FullAssignment {
    type Target = [Fr];
    fn deref(&self) -> &[Fr] {
        match self {
            FullAssignment::Pinned(b) => b,
            FullAssignment::Plain(v) => v,
        }
    }
}

impl std::ops::DerefMut for FullAssignment {
    fn deref_mut(&mut self) -> &mut [Fr] {
        match self {
            FullAssignment::Pinned(b) => b,
            FullAssignment::Plain(v) => v,
        }
    }
}

/// Page-locked buffers for assignments, kept for jobs of the same size
/// (at most `keep` of them, [`cuzk_alloc::PinnedPool`]): allocating and
/// page-locking an assignment of 2^24 to 2^27 elements (0.5 to 4 GiB) for
/// every job would cost more than its proof's copy saves. Where pinned
/// memory cannot be had (no GPU, or it ran out), assignments go to vectors.
struct PinnedPool {
    /// Whether to try: GPU lanes, and pinned memory could be had so far.
    enabled: AtomicBool,
    pool: cuzk_alloc::PinnedPool<Fr>,
}

impl std::fmt::Debug for PinnedPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedPool")
            .field("enabled", &self.enabled.load(Ordering::Relaxed))
            .field("pool", &self.pool)
            .finish()
    }
}

impl PinnedPool {
    fn new(enabled: bool, keep: usize) -> Self {
        PinnedPool {
            enabled: AtomicBool::new(enabled),
            pool: cuzk_alloc::PinnedPool::new(keep),
        }
    }

    /// A buffer of `n` elements (contents unspecified): a kept one of that
    /// length, a new page-locked one, or, where pinned memory cannot be
    /// had (not tried again), a vector.
    fn take(&self, n: usize) -> FullAssignment {
        if self.enabled.load(Ordering::Relaxed) {
            match self.pool.take(n) {
                Ok(b) => return FullAssignment::Pinned(b),
                Err(e) => {
                    tracing::info!(
                        "no page-locked memory for an assignment of {n} elements ({e}); \
                         assignments are read into pageable memory from now on"
                    );
                    self.enabled.store(false, Ordering::Relaxed);
                }
            }
        }
        FullAssignment::Plain(assignment::zeroed(n))
    }

    /// Makes the kept buffers page-locked buffers of `n` elements, as far
    /// as pinned memory allows: what preloading a key does for the
    /// assignments of its circuit.
    fn fill(&self, n: usize) {
        if self.enabled.load(Ordering::Relaxed) {
            let kept = self.pool.fill(n);
            tracing::debug!("page-locked buffers for assignments of {n} elements: {kept}");
        }
    }

    /// Keeps a page-locked buffer for a later job.
    fn give(&self, z: FullAssignment) {
        if let FullAssignment::Pinned(b) = z {
            self.pool.give(b);
        }
    }
}

/// Who is at fault when a proof fails: the job (its assignment: the job
/// fails) or this daemon (a key it lacks, a GPU fault, a panic: the job
/// goes back to the queue).
enum Fault {
    Job(Error),
    Daemon(Error),
}

/// Checks that a submission repeating idempotency key `key` asks what job
/// `j` was asked: the same circuit and the same payload (`digest`, see
/// [`Payload::digest`]; a job stored without one matches any).
///
/// # Errors
/// [`Error::FailedPrecondition`] naming the job and what differs.
fn same_request(j: &JobRecord, key: &str, circuit_id: &str, digest: &str) -> Result<()> {
    if j.circuit_id != circuit_id {
        return Err(Error::FailedPrecondition(format!(
            "idempotency key `{key}` belongs to job {} of circuit `{}`, not `{circuit_id}`: \
             use a key per circuit and job",
            j.id, j.circuit_id
        )));
    }
    match &j.payload_digest {
        Some(d) if d != digest => Err(Error::FailedPrecondition(format!(
            "idempotency key `{key}` belongs to job {} with another assignment (BLAKE3 {}..., \
             this one {}...): a retry must send the same assignment the same way (bytes, or \
             the same path); use a new key for a new assignment",
            j.id,
            &d[..d.len().min(16)],
            &digest[..digest.len().min(16)]
        ))),
        _ => Ok(()),
    }
}

/// Checks a client's idempotency key: 1 to 256 bytes, no control
/// characters (PostgreSQL's text and index limits).
fn check_key(k: &str) -> Result<()> {
    if k.len() > 256 || k.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "idempotency key of {} bytes: give at most 256 bytes without control characters",
            k.len()
        )));
    }
    Ok(())
}

/// Syncs a directory (a rename in it), best effort.
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Stops a lease's renewal when dropped.
struct LeaseRenewal(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for LeaseRenewal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

fn loaded_key(c: &crate::circuits::LoadedCircuit) -> pb::LoadedKey {
    pb::LoadedKey {
        circuit_id: c.id.clone(),
        host_bytes: c.host_bytes,
        in_use: c.in_use() as u32,
        num_constraints: c.matrices.num_constraints as u64,
        load_ms: c.load_ms,
    }
}

/// Checks an assignment's header (the first bytes of its encoding) against
/// the circuit's R1CS header.
fn check_sizes(head: &[u8], r1cs: &cuzk_prover::r1cs_file::Header, id: &str) -> Result<()> {
    let h: &[u8; assignment::HEADER_BYTES] = head
        .get(..assignment::HEADER_BYTES)
        .and_then(|h| h.try_into().ok())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "assignment of {} bytes: shorter than its {}-byte header",
                head.len(),
                assignment::HEADER_BYTES
            ))
        })?;
    let (p, w) = assignment::parse_header(h)?;
    let want_p = r1cs.num_inputs.saturating_sub(1);
    let want_w = r1cs.num_variables.saturating_sub(r1cs.num_inputs);
    if p != want_p || w != want_w {
        return Err(Error::InvalidArgument(format!(
            "assignment of {p} public inputs and {w} witness values; circuit `{id}` takes \
             {want_p} and {want_w}"
        )));
    }
    Ok(())
}

/// The first bytes of file `f` (its assignment header); `p` names it.
fn read_head(f: &mut std::fs::File, p: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut head = vec![0u8; assignment::HEADER_BYTES];
    let n = f
        .read(&mut head)
        .map_err(|e| Error::io(format!("reading {}", p.display()), e))?;
    head.truncate(n);
    Ok(head)
}

/// Writes `bytes` to a new file at `p` and syncs it (and its directory).
fn write_synced(p: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let what = || format!("writing {}", p.display());
    let mut f = std::fs::File::create(p).map_err(|e| Error::io(what(), e))?;
    f.write_all(bytes).map_err(|e| Error::io(what(), e))?;
    f.sync_all().map_err(|e| Error::io(what(), e))?;
    if let Some(dir) = p.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// The host's memory (MemTotal of /proc/meminfo), bytes; 16 GiB if unknown.
fn host_memory_bytes() -> u64 {
    cuzk_alloc::host_memory_total().unwrap_or(16 << 30)
}

/// The database file of a `sqlite:` URL (`sqlite://PATH`, `sqlite:PATH`,
/// options after `?` ignored); `None` for other databases and in-memory
/// SQLite.
fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or("");
    (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
}

#[cfg(test)]
mod tests {
    use super::{list_limit, now_us, sqlite_file, Engine, Payload};
    use crate::job::{JobState, NewJob, Priority};
    use crate::{Config, Error};
    use rand::{RngCore, SeedableRng};
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::time::Duration;

    /// An engine on the CPU path over `dir`, no circuits, `max_attempts`
    /// 1, whose workers have stopped (no job is claimed but by the test).
    async fn idle_engine(dir: &std::path::Path) -> Arc<Engine> {
        let e = Engine::start(Config {
            data_dir: dir.join("data"),
            key_dirs: vec![dir.join("keys")],
            devices: Some(Vec::new()),
            gpu_workers_per_device: 1,
            max_attempts: 1,
            ..Config::default()
        })
        .await
        .unwrap();
        e.begin_shutdown();
        while !e.workers.lock().unwrap().iter().all(|h| h.is_finished()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        e
    }

    /// A queued job `id` whose payload file the daemon owns; its path.
    async fn queue(e: &Engine, dir: &std::path::Path, id: &str) -> PathBuf {
        let p = dir.join(format!("{id}.asg"));
        std::fs::write(&p, b"payload").unwrap();
        let job = NewJob {
            id: id.into(),
            circuit_id: "c".into(),
            priority: Priority::Normal,
            idempotency_key: None,
            payload_path: p.display().to_string(),
            payload_owned: true,
            payload_bytes: 7,
            payload_digest: None,
        };
        e.store().insert(&job, now_us()).await.unwrap();
        p
    }

    /// `cuzk_jobs_finished_total`'s value for `state` (0 when absent).
    async fn finished(e: &Engine, state: &str) -> u64 {
        let text = e.metrics().render(&e.status().await.unwrap());
        let line = format!("cuzk_jobs_finished_total{{state=\"{state}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(line.as_str()))
            .map_or(0, |n| n.parse().unwrap())
    }

    /// Every job that ends is counted once, with its payload removed:
    /// cancelled while queued, and ended by the store's sweep (cancelled
    /// after its daemon died, failed after its last attempt).
    #[test]
    fn list_limits_default_and_refuse_past_the_most() {
        assert_eq!(list_limit(0).unwrap(), 100);
        assert_eq!(list_limit(1).unwrap(), 1);
        assert_eq!(list_limit(1000).unwrap(), 1000);
        for l in [1001, u32::MAX] {
            let e = list_limit(l).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidArgument(m) if m.contains("give 1 to 1000")),
                "{e}"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_ended_job_is_counted() {
        let tmp = tempfile::tempdir().unwrap();
        let e = idle_engine(tmp.path()).await;
        let a = queue(&e, tmp.path(), "a").await;
        let b = queue(&e, tmp.path(), "b").await;
        assert_eq!(e.cancel("a").await.unwrap(), JobState::Cancelled);
        assert_eq!(e.cancel("b").await.unwrap(), JobState::Cancelled);
        // Cancelling an ended job again changes nothing.
        assert_eq!(e.cancel("b").await.unwrap(), JobState::Cancelled);
        assert_eq!(finished(&e, "cancelled").await, 2);
        assert!(!a.exists() && !b.exists());
        // Held by daemons that died (leases of 0.3 s): one asked to cancel,
        // one at its last attempt. The next claim ends both.
        let c = queue(&e, tmp.path(), "c").await;
        let d = queue(&e, tmp.path(), "d").await;
        for _ in 0..2 {
            let now = e.store().now_us().await.unwrap();
            e.store()
                .claim("dead", now, 300_000, 1)
                .await
                .unwrap()
                .unwrap();
        }
        e.store().cancel("c", now_us()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
        let e2 = e.clone();
        let claimed = tokio::task::spawn_blocking(move || e2.claim(false).map(|c| c.is_none()))
            .await
            .unwrap();
        assert!(claimed.unwrap(), "nothing left to claim");
        assert_eq!(finished(&e, "cancelled").await, 3);
        assert_eq!(finished(&e, "failed").await, 1);
        let d_row = e.store().get("d").await.unwrap().unwrap();
        assert_eq!((d_row.state, d_row.attempts), (JobState::Failed, 1));
        assert!(!c.exists() && !d.exists());
    }

    /// Health: ok while serving, the reason while shutting down or when
    /// the store does not answer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn health_says_why_not() {
        let tmp = tempfile::tempdir().unwrap();
        let e = Engine::start(Config {
            data_dir: tmp.path().join("data"),
            key_dirs: vec![tmp.path().join("keys")],
            devices: Some(Vec::new()),
            gpu_workers_per_device: 1,
            ..Config::default()
        })
        .await
        .unwrap();
        assert_eq!(e.health().await, Ok(()));
        e.store().close().await;
        let why = e.health().await.unwrap_err();
        assert!(why.starts_with("the job store does not answer: "), "{why}");
        e.begin_shutdown();
        assert_eq!(e.health().await.unwrap_err(), "shutting down");
    }

    /// One assignment has one digest however it arrived: inline, or
    /// streamed with its hash taken on the way in or read back from the
    /// file; a path is told apart from its file's bytes.
    #[test]
    fn an_assignment_has_one_digest() {
        let seed: u64 = rand::random();
        eprintln!("seed {seed}");
        let mut bytes = vec![0u8; 300_000];
        rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut bytes);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.asg");
        std::fs::write(&p, &bytes).unwrap();
        let inline = Payload::Bytes(bytes.clone()).digest().unwrap();
        assert_eq!(inline, blake3::hash(&bytes).to_hex().to_string());
        let hashed = Payload::Owned(p.clone(), Some(blake3::hash(&bytes)));
        assert_eq!(hashed.digest().unwrap(), inline);
        assert_eq!(Payload::Owned(p.clone(), None).digest().unwrap(), inline);
        assert_ne!(Payload::Path(p.clone()).digest().unwrap(), inline);
        let gone = Payload::Owned(dir.path().join("gone.asg"), None).digest();
        assert!(gone.unwrap_err().to_string().contains("gone.asg"));
    }

    #[test]
    fn sqlite_urls_name_their_file() {
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(
            sqlite_file("sqlite:///var/cuzk/jobs.db"),
            p("/var/cuzk/jobs.db")
        );
        assert_eq!(sqlite_file("sqlite://jobs.db?mode=rwc"), p("jobs.db"));
        assert_eq!(sqlite_file("sqlite:rel/jobs.db"), p("rel/jobs.db"));
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("postgres://u@h/db"), None);
    }
}
