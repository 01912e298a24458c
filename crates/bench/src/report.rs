//! The benchmark report: figures and checks collected by a run, the machine,
//! and report.json (with its schema check).

use crate::checks::{Checks, Verdict};
use serde_json::{json, Value};

/// One measured figure.
#[derive(Clone, Debug)]
pub(crate) struct Figure {
    /// Layer: field, alloc, ntt, msm, prover.
    pub(crate) layer: &'static str,
    /// Operation and size, e.g. "NTT forward 2^24".
    pub(crate) name: String,
    /// Who computed it, e.g. "cuzk GPU, natural order (NN)".
    pub(crate) implementation: String,
    /// Problem size in elements (bytes for the allocator).
    pub(crate) elements: usize,
    /// Median time in milliseconds.
    pub(crate) median_ms: f64,
    /// How it was timed (device events, wall time, ...).
    pub(crate) timing: &'static str,
}

impl Figure {
    /// True for figures measured on the GPU (the rest ran on the CPU).
    pub(crate) fn on_gpu(&self) -> bool {
        self.implementation.contains("GPU") || self.layer == "alloc"
    }
}

/// One batch of proofs through `MultiGpuProver` on one GPU: what a
/// proving farm sees (time per partition, throughput, how busy the GPU
/// was, memory).
#[derive(Clone, Debug)]
pub(crate) struct Batch {
    /// Layer (prover).
    pub(crate) layer: &'static str,
    /// The circuit and size, e.g. "Groth16 proof 2^24".
    pub(crate) name: String,
    /// Partitions in the batch.
    pub(crate) partitions: usize,
    /// Worker threads on the GPU.
    pub(crate) workers: usize,
    /// The device memory budget's cap, bytes (`None`: the whole card).
    pub(crate) cap_bytes: Option<u64>,
    /// Wall time of the batch, milliseconds.
    pub(crate) wall_ms: f64,
    /// Fraction of the batch's time with a proof in its GPU stage, from
    /// CUDA events (`cuzk_prover::gpu_busy_fraction_device`).
    pub(crate) busy_fraction: f64,
    /// Peak of the device budget's claims during the batch, bytes (the
    /// resident key included).
    pub(crate) device_peak_bytes: u64,
    /// Peak resident set of the bench process during the batch (from just
    /// before it), bytes (Linux VmHWM, reset before the batch; 0
    /// elsewhere).
    pub(crate) host_peak_bytes: u64,
    /// Key bytes streamed from host memory per proof.
    pub(crate) streamed_bytes: u64,
    /// Whether the proofs ran H's MSM beside the witness MSMs
    /// (`cuzk_prover::ProofTimings::msm_overlapped`, of every proof).
    pub(crate) msm_overlapped: bool,
}

impl Batch {
    /// Wall time per partition, milliseconds.
    pub(crate) fn per_partition_ms(&self) -> f64 {
        self.wall_ms / self.partitions.max(1) as f64
    }

    /// Proofs a second.
    pub(crate) fn proofs_per_s(&self) -> f64 {
        self.partitions as f64 / (self.wall_ms / 1e3)
    }
}

/// What a run collects: its figures, its batches and its checks.
#[derive(Debug)]
pub(crate) struct Record {
    /// Figures, in the order measured.
    pub(crate) figures: Vec<Figure>,
    /// Batches of proofs, in the order run.
    pub(crate) batches: Vec<Batch>,
    /// Correctness checks, in the order run.
    pub(crate) checks: Checks,
    /// Each layer run so far and its wall time in seconds (setup, figures
    /// and checks together), in the order run.
    pub(crate) layer_seconds: Vec<(String, f64)>,
}

impl Record {
    /// Adds one figure.
    pub(crate) fn figure(
        &mut self,
        layer: &'static str,
        name: impl Into<String>,
        implementation: impl Into<String>,
        elements: usize,
        median_ms: f64,
        timing: &'static str,
    ) {
        self.figures.push(Figure {
            layer,
            name: name.into(),
            implementation: implementation.into(),
            elements,
            median_ms,
            timing,
        });
    }
}

/// The machine a report was measured on.
#[derive(Clone, Debug)]
pub(crate) struct Machine {
    /// GPU description, or "none (...)".
    pub(crate) gpu: String,
    /// CPU model.
    pub(crate) cpu: String,
    /// Hardware threads.
    pub(crate) cpu_threads: usize,
    /// NVIDIA driver version, or "none".
    pub(crate) driver: String,
    /// cuzk's git commit at build time.
    pub(crate) commit: String,
    /// When the run started (UTC, RFC 3339 from `date`), or "unknown".
    pub(crate) date: String,
}

