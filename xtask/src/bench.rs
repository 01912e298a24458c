//! `cargo xtask bench`: the main job. Builds the `cuzk-bench` executable in
//! release (with CUDA and its GPU peers, sppark and supraseal-c2, where a
//! GPU is present, installing the toolkit if none is found) and runs it;
//! it prints the figures and checks and writes the report under
//! `target/cuzk-report/`, and fails when a check does.

use crate::toolkit;
use crate::util::{cargo, gpu_present, root, run};
use anyhow::Result;

/// Arguments of `cargo xtask bench` (passed on to `cuzk-bench`).
#[derive(clap::Args)]
pub(crate) struct Args {
    /// A short run (about a minute).
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// Up to the largest sizes: NTT 2^28, G1 MSM 2^26, G2 MSM 2^24,
    /// dense Groth16 proofs of 2^26 constraints (ark-groth16's to 2^22, a
    /// fitted line beyond), PoRep-shaped ones of 2^27 (2^26 beside
    /// supraseal-c2), batches of 10 partitions (4 at dense 2^26) with 2
    /// workers on the whole card and under 16 GiB, field operations over
    /// 2^24 elements on the GPU.
    #[arg(long)]
    full: bool,
    /// Comma-separated layers to run (field, alloc, ntt, msm, witness, prover).
    #[arg(long)]
    only: Option<String>,
    /// Seed of the random inputs (a run prints and records its seed; pass
    /// it to replay that run's inputs, e.g. after a mismatch).
    #[arg(long)]
    seed: Option<u64>,
    /// Report folder (default target/cuzk-report).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Keep the PoRep-shaped keys in this folder between runs (default:
    /// made afresh each run, never written).
    #[arg(long, value_name = "DIR")]
    key_cache: Option<std::path::PathBuf>,
    /// With `--full`: also the prover's batch variants beside its defaults
    /// (cuzk-bench `--variants`).
    #[arg(long, requires = "full")]
    variants: bool,
    /// supraseal-c2's proofs after its first at every size where it runs,
    /// each checked against cuzk's (cuzk-bench `--peer-reps`).
    #[arg(long, value_name = "N")]
    peer_reps: Option<usize>,
    /// Also run the msm and ntt criterion benches first and compare their
    /// medians with the report's figures (criterion_agreement.json).
    #[arg(long)]
    criterion: bool,
}

/// Entry point of `cargo xtask bench`.
pub(crate) fn run_bench(args: Args) -> Result<()> {
    let mut build = cargo();
    build.args([
        "build",
        "--release",
        "-p",
        "cuzk-bench",
        "--bin",
        "cuzk-bench",
    ]);
    if gpu_present() {
        let nvcc = toolkit::ensure_cuda()?.join("bin/nvcc");
        // The GPU peers as the bundle builds them: sppark inside cuzk-bench,
        // supraseal-c2 as `cuzk-supraseal` beside it (cuzk-bench runs it
        // from its own folder). sppark's and supraseal-c2's build scripts
        // need the toolkit on LIBRARY_PATH and nvcc on PATH.
        let peer_env = |c: &mut std::process::Command| {
            c.env("LIBRARY_PATH", crate::bundle::library_path(&nvcc))
                .env("PATH", crate::bundle::search_path(&nvcc))
                .env("NVCC", &nvcc);
        };
        peer_env(&mut build);
        build.args(["--features", "cuzk-field/cuda,cuzk-bench/sppark"]);
        run(&mut build)?;
        let mut peer = cargo();
        peer.args(["build", "--release"])
            .args(crate::bundle::SUPRASEAL_PEER);
        peer_env(&mut peer);
        run(&mut peer)?;
    } else {
        eprintln!("cargo xtask bench: no GPU found (nvidia-smi lists none); running the CPU paths");
        // No kernels to run: skip compiling them even where nvcc exists.
        build.env("CUZK_NO_CUDA", "1");
        run(&mut build)?;
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| root().join("target/cuzk-report"));
    let criterion_home = out.join("criterion");
    if args.criterion {
        let mut c = cargo();
        c.args([
            "bench", "-p", "cuzk-msm", "-p", "cuzk-ntt", "--bench", "msm", "--bench", "ntt",
        ])
        .env("CRITERION_HOME", &criterion_home);
        if gpu_present() {
            let nvcc = toolkit::ensure_cuda()?.join("bin/nvcc");
            c.env("NVCC", nvcc).args(["--features", "cuzk-field/cuda"]);
        } else {
            c.env("CUZK_NO_CUDA", "1");
        }
        run(&mut c)?;
    }
    let mut bench = std::process::Command::new(root().join("target/release/cuzk-bench"));
    if args.quick {
        bench.arg("--quick");
    }
    if args.full {
        bench.arg("--full");
    }
    if let Some(o) = &args.only {
        bench.args(["--only", o]);
    }
    if let Some(seed) = args.seed {
        bench.args(["--seed", &seed.to_string()]);
    }
    if let Some(dir) = &args.key_cache {
        bench.arg("--key-cache").arg(dir);
    }
    if args.variants {
        bench.arg("--variants");
    }
    if let Some(n) = args.peer_reps {
        bench.args(["--peer-reps", &n.to_string()]);
    }
    if args.criterion {
        bench.arg("--check-criterion").arg(&criterion_home);
    }
    bench.arg("--out").arg(out);
    run(&mut bench)
}
