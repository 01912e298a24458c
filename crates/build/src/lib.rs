//! Build-script support shared by every cuzk crate that compiles CUDA.
//!
//! One place for toolkit discovery, GPU architecture choice and nvcc flags,
//! so that each `build.rs` stays a few lines long:
//!
//! ```no_run
//! // build.rs
//! let cuda = cuzk_build::Cuda::detect("cuzk-field");
//! if let Some(tk) = cuda.toolkit() {
//!     let include = std::path::PathBuf::from("../../csrc/include");
//!     tk.compile("cuzk_field_gpu", &["../../csrc/field/gpu.cu"], &[include]);
//! }
//! // else: a CPU-only build; `detect` printed the one warning.
//! ```
//!
//! nvcc is looked for in this order (first hit wins):
//! 1. `NVCC`: the path of an nvcc executable;
//! 2. `CUDA_PATH`, then `CUDA_HOME`: a toolkit root holding `bin/nvcc`;
//! 3. the project's own toolkit, installed by `cargo xtask cuda-toolkit`
//!    into [`project_toolkit_dir`] (outside `target/`, so `cargo clean` keeps it);
//! 4. `nvcc` on `PATH`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Pinned CUDA toolkit version of the project's own toolkit (PyPI wheels).
pub const TOOLKIT_VERSION: &str = "13.0";

/// The PyPI wheels (name, exact version) that make up the project's toolkit:
/// nvcc, the runtime (headers, `libcudart_static.a`), CCCL (CUB, Thrust),
/// the CRT headers and NVVM (cicc, libdevice). All CUDA 13.0.x.
pub const TOOLKIT_WHEELS: &[(&str, &str)] = &[
    ("nvidia-cuda-nvcc", "13.0.88"),
    ("nvidia-cuda-runtime", "13.0.96"),
    ("nvidia-cuda-cccl", "13.0.85"),
    ("nvidia-cuda-crt", "13.0.88"),
    ("nvidia-nvvm", "13.0.88"),
];

/// GPU architectures compiled when no GPU is visible and `CUZK_CUDA_ARCHS`
/// is unset: Ampere (A100), Ada (L4, RTX 40) and Hopper (H100, H200).
pub const DEFAULT_ARCHS: &[u32] = &[80, 89, 90];

/// Directory of the project's own CUDA toolkit: `CUZK_TOOLKIT_DIR` if set,
/// else `$XDG_CACHE_HOME/cuzk/cuda-13.0`, else `$HOME/.cache/cuzk/cuda-13.0`.
/// `cargo xtask cuda-toolkit` installs the wheels there with `pip --target`;
/// the toolkit root (with `bin/nvcc`) is then `<dir>/nvidia/cu13`.
pub fn project_toolkit_dir() -> PathBuf {
    if let Some(dir) = env::var_os("CUZK_TOOLKIT_DIR") {
        return PathBuf::from(dir);
    }
    let cache = env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    cache.join("cuzk").join(format!("cuda-{TOOLKIT_VERSION}"))
}

/// Root (holding `bin/nvcc`) of the project's own toolkit inside `dir`.
pub fn project_toolkit_root(dir: &Path) -> PathBuf {
    dir.join("nvidia").join("cu13")
}

/// Where nvcc was found, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The `NVCC` variable.
    NvccVar,
    /// `CUDA_PATH` or `CUDA_HOME`.
    CudaPath,
    /// The project's own toolkit (`cargo xtask cuda-toolkit`).
    Project,
    /// `nvcc` on `PATH`.
    Path,
}

/// A CUDA toolkit found on this machine.
#[derive(Clone, Debug)]
pub struct Toolkit {
    /// The nvcc executable.
    pub nvcc: PathBuf,
    /// Toolkit root (`nvcc`'s `bin/..`).
    pub root: PathBuf,
    /// How it was found.
    pub source: Source,
}

