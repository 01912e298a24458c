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
/// `mem`'s pools, and host copies), and has the `cuzk-supraseal` process
/// prove `job` once (waiting for its parameter load) and then `reps`
/// times. Records a check of cuzk's proof `ours` against each of
/// supraseal-c2's (skipped, with the reason, when the peer cannot run:
/// missing, failing, out of disk, past [`PEER_TIMEOUT`]; that is no verdict
/// on cuzk), the median time per proof, and the load with the first proof.
/// Returns supraseal-c2's proof when it ran.
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
    match run_peer(layer, name, n, prover, job, reps) {
        Ok(resp) => {
            // Which of the peer's proofs (the same inputs each time) differ
            // from cuzk's: all of them points at the inputs or cuzk, some
            // at the peer.
            let differ: Vec<usize> = (0..resp.proofs.len())
                .filter(|&i| resp.proofs[i] != *ours)
                .collect();
            if !differ.is_empty() {
                progress::say(format!(
                    "cuzk-bench: {name}: {} of {SUPRASEAL}'s {} proofs of the same inputs \
                     differ from cuzk's (proofs {:?}, the first after its parameter load is 0)",
                    differ.len(),
                    resp.proofs.len(),
                    differ
                ));
            }
            // Every proof is checked: the first that differs from cuzk's,
            // else the first.
            let Some(theirs) = differ
                .first()
                .map(|&i| &resp.proofs[i])
                .or(resp.proofs.first())
                .cloned()
            else {
                rec.checks.skip(
                    layer,
                    what,
                    SUPRASEAL,
                    n,
                    "cuzk-supraseal answered no proof",
                );
                return Ok(None);
            };
            rec.checks.proofs(layer, what, SUPRASEAL, n, ours, &theirs);
            if !resp.times_ms.is_empty() {
                rec.figure(
                    layer,
                    name,
                    "supraseal-c2 0.1.2 (GPU and host cores)",
                    n,
                    median(resp.times_ms),
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
            Ok(Some(theirs))
        }
        Err(why) => {
            progress::say(format!(
                "cuzk-bench: {name}: {SUPRASEAL} did not run: {why}"
            ));
            rec.checks.skip(layer, what, SUPRASEAL, n, why);
            Ok(None)
        }
    }
}

/// The peer's run (see [`compare`]): its response, or why there is none.
fn run_peer(
    layer: &'static str,
    name: &str,
    n: usize,
    (prover, mem): (Prover, std::sync::Arc<cuzk_alloc::DeviceMemory>),
    job: &ProofJob<'_>,
    reps: usize,
) -> std::result::Result<Response, String> {
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
    let (params, request, response) = (&scratch.0[0], &scratch.0[1], &scratch.0[2]);
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
    let prepared = written + start_request.elapsed().as_secs_f64();
    let mut child = std::process::Command::new(&exe)
        .arg(request)
        .arg(response)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("running {}: {e}", exe.display()))?;
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
    // Where the row's time goes beyond the proofs (the layer's length).
    progress::say(format!(
        "  {name}: {SUPRASEAL}: parameter file written in {written:.1} s, files ready in \
         {prepared:.1} s, cuzk-supraseal ran {:.1} s",
        start.elapsed().as_secs_f64()
    ));
    Response::read(response)
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
