//! `cargo xtask cuda-toolkit`: the pinned CUDA 13.0 toolkit from PyPI wheels,
//! and libclang (also a PyPI wheel) for `cargo xtask bindings`.

use crate::util::run;
use anyhow::{bail, Context, Result};
use cuzk_build::{project_toolkit_dir, project_toolkit_root, Toolkit, TOOLKIT_WHEELS};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Pinned libclang wheel used by bindgen.
const LIBCLANG_WHEEL: (&str, &str) = ("libclang", "18.1.1");

/// Installs `wheels` with `pip install --target dir` unless `marker` exists.
fn pip_install(dir: &Path, wheels: &[(&str, &str)], marker: &Path) -> Result<()> {
    if marker.is_file() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let python = ["python3", "python"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok())
        .context("python3 with pip is needed to install the CUDA toolkit wheels; install it")?;
    let mut cmd = Command::new(python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ])
    .args(["--no-deps", "--upgrade", "--target"])
    .arg(dir)
    .args(wheels.iter().map(|(n, v)| format!("{n}=={v}")))
    .env("PIP_ROOT_USER_ACTION", "ignore");
    run(&mut cmd).context("pip could not install the wheels (is PyPI reachable?)")?;
    std::fs::write(marker, "installed by cargo xtask\n")?;
    Ok(())
}

/// Makes sure a CUDA toolkit is there and returns its nvcc-holding root:
/// an existing toolkit found the way the build scripts find it (NVCC,
/// CUDA_PATH/CUDA_HOME, the project's, PATH), else the pinned wheels
/// installed into the project's cache directory.
pub(crate) fn ensure_cuda() -> Result<PathBuf> {
    if let Some(tk) = Toolkit::find() {
        return Ok(tk.root);
    }
    let dir = project_toolkit_dir();
    eprintln!(
        "installing the CUDA 13.0 toolkit wheels into {}",
        dir.display()
    );
    pip_install(&dir, TOOLKIT_WHEELS, &dir.join(".cuzk-installed"))?;
    let root = project_toolkit_root(&dir);
    if !root.join("bin/nvcc").is_file() {
        bail!(
            "the wheels installed but {} has no bin/nvcc",
            root.display()
        );
    }
    Ok(root)
}

/// Makes sure libclang is there for bindgen and returns the directory that
/// holds `libclang.so` (`LIBCLANG_PATH` if set, else the pinned wheel in the
/// project's cache directory).
pub(crate) fn ensure_libclang() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("LIBCLANG_PATH") {
        return Ok(PathBuf::from(p));
    }
    let dir = project_toolkit_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .join(format!("libclang-{}", LIBCLANG_WHEEL.1));
    pip_install(&dir, &[LIBCLANG_WHEEL], &dir.join(".cuzk-installed"))?;
    let lib = dir.join("clang").join("native");
    if !lib.join("libclang.so").is_file() {
        bail!(
            "the libclang wheel installed but {} has no libclang.so",
            lib.display()
        );
    }
    Ok(lib)
}
