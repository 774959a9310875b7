//! Generates the CRI and containerd-events gRPC clients, and the grpc.health.v1 client and
//! server (probes; test and benchmark servers), from proto/ with protox, so the build needs
//! no system protoc. Links the node's binary with packed relative relocations where glibc
//! reads them.

use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    pack_relative_relocations();
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

/// Links the binaries with their relative relocations packed (`DT_RELR`) when they are built
/// for the machine that builds them and its glibc reads that format (2.36 and later). The
/// dynamic loader reads every relocation at start, and the pages of a `.rela.dyn` table
/// (1.7 MiB in the node's binary) stay resident for the life of the process; packed, the
/// table is a few KiB. An older glibc would refuse to load such a binary, so it gets none.
fn pack_relative_relocations() {
    let var = |name| std::env::var(name).unwrap_or_default();
    let native = var("TARGET") == var("HOST");
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if native && linux_gnu && glibc_version().is_some_and(|version| version >= (2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The version of the build machine's glibc, from the last word of `ldd --version`'s first
/// line (`ldd (Debian GLIBC 2.36-9+deb12u14) 2.36`); `None` when that is not glibc's `ldd`.
fn glibc_version() -> Option<(u32, u32)> {
    let output = Command::new("ldd").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().next()?;
    if !first.contains("GLIBC") && !first.contains("GNU libc") {
        return None;
    }
    let (major, minor) = first.rsplit(' ').next()?.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}