impl Toolkit {
    /// Looks for nvcc in the documented order; `None` when there is none.
    pub fn find() -> Option<Toolkit> {
        let from_nvcc = |nvcc: PathBuf, source: Source| {
            let root = nvcc
                .canonicalize()
                .ok()
                .and_then(|p| p.parent()?.parent().map(Path::to_path_buf))
                .unwrap_or_default();
            Toolkit { nvcc, root, source }
        };
        if let Some(p) = env::var_os("NVCC").map(PathBuf::from) {
            if p.is_file() {
                return Some(from_nvcc(p, Source::NvccVar));
            }
        }
        for var in ["CUDA_PATH", "CUDA_HOME"] {
            if let Some(root) = env::var_os(var).map(PathBuf::from) {
                let nvcc = root.join("bin").join("nvcc");
                if nvcc.is_file() {
                    return Some(from_nvcc(nvcc, Source::CudaPath));
                }
            }
        }
        let nvcc = project_toolkit_root(&project_toolkit_dir())
            .join("bin")
            .join("nvcc");
        if nvcc.is_file() {
            return Some(from_nvcc(nvcc, Source::Project));
        }
        let path = env::var_os("PATH")?;
        env::split_paths(&path)
            .map(|d| d.join("nvcc"))
            .find(|p| p.is_file())
            .map(|p| from_nvcc(p, Source::Path))
    }

    /// Directories that may hold `libcudart_static.a` (`lib64`, `lib`,
    /// `targets/x86_64-linux/lib`), those that exist.
    pub fn lib_dirs(&self) -> Vec<PathBuf> {
        ["lib64", "lib", "targets/x86_64-linux/lib"]
            .iter()
            .map(|d| self.root.join(d))
            .filter(|d| d.is_dir())
            .collect()
    }

    /// Include directories of the toolkit (runtime headers and CCCL).
    pub fn include_dirs(&self) -> Vec<PathBuf> {
        ["include", "include/cccl"]
            .iter()
            .map(|d| self.root.join(d))
            .filter(|d| d.is_dir())
            .collect()
    }

    /// nvcc's `--version` line, for the build log.
    pub fn version(&self) -> String {
        Command::new(&self.nvcc)
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| {
                s.lines()
                    .rev()
                    .find(|l| l.contains("release"))
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "unknown version".into())
    }

    /// Compiles CUDA sources into the static library `lib_name` with nvcc
    /// for [`cuda_archs`] (machine code for each, plus PTX for the newest so
    /// newer cards can JIT it; all compressed), `-O3 -std=c++17`, and links
    /// the static CUDA runtime (`libcudart_static`) so executables need only
    /// the driver's `libcuda`. The library is cached (see [`nvcc_cache_dir`]):
    /// the same sources, headers, flags and nvcc give the same library
    /// without running nvcc again. Panics (a build-script failure) when nvcc
    /// fails.
    pub fn compile(&self, lib_name: &str, sources: &[&str], includes: &[PathBuf]) {
        self.compile_with(lib_name, sources, includes, &[]);
    }

