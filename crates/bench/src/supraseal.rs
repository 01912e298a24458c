//! supraseal-c2 0.1.2 beside cuzk's prover (with the `supraseal` feature):
//! the same key (written in bellperson's parameter layout), the same
//! evaluations, assignment, r and s; its proof checked against cuzk's and
//! its time per proof beside cuzk's.

use crate::progress::step;
use crate::report::Record;
use crate::timing::{median, once_ms};
use anyhow::{anyhow, Result};
use cuzk_prover::{Proof, ProofJob, Prover};
use cuzk_supraseal_peer::{write_params, Job, Supraseal};

/// The peer's name in checks and figures.
pub(crate) const SUPRASEAL: &str = "supraseal-c2 0.1.2";

/// Removes the parameter file however the comparison ends.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes `prover`'s key as supraseal-c2's parameter file (in the system's
/// temporary directory, removed afterwards), drops `prover` (its device
/// memory, trimmed from `mem`'s pools, and host copies), proves `job` through supraseal-c2 once
/// (waiting for its parameter load) and then `reps` times, and records: a
/// check of cuzk's proof `ours` against each of supraseal-c2's, the median
/// time per proof, and the first proof with the load. Returns
/// supraseal-c2's proof.
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
) -> Result<Proof> {
    step(format!("bench {layer}: {name}: {SUPRASEAL}"));
    let path = std::env::temp_dir().join(format!(
        "cuzk-bench-supraseal-{}-{n}.params",
        std::process::id()
    ));
    let scratch = Scratch(path.clone());
    let h_points = prover.proving_key().h_query.len();
    let density = write_params(prover.proving_key(), &scratch.0).map_err(|e| anyhow!(e))?;
    // supraseal-c2 allocates with plain cudaMalloc, which cannot use the
    // bytes cuzk's pools keep cached: hand them back to the device.
    drop(prover);
    mem.trim()?;
    drop(mem);
    let abc = job.evaluations(false)?;
    let peer = Job {
        abc: [&abc[0], &abc[1], &abc[2]],
        assignment: job.full_assignment,
        r: job.r,
        s: job.s,
    };
    let (load_ms, ss) = once_ms(|| {
        let ss = Supraseal::load(&path, density, h_points)?;
        let first = ss.prove(&[peer])?;
        Ok::<_, String>((ss, first))
    });
    let (ss, first) = ss.map_err(|e| anyhow!(e))?;
    let mut times = Vec::new();
    let mut proofs = first;
    for _ in 0..reps {
        let (ms, p) = once_ms(|| ss.prove(&[peer]));
        proofs.extend(p.map_err(|e| anyhow!(e))?);
        times.push(ms);
    }
    drop(ss);
    drop(scratch);
    // Every proof is checked: the first that differs from cuzk's, else the
    // first.
    let theirs = proofs
        .iter()
        .find(|p| *p != ours)
        .unwrap_or(&proofs[0])
        .clone();
    rec.checks.values(
        layer,
        format!("{name}: cuzk prover, GPU"),
        SUPRASEAL,
        n,
        ours,
        &theirs,
    );
    if !times.is_empty() {
        rec.figure(
            layer,
            name,
            "supraseal-c2 0.1.2 (GPU and host cores)",
            n,
            median(times),
            "wall, host to host",
        );
    }
    rec.figure(
        layer,
        name,
        "supraseal-c2 0.1.2: parameter load + first proof",
        n,
        load_ms,
        "wall, once",
    );
    Ok(theirs)
}
