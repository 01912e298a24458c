//! Compiles the allocator's checked CUDA wrappers (csrc/alloc) with nvcc,
//! or their CPU-only stubs when no nvcc is found.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let csrc = manifest
        .join("../../csrc")
        .canonicalize()
        .expect("csrc/ not found");
    let include = PathBuf::from(
        std::env::var("DEP_CUZK_FIELD_INCLUDE").expect("cuzk-field exports its include dir"),
    );
    println!("cargo:rerun-if-changed={}", csrc.join("alloc").display());
    println!("cargo:rerun-if-changed={}", include.display());
    let cuda = cuzk_build::Cuda::detect_after_field("cuzk-alloc");
    match cuda.toolkit() {
        Some(tk) => tk.compile(
            "cuzk_alloc_gpu",
            &[&csrc.join("alloc/alloc.cu").display().to_string()],
            &[include],
        ),
        None => {
            cc::Build::new()
                .cpp(true)
                .std("c++17")
                .include(&include)
                .file(csrc.join("alloc/noalloc.cpp"))
                .compile("cuzk_alloc_stub");
        }
    }
}