    /// As [`Toolkit::compile`], with preprocessor `defines` (`NAME` or
    /// `NAME=VALUE`).
    pub fn compile_with(
        &self,
        lib_name: &str,
        sources: &[&str],
        includes: &[PathBuf],
        defines: &[&str],
    ) {
        let archs = cuda_archs();
        let flags = nvcc_flags(&archs);
        for src in sources {
            println!("cargo:rerun-if-changed={src}");
        }
        let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("run from a build script"));
        let lib_file = out_dir.join(format!("lib{lib_name}.a"));
        let cache = nvcc_cache_dir(&out_dir).map(|dir| {
            let key = cache_key(self, lib_name, sources, includes, defines, &flags);
            dir.join(format!("lib{lib_name}-{key:016x}.a"))
        });
        let hit = cache
            .as_ref()
            .is_some_and(|c| c.is_file() && std::fs::copy(c, &lib_file).is_ok());
        if hit {
            // Newest use last in the pruning order of `store_in_cache`.
            if let Some(f) = cache
                .as_ref()
                .and_then(|c| std::fs::File::options().append(true).open(c).ok())
            {
                let _ = f.set_modified(std::time::SystemTime::now());
            }
            println!("cargo:rustc-link-search=native={}", out_dir.display());
            println!("cargo:rustc-link-lib=static={lib_name}");
        } else {
            // cc takes the CUDA compiler from `NVCC` (`.compiler()` would set
            // the host compiler instead). A build script is one process:
            // setting it here affects only this build.
            env::set_var("NVCC", &self.nvcc);
            let mut build = cc::Build::new();
            build
                .cuda(true)
                .cpp(true)
                .std("c++17")
                .opt_level(3)
                .debug(false)
                .warnings(false);
            for f in &flags {
                build.flag(f);
            }
            for inc in includes {
                build.include(inc);
            }
            for d in defines {
                match d.split_once('=') {
                    Some((k, v)) => build.define(k, v),
                    None => build.define(d, None),
                };
            }
            for src in sources {
                build.file(src);
            }
            build.compile(lib_name);
            if let Some(c) = &cache {
                store_in_cache(&lib_file, c, lib_name);
            }
        }
        println!(
            "cargo:warning=cuzk: {} {} with nvcc ({}; {}) for sm_{} (+PTX)",
            if hit { "reused cached" } else { "compiled" },
            lib_name,
            self.nvcc.display(),
            self.version(),
            archs
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",sm_")
        );
        self.link_runtime();
    }

    /// Emits the link lines for the static CUDA runtime and what it needs
    /// (`dl`, `rt`, `pthread`, the C++ runtime).
    pub fn link_runtime(&self) {
        for dir in self.lib_dirs() {
            println!("cargo:rustc-link-search=native={}", dir.display());
        }
        println!("cargo:rustc-link-lib=static=cudart_static");
        for lib in ["dl", "rt", "pthread", "stdc++"] {
            println!("cargo:rustc-link-lib={lib}");
        }
    }
}

/// GPU architectures to compile for (compute capabilities as `major*10+minor`):
/// `CUZK_CUDA_ARCHS` (comma-separated, e.g. `90` or `80,90`) if set, else those
/// of the GPUs `nvidia-smi` reports, else [`DEFAULT_ARCHS`].
pub fn cuda_archs() -> Vec<u32> {
    if let Ok(list) = env::var("CUZK_CUDA_ARCHS") {
        let archs: Vec<u32> = list
            .split(',')
            .filter_map(|s| s.trim().trim_start_matches("sm_").parse().ok())
            .collect();
        if !archs.is_empty() {
            return archs;
        }
    }
    let detected = Command::new("nvidia-smi")
        .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            let mut v: Vec<u32> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.trim().replace('.', "").parse().ok())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .unwrap_or_default();
    if detected.is_empty() {
        DEFAULT_ARCHS.to_vec()
    } else {
        detected
    }
}

/// nvcc's flags besides `-O3 -std=c++17` and the includes: machine code
/// for each of `archs` and PTX for the newest (one `-gencode` for it, so
/// its front end runs once), compressed device code, and host warnings.
pub fn nvcc_flags(archs: &[u32]) -> Vec<String> {
    let mut flags = vec![
        "-Xcompiler=-Wall".to_owned(),
        "--expt-relaxed-constexpr".to_owned(),
        // Compress the embedded device code: unrolled field arithmetic
        // makes large SASS and PTX (about 2.5x smaller executables).
        "-Xfatbin=-compress-all".to_owned(),
    ];
    let newest = archs.iter().copied().max();
    for &arch in archs {
        if Some(arch) == newest {
            flags.push(format!(
                "-gencode=arch=compute_{arch},code=[sm_{arch},compute_{arch}]"
            ));
        } else {
            flags.push(format!("-gencode=arch=compute_{arch},code=sm_{arch}"));
        }
    }
    if archs.len() > 1 {
        // One host thread an architecture.
        flags.push("--threads=0".to_owned());
    }
    flags
}

