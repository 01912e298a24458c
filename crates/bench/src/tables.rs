//! The report's tables: figures and checks, for the terminal (comfy-table)
//! and as GitHub Markdown (report.md).

use crate::checks::{Check, Verdict};
use crate::report::{speedup, Batch, Figure, Machine, Record};
use comfy_table::{presets::UTF8_FULL, Table};

const FIGURE_HEADER: [&str; 7] = [
    "layer",
    "operation",
    "implementation",
    "elements",
    "median ms",
    "Melem/s",
    "vs arkworks",
];
const CHECK_HEADER: [&str; 6] = ["layer", "check", "against", "size", "verdict", "seed"];
const BATCH_HEADER: [&str; 10] = [
    "batch",
    "partitions x workers",
    "budget",
    "s a partition",
    "proofs/s",
    "GPU busy",
    "device peak",
    "host peak",
    "streamed a proof",
    "H's MSM",
];

/// One batch's cells, as printed.
fn batch_cells(b: &Batch) -> [String; 10] {
    [
        b.name.clone(),
        format!("{} x {}", b.partitions, b.workers),
        b.cap_bytes
            .map_or("whole card".into(), cuzk_alloc::fmt_bytes),
        format!("{:.3}", b.per_partition_ms() / 1e3),
        format!("{:.3}", b.proofs_per_s()),
        format!("{:.1}%", 100.0 * b.busy_fraction),
        cuzk_alloc::fmt_bytes(b.device_peak_bytes),
        cuzk_alloc::fmt_bytes(b.host_peak_bytes),
        cuzk_alloc::fmt_bytes(b.streamed_bytes),
        if b.msm_overlapped {
            "beside A, B, L".into()
        } else {
            "alone".into()
        },
    ]
}

/// The batches table for the terminal.
pub(crate) fn batches_terminal(batches: &[Batch]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL).set_header(BATCH_HEADER);
    for b in batches {
        t.add_row(batch_cells(b));
    }
    t
}

/// One figure's cells, as printed.
fn figure_cells(figs: &[Figure], f: &Figure) -> [String; 7] {
    // Elements per second (bytes per second for the allocator).
    let rate = f.elements as f64 / f.median_ms / 1e3;
    [
        f.layer.to_string(),
        f.name.clone(),
        f.implementation.to_string(),
        f.elements.to_string(),
        format!("{:.3}", f.median_ms),
        format!("{rate:.2}"),
        speedup(figs, f).map_or("-".into(), |s| format!("{s:.1}x")),
    ]
}

/// A verdict as printed: `equal`, `MISMATCH: detail`, `skipped: why`.
fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::Equal => "equal".into(),
        Verdict::Mismatch { detail } => format!("MISMATCH: {detail}"),
        Verdict::Skipped { why } => format!("skipped: {why}"),
    }
}

fn check_cells(c: &Check) -> [String; 6] {
    [
        c.layer.to_string(),
        c.name.clone(),
        c.against.to_string(),
        c.size.to_string(),
        verdict_text(&c.verdict),
        c.seed.to_string(),
    ]
}

/// The figures table for the terminal.
pub(crate) fn figures_terminal(figs: &[Figure]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL).set_header(FIGURE_HEADER);
    for f in figs {
        t.add_row(figure_cells(figs, f));
    }
    t
}

/// The checks table for the terminal.
pub(crate) fn checks_terminal(checks: &[Check]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL).set_header(CHECK_HEADER);
    for c in checks {
        t.add_row(check_cells(c));
    }
    t
}

/// A cell of a Markdown table: pipes escaped, line breaks as spaces.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A GitHub Markdown (pipe) table; `right` marks right-aligned columns.
fn md_table<const N: usize>(
    header: [&str; N],
    right: [bool; N],
    rows: impl Iterator<Item = [String; N]>,
) -> String {
    let mut s = format!("| {} |\n|", header.join(" | "));
    for r in right {
        s.push_str(if r { "---:|" } else { "---|" });
    }
    s.push('\n');
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s
}

/// One line summing up the checks: the verdict and the counts.
pub(crate) fn verdict_line(rec: &Record, seed: u64) -> String {
    let (equal, mismatch, skipped) = rec.checks.counts();
    format!(
        "verdict: {} ({equal} checks equal, {mismatch} mismatched, {skipped} skipped; inputs from seed {seed})",
        rec.checks.verdict()
    )
}

