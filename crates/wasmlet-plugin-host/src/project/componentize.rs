//! The Go componentizer (`plugins/componentize`, a small native Rust program that makes Go's
//! core module a component) travels inside the wasmlet binary as source: `plugin build`
//! writes it into the tools directory and builds it there with cargo, its dependencies from
//! crates.io, so a Go project builds without a wasmlet checkout. The crate's build script
//! (`build.rs`) embeds the files.

use super::error::{project_error, ProjectError};
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/componentize_sources.rs"));

/// Writes the componentizer's crate into `tools/componentize-src` and returns its
/// `Cargo.toml`. A file is written only when its contents differ, so an unchanged crate is
/// not rebuilt; each write is a rename, so two builds at once never read half a file.
pub(super) fn write_crate(tools: &Path) -> Result<PathBuf, ProjectError> {
    let dir = tools.join("componentize-src");
    if SOURCES.is_empty() {
        return Err(project_error(
            &dir,
            "this wasmlet was built without the Go componentizer's sources (plugins/componentize): build wasmlet from a checkout",
        ));
    }
    for (file, text) in SOURCES {
        let path = dir.join(file);
        if std::fs::read(&path).is_ok_and(|old| old == text.as_bytes()) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| project_error(parent, e.to_string()))?;
        }
        let partial = path.with_extension(format!("partial-{}", std::process::id()));
        std::fs::write(&partial, text)
            .and_then(|()| std::fs::rename(&partial, &path))
            .map_err(|e| project_error(&path, e.to_string()))?;
    }
    Ok(dir.join("Cargo.toml"))
}
