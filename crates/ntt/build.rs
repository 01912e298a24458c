//! Compiles the NTT kernels (csrc/ntt) with nvcc, or CPU-only stubs when
//! the field layer was built without CUDA.

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
    println!("cargo:rerun-if-changed={}", csrc.join("ntt").display());
    println!("cargo:rerun-if-changed={}", include.display());
    let cuda = cuzk_build::Cuda::detect_after_field("cuzk-ntt");
    match cuda.toolkit() {
        Some(tk) => tk.compile(
            "cuzk_ntt_gpu",
            &[&csrc.join("ntt/ntt.cu").display().to_string()],
            &[include],
        ),
        None => {
            cc::Build::new()
                .cpp(true)
                .std("c++17")
                .include(&include)
                .file(csrc.join("ntt/nontt.cpp"))
                .compile("cuzk_ntt_stub");
        }
    }
}