/// The report as JSON: `machine`, `cuda_compiled`, `seed`, `figures` (each
/// with layer, operation, implementation, size, unit, median_ms,
/// throughput, timing, machine and the speed-up over the arkworks reference
/// of the same operation where there is one), `checks` (each with layer,
/// name, against, size, verdict `equal` / `mismatch` / `skipped`, `detail`
/// for a mismatch, `why` for a skip, and seed) and the overall `verdict`:
/// `pass` when no check is a mismatch, else `fail`.
pub(crate) fn to_json(machine: &Machine, cuda_compiled: bool, seed: u64, rec: &Record) -> Value {
    let figs = &rec.figures;
    let rows: Vec<Value> = figs
        .iter()
        .map(|f| {
            let rate = f.elements as f64 / (f.median_ms / 1e3);
            json!({
                "layer": f.layer,
                "operation": f.name,
                "implementation": f.implementation,
                "size": f.elements,
                "unit": "ms",
                "median_ms": f.median_ms,
                "throughput_elements_per_s": rate,
                "timing": f.timing,
                "machine": if f.on_gpu() { &machine.gpu } else { &machine.cpu },
                "speedup_vs_arkworks": speedup(figs, f),
            })
        })
        .collect();
    let checks: Vec<Value> = rec
        .checks
        .all()
        .iter()
        .map(|c| {
            let mut v = json!({
                "layer": c.layer,
                "name": c.name,
                "against": c.against,
                "size": c.size,
                "verdict": c.verdict.name(),
                "seed": c.seed,
            });
            match &c.verdict {
                Verdict::Equal => {}
                Verdict::Mismatch { detail } => v["detail"] = json!(detail),
                Verdict::Skipped { why } => v["why"] = json!(why),
            }
            v
        })
        .collect();
    let batches: Vec<Value> = rec
        .batches
        .iter()
        .map(|b| {
            json!({
                "layer": b.layer,
                "name": b.name,
                "partitions": b.partitions,
                "workers": b.workers,
                "cap_bytes": b.cap_bytes,
                "wall_ms": b.wall_ms,
                "per_partition_ms": b.per_partition_ms(),
                "proofs_per_s": b.proofs_per_s(),
                "gpu_busy_fraction": b.busy_fraction,
                "device_peak_bytes": b.device_peak_bytes,
                "host_peak_bytes": b.host_peak_bytes,
                "streamed_bytes_per_proof": b.streamed_bytes,
                "msm_overlapped": b.msm_overlapped,
            })
        })
        .collect();
    json!({
        "machine": {
            "gpu": machine.gpu, "cpu": machine.cpu, "cpu_threads": machine.cpu_threads,
            "driver": machine.driver, "commit": machine.commit, "date": machine.date,
        },
        "cuda_compiled": cuda_compiled,
        "seed": seed,
        "verdict": rec.checks.verdict(),
        "figures": rows,
        "batches": batches,
        "checks": checks,
        "layers": rec
            .layer_seconds
            .iter()
            .map(|(l, s)| json!({ "layer": l, "wall_s": s }))
            .collect::<Vec<_>>(),
    })
}

/// Speed-up of `f` over the arkworks (or ark-poly) figure of the same
/// operation, by throughput.
pub(crate) fn speedup(figs: &[Figure], f: &Figure) -> Option<f64> {
    let rate = |g: &Figure| g.elements as f64 / g.median_ms;
    figs.iter()
        .find(|g| g.layer == f.layer && g.name == f.name && g.implementation.starts_with("ark"))
        .map(|g| rate(f) / rate(g))
}

