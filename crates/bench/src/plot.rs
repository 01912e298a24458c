//! SVG plots of the report: time against log size, one line per implementation.

use crate::report::Figure;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Draws time (ms, log scale) against log2 size, one line per
/// implementation, for the figures of `layer`, into an SVG file. Does
/// nothing when the layer has fewer than two sizes.
///
/// # Errors
/// A message when the file cannot be written.
pub(crate) fn plot_svg(
    figs: &[Figure],
    layer: &str,
    title: &str,
    path: &Path,
) -> Result<bool, String> {
    let mut series: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for f in figs.iter().filter(|f| f.layer == layer && f.elements > 0) {
        series
            .entry(f.implementation.as_str())
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
    use crate::report::tests::sample;

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
