//! Compiles the allocator's checked CUDA wrappers (csrc/alloc) with nvcc, or their CPU-only
//! stubs when the field layer was built without CUDA.

fn main() {
    cuzk_build::build_layer(
        "cuzk-alloc",
        "cuzk_alloc_gpu",
        "alloc/alloc.cu",
        "alloc/noalloc.cpp",
    );
}
