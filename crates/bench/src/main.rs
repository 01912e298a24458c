//! `cuzk-bench`: the main job (`cargo xtask bench`, or `./run-bench` from a
//! bundle). Times each layer (field, alloc, ntt, msm, witness, prover) on the GPU
//! beside CPU references on the same machine, checks every cuzk result
//! against a reference, prints the tables and writes `report.json`,
//! `report.md` and SVG plots. A mismatch fails the run (after the report is
//! written) and names the seed that replays its inputs.

mod alloc;
mod checks;
mod cli;
mod criterion;
mod field;
mod machine;
mod msm;
mod ntt;
mod plot;
mod progress;
mod prover;
mod report;
mod supraseal;
mod tables;
mod timing;
mod witness;

use anyhow::{bail, Context, Result};
use checks::Checks;
use clap::Parser;
use cli::{Args, Run};
use report::{Figure, Record};

/// The layers a run can bench, and those whose results are checked (the
/// values `--inject-mismatch` takes).
const LAYERS: [&str; 6] = ["field", "alloc", "ntt", "msm", "witness", "prover"];
const CHECKED: [&str; 5] = ["field", "ntt", "msm", "witness", "prover"];

/// The check a layer fails when it stops on an error.
const LAYER_RAN: &str = "the layer ran to its end";

fn main() -> Result<()> {
    let args = Args::parse();
    let layers = args.layers();
    if let Some(bad) = layers.iter().find(|l| !LAYERS.contains(&l.as_str())) {
        bail!(
            "unknown layer `{bad}` in --only (available: {})",
            LAYERS.join(", ")
        );
    }
    if let Some(l) = &args.inject_mismatch {
        if !CHECKED.contains(&l.as_str()) || !layers.contains(l) {
            bail!("--inject-mismatch {l}: not a checked layer of this run");
        }
    }
    let (gpu, gpu_name) = machine::gpu();
    let run = Run {
        gpu,
        size: args.size(),
        seed: args.seed(),
        key_cache: args.key_cache.clone(),
        variants: args.variants,
        peer_reps: args.peer_reps,
    };
    let started = machine::now();
    println!(
        "cuzk-bench: random inputs from seed {} (--seed {} replays them)",
        run.seed, run.seed
    );
    progress::start(layers.iter().map(|l| steps(l, &run)).sum());
    let mut rec = Record {
        figures: Vec::new(),
        batches: Vec::new(),
        checks: Checks::new(run.seed, args.inject_mismatch.clone()),
        layer_seconds: Vec::new(),
    };
    // The layers run so far, as report.partial.json's `layers_done` names
    // them (a layer that stopped on an error says so).
    let mut done: Vec<String> = Vec::new();
    for layer in &layers {
        // The prover layer, the longest, also saves what it has after each
        // circuit (its 2^27 rows need most of the host's memory).
        let flush = |rec: &Record| {
            let machine = machine::describe(gpu_name.clone(), started.clone());
            let mut so_far = done.clone();
            so_far.push(format!("{layer} (in progress)"));
            write_partial(&args, &run, &machine, rec, &so_far);
        };
        // A layer that stops on an error fails the run as a mismatch does,
        // and the layers after it still run: one broken kernel does not
        // hide the figures and checks of the others.
        let t = std::time::Instant::now();
        let outcome = bench_layer(layer, &run, &mut rec, &flush);
        let secs = t.elapsed().as_secs_f64();
        rec.layer_seconds.push((layer.clone(), secs));
        progress::say(format!("cuzk-bench: layer {layer} took {secs:.1} s"));
        if let Err(e) = outcome {
            let name = LAYERS
                .iter()
                .copied()
                .find(|l| l == layer)
                .unwrap_or("bench");
            rec.checks.record(
                name,
                LAYER_RAN,
                "no error",
                0,
                checks::Verdict::Mismatch {
                    detail: format!("{e:#}"),
                },
            );
            done.push(format!("{layer} (stopped on an error)"));
        } else {
            done.push(layer.clone());
        }
        // A run cut short (a time limit, a crash in a later layer) still
        // leaves what it measured and checked.
        let machine = machine::describe(gpu_name.clone(), started.clone());
        write_partial(&args, &run, &machine, &rec, &done);
    }
    progress::finish();
    if let Some(l) = &args.inject_mismatch {
        // The injected result must have been checked: a layer's error is
        // not that.
        if !rec.checks.mismatches().any(|c| c.name != LAYER_RAN) {
            bail!("--inject-mismatch {l}: no {l} result was checked in this run");
        }
    }
    let machine = machine::describe(gpu_name, started);
    write_report(&args, &run, &machine, &rec)?;
    let (equal, mismatch, skipped) = rec.checks.counts();
    if mismatch > 0 {
        for c in rec.checks.mismatches() {
            eprintln!("MISMATCH: {} {} against {}", c.layer, c.name, c.against);
        }
        bail!(
            "{mismatch} of {} checks mismatched: a cuzk result differs from its \
             reference, or a layer stopped on an error (the MISMATCH lines above say \
             which; inputs from seed {}; rerun with --seed {} to replay)",
            equal + mismatch + skipped,
            run.seed,
            run.seed
        );
    }
    Ok(())
}

