//! Circuits the daemon can prove: found as directories of key files, loaded
//! on first use (or PreloadKey) into host memory under a budget, the least
//! recently used idle one evicted first; and `keygen` for the bundled
//! circuits.
//!
//! A circuit directory `<key_dir>/<id>/` holds:
//!
//! | file | what |
//! |---|---|
//! | `pk.bin` | the Groth16 proving key, ark-serialize uncompressed (`ProvingKey<Bls12_381>`) |
//! | `vk.bin` | its verifying key, ark-serialize compressed (for clients that verify) |
//! | `r1cs.bin` | the R1CS matrices in cuzk's file format (`cuzk_prover::r1cs_file`) |

use crate::{Error, Result};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize};
use cuzk_alloc::DeviceMemory;
use cuzk_prover::{ConstraintMatrices, MultiGpuProver, ProvingKey};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The proving key's file in a circuit directory.
pub const PK_FILE: &str = "pk.bin";
/// The verifying key's file.
pub const VK_FILE: &str = "vk.bin";
/// The R1CS matrices' file.
pub const R1CS_FILE: &str = "r1cs.bin";
/// A file whose presence marks a circuit's key as random points (written
/// by [`keygen_porep`] for benchmarks): its proofs cannot verify, so the
/// daemon does not check them (`Config::verify_proofs`).
pub const RANDOM_KEY_FILE: &str = "random-key";

/// Where proofs run: one lane a GPU (sharing its memory budget across
/// circuits), or CPU lanes without one.
#[derive(Clone, Debug)]
pub enum Lanes {
    /// One lane a device.
    Gpu(Vec<Arc<DeviceMemory>>),
    /// `n` CPU lanes (the prover's CPU path).
    Cpu(usize),
}

impl Lanes {
    /// Number of lanes.
    pub fn len(&self) -> usize {
        match self {
            Lanes::Gpu(m) => m.len(),
            Lanes::Cpu(n) => *n,
        }
    }

    /// Whether there are no lanes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CUDA ordinal of lane `i`; -1 for a CPU lane.
    pub fn device(&self, i: usize) -> i32 {
        match self {
            Lanes::Gpu(m) => m.get(i).map_or(-1, |m| m.device()),
            Lanes::Cpu(_) => -1,
        }
    }
}

/// A loaded circuit: its prover (the key on every lane), its matrices.
pub struct LoadedCircuit {
    /// The circuit's id.
    pub id: String,
    /// The key on every lane.
    pub prover: MultiGpuProver,
    /// The R1CS matrices, shared with the GPU lanes' compact form (jobs
    /// borrow this copy, so that the GPUs evaluate `A z`, `B z`, `C z`:
    /// `cuzk_prover::Prover::with_r1cs`); on GPU lanes without their rows
    /// (`cuzk_prover::SparseR1cs::without_rows`), which only the compact
    /// form holds.
    pub matrices: Arc<ConstraintMatrices>,
    /// Instance variables, the constant one included.
    pub num_inputs: usize,
    /// Length of the full assignment.
    pub num_variables: usize,
    /// Host memory held by key and matrices (an estimate), bytes.
    pub host_bytes: u64,
    /// Time it took to load, ms.
    pub load_ms: f64,
    /// The key's prepared verifying key, where each proof is checked
    /// before it is stored (`Config::verify_proofs`, and a key that is not
    /// random points).
    pub verifier: Option<ark_groth16::PreparedVerifyingKey<ark_bls12_381::Bls12_381>>,
    in_use: AtomicUsize,
    last_used: Mutex<Instant>,
}

impl std::fmt::Debug for LoadedCircuit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedCircuit")
            .field("id", &self.id)
            .field("host_bytes", &self.host_bytes)
            .finish()
    }
}

impl LoadedCircuit {
    /// Proofs running against it now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::SeqCst)
    }
}

/// A circuit held for one proof (counted as in use until dropped).
#[derive(Debug)]
pub struct CircuitUse(Arc<LoadedCircuit>);

impl std::ops::Deref for CircuitUse {
    type Target = LoadedCircuit;
    fn deref(&self) -> &LoadedCircuit {
        &self.0
    }
}

