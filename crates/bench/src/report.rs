//! The benchmark report: figures, machine, JSON (with a schema check), the
//! Markdown summary and SVG plots (time against log size per implementation).

use plotters::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// One measured figure.
#[derive(Clone, Debug)]
pub struct Figure {
    /// Layer: field, alloc, ntt, msm.
    pub layer: &'static str,
    /// Operation and size, e.g. "NTT forward 2^24".
    pub name: String,
    /// Who computed it, e.g. "cuzk GPU, natural order (NN)".
    pub implementation: &'static str,
    /// Problem size in elements (bytes for the allocator).
    pub elements: usize,
    /// Median time in milliseconds.
    pub median_ms: f64,
    /// How it was timed (device events, wall time, ...).
    pub timing: &'static str,
}

impl Figure {
    /// True for figures measured on the GPU (the rest ran on the CPU).
    pub fn on_gpu(&self) -> bool {
        self.implementation.contains("GPU") || self.layer == "alloc"
    }
}

/// The machine a report was measured on.
#[derive(Clone, Debug)]
pub struct Machine {
    /// GPU description, or "none (...)".
    pub gpu: String,
    /// CPU model.
    pub cpu: String,
    /// Hardware threads.
    pub cpu_threads: usize,
    /// NVIDIA driver version, or "none".
    pub driver: String,
    /// cuzk's git commit at build time.
    pub commit: String,
    /// When the run started (UTC, RFC 3339 from `date`), or "unknown".
    pub date: String,
}

/// The report as JSON: `machine`, `cuda_compiled` and `figures` (each with
/// layer, operation, implementation, size, unit, median_ms, throughput,
/// timing, machine and the speed-up over the arkworks reference of the same
/// operation where there is one).
pub fn to_json(machine: &Machine, cuda_compiled: bool, figs: &[Figure]) -> Value {
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
    json!({
        "machine": {
            "gpu": machine.gpu, "cpu": machine.cpu, "cpu_threads": machine.cpu_threads,
            "driver": machine.driver, "commit": machine.commit, "date": machine.date,
        },
        "cuda_compiled": cuda_compiled,
        "figures": rows,
    })
}

/// Speed-up of `f` over the arkworks (or ark-poly) figure of the same
/// operation, by throughput.
pub fn speedup(figs: &[Figure], f: &Figure) -> Option<f64> {
    let rate = |g: &Figure| g.elements as f64 / g.median_ms;
    figs.iter()
        .find(|g| g.layer == f.layer && g.name == f.name && g.implementation.starts_with("ark"))
        .map(|g| rate(f) / rate(g))
}

/// Checks a report against its schema: the machine block, and for every
/// figure its layer, operation, implementation, a positive size, the unit
/// "ms", a positive finite time, the timing method and the machine.
///
/// # Errors
/// The first violation, naming the figure.
pub fn validate(v: &Value) -> Result<(), String> {
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
    Ok(())
}

/// Draws time (ms, log scale) against log2 size, one line per
/// implementation, for the figures of `layer`, into an SVG file. Does
/// nothing when the layer has fewer than two sizes.
///
/// # Errors
/// A message when the file cannot be written.
pub fn plot_svg(figs: &[Figure], layer: &str, title: &str, path: &Path) -> Result<bool, String> {
    let mut series: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for f in figs.iter().filter(|f| f.layer == layer && f.elements > 0) {
        series
            .entry(f.implementation)
            .or_default()
            .push(((f.elements as f64).log2(), f.median_ms));
    }
    let points: Vec<(f64, f64)> = series.values().flatten().copied().collect();
    if points
        .iter()
        .map(|p| p.0 as i64)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        < 2
    {
        return Ok(false);
    }
    let (x0, x1) = points
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (y0, y1) = points
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0 - 0.5..x1 + 0.5, (y0 / 2.0..y1 * 2.0).log_scale())
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("log2 size")
        .y_desc("median ms (log scale)")
        .x_labels((x1 - x0) as usize + 2)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_labels(12)
        .y_label_formatter(&|v| format!("{v:.3}"))
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (name, mut pts)) in series.into_iter().enumerate() {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Machine, Vec<Figure>) {
        let m = Machine {
            gpu: "NVIDIA H200".into(),
            cpu: "Xeon".into(),
            cpu_threads: 16,
            driver: "580".into(),
            commit: "abc".into(),
            date: "2026-11-30T00:00:00Z".into(),
        };
        let f = |implementation, elements, ms| Figure {
            layer: "ntt",
            name: format!("NTT forward 2^{}", (elements as f64).log2()),
            implementation,
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

    #[test]
    fn report_json_matches_its_schema() {
        let (m, figs) = sample();
        let v = to_json(&m, true, &figs);
        validate(&v).unwrap();
        let f = &v["figures"][1];
        assert_eq!(f["machine"], "NVIDIA H200");
        assert_eq!(v["figures"][0]["machine"], "Xeon");
        assert!((f["speedup_vs_arkworks"].as_f64().unwrap() - 40.0).abs() < 1e-9);
        // Round trip through text, as the file is read back.
        validate(&serde_json::from_str(&serde_json::to_string_pretty(&v).unwrap()).unwrap())
            .unwrap();
    }

    #[test]
    fn schema_violations_are_named() {
        let (m, figs) = sample();
        let mut v = to_json(&m, false, &figs);
        v["figures"][2]["unit"] = json!("s");
        assert!(validate(&v).unwrap_err().contains("figure 2"));
        let mut v = to_json(&m, false, &figs);
        v["figures"][0]
            .as_object_mut()
            .unwrap()
            .remove("implementation");
        assert!(validate(&v).unwrap_err().contains("implementation"));
        let mut v = to_json(&m, false, &figs);
        v["figures"][1]["median_ms"] = json!(0.0);
        assert!(validate(&v).is_err());
        let mut v = to_json(&m, false, &figs);
        v["machine"].as_object_mut().unwrap().remove("commit");
        assert!(validate(&v).unwrap_err().contains("commit"));
    }

    #[test]
    fn plot_writes_an_svg() {
        let (_, figs) = sample();
        let dir = std::env::temp_dir().join(format!("cuzk-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ntt.svg");
        assert!(plot_svg(&figs, "ntt", "NTT", &path).unwrap());
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("<svg") && svg.contains("cuzk GPU"));
        assert!(!plot_svg(&figs, "msm", "MSM", &dir.join("msm.svg")).unwrap());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
