//! `--check-criterion`: compares this run's figures with the medians of the
//! msm and ntt criterion benches for the same calls.

use crate::report::Figure;
use anyhow::Result;

/// Compares criterion medians (`DIR/<group>/<function>/<size>/new/estimates.json`)
/// with the figures of this run for the same calls; returns one JSON row a
/// pair, with `agree` false beyond 10%.
pub(crate) fn agreement(figs: &[Figure], dir: &std::path::Path) -> Result<Vec<serde_json::Value>> {
    let pairs: [(&str, &str, &str, &str); 5] = [
        (
            "ntt_forward",
            "cuzk_gpu_resident_nr",
            "NTT forward",
            "cuzk GPU, bit-reversed out (NR)",
        ),
        (
            "msm_G1",
            "cuzk_gpu_resident",
            "G1 MSM",
            "cuzk GPU (resident bases, scalars copied in)",
        ),
        (
            "msm_G2",
            "cuzk_gpu_resident",
            "G2 MSM",
            "cuzk GPU (resident bases, scalars copied in)",
        ),
        (
            "msm_G1",
            "cuzk_gpu_precomputed",
            "G1 MSM",
            "cuzk GPU (precomputed bases, scalars copied in)",
        ),
        (
            "msm_G2",
            "cuzk_gpu_precomputed",
            "G2 MSM",
            "cuzk GPU (precomputed bases, scalars copied in)",
        ),
    ];
    let mut rows = Vec::new();
    for (group, function, op, implementation) in pairs {
        for f in figs
            .iter()
            .filter(|f| f.implementation == implementation && f.name.starts_with(op))
        {
            let Some(log) = f
                .name
                .rsplit("2^")
                .next()
                .and_then(|x| x.parse::<u32>().ok())
            else {
                continue;
            };
            let path = dir
                .join(group)
                .join(function)
                .join(log.to_string())
                .join("new/estimates.json");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let v: serde_json::Value = serde_json::from_str(&text)?;
            let Some(ns) = v["median"]["point_estimate"].as_f64() else {
                continue;
            };
            let crit_ms = ns / 1e6;
            let ratio = f.median_ms / crit_ms;
            let agree = (ratio - 1.0).abs() <= 0.10;
            println!(
                "criterion agreement: {} / {}: bench {:.3} ms, criterion {:.3} ms, ratio {:.3} {}",
                f.name,
                f.implementation,
                f.median_ms,
                crit_ms,
                ratio,
                if agree { "agree" } else { "DISAGREE (>10%)" }
            );
            rows.push(serde_json::json!({
                "operation": f.name,
                "implementation": f.implementation,
                "bench_ms": f.median_ms,
                "criterion_ms": crit_ms,
                "ratio": ratio,
                "agree": agree,
            }));
        }
    }
    if rows.is_empty() {
        eprintln!(
            "criterion agreement: no matching criterion results under {}",
            dir.display()
        );
    }
    Ok(rows)
}