impl Drop for CircuitUse {
    fn drop(&mut self) {
        self.0.in_use.fetch_sub(1, Ordering::SeqCst);
        *self.0.last_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }
}

/// The circuits of the key directories and those loaded.
#[derive(Debug)]
pub struct Registry {
    key_dirs: Vec<PathBuf>,
    budget: u64,
    lanes: Lanes,
    workers: usize,
    verify_keys: bool,
    verify_proofs: bool,
    loaded: Mutex<HashMap<String, Arc<LoadedCircuit>>>,
    /// One lock a circuit being loaded, so that it loads once.
    loading: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl Registry {
    /// A registry over `key_dirs`, keys held under `budget` bytes of host
    /// memory, proving on `lanes` with `workers` workers a lane; with
    /// `verify_keys`, every key point is checked as it loads; with
    /// `verify_proofs`, each loaded circuit without [`RANDOM_KEY_FILE`]
    /// carries its prepared verifying key ([`LoadedCircuit::verifier`]).
    pub fn new(
        key_dirs: Vec<PathBuf>,
        budget: u64,
        lanes: Lanes,
        workers: usize,
        verify_keys: bool,
        verify_proofs: bool,
    ) -> Self {
        Registry {
            key_dirs,
            budget,
            lanes,
            workers,
            verify_keys,
            verify_proofs,
            loaded: Mutex::new(HashMap::new()),
            loading: Mutex::new(HashMap::new()),
        }
    }

    /// The lanes proofs run on.
    pub fn lanes(&self) -> &Lanes {
        &self.lanes
    }

    /// The host memory budget for keys, bytes.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// The ids of every circuit directory under the key directories, sorted.
    pub fn circuits(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .key_dirs
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flatten()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join(PK_FILE).is_file() && e.path().join(R1CS_FILE).is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// The directory of circuit `id`.
    ///
    /// # Errors
    /// [`Error::NotFound`] naming the directories searched; an id that is
    /// not a plain name is [`Error::InvalidArgument`].
    pub fn dir(&self, id: &str) -> Result<PathBuf> {
        check_id(id)?;
        self.key_dirs
            .iter()
            .map(|d| d.join(id))
            .find(|d| d.join(PK_FILE).is_file() && d.join(R1CS_FILE).is_file())
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "no circuit `{id}`: no directory {id}/ with {PK_FILE} and {R1CS_FILE} under {} \
                     (write one with `cuzk keygen`)",
                    self.key_dirs
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// The loaded circuits.
    pub fn loaded(&self) -> Vec<Arc<LoadedCircuit>> {
        let mut v: Vec<_> = self.lock_loaded().values().cloned().collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    /// Host bytes of the loaded circuits.
    pub fn host_bytes(&self) -> u64 {
        self.lock_loaded().values().map(|c| c.host_bytes).sum()
    }

    /// Circuit `id` for one proof, loading it first if needed (blocking:
    /// reads and checks the key, uploads it to every GPU).
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown id; [`Error::InvalidArgument`]
    /// for an id that is not a plain name; [`Error::FailedPrecondition`]
    /// naming the file for circuit files that do not parse, hold a point
    /// off its curve, or disagree (damaged: write them again); [`Error::Io`]
    /// when a file cannot be read; [`Error::Prover`] when the key cannot be
    /// uploaded.
    pub fn acquire(&self, id: &str) -> Result<CircuitUse> {
        loop {
            let c = self.load(id)?;
            // Counted under the map's lock, where eviction decides: a
            // circuit evicted between load and here is loaded again.
            let l = self.lock_loaded();
            if l.get(id).is_some_and(|x| Arc::ptr_eq(x, &c)) {
                c.in_use.fetch_add(1, Ordering::SeqCst);
                return Ok(CircuitUse(c));
            }
        }
    }

    /// Loads circuit `id` if it is not loaded (PreloadKey).
    ///
    /// # Errors
    /// As [`Registry::acquire`].
    pub fn load(&self, id: &str) -> Result<Arc<LoadedCircuit>> {
        if let Some(c) = self.touch(id) {
            return Ok(c);
        }
        self.dir(id)?;
        let gate = {
            let mut l = self.loading.lock().unwrap_or_else(|p| p.into_inner());
            l.entry(id.to_string()).or_default().clone()
        };
        let _g = gate.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = self.touch(id) {
            return Ok(c);
        }
        let dir = self.dir(id)?;
        let c = Arc::new(self.read(id, &dir)?);
        tracing::info!(
            circuit = id,
            host_bytes = c.host_bytes,
            load_ms = c.load_ms,
            "circuit loaded"
        );
        self.lock_loaded().insert(id.to_string(), c.clone());
        self.evict_over_budget(id);
        Ok(c)
    }

    /// Drops circuit `id` if it is loaded and idle; true when dropped,
    /// false when a circuit of that id exists but is not loaded.
    ///
    /// # Errors
    /// [`Error::FailedPrecondition`] when proofs are running against it;
    /// [`Error::NotFound`] (or [`Error::InvalidArgument`] for an id that is
    /// not a plain name) when no key directory has it, as PreloadKey says.
    pub fn evict(&self, id: &str) -> Result<bool> {
        let mut l = self.lock_loaded();
        match l.get(id) {
            None => self.dir(id).map(|_| false),
            Some(c) if c.in_use() > 0 => Err(Error::FailedPrecondition(format!(
                "circuit `{id}` has {} proofs running: evict it when they end",
                c.in_use()
            ))),
            Some(_) => {
                let gone = l.remove(id);
                drop(l);
                drop(gone);
                release_free_heap();
                Ok(true)
            }
        }
    }

    fn touch(&self, id: &str) -> Option<Arc<LoadedCircuit>> {
        let c = self.lock_loaded().get(id).cloned()?;
        *c.last_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        Some(c)
    }

    fn lock_loaded(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<LoadedCircuit>>> {
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Evicts least recently used idle circuits (never `keep`) while the
    /// loaded ones exceed the budget. Circuits in use stay: the budget is
    /// then exceeded until they end.
    fn evict_over_budget(&self, keep: &str) {
        let mut l = self.lock_loaded();
        let mut gone = Vec::new();
        loop {
            let total: u64 = l.values().map(|c| c.host_bytes).sum();
            if total <= self.budget {
                break;
            }
            let victim = l
                .values()
                .filter(|c| c.id != keep && c.in_use() == 0)
                .min_by_key(|c| *c.last_used.lock().unwrap_or_else(|p| p.into_inner()))
                .map(|c| c.id.clone());
            match victim {
                Some(v) => {
                    tracing::info!(circuit = %v, "evicted (key host budget)");
                    gone.extend(l.remove(&v));
                }
                None => {
                    tracing::warn!(
                        total,
                        budget = self.budget,
                        "loaded keys exceed the key host budget; every other key is in use"
                    );
                    break;
                }
            }
        }
        drop(l);
        if !gone.is_empty() {
            drop(gone);
            release_free_heap();
        }
    }

    fn read(&self, id: &str, dir: &Path) -> Result<LoadedCircuit> {
        let t = Instant::now();
        // The R1CS first, before the key (about 47 GiB at 2^27). GPU lanes
        // read it straight into the compact form they evaluate (about 8
        // bytes an entry for PoRep-shaped circuits), never holding the
        // row-major matrices (about 48 bytes an entry, some 66 GB at 2^27);
        // the CPU lanes evaluate the rows.
        let file_error = |e| match e {
            // A file that does not decode is damaged; one that cannot be
            // read is this host's problem.
            cuzk_prover::Error::InvalidArgument(m) => Error::FailedPrecondition(m),
            other => Error::Prover(other),
        };
        // The prover refusing these files (InvalidArgument) is the files'
        // fault: the job fails, rather than going back to the queue.
        let damaged = |e: cuzk_prover::Error| match e {
            cuzk_prover::Error::InvalidArgument(m) => Error::FailedPrecondition(format!(
                "circuit `{id}` in {}: {m} (write its files again with `cuzk keygen`)",
                dir.display()
            )),
            other => Error::Prover(other),
        };
        let shape_of = |h: &cuzk_prover::r1cs_file::Header| Shape {
            num_constraints: h.num_constraints as usize,
            num_inputs: h.num_inputs as usize,
            num_variables: h.num_variables as usize,
        };
        let path = dir.join(R1CS_FILE);
        let (shape, prover, matrices, host_bytes, verifier) = match &self.lanes {
            Lanes::Gpu(m) => {
                // The compact form, shared by every lane: jobs borrow its
                // row-less matrices, and a proof evaluated on the CPU reads
                // the compact form. The rows of its chunks, freed as it was
                // built, go back to the system before the key is read.
                let f = cuzk_prover::r1cs_file::read_compact(&path).map_err(file_error)?;
                let shape = shape_of(&f.header);
                let sparse = Arc::new(f.r1cs);
                release_free_heap();
                let (pk, verifier) = self.read_key(id, dir, &shape)?;
                let bytes = pk.uncompressed_size() as u64 + sparse.bytes();
                let matrices = sparse.matrices_arc().clone();
                let prover = MultiGpuProver::with_memories(pk, m, self.workers)
                    .map_err(damaged)?
                    .with_r1cs(sparse)
                    .map_err(damaged)?;
                (shape, prover, matrices, bytes, verifier)
            }
            Lanes::Cpu(n) => {
                let f = cuzk_prover::r1cs_file::read(&path).map_err(file_error)?;
                let shape = shape_of(&f.header);
                let nonzeros: u64 = f.header.nonzeros.iter().sum();
                let matrices = Arc::new(f.matrices);
                let (pk, verifier) = self.read_key(id, dir, &shape)?;
                let bytes = pk.uncompressed_size() as u64 + nonzeros * 48;
                let prover = MultiGpuProver::cpu(pk, *n, self.workers).map_err(damaged)?;
                (shape, prover, matrices, bytes, verifier)
            }
        };
        let (num_inputs, num_variables) = (shape.num_inputs, shape.num_variables);
        Ok(LoadedCircuit {
            id: id.to_string(),
            prover,
            matrices,
            num_inputs,
            num_variables,
            host_bytes,
            load_ms: t.elapsed().as_secs_f64() * 1e3,
            verifier,
            in_use: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
        })
    }

    /// Circuit `id`'s proving key from `dir` (its points checked: on their
    /// curve, or fully with `verify_keys`), checked against the R1CS's
    /// `shape`, and its prepared verifying key where proofs are verified
    /// (not for random-point keys).
    fn read_key(
        &self,
        id: &str,
        dir: &Path,
        shape: &Shape,
    ) -> Result<(
        ProvingKey,
        Option<ark_groth16::PreparedVerifyingKey<ark_bls12_381::Bls12_381>>,
    )> {
        let pk_path = dir.join(PK_FILE);
        let f = std::fs::File::open(&pk_path)
            .map_err(|e| Error::io(format!("opening {}", pk_path.display()), e))?;
        let validate = if self.verify_keys {
            ark_serialize::Validate::Yes
        } else {
            ark_serialize::Validate::No
        };
        let pk = ProvingKey::deserialize_with_mode(
            std::io::BufReader::with_capacity(1 << 22, f),
            ark_serialize::Compress::No,
            validate,
        )
        .map_err(|e| {
            Error::FailedPrecondition(format!(
                "{}: not an ark-serialize uncompressed Groth16 proving key over \
                     BLS12-381: {e}",
                pk_path.display()
            ))
        })?;
        if !self.verify_keys {
            check_on_curve(&pk).map_err(|what| {
                Error::FailedPrecondition(format!(
                    "{}: a point of the {what} is not on its curve: the file is damaged \
                     (write it again with `cuzk keygen`)",
                    pk_path.display()
                ))
            })?;
        }
        check_agree(id, &pk, shape)?;
        let verifier = (self.verify_proofs && !dir.join(RANDOM_KEY_FILE).exists())
            .then(|| ark_groth16::prepare_verifying_key(&pk.vk));
        Ok((pk, verifier))
    }
}

/// Gives the C heap's free pages back to the system (glibc's
/// `malloc_trim`; nothing elsewhere). A circuit's rows are tens of
/// millions of small allocations: freed (after the GPU lanes' compaction,
/// or with an evicted circuit), glibc's arenas keep them, which the next
/// key's large allocations (their own mappings) and other processes
/// cannot use. Measured with PoRep-shaped 2^22 rows read from their file:
/// 1.96 GiB resident after the free, 0.17 GiB (the compact form) after
/// the trim; a 2^27 circuit has 32 times as many.
fn release_free_heap() {
    let t = Instant::now();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the system; it
    // takes no pointers and is thread-safe (glibc locks each arena).
    unsafe {
        libc::malloc_trim(0);
    }
    tracing::debug!(
        ms = t.elapsed().as_secs_f64() * 1e3,
        "returned the heap's free pages to the system"
    );
}

/// Whether every point of `pk` is on its curve (on all cores); else the
/// name of the first part that has one that is not.
fn check_on_curve(pk: &ProvingKey) -> std::result::Result<(), &'static str> {
    use rayon::prelude::*;
    let g1 = |v: &[ark_bls12_381::G1Affine]| v.par_iter().all(|p| p.is_on_curve());
    let g2 = |v: &[ark_bls12_381::G2Affine]| v.par_iter().all(|p| p.is_on_curve());
    let vk = &pk.vk;
    let parts: [(&'static str, bool); 6] = [
        ("verifying key", {
            g1(&[vk.alpha_g1, pk.beta_g1, pk.delta_g1])
                && g2(&[vk.beta_g2, vk.gamma_g2, vk.delta_g2])
                && g1(&vk.gamma_abc_g1)
        }),
        ("A query", g1(&pk.a_query)),
        ("B query in G1", g1(&pk.b_g1_query)),
        ("B query in G2", g2(&pk.b_g2_query)),
        ("H query", g1(&pk.h_query)),
        ("L query", g1(&pk.l_query)),
    ];
    match parts.iter().find(|p| !p.1) {
        Some((what, _)) => Err(what),
        None => Ok(()),
    }
}

/// What the R1CS file says of its circuit, for [`check_agree`].
struct Shape {
    num_constraints: usize,
    num_inputs: usize,
    num_variables: usize,
}

/// The key and the matrices must describe one circuit: as many instance
/// variables (the key's IC) and witness variables (the key's L query), and
/// an H query of the QAP domain's size less one (the domain: the smallest
/// power of two holding the constraints and the instance variables).
fn check_agree(id: &str, pk: &ProvingKey, shape: &Shape) -> Result<()> {
    let ic = pk.vk.gamma_abc_g1.len();
    let witness = shape.num_variables.saturating_sub(shape.num_inputs);
    if ic != shape.num_inputs || pk.l_query.len() != witness {
        return Err(Error::FailedPrecondition(format!(
            "circuit `{id}`: the key has {ic} instance and {} witness variables, the R1CS file \
             {} and {witness}: they belong to different circuits (write both with `cuzk keygen`)",
            pk.l_query.len(),
            shape.num_inputs
        )));
    }
    let domain = shape
        .num_constraints
        .checked_add(shape.num_inputs)
        .and_then(usize::checked_next_power_of_two);
    if domain.map(|d| d - 1) != Some(pk.h_query.len()) {
        return Err(Error::FailedPrecondition(format!(
            "circuit `{id}`: the key's H query has {} points, but the R1CS file's {} constraints \
             and {} instance variables make a QAP domain of {}: the key is damaged or for \
             another circuit (write both with `cuzk keygen`)",
            pk.h_query.len(),
            shape.num_constraints,
            shape.num_inputs,
            domain.map_or("more than 2^64".to_string(), |d| d.to_string())
        )));
    }
    Ok(())
}

/// Checks that circuit id `id` names a directory inside a key directory:
/// not empty, no slash or backslash, not starting with a dot.
///
/// # Errors
/// [`Error::InvalidArgument`] saying what to give.
pub fn check_id(id: &str) -> Result<()> {
    if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') {
        return Err(Error::InvalidArgument(format!(
            "circuit id `{id}`: give the name of a circuit directory (no slashes, not starting \
             with a dot)"
        )));
    }
    Ok(())
}

/// Writes circuit `id`'s directory under `key_dir` for a synthesized
/// circuit: the R1CS matrices of `synthesized` and a key from
/// ark-groth16's setup of `circuit` (the same circuit) with `rng`.
///
/// # Errors
/// [`Error::Io`] when the files cannot be written; [`Error::Prover`] when
/// the setup fails; [`Error::InvalidArgument`] for an id that is not a
/// plain directory name.
pub fn keygen<C, R>(
    key_dir: &Path,
    id: &str,
    circuit: C,
    synthesized: &cuzk_prover::Synthesized,
    rng: &mut R,
) -> Result<PathBuf>
where
    C: ark_relations::gr1cs::ConstraintSynthesizer<cuzk_prover::Fr>,
    R: rand::RngCore + rand::CryptoRng,
{
    use ark_groth16::Groth16;
    use ark_std::rand::SeedableRng;
    check_id(id)?;
    let dir = key_dir.join(id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    let mut srng = ark_std::rand::rngs::StdRng::from_seed(seed);
    let pk = Groth16::<ark_bls12_381::Bls12_381>::generate_random_parameters_with_reduction(
        circuit, &mut srng,
    )
    .map_err(|e| Error::InvalidArgument(format!("Groth16 setup of `{id}`: {e}")))?;
    write_dir(&dir, &pk, synthesized)?;
    Ok(dir)
}

/// Writes circuit `id`'s directory under `key_dir` for a PoRep-shaped
/// circuit of 2^`log_domain` (`cuzk_prover::synthetic::PorepShaped`, one
/// public input, structure from `seed`) with a random-point key of a real
/// key's density: for throughput benchmarks (its proofs do not verify).
/// The circuit's witnesses come from [`porep_witness`] with the same
/// `log_domain` and `seed`.
///
/// # Errors
/// [`Error::Io`] when the files cannot be written; [`Error::Prover`] for a
/// domain too small or beyond Fr's 2^32; [`Error::InvalidArgument`] for
/// an id that is not a plain directory name; [`Error::ResourceExhausted`]
/// when the circuit and its key need more than the host's memory.
pub fn keygen_porep<R: rand::RngCore>(
    key_dir: &Path,
    id: &str,
    log_domain: u32,
    seed: u64,
    rng: &mut R,
) -> Result<PathBuf> {
    use cuzk_prover::synthetic::PorepShaped;
    check_id(id)?;
    let c = PorepShaped::new(log_domain, 1, seed);
    c.check()?;
    check_host_memory(&c, true, cuzk_alloc::host_memory_total())?;
    let w = c.matrices()?;
    let pk = PorepShaped::random_key(&w, rng)?;
    let dir = key_dir.join(id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    write_dir(&dir, &pk, &w)?;
    let marker = dir.join(RANDOM_KEY_FILE);
    std::fs::write(
        &marker,
        "This circuit's proving key is random points (cuzk keygen --porep-log-domain), for \
         benchmarks: its proofs do not verify, and cuzk-daemon does not check them.\n",
    )
    .map_err(|e| Error::io(format!("writing {}", marker.display()), e))?;
    Ok(dir)
}

/// The assignment of the PoRep-shaped circuit of [`keygen_porep`]
/// (`log_domain`, `seed`) for the partition `values_seed`.
///
/// # Errors
/// [`Error::Prover`] for a domain too small or beyond Fr's 2^32;
/// [`Error::ResourceExhausted`] when building the circuit needs more than
/// the host's memory.
pub fn porep_witness(log_domain: u32, seed: u64, values_seed: u64) -> Result<crate::Assignment> {
    let c = cuzk_prover::synthetic::PorepShaped {
        values_seed,
        ..cuzk_prover::synthetic::PorepShaped::new(log_domain, 1, seed)
    };
    c.check()?;
    check_host_memory(&c, false, cuzk_alloc::host_memory_total())?;
    let w = c.matrices()?;
    crate::Assignment::from_full(&w.full_assignment, w.num_inputs)
}

/// Refuses, before any work, a PoRep-shaped circuit (with its key when
/// `with_key`) whose build needs more than `host_total` bytes, the host's
/// memory (`None`: unknown, not checked): a lower bound of its need
/// ([`cuzk_prover::synthetic::PorepShaped::host_bytes_at_least`]) beyond
/// the whole memory would end in the kernel's out-of-memory kill minutes
/// later.
fn check_host_memory(
    c: &cuzk_prover::synthetic::PorepShaped,
    with_key: bool,
    host_total: Option<u64>,
) -> Result<()> {
    let need = c.host_bytes_at_least(with_key);
    match host_total {
        Some(total) if need > total => Err(Error::ResourceExhausted(format!(
            "a PoRep-shaped circuit of 2^{} domain{} at least {:.0} GiB of host memory to \
             build; this host has {:.0} GiB: give a smaller log domain (the seed workload's \
             is 2^27), or build it on a larger host",
            c.log_domain,
            if with_key {
                " and its key need"
            } else {
                " needs"
            },
            need as f64 / (1u64 << 30) as f64,
            total as f64 / (1u64 << 30) as f64
        ))),
        _ => Ok(()),
    }
}

/// Writes `pk.bin`, `vk.bin` and `r1cs.bin` of a circuit into `dir`.
fn write_dir(dir: &Path, pk: &ProvingKey, synthesized: &cuzk_prover::Synthesized) -> Result<()> {
    let write = |name: &str, f: &dyn Fn(&mut std::io::BufWriter<std::fs::File>) -> Result<()>| {
        let p = dir.join(name);
        let file = std::fs::File::create(&p)
            .map_err(|e| Error::io(format!("creating {}", p.display()), e))?;
        let mut w = std::io::BufWriter::new(file);
        f(&mut w)?;
        use std::io::Write;
        w.flush()
            .map_err(|e| Error::io(format!("writing {}", p.display()), e))
    };
    let ser =
        |e: ark_serialize::SerializationError| Error::Internal(format!("serializing a key: {e}"));
    write(PK_FILE, &|w| pk.serialize_uncompressed(w).map_err(ser))?;
    write(VK_FILE, &|w| pk.vk.serialize_compressed(w).map_err(ser))?;
    cuzk_prover::r1cs_file::write(
        dir.join(R1CS_FILE),
        &synthesized.matrices,
        synthesized.num_inputs,
        synthesized.full_assignment.len(),
    )?;
    Ok(())
}

/// The verifying key of the circuit directory `dir`.
///
/// # Errors
/// [`Error::Io`] or [`Error::InvalidArgument`] when `vk.bin` cannot be read.
pub fn read_vk(dir: &Path) -> Result<ark_groth16::VerifyingKey<ark_bls12_381::Bls12_381>> {
    let p = dir.join(VK_FILE);
    let bytes = std::fs::read(&p).map_err(|e| Error::io(format!("reading {}", p.display()), e))?;
    ark_groth16::VerifyingKey::deserialize_compressed(&bytes[..]).map_err(|e| {
        Error::InvalidArgument(format!(
            "{}: not a compressed verifying key: {e}",
            p.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// An id that would leave the key directory, and a domain beyond Fr's
    /// 2^32, are refused before anything is written.
    #[test]
    fn keygen_refuses_bad_ids_and_domains() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for id in ["../escape", "a/b", ".hidden", ""] {
            let e = keygen_porep(dir.path(), id, 10, 1, &mut rng).unwrap_err();
            assert!(e.to_string().contains("no slashes"), "{id}: {e}");
        }
        let e = keygen_porep(dir.path(), "big", 99, 1, &mut rng).unwrap_err();
        assert!(e.to_string().contains("up to 2^32"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        assert!(porep_witness(64, 1, 0).is_err());
    }

    /// A circuit whose build needs more than the host's memory is refused
    /// before any work, with both figures; one within it, or on a host of
    /// unknown memory, passes.
    #[test]
    fn porep_builds_beyond_the_host_memory_are_refused() {
        use cuzk_prover::synthetic::PorepShaped;
        let c28 = PorepShaped::new(28, 1, 1);
        let e = check_host_memory(&c28, true, Some(128 << 30)).unwrap_err();
        assert!(matches!(e, Error::ResourceExhausted(_)), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("2^28 domain and its key need at least 136 GiB")
                && msg.contains("this host has 128 GiB"),
            "{msg}"
        );
        check_host_memory(&c28, false, Some(128 << 30)).unwrap();
        check_host_memory(&PorepShaped::new(27, 1, 1), true, Some(128 << 30)).unwrap();
        check_host_memory(&c28, true, None).unwrap();
        // On this host: 2^32 exceeds any test machine's memory (where the
        // host's memory is known: elsewhere nothing is checked).
        if cuzk_alloc::host_memory_total().is_none() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let e = keygen_porep(dir.path(), "huge", 32, 1, &mut rng).unwrap_err();
        assert!(e.to_string().contains("and its key need at least"), "{e}");
        assert!(porep_witness(32, 1, 0)
            .unwrap_err()
            .to_string()
            .contains("needs at least"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    fn registry(dir: &Path) -> Registry {
        Registry::new(
            vec![dir.to_path_buf()],
            1 << 30,
            Lanes::Cpu(1),
            1,
            false,
            true,
        )
    }

    #[test]
    fn keys_load_once_evict_and_refuse_damage() {
        let tmp = tempfile::tempdir().unwrap();
        let c = cuzk_prover::circuits::Sha256Chain::new([1; 32], 0);
        let syn = cuzk_prover::synthesize(c.clone(), false).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        keygen(tmp.path(), "t", c, &syn, &mut rng).unwrap();
        let r = registry(tmp.path());
        assert_eq!(r.circuits(), vec!["t".to_string()]);
        let a = r.load("t").unwrap();
        let b = r.load("t").unwrap();
        assert!(Arc::ptr_eq(&a, &b), "loaded once");
        assert_eq!(a.num_inputs, syn.num_inputs);
        {
            let _u = r.acquire("t").unwrap();
            assert!(r.evict("t").is_err(), "in use");
        }
        assert!(r.evict("t").unwrap());
        assert!(!r.evict("t").unwrap());
        assert!(matches!(r.load("x"), Err(Error::NotFound(_))));
        assert!(matches!(r.dir("../t"), Err(Error::InvalidArgument(_))));
        // A damaged point of the A query (its y coordinate's low byte).
        let pk = tmp.path().join("t").join(PK_FILE);
        let mut bytes = std::fs::read(&pk).unwrap();
        let at = bytes.len() / 3;
        bytes[at] ^= 0x01;
        std::fs::write(&pk, &bytes).unwrap();
        let e = registry(tmp.path()).load("t").unwrap_err().to_string();
        assert!(
            e.contains("not on its curve") || e.contains("not an ark-serialize"),
            "{e}"
        );
    }

    /// A key whose H query does not fit the R1CS file's domain (one point
    /// short, one too many) is the files' fault: FailedPrecondition, which
    /// fails a job instead of putting it back in the queue.
    #[test]
    fn keys_with_a_wrong_h_query_are_refused_at_load() {
        let tmp = tempfile::tempdir().unwrap();
        let c = cuzk_prover::circuits::Sha256Chain::new([1; 32], 0);
        let syn = cuzk_prover::synthesize(c.clone(), false).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(6);
        keygen(tmp.path(), "t", c, &syn, &mut rng).unwrap();
        let pk_path = tmp.path().join("t").join(PK_FILE);
        let good = std::fs::read(&pk_path).unwrap();
        let pk = ProvingKey::deserialize_uncompressed_unchecked(&good[..]).unwrap();
        for len in [pk.h_query.len() - 1, pk.h_query.len() + 1] {
            let mut bad = pk.clone();
            bad.h_query.resize(len, bad.h_query[0]);
            let mut bytes = Vec::new();
            bad.serialize_uncompressed(&mut bytes).unwrap();
            std::fs::write(&pk_path, &bytes).unwrap();
            let e = registry(tmp.path()).load("t").unwrap_err();
            assert!(
                matches!(&e, Error::FailedPrecondition(m) if m.contains("H query has")),
                "{e}"
            );
        }
    }
}
