//! supraseal-c2 0.1.2 beside cuzk's prover (with the `supraseal` feature):
//! the same key (written in bellperson's parameter layout), the same
//! evaluations, assignment, r and s, proved in the `cuzk-supraseal` process
//! (crates/supraseal-peer); its proof checked against cuzk's and its time
//! per proof beside cuzk's.

use crate::progress::{self, step};
use crate::report::Record;
use crate::timing::median;
use anyhow::Result;
use cuzk_prover::{Proof, ProofJob, Prover};
use cuzk_supraseal_peer::request::{Request, Response};
use cuzk_supraseal_peer::write_params;

/// The peer's name in checks and figures.
pub(crate) const SUPRASEAL: &str = "supraseal-c2 0.1.2";

/// Whether this run has started the peer once already (see [`compare`]).
static WARMED_UP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Removes its files however the comparison ends.
struct Scratch(Vec<std::path::PathBuf>);

impl Drop for Scratch {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The `cuzk-supraseal` executable beside this one (the bundle's bin/, or
/// cargo's target folder), if it was built.
fn peer_exe() -> Option<std::path::PathBuf> {
    let me = std::env::current_exe().ok()?;
    let p = me.parent()?.join("cuzk-supraseal");
    p.is_file().then_some(p)
}

/// Longest wait for the `cuzk-supraseal` process.
const PEER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(900);

/// Writes `prover`'s key as supraseal-c2's parameter file (in the system's
/// temporary directory, removed afterwards, as are files that an earlier,
/// killed run left), drops `prover` (its device memory, trimmed from
/// `mem`'s pools, and host copies), and runs the `cuzk-supraseal` process
/// on `job`:
/// - as it runs in production, for its first proof (waiting for its
///   parameter load) and `reps` more: the median time per proof and the
///   load with the first proof are recorded, and cuzk's proof `ours` is
///   checked against them: equal when one of them equals it. How many
///   differ is printed: supraseal-c2 0.1.2's split MSMs accumulate into one
///   bucket buffer from two CUDA streams without ordering them, so with
///   launches free to overlap some of its proofs of the same inputs differ
///   (the peer's race, figures in BENCHMARKS.md);
/// - only when none of them equals `ours` (or that run failed): again with
///   `CUDA_LAUNCH_BLOCKING=1` (each kernel launch waits for the last), for
///   one proof, which the same code then proves deterministically: the
///   check is against that proof. Its second parameter load and slow
///   proof (most of the peer's row at 2^26, BENCHMARKS.md) are spent only
///   where the race or a real difference calls for them.
///
/// The check is skipped, with the reason, when the peer cannot run
/// (missing, failing, out of disk, past [`PEER_TIMEOUT`]). Returns the
/// proof checked against cuzk's when the peer ran.
///
/// The run's first comparison starts with one untimed process (its time
/// printed): supraseal-c2's build (sppark's nvcc flags) carries SASS for
/// sm_80 and PTX for compute_80, none for sm_90, so on an H100 or H200 the
/// driver first compiles its kernels from PTX and caches them on the
/// machine. Production reaches that cache after its first run; without
/// the warm-up the one-time compile (seconds) would land in the first
/// "parameter load + first proof".
#[allow(clippy::too_many_arguments)]
pub(crate) fn compare(
    rec: &mut Record,
    layer: &'static str,
    name: &str,
    n: usize,
    prover: (Prover, std::sync::Arc<cuzk_alloc::DeviceMemory>),
    job: &ProofJob<'_>,
    ours: &Proof,
    reps: usize,
) -> Result<Option<Proof>> {
    let what = format!("{name}: cuzk prover, GPU");
    let peer = match Peer::prepare(layer, name, n, prover, job, reps) {
        Ok(p) => p,
        Err(why) => return Ok(skipped(rec, layer, &what, name, n, why)),
    };
    if !WARMED_UP.swap(true, std::sync::atomic::Ordering::Relaxed) {
        let t = std::time::Instant::now();
        let ran = peer.run(Some(0), false);
        progress::say(format!(
            "  {name}: {SUPRASEAL}: untimed warm-up process {} in {:.1} s (the driver's one-time \
             compile of its PTX for this GPU, if the machine had none cached)",
            if ran.is_ok() { "ran" } else { "failed" },
            t.elapsed().as_secs_f64()
        ));
        // A peer that cannot run fails the same way timed: not again.
        if let Err(why) = ran {
            return Ok(skipped(rec, layer, &what, name, n, why));
        }
    }
    let mut overlapping = Vec::new();
    match peer.run(None, false) {
        Ok(resp) => {
            if !resp.times_ms.is_empty() {
                rec.figure(
                    layer,
                    name,
                    "supraseal-c2 0.1.2 (GPU and host cores)",
                    n,
                    median(resp.times_ms.clone()),
                    "wall, host to host",
                );
            }
            rec.figure(
                layer,
                name,
                "supraseal-c2 0.1.2: parameter load + first proof",
                n,
                resp.load_and_first_ms,
                "wall, once",
            );
            let differ: Vec<usize> = (0..resp.proofs.len())
                .filter(|&i| resp.proofs[i] != *ours)
                .collect();
            progress::say(format!(
                "  {name}: {SUPRASEAL}: {} of its {} proofs with overlapping launches differ \
                 from cuzk's{}",
                differ.len(),
                resp.proofs.len(),
                if differ.is_empty() {
                    String::new()
                } else {
                    format!(" (proofs {differ:?}; 0 is the first after its parameter load)")
                }
            ));
            if let Some(same) = resp.proofs.iter().find(|p| *p == ours) {
                rec.checks.proofs(layer, what, SUPRASEAL, n, ours, same);
                return Ok(Some(same.clone()));
            }
            overlapping = resp.proofs;
        }
        Err(why) => progress::say(format!(
            "cuzk-bench: {name}: {SUPRASEAL} with overlapping launches did not run ({why}): \
             no time recorded"
        )),
    }
    let serial = match peer.run(Some(0), true) {
        Ok(r) => r,
        Err(why) => return Ok(skipped(rec, layer, &what, name, n, why)),
    };
    let Some(theirs) = serial.proofs.first().cloned() else {
        return Ok(skipped(
            rec,
            layer,
            &what,
            name,
            n,
            "cuzk-supraseal answered no proof".into(),
        ));
    };
    // Whether the peer's race or a real difference: its overlapping
    // proofs against its deterministic one.
    if !overlapping.is_empty() {
        progress::say(format!(
            "  {name}: {SUPRASEAL}: {} of its {} proofs with overlapping launches differ from \
             its proof with serialized launches",
            overlapping.iter().filter(|p| **p != theirs).count(),
            overlapping.len()
        ));
    }
    rec.checks.proofs(layer, what, SUPRASEAL, n, ours, &theirs);
    Ok(Some(theirs))
}

/// Records the peer's check as skipped with `why`; returns no proof.
fn skipped(
    rec: &mut Record,
    layer: &'static str,
    what: &str,
    name: &str,
    n: usize,
    why: String,
) -> Option<Proof> {
    progress::say(format!(
        "cuzk-bench: {name}: {SUPRASEAL} did not run: {why}"
    ));
    rec.checks.skip(layer, what.to_string(), SUPRASEAL, n, why);
    None
}

/// The peer's files for one job, ready for `cuzk-supraseal` (see
/// [`compare`]); removed when this drops.
struct Peer {
    exe: std::path::PathBuf,
    scratch: Scratch,
    name: String,
}

impl Peer {
    /// Writes the parameter file and the request, after dropping `prover`.
    fn prepare(
        layer: &'static str,
        name: &str,
        n: usize,
        (prover, mem): (Prover, std::sync::Arc<cuzk_alloc::DeviceMemory>),
        job: &ProofJob<'_>,
        reps: usize,
    ) -> std::result::Result<Peer, String> {
        let Some(exe) = peer_exe() else {
            return Err(
                "cuzk-supraseal is not beside cuzk-bench (cargo build --release -p \
                 cuzk-supraseal-peer --features gpu)"
                    .into(),
            );
        };
        step(format!("bench {layer}: {name}: {SUPRASEAL}"));
        let tmp = std::env::temp_dir();
        remove_stale(&tmp);
        let stem = format!("{STEM}{}-{n}", std::process::id());
        let scratch = Scratch(
            ["params", "request", "response"]
                .iter()
                .map(|x| tmp.join(format!("{stem}.{x}")))
                .collect(),
        );
        let (params, request) = (&scratch.0[0], &scratch.0[1]);
        let h_points = prover.proving_key().h_query.len() as u64;
        let written = std::time::Instant::now();
        let density = write_params(prover.proving_key(), params)?;
        let written = written.elapsed().as_secs_f64();
        // supraseal-c2 allocates with plain cudaMalloc, which cannot use the
        // bytes cuzk's pools keep cached: hand them back to the device.
        drop(prover);
        mem.trim()
            .map_err(|e| format!("trimming cuzk's pools: {e}"))?;
        drop(mem);
        let start_request = std::time::Instant::now();
        Request {
            params: params.clone(),
            density,
            h_points,
            abc: job
                .evaluations(false)
                .map_err(|e| format!("evaluations: {e}"))?,
            assignment: job.full_assignment.to_vec(),
            r: job.r,
            s: job.s,
            reps: reps as u32,
        }
        .write(request)?;
        // Where the row's time goes beyond the proofs (the layer's length).
        progress::say(format!(
            "  {name}: {SUPRASEAL}: parameter file written in {written:.1} s, files ready in \
             {:.1} s",
            written + start_request.elapsed().as_secs_f64()
        ));
        Ok(Peer {
            exe,
            scratch,
            name: name.to_string(),
        })
    }

    /// Runs `cuzk-supraseal` on the files (`reps`: its proofs after the
    /// first, else the request's; `serial`: with `CUDA_LAUNCH_BLOCKING=1`)
    /// and reads its response.
    fn run(&self, reps: Option<u32>, serial: bool) -> std::result::Result<Response, String> {
        let (request, response) = (&self.scratch.0[1], &self.scratch.0[2]);
        let mut cmd = std::process::Command::new(&self.exe);
        cmd.arg(request).arg(response);
        if let Some(r) = reps {
            cmd.arg(r.to_string());
        }
        if serial {
            cmd.env("CUDA_LAUNCH_BLOCKING", "1");
        }
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("running {}: {e}", self.exe.display()))?;
        let start = std::time::Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if start.elapsed() > PEER_TIMEOUT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "cuzk-supraseal ran past {} s and was killed",
                        PEER_TIMEOUT.as_secs()
                    ));
                }
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(100)),
                Err(e) => return Err(format!("waiting for cuzk-supraseal: {e}")),
            }
        };
        if !status.success() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            let lines: Vec<&str> = err.lines().collect();
            let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
            return Err(format!("cuzk-supraseal failed ({status}): {tail}"));
        }
        progress::say(format!(
            "  {}: {SUPRASEAL}: cuzk-supraseal ran {:.1} s ({} launches)",
            self.name,
            start.elapsed().as_secs_f64(),
            if serial { "serialized" } else { "overlapping" }
        ));
        Response::read(response)
    }
}

/// The stem of the peer's scratch files in the temporary directory.
const STEM: &str = "cuzk-bench-supraseal-";

/// Removes scratch files of earlier runs that were killed before they
/// could (tens of GB at 2^26).
fn remove_stale(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(STEM) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
