//! `cargo xtask`: cuzk's developer commands, one module per subcommand.
//!
//! - `bench`: the main job; builds and runs the benchmark, writes the report.
//! - `test`: what CI runs: toolkit, fmt, clippy, CUDA build, tools, tests
//!   (tidy and bindings drift included).
//! - `bundle`: test and bench executables for a GPU machine without cargo.
//! - `bindings`: regenerates the committed bindgen output (`--check` compares).
//! - `compare`: a bench report's figures against the reference run's.
//! - `tools`: compiles the measurement programs of `tools/cuda`.
//! - `cuda-toolkit`: installs the pinned CUDA 13.0 wheels from PyPI.

mod bench;
mod bindings;
mod bundle;
mod compare;
mod test;
#[cfg(test)]
mod tidy;
mod toolkit;
mod tools;
mod util;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "cuzk developer commands")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The main job: benchmark every layer on the GPU (CPU where none) beside the CPU references.
    Bench(bench::Args),
    /// Run the whole test suite as CI does: toolkit, fmt, clippy, CUDA build, tools, tests (GPU tests where a GPU is).
    Test(test::Args),
    /// Build release test and bench executables with CUDA into target/bundle and pack target/bundle.tar.xz (runs without cargo).
    Bundle(bundle::Args),
    /// Regenerate the Rust bindings of csrc/include/cuzk/*.h (committed output).
    Bindings(bindings::Args),
    /// Compare a bench report.json with the reference run's, figure by figure (Markdown).
    Compare(compare::Args),
    /// Compile the measurement programs of tools/cuda with nvcc into target/tools.
    Tools(tools::Args),
    /// Install the pinned CUDA 13.0 toolkit (PyPI wheels) into the project's cache and print its path.
    CudaToolkit,
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Cmd::Bench(a) => bench::run_bench(a),
        Cmd::Test(a) => test::run_tests(a),
        Cmd::Bundle(a) => bundle::run_bundle(a),
        Cmd::Bindings(a) => bindings::run(a),
        Cmd::Compare(a) => compare::run(a),
        Cmd::Tools(a) => tools::run(a),
        Cmd::CudaToolkit => {
            let tk = toolkit::ensure_cuda()?;
            println!("{}", tk.display());
            Ok(())
        }
    }
}
