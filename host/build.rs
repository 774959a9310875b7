//! Generates the CRI and containerd-events gRPC clients, and the grpc.health.v1 client and
//! server (probes; test and benchmark servers), from proto/ with protox, so the build needs
//! no system protoc. Links the node's binary with packed relative relocations where glibc
//! reads them, and with its text in the order of `text-order.txt` where the linker is lld.

use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    pack_relative_relocations();
    order_text();
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

/// Lays out the node binary's text with the functions that `text-order.txt` names first, in
/// its order: what the node runs at start and at rest (scripts/heap-profile.sh `text` writes
/// the list). Those functions are a few MiB spread over a 37 MiB text; every page the node
/// runs maps the 64 KiB around it, so spread out they keep about 20 MiB of the binary
/// resident, packed only what they fill. Functions the list does not name keep the usual
/// order after them, and names that no longer exist are passed over, so a stale list costs
/// memory, never correctness. Only lld reads the list: it is passed where lld is the linker,
/// the default of rustc 1.90 and later for x86_64 Linux, and no other linker is configured.
/// The names hold hashes that differ from one compiler to the next, so a list made with
/// another rustc than its first line names is left out, with a warning. Sets
/// `cfg(text_order)` for the test that checks the layout.
fn order_text() {
    println!("cargo::rustc-check-cfg=cfg(text_order)");
    println!("cargo:rerun-if-changed=text-order.txt");
    for variable in ["RUSTC_LINKER", "CARGO_ENCODED_RUSTFLAGS"] {
        println!("cargo:rerun-if-env-changed={variable}");
    }
    let var = |name| std::env::var(name).unwrap_or_default();
    let rustc = rustc_version().unwrap_or_default();
    let default_lld = var("TARGET") == "x86_64-unknown-linux-gnu"
        && minor_version(&rustc).is_some_and(|minor| minor >= 90);
    let rustflags = var("CARGO_ENCODED_RUSTFLAGS");
    let other_linker = !var("RUSTC_LINKER").is_empty()
        || ["linker", "link-self-contained"]
            .iter()
            .any(|option| rustflags.contains(option));
    if !default_lld || other_linker {
        return;
    }
    let list = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("text-order.txt");
    let Ok(text) = std::fs::read_to_string(&list) else {
        return;
    };
    let made_with = text.lines().next().and_then(|line| line.strip_prefix("# "));
    if made_with != Some(rustc.as_str()) {
        println!(
            "cargo:warning=host/text-order.txt was made with {}, this is {rustc}: the node \
             binary is linked without it (scripts/heap-profile.sh text writes it again)",
            made_with.unwrap_or("no rustc named on its first line")
        );
        return;
    }
    let flag = "cargo:rustc-link-arg-bin=wasmlet=-Wl";
    println!("{flag},--symbol-ordering-file={}", list.display());
    println!("{flag},--no-warn-symbol-ordering");
    println!("cargo:rustc-cfg=text_order");
}

/// The first line of `rustc --version` of the compiler that builds the crate.
fn rustc_version() -> Option<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    Some(text.lines().next()?.trim().to_owned())
}

/// The minor version in a `rustc --version` line (`rustc 1.95.0 (...)` gives 95).
fn minor_version(rustc: &str) -> Option<u32> {
    let version = rustc.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}
