//! Where the SDKs, `wit/` and the Go componentizer live: a wasmlet checkout, found from the
//! project, the current directory or the `wasmlet` binary itself (`target/release/wasmlet`
//! sits inside the checkout that built it).

use super::Lang;
use std::path::{Path, PathBuf};

/// A wasmlet checkout: `wit/` and `plugins/sdk*`.
#[derive(Debug, Clone)]
pub(super) struct SdkTree {
    root: PathBuf,
    sdk: PathBuf,
}

impl SdkTree {
    /// The checkout that holds `sdk` (a language's SDK directory, `plugins/sdk-go` and the
    /// like) when given, else the first checkout above `start`, the current directory or
    /// the running binary.
    pub(super) fn find(lang: Lang, sdk: Option<&Path>, start: &Path) -> Result<SdkTree, String> {
        if let Some(sdk) = sdk {
            let sdk = sdk
                .canonicalize()
                .map_err(|e| format!("the {} SDK {}: {e}", lang.as_str(), sdk.display()))?;
            let marker = Self::marker(lang);
            if !sdk.join(marker).is_file() {
                return Err(format!(
                    "the {} SDK {}: no {marker} there",
                    lang.as_str(),
                    sdk.display()
                ));
            }
            // plugins/sdk-go -> the checkout; an SDK copied elsewhere keeps working for the
            // steps that need only the SDK itself.
            let root = sdk
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .unwrap_or_else(|| sdk.clone());
            return Ok(SdkTree { root, sdk });
        }
        let mut starts = vec![start.to_path_buf()];
        starts.extend(std::env::current_dir().ok());
        starts.extend(std::env::current_exe().ok());
        starts
            .iter()
            .flat_map(|start| start.ancestors())
            .find(|dir| {
                dir.join("wit/worlds.wit").is_file()
                    && dir.join("plugins").join(lang.sdk_dir_name()).join(Self::marker(lang)).is_file()
            })
            .map(|root| SdkTree {
                root: root.to_path_buf(),
                sdk: root.join("plugins").join(lang.sdk_dir_name()),
            })
            .ok_or_else(|| {
                format!(
                    "cannot find a wasmlet checkout (wit/ and plugins/{}) above {}, the current directory or the wasmlet binary: pass --sdk PATH",
                    lang.sdk_dir_name(),
                    start.display()
                )
            })
    }

    /// A file every copy of the language's SDK has.
    fn marker(lang: Lang) -> &'static str {
        match lang {
            Lang::Rust => "Cargo.toml",
            Lang::Go => "go.mod",
            Lang::Python => "wasmlet_plugin/__init__.py",
            Lang::Js => "src/index.js",
        }
    }

    /// The language's SDK directory.
    pub(super) fn sdk(&self) -> &Path {
        &self.sdk
    }

    /// The WIT package the components must fit.
    pub(super) fn wit(&self) -> PathBuf {
        self.root.join("wit")
    }

    /// The crate that makes Go's core module a component.
    pub(super) fn componentize(&self) -> PathBuf {
        self.root.join("plugins/componentize")
    }
}