/// Checks a report against its schema: the machine block, the seed, every
/// figure's layer, operation, implementation, a positive size, the unit
/// "ms", a positive finite time, the timing method and the machine; every
/// batch's name, a positive partition count and wall time and a busy
/// fraction in [0, 1]; every
/// check's layer, name, reference, size, verdict (with a detail for a
/// mismatch and a reason for a skip) and seed; each layer's name and a
/// finite, non-negative wall time where `layers` is present; and an
/// overall verdict that is `fail` exactly when some check is a mismatch.
///
/// # Errors
/// The first violation, naming the figure or check.
pub(crate) fn validate(v: &Value) -> Result<(), String> {
    let m = v
        .get("machine")
        .and_then(Value::as_object)
        .ok_or("no machine object")?;
    for k in ["gpu", "cpu", "driver", "commit", "date"] {
        m.get(k)
            .and_then(Value::as_str)
            .ok_or(format!("machine.{k} missing or not a string"))?;
    }
    m.get("cpu_threads")
        .and_then(Value::as_u64)
        .ok_or("machine.cpu_threads missing")?;
    v.get("cuda_compiled")
        .and_then(Value::as_bool)
        .ok_or("cuda_compiled missing")?;
    v.get("seed")
        .and_then(Value::as_u64)
        .ok_or("seed missing")?;
    let figs = v
        .get("figures")
        .and_then(Value::as_array)
        .ok_or("no figures array")?;
    for (i, f) in figs.iter().enumerate() {
        let s = |k: &str| {
            f.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or(format!("figure {i}: `{k}` missing or empty"))
        };
        for k in ["layer", "operation", "implementation", "timing", "machine"] {
            s(k)?;
        }
        if s("unit")? != "ms" {
            return Err(format!("figure {i}: unit is not ms"));
        }
        f.get("size")
            .and_then(Value::as_u64)
            .filter(|&n| n > 0)
            .ok_or(format!("figure {i}: size missing or 0"))?;
        f.get("median_ms")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite() && *t > 0.0)
            .ok_or(format!(
                "figure {i}: median_ms missing, not positive or not finite"
            ))?;
    }
    let batches = v
        .get("batches")
        .and_then(Value::as_array)
        .ok_or("no batches array")?;
    for (i, b) in batches.iter().enumerate() {
        b.get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(format!("batch {i}: name missing"))?;
        b.get("partitions")
            .and_then(Value::as_u64)
            .filter(|&n| n > 0)
            .ok_or(format!("batch {i}: partitions missing or 0"))?;
        b.get("wall_ms")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite() && *t > 0.0)
            .ok_or(format!("batch {i}: wall_ms missing or not positive"))?;
        b.get("gpu_busy_fraction")
            .and_then(Value::as_f64)
            .filter(|f| (0.0..=1.0).contains(f))
            .ok_or(format!(
                "batch {i}: gpu_busy_fraction missing or outside [0, 1]"
            ))?;
    }
    let checks = v
        .get("checks")
        .and_then(Value::as_array)
        .ok_or("no checks array")?;
    let mut failed = false;
    for (i, c) in checks.iter().enumerate() {
        let s = |k: &str| {
            c.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or(format!("check {i}: `{k}` missing or empty"))
        };
        for k in ["layer", "name", "against"] {
            s(k)?;
        }
        c.get("size")
            .and_then(Value::as_u64)
            .ok_or(format!("check {i}: size missing"))?;
        c.get("seed")
            .and_then(Value::as_u64)
            .ok_or(format!("check {i}: seed missing"))?;
        match s("verdict")? {
            "equal" => {}
            "mismatch" => {
                s("detail")?;
                failed = true;
            }
            "skipped" => {
                s("why")?;
            }
            other => return Err(format!("check {i}: unknown verdict `{other}`")),
        }
    }
    // Each layer's wall time (reports before it was recorded have none).
    if let Some(layers) = v.get("layers") {
        let layers = layers.as_array().ok_or("`layers` is not an array")?;
        for (i, l) in layers.iter().enumerate() {
            l.get("layer")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or(format!("layer {i}: `layer` missing or empty"))?;
            l.get("wall_s")
                .and_then(Value::as_f64)
                .filter(|s| s.is_finite() && *s >= 0.0)
                .ok_or(format!(
                    "layer {i}: `wall_s` missing, negative or not finite"
                ))?;
        }
    }
    let want = if failed { "fail" } else { "pass" };
    match v.get("verdict").and_then(Value::as_str) {
        Some(got) if got == want => Ok(()),
        Some(got) => Err(format!("verdict is `{got}` but the checks say `{want}`")),
        None => Err("verdict missing".into()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample() -> (Machine, Vec<Figure>) {
        let m = Machine {
            gpu: "NVIDIA H200".into(),
            cpu: "Xeon".into(),
            cpu_threads: 16,
            driver: "580".into(),
            commit: "abc".into(),
            date: "2026-11-30T00:00:00Z".into(),
        };
        let f = |implementation: &str, elements, ms| Figure {
            layer: "ntt",
            name: format!("NTT forward 2^{}", (elements as f64).log2()),
            implementation: implementation.to_string(),
            elements,
            median_ms: ms,
            timing: "wall",
        };
        let figs = vec![
            f("ark-poly (CPU, all cores)", 1 << 16, 4.0),
            f("cuzk GPU, natural order (NN)", 1 << 16, 0.1),
            f("ark-poly (CPU, all cores)", 1 << 20, 60.0),
            f("cuzk GPU, natural order (NN)", 1 << 20, 0.5),
        ];
        (m, figs)
    }

    fn record(figures: Vec<Figure>) -> Record {
        let mut checks = Checks::new(7, None);
        checks.values(
            "ntt",
            "NTT forward 2^16: cuzk GPU (NN)",
            "ark-poly",
            1 << 16,
            &1,
            &1,
        );
        checks.skip("msm", "G1 MSM 2^26: cuzk GPU", "blst", 1 << 26, "too slow");
        Record {
            figures,
            batches: vec![sample_batch()],
            checks,
            layer_seconds: vec![("ntt".into(), 12.5)],
        }
    }

    pub(crate) fn sample_batch() -> Batch {
        Batch {
            layer: "prover",
            name: "Groth16 proof 2^24".into(),
            partitions: 10,
            workers: 2,
            cap_bytes: Some(16 << 30),
            wall_ms: 12_000.0,
            busy_fraction: 0.93,
            device_peak_bytes: 15 << 30,
            host_peak_bytes: 40 << 30,
            streamed_bytes: 3 << 30,
            msm_overlapped: true,
        }
    }

    #[test]
    fn report_json_matches_its_schema() {
        let (m, figs) = sample();
        let v = to_json(&m, true, 7, &record(figs));
        validate(&v).unwrap();
        let f = &v["figures"][1];
        assert_eq!(f["machine"], "NVIDIA H200");
        assert_eq!(v["figures"][0]["machine"], "Xeon");
        assert!((f["speedup_vs_arkworks"].as_f64().unwrap() - 40.0).abs() < 1e-9);
        assert_eq!(v["verdict"], "pass");
        assert_eq!(v["checks"][0]["verdict"], "equal");
        assert_eq!(v["checks"][1]["why"], "too slow");
        assert_eq!(v["checks"][1]["seed"], 7);
        assert_eq!(v["layers"][0]["layer"], "ntt");
        assert_eq!(v["layers"][0]["wall_s"], 12.5);
        let mut bad = v.clone();
        bad["layers"][0]["wall_s"] = json!(-1.0);
        assert!(validate(&bad).unwrap_err().contains("wall_s"));
        // Round trip through text, as the file is read back.
        validate(&serde_json::from_str(&serde_json::to_string_pretty(&v).unwrap()).unwrap())
            .unwrap();
    }

    #[test]
    fn a_mismatch_fails_the_report() {
        let (m, figs) = sample();
        let mut rec = record(figs);
        rec.checks
            .values("msm", "G1 MSM 2^4: cuzk", "blst", 16, &1, &2);
        let v = to_json(&m, true, 7, &rec);
        validate(&v).unwrap();
        assert_eq!(v["verdict"], "fail");
        assert_eq!(v["checks"][2]["verdict"], "mismatch");
        assert!(v["checks"][2]["detail"]
            .as_str()
            .unwrap()
            .contains("cuzk gave 1"));
        // A report claiming a pass over a mismatch is refused.
        let mut v = v;
        v["verdict"] = json!("pass");
        assert!(validate(&v).unwrap_err().contains("verdict"));
    }

    #[test]
    fn schema_violations_are_named() {
        let (m, figs) = sample();
        let rec = record(figs);
        let mut v = to_json(&m, false, 7, &rec);
        v["figures"][2]["unit"] = json!("s");
        assert!(validate(&v).unwrap_err().contains("figure 2"));
        let mut v = to_json(&m, false, 7, &rec);
        v["figures"][0]
            .as_object_mut()
            .unwrap()
            .remove("implementation");
        assert!(validate(&v).unwrap_err().contains("implementation"));
        let mut v = to_json(&m, false, 7, &rec);
        v["figures"][1]["median_ms"] = json!(0.0);
        assert!(validate(&v).is_err());
        let mut v = to_json(&m, false, 7, &rec);
        v["machine"].as_object_mut().unwrap().remove("commit");
        assert!(validate(&v).unwrap_err().contains("commit"));
        let mut v = to_json(&m, false, 7, &rec);
        v["batches"][0]["gpu_busy_fraction"] = json!(1.5);
        assert!(validate(&v).unwrap_err().contains("batch 0"));
        assert_eq!(rec.batches[0].per_partition_ms(), 1200.0);
        assert!((rec.batches[0].proofs_per_s() - 10.0 / 12.0).abs() < 1e-12);
        let mut v = to_json(&m, false, 7, &rec);
        v["checks"][1].as_object_mut().unwrap().remove("why");
        assert!(validate(&v).unwrap_err().contains("check 1"));
        let mut v = to_json(&m, false, 7, &rec);
        v["checks"][0]["verdict"] = json!("close");
        assert!(validate(&v).unwrap_err().contains("close"));
        let mut v = to_json(&m, false, 7, &rec);
        v.as_object_mut().unwrap().remove("checks");
        assert!(validate(&v).unwrap_err().contains("checks"));
    }
}
