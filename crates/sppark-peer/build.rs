//! Compiles the sppark shim with nvcc against sppark's headers
//! (`DEP_SPPARK_ROOT`) and blst's (`DEP_BLST_C_SRC`); without nvcc it builds
//! nothing and the peer's functions return an error.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let src = manifest
        .join("../../csrc/peer/sppark_peer.cu")
        .canonicalize()
        .expect("csrc/peer");
    let sppark = PathBuf::from(std::env::var("DEP_SPPARK_ROOT").expect("sppark exports its root"));
    let blst = PathBuf::from(std::env::var("DEP_BLST_C_SRC").expect("blst exports its sources"));
    println!("cargo::rustc-check-cfg=cfg(cuzk_sppark)");
    let cuda = cuzk_build::Cuda::detect_after_field("cuzk-sppark-peer");
    let Some(tk) = cuda.toolkit() else {
        return; // no peer without nvcc: the functions then return an error
    };
    println!("cargo:rustc-cfg=cuzk_sppark");
    tk.compile_with(
        "cuzk_sppark_peer",
        &[&src.display().to_string()],
        &[sppark, blst],
        &[
            "FEATURE_BLS12_381",
            "__ADX__",
            "TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE",
        ],
    );
}