/// Where [`Toolkit::compile`] keeps the libraries nvcc built:
/// `<target dir>/cuzk-nvcc-cache`, found from the build script's `OUT_DIR`
/// (`<target dir>/<profile>/build/<crate>-<hash>/out`), so `cargo clean`
/// empties it. One cache serves every profile and every cargo command:
/// clippy (whose build scripts run apart from the test build's), tests and
/// release builds compile each kernel once. `None` (no caching) when
/// `CUZK_NVCC_CACHE=0` or `OUT_DIR` has another shape.
pub fn nvcc_cache_dir(out_dir: &Path) -> Option<PathBuf> {
    println!("cargo:rerun-if-env-changed=CUZK_NVCC_CACHE");
    if env::var_os("CUZK_NVCC_CACHE").is_some_and(|v| v == "0") {
        return None;
    }
    let build = out_dir.parent()?.parent()?;
    if build.file_name()? != "build" {
        return None;
    }
    let dir = build.parent()?.parent()?.join("cuzk-nvcc-cache");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// The cache key of one library: everything that can change nvcc's output
/// (nvcc and its version, flags, defines, target, host compiler, source
/// paths, and the contents of every file under the sources' folders and the
/// include folders).
fn cache_key(
    tk: &Toolkit,
    lib_name: &str,
    sources: &[&str],
    includes: &[PathBuf],
    defines: &[&str],
    flags: &[String],
) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    "cuzk-nvcc-cache 1".hash(&mut h);
    (
        lib_name,
        &tk.nvcc,
        tk.version(),
        sources,
        includes,
        defines,
        flags,
    )
        .hash(&mut h);
    for var in [
        "TARGET",
        "CXX",
        "CXXFLAGS",
        "NVCC_FLAGS",
        "NVCC_APPEND_FLAGS",
        "NVCC_PREPEND_FLAGS",
        "NVCC_CCBIN",
        "HOST_CXXFLAGS",
        "TARGET_CXXFLAGS",
    ] {
        // cc asks for re-runs on these itself, but only when it runs.
        println!("cargo:rerun-if-env-changed={var}");
        (var, env::var_os(var)).hash(&mut h);
    }
    // The host compiler nvcc drives: its identity, so that an upgrade or a
    // PATH change is a miss rather than a stale hit.
    let cxx = env::var_os("NVCC_CCBIN")
        .or_else(|| env::var_os("CXX"))
        .unwrap_or_else(|| "c++".into());
    Command::new(&cxx)
        .arg("--version")
        .output()
        .ok()
        .map(|o| o.stdout)
        .hash(&mut h);
    let mut dirs: Vec<PathBuf> = includes.to_vec();
    dirs.extend(
        sources
            .iter()
            .filter_map(|s| Path::new(s).parent().map(Path::to_path_buf)),
    );
    let mut files = Vec::new();
    for d in &dirs {
        collect_files(d, &mut files);
    }
    files.sort();
    files.dedup();
    for f in files {
        (&f, std::fs::read(&f).unwrap_or_default()).hash(&mut h);
    }
    h.finish()
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Copies `lib` into the cache as `entry` (through a temporary file, so a
/// reader never sees half of it) and keeps the newest four entries of
/// `lib_name`.
fn store_in_cache(lib: &Path, entry: &Path, lib_name: &str) {
    let tmp = entry.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::copy(lib, &tmp).is_err() || std::fs::rename(&tmp, entry).is_err() {
        let _ = std::fs::remove_file(&tmp);
        return;
    }
    let Some(dir) = entry.parent() else { return };
    let prefix = format!("lib{lib_name}-");
    let mut old: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(&prefix)
                .is_some_and(|rest| rest.len() == 18 && rest.ends_with(".a"))
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    old.sort();
    let excess = old.len().saturating_sub(4);
    for (_, p) in old.into_iter().take(excess) {
        let _ = std::fs::remove_file(p);
    }
}

/// The whole build script of a cuzk layer crate that depends on
/// `cuzk-field` (alloc, ntt, msm, ...): compiles `cuda_source` (relative to
/// the workspace's `csrc/`) with nvcc against the field layer's headers
/// (`DEP_CUZK_FIELD_INCLUDE`) when the field layer was built with CUDA, and
/// otherwise compiles `stub_source` (C++ whose entry points return
/// `CUZK_ERR_NO_CUDA_BUILD`) with the host compiler. `lib_name` names the
/// static library.
pub fn build_layer(crate_name: &str, lib_name: &str, cuda_source: &str, stub_source: &str) {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("run from a build script"));
    let csrc = manifest
        .join("../../csrc")
        .canonicalize()
        .expect("csrc/ not found beside crates/");
    let include =
        PathBuf::from(env::var("DEP_CUZK_FIELD_INCLUDE").expect("the crate depends on cuzk-field"));
    for p in [cuda_source, stub_source] {
        println!("cargo:rerun-if-changed={}", csrc.join(p).display());
    }
    println!("cargo:rerun-if-changed={}", include.display());
    let cuda = Cuda::detect_after_field(crate_name);
    match cuda.toolkit() {
        Some(tk) => tk.compile(
            lib_name,
            &[&csrc.join(cuda_source).display().to_string()],
            &[include],
        ),
        None => cc::Build::new()
            .cpp(true)
            .std("c++17")
            .include(&include)
            .file(csrc.join(stub_source))
            .compile(&format!("{lib_name}_stub")),
    }
}

/// Build-time CUDA decision for one crate: a toolkit, or a CPU-only build.
#[derive(Debug)]
pub struct Cuda {
    toolkit: Option<Toolkit>,
}

impl Cuda {
    /// Decides whether `crate_name` builds its CUDA sources. With the crate's
    /// `cuda` feature on (`CARGO_FEATURE_CUDA`), a missing nvcc stops the
    /// build with an error saying how to get one; without it, a missing nvcc
    /// prints one cargo warning and the crate builds CPU-only. Sets the
    /// `cuzk_cuda` cfg when CUDA is compiled, and re-runs the build script
    /// when any discovery variable changes.
    pub fn detect(crate_name: &str) -> Cuda {
        for var in [
            "NVCC",
            "CUDA_PATH",
            "CUDA_HOME",
            "CUZK_TOOLKIT_DIR",
            "CUZK_CUDA_ARCHS",
            "CUZK_NO_CUDA",
            "PATH",
        ] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        println!("cargo:rerun-if-changed={}", project_toolkit_dir().display());
        println!("cargo::rustc-check-cfg=cfg(cuzk_cuda)");
        let required = env::var_os("CARGO_FEATURE_CUDA").is_some();
        let disabled = env::var_os("CUZK_NO_CUDA").is_some_and(|v| v == "1");
        let toolkit = if disabled && !required {
            None
        } else {
            Toolkit::find()
        };
        match &toolkit {
            Some(_) => println!("cargo:rustc-cfg=cuzk_cuda"),
            None if required => panic!(
                "{crate_name}: the `cuda` feature is on but no nvcc was found (looked at NVCC, \
                 CUDA_PATH, CUDA_HOME, {}, PATH). Run `cargo xtask cuda-toolkit` to install the \
                 pinned CUDA {TOOLKIT_VERSION} toolkit, or point NVCC at an nvcc.",
                project_toolkit_root(&project_toolkit_dir()).display()
            ),
            None if disabled => println!(
                "cargo:warning={crate_name}: CUZK_NO_CUDA=1: building CPU-only (GPU entry points \
                 will return NoCudaBuild)."
            ),
            None => println!(
                "cargo:warning={crate_name}: no nvcc found; building CPU-only (GPU entry points \
                 will return NoCudaBuild). Run `cargo xtask cuda-toolkit` or set NVCC to build \
                 the kernels."
            ),
        }
        Cuda { toolkit }
    }

    /// As [`Cuda::detect`], for crates that depend on `cuzk-field`: when the
    /// field layer was built CPU-only (`DEP_CUZK_FIELD_CUDA=0`) this crate is
    /// too, silently (the field layer already printed the one warning).
    pub fn detect_after_field(crate_name: &str) -> Cuda {
        if std::env::var("DEP_CUZK_FIELD_CUDA").is_ok_and(|v| v == "0") {
            println!("cargo::rustc-check-cfg=cfg(cuzk_cuda)");
            return Cuda { toolkit: None };
        }
        Cuda::detect(crate_name)
    }

    /// The toolkit, when CUDA is being compiled.
    pub fn toolkit(&self) -> Option<&Toolkit> {
        self.toolkit.as_ref()
    }
}
