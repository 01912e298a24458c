//! Generates the gRPC code from proto/cuzk/v1/prover.proto with protox (a
//! protobuf compiler in Rust: these machines have no protoc) and
//! tonic-prost-build.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/cuzk/v1/prover.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
