//! The real cosign for interop tests: the binary scripts/cosign.sh builds from cosign's Go
//! module. `WASMLET_COSIGN` names it (scripts/test.sh exports it); without it, the newest
//! version in scripts/cosign.sh's cache is used. Missing under `CI=true` fails the test;
//! elsewhere the test is skipped with the reason printed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cosign binary, or `None` (test skipped) when it is not built, outside CI.
pub fn binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("WASMLET_COSIGN") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "WASMLET_COSIGN={} is not a file",
            path.display()
        );
        return Some(path);
    }
    let cache = std::env::var_os("WASMLET_COSIGN_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/wasmlet/cosign"));
    let mut built: Vec<PathBuf> = std::fs::read_dir(&cache)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("cosign"))
        .filter(|path| path.is_file())
        .collect();
    built.sort();
    if let Some(path) = built.pop() {
        return Some(path);
    }
    let message = format!(
        "cosign is not built (no WASMLET_COSIGN, nothing in {}): run scripts/cosign.sh \
         (scripts/test.sh does)",
        cache.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message}");
    }
    eprintln!("SKIPPED: {message}");
    None
}

/// A cosign command run in `dir`, offline: never asks sigstore's public services (its TUF
/// cache goes to `dir`), with `password` as `COSIGN_PASSWORD`.
pub fn command(binary: &Path, dir: &Path, password: &str) -> Command {
    let mut command = Command::new(binary);
    command
        .current_dir(dir)
        .env("COSIGN_PASSWORD", password)
        .env("TUF_ROOT", dir.join(".sigstore"))
        .env("HOME", dir)
        .env_remove("SIGSTORE_ID_TOKEN")
        .stdin(std::process::Stdio::null());
    command
}

/// A trusted root with no authorities and no logs: what `cosign verify` needs to read a
/// Sigstore bundle offline when the key is given (`--trusted-root`).
pub const EMPTY_TRUSTED_ROOT: &str = r#"{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1","tlogs":[],"certificateAuthorities":[],"ctlogs":[],"timestampAuthorities":[]}"#;
