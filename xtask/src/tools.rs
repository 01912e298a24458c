//! `cargo xtask tools`: compiles the measurement programs of `tools/cuda`
//! (one executable a `.cu` file, against `csrc/include`) with nvcc into
//! `<target dir>/tools/`. CI compiles them too (`cargo xtask test`), so they
//! keep building as the library changes.

use crate::toolkit;
use crate::util::{root, show};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments of `cargo xtask tools`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// GPU architecture (compute capability, e.g. `90`); default: the
    /// newest of `CUZK_CUDA_ARCHS`, else of this machine's GPUs, else 90.
    #[arg(long)]
    arch: Option<String>,
}

/// Entry point of `cargo xtask tools`.
pub(crate) fn run(args: Args) -> Result<()> {
    let nvcc = toolkit::ensure_cuda()?.join("bin/nvcc");
    let arch = args.arch.unwrap_or_else(|| {
        cuzk_build::cuda_archs()
            .into_iter()
            .max()
            .map_or("90".to_string(), |a| a.to_string())
    });
    let exes = build_all(&nvcc, &arch, false)?;
    for e in exes {
        println!("{}", e.display());
    }
    Ok(())
}

/// `<target dir>/tools`: `CARGO_TARGET_DIR` if set, else `target/`.
fn out_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
        .join("tools")
}

/// Compiles every `tools/cuda/*.cu` for `arch`, all at once (one nvcc a
/// program), and returns the executables. `ptx_only` (CI's compile check
/// without a GPU) stops at PTX, skipping the machine-code assembler.
pub(crate) fn build_all(nvcc: &Path, arch: &str, ptx_only: bool) -> Result<Vec<PathBuf>> {
    let dir = root().join("tools/cuda");
    let out = out_dir();
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    sources.sort();
    let code = if ptx_only {
        format!("-gencode=arch=compute_{arch},code=compute_{arch}")
    } else {
        format!("-gencode=arch=compute_{arch},code=[sm_{arch},compute_{arch}]")
    };
    // The toolkit's libraries (cudart_static, cudadevrt), beside bin/nvcc.
    let lib = nvcc
        .parent()
        .and_then(Path::parent)
        .map(|r| r.join("lib"))
        .unwrap_or_default();
    let mut jobs = Vec::new();
    for src in &sources {
        let exe = out.join(src.file_stem().unwrap());
        let mut cmd = Command::new(nvcc);
        cmd.args(["-std=c++17", "-O3", "--expt-relaxed-constexpr", &code])
            .arg("-I")
            .arg(root().join("csrc/include"))
            .arg("-I")
            .arg(&dir)
            .arg("-L")
            .arg(&lib)
            .arg(src)
            .arg("-o")
            .arg(&exe);
        eprintln!("$ {}", show(&cmd));
        let child = cmd
            .spawn()
            .with_context(|| format!("could not start `{}`", show(&cmd)))?;
        jobs.push((child, show(&cmd), exe));
    }
    let mut failed = Vec::new();
    let mut exes = Vec::new();
    for (mut child, line, exe) in jobs {
        if !child.wait()?.success() {
            failed.push(line);
        } else {
            exes.push(exe);
        }
    }
    if !failed.is_empty() {
        bail!(
            "{} tool(s) in tools/cuda failed to compile; fix them against the current \
             headers (or delete a measurement no longer worth keeping):\n{}",
            failed.len(),
            failed.join("\n")
        );
    }
    println!(
        "cargo xtask tools: {} program(s) compiled for {} into {}",
        exes.len(),
        if ptx_only {
            format!("compute_{arch} (PTX)")
        } else {
            format!("sm_{arch}")
        },
        out.display()
    );
    Ok(exes)
}
