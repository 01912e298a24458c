//! supraseal-c2 0.1.2 beside cuzk's prover (with the `supraseal` feature):
//! the same key (written in bellperson's parameter layout), the same
//! evaluations, assignment, r and s, proved in the `cuzk-supraseal` process
//! (crates/supraseal-peer); its proof checked against cuzk's and its time
//! per proof beside cuzk's.

use crate::progress::step;
use crate::report::Record;
use crate::timing::median;
use anyhow::{anyhow, Result};
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

/// Writes `prover`'s key as supraseal-c2's parameter file (in the system's
/// temporary directory, removed afterwards), drops `prover` (its device
/// memory, trimmed from `mem`'s pools, and host copies), and has the
/// `cuzk-supraseal` process prove `job` once (waiting for its parameter
/// load) and then `reps` times. Records a check of cuzk's proof `ours`
/// against each of supraseal-c2's (skipped, with the reason, when the
/// process is missing or fails: that is no verdict on cuzk), the median
/// time per proof, and the load with the first proof. Returns
/// supraseal-c2's proof when it ran.
#[allow(clippy::too_many_arguments)]
pub(crate) fn compare(
    rec: &mut Record,
    layer: &'static str,
    name: &str,
    n: usize,
    (prover, mem): (Prover, std::sync::Arc<cuzk_alloc::DeviceMemory>),
    job: &ProofJob<'_>,
    ours: &Proof,
    reps: usize,
) -> Result<Option<Proof>> {
    let what = format!("{name}: cuzk prover, GPU");
    let Some(exe) = peer_exe() else {
        rec.checks.skip(
            layer,
            what,
            SUPRASEAL,
            n,
            "cuzk-supraseal is not beside cuzk-bench (cargo build --release -p \
             cuzk-supraseal-peer --features gpu)",
        );
        return Ok(None);
    };
    step(format!("bench {layer}: {name}: {SUPRASEAL}"));
    let tmp = std::env::temp_dir();
    let stem = format!("cuzk-bench-supraseal-{}-{n}", std::process::id());
    let scratch = Scratch(
        ["params", "request", "response"]
            .iter()
            .map(|x| tmp.join(format!("{stem}.{x}")))
            .collect(),
    );
    let (params, request, response) = (&scratch.0[0], &scratch.0[1], &scratch.0[2]);
    let h_points = prover.proving_key().h_query.len() as u64;
    let density = write_params(prover.proving_key(), params).map_err(|e| anyhow!(e))?;
    // supraseal-c2 allocates with plain cudaMalloc, which cannot use the
    // bytes cuzk's pools keep cached: hand them back to the device.
    drop(prover);
    mem.trim()?;
    drop(mem);
    Request {
        params: params.clone(),
        density,
        h_points,
        abc: job.evaluations(false)?,
        assignment: job.full_assignment.to_vec(),
        r: job.r,
        s: job.s,
        reps: reps as u32,
    }
    .write(request)
    .map_err(|e| anyhow!(e))?;
    let out = std::process::Command::new(&exe)
        .arg(request)
        .arg(response)
        .output()
        .map_err(|e| anyhow!("running {}: {e}", exe.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: String = err.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
        rec.checks.skip(
            layer,
            what,
            SUPRASEAL,
            n,
            format!("cuzk-supraseal failed ({}): {tail}", out.status),
        );
        return Ok(None);
    }
    let resp = Response::read(response).map_err(|e| anyhow!(e))?;
    drop(scratch);
    // Every proof is checked: the first that differs from cuzk's, else the
    // first.
    let Some(theirs) = resp
        .proofs
        .iter()
        .find(|p| *p != ours)
        .or(resp.proofs.first())
        .cloned()
    else {
        return Err(anyhow!("cuzk-supraseal answered without a proof"));
    };
    rec.checks.values(layer, what, SUPRASEAL, n, ours, &theirs);
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