/// report.md's line of each layer's wall time (empty when none ran).
fn layers_line(rec: &Record) -> String {
    if rec.layer_seconds.is_empty() {
        return String::new();
    }
    let each: Vec<String> = rec
        .layer_seconds
        .iter()
        .map(|(l, s)| format!("{l} {s:.1} s"))
        .collect();
    format!("- Layers, wall time: {}\n", each.join(", "))
}

/// report.md: the machine, the verdict, each layer's wall time, the
/// figures and checks as Markdown tables, and the plots (`plots`: Markdown
/// image lines).
pub(crate) fn markdown(machine: &Machine, seed: u64, rec: &Record, plots: &[String]) -> String {
    let figs = &rec.figures;
    let figures = md_table(
        FIGURE_HEADER,
        [false, false, false, true, true, true, true],
        figs.iter().map(|f| figure_cells(figs, f)),
    );
    let checks = md_table(
        CHECK_HEADER,
        [false, false, false, true, false, true],
        rec.checks.all().iter().map(check_cells),
    );
    let batches = if rec.batches.is_empty() {
        String::new()
    } else {
        format!(
            "## Batches\n\nPartitions proved by `MultiGpuProver` on one GPU; GPU busy is the \
             union of the proofs' GPU stages over the batch's wall time.\n\n{}\n",
            md_table(
                BATCH_HEADER,
                [false, false, false, true, true, true, true, true, true, false],
                rec.batches.iter().map(batch_cells),
            )
        )
    };
    format!(
        "# cuzk benchmark report\n\n\
         **{}**\n\n\
         - GPU: {} (driver {})\n- CPU: {} ({} threads)\n- Commit: {}, started {}\n{}\n\
         ## Figures\n\n{figures}\n\
         {batches}\
         ## Checks\n\n\
         Each cuzk result compared with its reference on the same inputs; \
         `--seed {seed}` replays them.\n\n{checks}\n{}",
        verdict_line(rec, seed),
        machine.gpu,
        machine.driver,
        machine.cpu,
        machine.cpu_threads,
        machine.commit,
        machine.date,
        layers_line(rec),
        if plots.is_empty() {
            String::new()
        } else {
            format!("## Plots\n\n{}\n", plots.join("\n\n"))
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Checks;
    use crate::report::tests::sample;

    #[test]
    fn markdown_has_pipe_tables_for_figures_and_checks() {
        let (m, figures) = sample();
        let mut checks = Checks::new(9, None);
        checks.values(
            "ntt",
            "NTT forward 2^16: cuzk | GPU",
            "ark-poly",
            16,
            &1,
            &1,
        );
        checks.values("msm", "G1 MSM 2^4: cuzk", "blst", 16, &1, &2);
        let rec = Record {
            figures,
            batches: vec![crate::report::tests::sample_batch()],
            checks,
            layer_seconds: vec![("ntt".into(), 12.5), ("prover".into(), 581.04)],
        };
        let md = markdown(&m, 9, &rec, &[]);
        assert!(md.contains("## Batches"), "{md}");
        assert!(
            md.contains("- Layers, wall time: ntt 12.5 s, prover 581.0 s\n"),
            "{md}"
        );
        assert!(
            md.contains("| Groth16 proof 2^24 | 10 x 2 | 16.00 GiB | 1.200 | 0.833 | 93.0% |"),
            "{md}"
        );
        assert!(md.contains("| layer | operation | implementation |"));
        assert!(md.contains("|---|---|---|---:|"));
        assert!(md.contains("| ntt | NTT forward 2^16 | ark-poly (CPU, all cores) | 65536 |"));
        assert!(md.contains("| layer | check | against | size | verdict | seed |"));
        assert!(md.contains("cuzk \\| GPU"));
        assert!(md.contains("| MISMATCH: cuzk gave 1, the reference 2 | 9 |"));
        assert!(md.contains("verdict: fail (1 checks equal, 1 mismatched, 0 skipped"));
        assert!(!md.contains('┆') && !md.contains("```"));
    }
}
