//! Compiles the field layer's C++ (host build of the device formulas) and,
//! where nvcc is found, its CUDA kernels. Exports the header directory to
//! dependent crates as `DEP_CUZK_FIELD_INCLUDE` and whether CUDA was
//! compiled as `DEP_CUZK_FIELD_CUDA` (`1`/`0`).

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let csrc = manifest
        .join("../../csrc")
        .canonicalize()
        .expect("csrc/ not found");
    let include = csrc.join("include");
    println!("cargo:include={}", include.display());
    println!("cargo:rerun-if-changed={}", csrc.display());

    let cuda = cuzk_build::Cuda::detect("cuzk-field");
    let src = |p: &str| csrc.join(p).display().to_string();

    let mut host = cc::Build::new();
    host.cpp(true)
        .std("c++17")
        .opt_level(3)
        .include(&include)
        .include(&csrc)
        .file(src("field/host.cpp"));
    if cuda.toolkit().is_none() {
        host.file(src("field/nogpu.cpp"));
    }
    host.compile("cuzk_field_host");

    match cuda.toolkit() {
        Some(tk) => {
            tk.compile("cuzk_field_gpu", &[&src("field/gpu.cu")], &[include, csrc]);
            println!("cargo:cuda=1");
        }
        None => println!("cargo:cuda=0"),
    }
}
