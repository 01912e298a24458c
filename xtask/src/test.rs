//! `cargo xtask test`: the whole suite, exactly what CI's `.ci/run` calls.
//!
//! Installs the CUDA toolkit if none is found, runs `cargo fmt --check`,
//! `cargo clippy --all-targets -D warnings`, builds with the `cuda`
//! feature (so the kernels are compiled by nvcc even on a machine without a
//! GPU), compiles the measurement programs of `tools/` and runs
//! `cargo test --workspace` (the tidy checks, the bindings drift test and
//! the check of the generated `csrc/ntt/fr_shoup.cuh` included).
//!
//! GPU tests are `#[ignore = "needs a GPU"]`: with a GPU (`nvidia-smi -L`
//! lists one, or `CUZK_REQUIRE_GPU=1`) they run (`--include-ignored`, with
//! `CUZK_REQUIRE_GPU=1` so that none can skip); without one the test
//! runner's closing lines count them as ignored.
//! Without a GPU, and with `CUZK_CUDA_ARCHS` unset, the kernels are built
//! for [`CI_ARCH`] alone (machine code and PTX): enough to compile-check
//! every kernel, a third of nvcc's time for the default architectures.

use crate::util::{cargo, gpu_present, run};
use crate::{toolkit, tools};
use anyhow::Result;

/// The one architecture kernels are compiled for on a machine without a
/// GPU (Hopper; its PTX is embedded too).
const CI_ARCH: &str = "90";

/// Arguments of `cargo xtask test`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Build CPU-only (no toolkit install, no nvcc); GPU tests stay ignored.
    #[arg(long)]
    no_cuda: bool,
    /// Skip clippy and rustfmt (tests only).
    #[arg(long)]
    no_lint: bool,
}

/// True when GPU tests should run: `CUZK_REQUIRE_GPU=1`, or `nvidia-smi -L`
/// lists a GPU.
fn gpu_tests_run() -> bool {
    std::env::var("CUZK_REQUIRE_GPU").is_ok_and(|v| v == "1") || gpu_present()
}

/// Entry point of `cargo xtask test`.
pub(crate) fn run_tests(args: Args) -> Result<()> {
    let gpu = !args.no_cuda && gpu_tests_run();
    let mut env: Vec<(&str, String)> = Vec::new();
    let mut nvcc = None;
    let features: &[&str] = if args.no_cuda {
        env.push(("CUZK_NO_CUDA", "1".into()));
        &[]
    } else {
        let root = toolkit::ensure_cuda()?;
        nvcc = Some(root.join("bin/nvcc"));
        env.push(("NVCC", root.join("bin/nvcc").display().to_string()));
        if !gpu && std::env::var_os("CUZK_CUDA_ARCHS").is_none() {
            eprintln!("cargo xtask test: no GPU: kernels built for sm_{CI_ARCH} (+PTX) only");
            env.push(("CUZK_CUDA_ARCHS", CI_ARCH.into()));
        }
        &["--features", "cuzk-field/cuda"]
    };
    env.push((
        "LIBCLANG_PATH",
        toolkit::ensure_libclang()?.display().to_string(),
    ));

    let with_env = |mut c: std::process::Command| {
        c.envs(env.iter().map(|(k, v)| (k, v)));
        c
    };
    // The sppark peer (bench-only) compiles sppark's kernels: not part of the
    // suite; `cargo xtask bundle` and `cargo xtask bench` build it.
    let exclude = ["--exclude", "cuzk-sppark-peer"];
    if !args.no_lint {
        // Lints first: they fail fast. Clippy's build scripts run apart
        // from the test build's (its wrapper changes their hash), but
        // cuzk-build caches nvcc's libraries, so the kernels compile once.
        run(cargo().args(["fmt", "--all", "--check"]))?;
        run(with_env(cargo())
            .args(["clippy", "--workspace", "--all-targets"])
            .args(exclude)
            .args(features)
            .args(["--features", "cuzk-daemon/postgres-tests"])
            .args(["--", "-D", "warnings"]))?;
    }
    if let Some(nvcc) = &nvcc {
        // Without a GPU, a compile check to PTX (no machine code) suffices.
        let arch = match gpu {
            true => cuzk_build::cuda_archs()
                .into_iter()
                .max()
                .map_or(CI_ARCH.to_string(), |a| a.to_string()),
            false => CI_ARCH.to_string(),
        };
        tools::build_all(nvcc, &arch, !gpu)?;
    }
    // The job store's PostgreSQL tests, when a server is named (.ci/run
    // starts one; by hand: eval "$(.ci/postgres)"): their feature joins
    // the one test build (the feature set clippy checked), not a build of
    // their own.
    let postgres = std::env::var_os("CUZK_TEST_DATABASE_URL").is_some();
    let mut test = with_env(cargo());
    test.args(["test", "--workspace"])
        .args(exclude)
        .args(features);
    if postgres {
        test.args(["--features", "cuzk-daemon/postgres-tests"]);
    }
    if gpu {
        // A GPU test run here must not skip (a skip would count as a pass).
        test.env("CUZK_REQUIRE_GPU", "1");
        test.args(["--", "--include-ignored"]);
    }
    run(&mut test)?;
    if !postgres {
        println!(
            "cargo xtask test: PostgreSQL tests not run (no CUZK_TEST_DATABASE_URL; \
             eval \"$(.ci/postgres)\" starts a server)"
        );
    }
    println!(
        "cargo xtask test: all steps passed{}",
        if gpu {
            " (GPU tests included)"
        } else {
            " (no GPU: GPU tests ignored)"
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::util::root;
    use std::process::Command;

    /// The default NTT butterflies multiply through the generated
    /// `csrc/ntt/fr_shoup.cuh`: `check_shoup.py` fails when the header is
    /// stale against `gen_shoup.py`, or when its PTX chains, interpreted on
    /// the CPU, miss x * w mod r on edge and random cases.
    #[test]
    fn fr_shoup_header_is_fresh_and_correct() {
        let script = root().join("csrc/ntt/check_shoup.py");
        let out = Command::new("python3")
            .arg(&script)
            .output()
            .expect("python3 is needed to check csrc/ntt/fr_shoup.cuh; install it");
        assert!(
            out.status.success(),
            "{} failed:\n{}{}",
            script.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
