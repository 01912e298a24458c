//! `cargo xtask test`: the whole suite, exactly what CI's `.ci/run` calls.
//!
//! Installs the CUDA toolkit if none is found, builds with the `cuda`
//! feature (so the kernels are compiled by nvcc even on a machine without a
//! GPU), runs `cargo test --workspace` (the bindings drift test and the
//! check of the generated `csrc/ntt/fr_shoup.cuh` included),
//! `cargo clippy --all-targets -D warnings` and `cargo fmt --check`.
//! GPU tests skip with a printed reason where there is no GPU, and fail
//! instead when `CUZK_REQUIRE_GPU=1`.

use crate::toolkit;
use crate::util::{cargo, run};
use anyhow::Result;

/// Arguments of `cargo xtask test`.
#[derive(clap::Args)]
pub struct Args {
    /// Build CPU-only (no toolkit install, no nvcc); GPU tests then skip.
    #[arg(long)]
    no_cuda: bool,
    /// Skip clippy and rustfmt (tests only).
    #[arg(long)]
    no_lint: bool,
}

/// Entry point of `cargo xtask test`.
pub fn run_tests(args: Args) -> Result<()> {
    let mut env: Vec<(&str, String)> = Vec::new();
    let features: &[&str] = if args.no_cuda {
        env.push(("CUZK_NO_CUDA", "1".into()));
        &[]
    } else {
        let root = toolkit::ensure_cuda()?;
        env.push(("NVCC", root.join("bin/nvcc").display().to_string()));
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
    run(with_env(cargo())
        .args(["test", "--workspace"])
        .args(exclude)
        .args(features))?;
    if !args.no_lint {
        run(with_env(cargo())
            .args(["clippy", "--workspace", "--all-targets"])
            .args(exclude)
            .args(features)
            .args(["--", "-D", "warnings"]))?;
        run(cargo().args(["fmt", "--all", "--check"]))?;
    }
    println!("cargo xtask test: all steps passed");
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
