//! Embeds the Go componentizer's sources (`plugins/componentize`: its Cargo.toml, Cargo.lock
//! and `src/`) in the crate, so `wasmlet plugin build` can build it for a Go project outside a
//! wasmlet checkout (`src/project/componentize.rs`). Without that directory (the crate built
//! on its own) the list is empty and a Go build says so.

use std::path::{Path, PathBuf};

fn main() {
    let manifest_dir = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let crate_dir = manifest_dir.join("../../plugins/componentize");
    let mut files = Vec::new();
    if crate_dir.join("Cargo.toml").is_file() {
        for name in ["Cargo.toml", "Cargo.lock"] {
            files.push(PathBuf::from(name));
        }
        rust_files(&crate_dir, Path::new("src"), &mut files);
        println!("cargo:rerun-if-changed={}", crate_dir.join("src").display());
    }
    println!(
        "cargo:rerun-if-changed={}",
        crate_dir.join("Cargo.toml").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        crate_dir.join("Cargo.lock").display()
    );
    files.sort();
    let mut code = String::from(
        "/// The Go componentizer's sources, as (path in its crate, contents).\nconst SOURCES: &[(&str, &str)] = &[\n",
    );
    for file in &files {
        let path = crate_dir.join(file);
        if !path.is_file() {
            continue;
        }
        let absolute = path.canonicalize().expect("a file listed above exists");
        code.push_str(&format!(
            "    ({:?}, include_str!({:?})),\n",
            file.to_string_lossy().replace('\\', "/"),
            absolute.to_string_lossy()
        ));
    }
    code.push_str("];\n");
    std::fs::write(out_dir.join("componentize_sources.rs"), code).expect("write OUT_DIR");
}

/// The `.rs` files under `crate_dir/dir`, as paths relative to `crate_dir`.
fn rust_files(crate_dir: &Path, dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(crate_dir.join(dir)) else {
        return;
    };
    for entry in entries.flatten() {
        let relative = dir.join(entry.file_name());
        if entry.path().is_dir() {
            rust_files(crate_dir, &relative, found);
        } else if relative.extension().is_some_and(|e| e == "rs") {
            found.push(relative);
        }
    }
}