/// Runs one layer's benchmarks and checks; `flush` writes the report so
/// far (the prover layer calls it after each circuit).
fn bench_layer(layer: &str, run: &Run, rec: &mut Record, flush: &dyn Fn(&Record)) -> Result<()> {
    match layer {
        "field" => field::bench(run, rec),
        "alloc" => alloc::bench(run, rec),
        "ntt" => ntt::bench(run, rec),
        "msm" => msm::bench(run, rec),
        "witness" => witness::bench(run, rec),
        "prover" => prover::bench(run, rec, flush),
        other => bail!("unknown layer `{other}`"),
    }
    .with_context(|| format!("bench {layer}"))
}

/// Rough step count of a layer, for the progress bar's length and ETA.
fn steps(layer: &str, run: &Run) -> u64 {
    let size = run.size;
    let n = match layer {
        "field" => 8,
        "alloc" => 16,
        "ntt" => 2 * size.pick(ntt::LOGS[0], ntt::LOGS[1], ntt::LOGS[2]).len(),
        "msm" => {
            let (g1, g2) = size.pick(msm::LOGS[0], msm::LOGS[1], msm::LOGS[2]);
            g1.len() + g2.len()
        }
        "witness" => {
            let (g1, g2) = size.pick(witness::LOGS[0], witness::LOGS[1], witness::LOGS[2]);
            2 * (g1.len() + g2.len())
        }
        "prover" => prover::steps(run),
        _ => 0,
    };
    n as u64
}

/// Writes report.partial.json under `--out`: the report so far (the same
/// fields as report.json) and `layers_done`. Best effort: a failure to
/// write it is only printed.
fn write_partial(args: &Args, run: &Run, machine: &report::Machine, rec: &Record, done: &[String]) {
    let mut json = report::to_json(machine, cuzk_field::cuda_compiled(), run.seed, rec);
    json["layers_done"] = serde_json::json!(done);
    let wrote = std::fs::create_dir_all(&args.out).and_then(|()| {
        std::fs::write(
            args.out.join("report.partial.json"),
            serde_json::to_string_pretty(&json).unwrap_or_default(),
        )
    });
    if let Err(e) = wrote {
        progress::say(format!("cuzk-bench: writing report.partial.json: {e}"));
    }
}

/// Prints the tables and writes report.json, report.md, the plots and (with
/// `--check-criterion`) criterion_agreement.json under `--out`.
fn write_report(args: &Args, run: &Run, machine: &report::Machine, rec: &Record) -> Result<()> {
    println!("GPU: {}", machine.gpu);
    println!("{}", tables::figures_terminal(&rec.figures));
    if !rec.batches.is_empty() {
        println!("{}", tables::batches_terminal(&rec.batches));
    }
    println!("{}", tables::checks_terminal(rec.checks.all()));
    println!("{}", tables::verdict_line(rec, run.seed));
    let out = &args.out;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let json = report::to_json(machine, cuzk_field::cuda_compiled(), run.seed, rec);
    report::validate(&json)
        .map_err(|e| anyhow::anyhow!("report does not match its schema: {e}"))?;
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    let mut plots = Vec::new();
    for (file, layer, prefix, title) in [
        ("ntt", "ntt", "", "NTT forward over BLS12-381 Fr"),
        ("msm", "msm", "G1 ", "G1 MSM"),
        ("msm_g2", "msm", "G2 ", "G2 MSM"),
        ("alloc", "alloc", "", "Allocation + free, by strategy"),
    ] {
        let path = out.join(format!("{file}.svg"));
        let some: Vec<Figure> = rec
            .figures
            .iter()
            .filter(|f| f.name.starts_with(prefix))
            .cloned()
            .collect();
        if plot::plot_svg(&some, layer, title, &path).map_err(anyhow::Error::msg)? {
            plots.push(format!("![{title}]({file}.svg)"));
        }
    }
    if let Some(dir) = &args.check_criterion {
        let rows = criterion::agreement(&rec.figures, dir)?;
        std::fs::write(
            out.join("criterion_agreement.json"),
            serde_json::to_string_pretty(&rows)?,
        )?;
    }
    std::fs::write(
        out.join("report.md"),
        tables::markdown(machine, run.seed, rec, &plots),
    )?;
    println!(
        "report: {} (and report.md, {} plots)",
        out.join("report.json").display(),
        plots.len()
    );
    Ok(())
}
