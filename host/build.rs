//! Generates the CRI and containerd-events gRPC clients, and the grpc.health.v1 client and
//! server (probes; test and benchmark servers), from proto/ with protox, so the build needs
//! no system protoc.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "runtime/v1/api.proto",
        "containerd/events.proto",
        "containerd/events/task.proto",
    ];
    println!("cargo:rerun-if-changed=../proto");
    let descriptors = protox::compile(files, ["../proto"])?;
    tonic_prost_build::configure()
        .build_server(false)
        .compile_fds(descriptors)?;
    let health = protox::compile(["grpc/health/v1/health.proto"], ["../proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .compile_fds(health)?;
    Ok(())
}
