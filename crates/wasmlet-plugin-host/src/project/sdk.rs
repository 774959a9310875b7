//! Where a project's SDK and the contract it was written for (its `wit/`) are: `--sdk` or the
//! project's manifest naming an SDK directory (a checkout's `plugins/sdk-*`, a copy of one, or
//! the one `plugin new` installed into the project from a wheel or an npm tarball), else the
//! wasmlet checkout above the project, the current directory or the `wasmlet` binary
//! (`target/release/wasmlet` sits inside the checkout that built it).
//!
//! Each SDK ships its own copy of the contract (`wit/`, `wasmlet_plugin/wit/` in Python;
//! `scripts/sync-sdk-wit.sh` keeps them equal to the checkout's), so a project built from an
//! installed SDK needs nothing else from a checkout.

use super::Lang;
use std::path::{Path, PathBuf};

/// The version of the Go, Python and JavaScript SDKs this wasmlet writes projects for: the
/// version in `plugins/sdk-python/pyproject.toml` and `plugins/sdk-js/package.json`, so the
/// file names of their packages.
pub const SDK_VERSION: &str = "0.1.0";

/// Where `plugin new` installs a Python SDK wheel, relative to the project.
pub(super) const PYTHON_INSTALLED: &str = ".wasmlet/sdk-python";

/// Where `npm install` puts the JavaScript SDK, relative to the project.
pub(super) const JS_INSTALLED: &str = "node_modules/wasmlet-plugin-sdk";

/// Why a project's SDK cannot be found or used.
#[derive(Debug, thiserror::Error)]
pub enum SdkError {
    /// No SDK was given and there is no wasmlet checkout to find one in.
    #[error("{}", missing(command, *lang, start))]
    Missing {
        /// `new` or `build`.
        command: &'static str,
        /// The project's language.
        lang: Lang,
        /// Where the search for a checkout started (the project or the current directory).
        start: PathBuf,
    },
    /// The SDK given (by `--sdk` or the manifest) is not one of the language's.
    #[error("the {} SDK {}: {reason}", lang.as_str(), path.display())]
    Unusable {
        /// The project's language.
        lang: Lang,
        /// The SDK as given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Installing a packaged SDK into a new project failed.
    #[error("installing the {} SDK {} into {}: {step} failed: {output}", lang.as_str(), package.display(), project.display())]
    Install {
        /// The project's language.
        lang: Lang,
        /// The wheel or tarball.
        package: PathBuf,
        /// The project directory.
        project: PathBuf,
        /// The command that failed.
        step: String,
        /// Why: its output's tail, or the error starting it.
        output: String,
    },
}

/// The message when no SDK is given and no checkout is found: exactly what to pass.
fn missing(command: &str, lang: Lang, start: &Path) -> String {
    let wanted = match lang {
        Lang::Python => format!(
            "wasmlet_plugin-{SDK_VERSION}-py3-none-any.whl (build it with `pip wheel plugins/sdk-python` in a wasmlet checkout) or to an SDK directory like plugins/sdk-python"
        ),
        Lang::Js => format!(
            "wasmlet-plugin-sdk-{SDK_VERSION}.tgz (build it with `npm pack ./plugins/sdk-js` in a wasmlet checkout) or to an SDK directory like plugins/sdk-js"
        ),
        Lang::Go => "the Go module directory of wasmlet.dev/plugin (plugins/sdk-go of a wasmlet checkout, or a copy of it)".to_string(),
        Lang::Rust => "the crate directory of wasmlet-plugin-sdk (plugins/sdk of a wasmlet checkout)".to_string(),
    };
    format!(
        "wasmlet plugin {command} --lang {} needs the {} SDK: pass --sdk PATH to {wanted}; no wasmlet checkout (wit/ and plugins/{}) is above {}, the current directory or the wasmlet binary",
        lang.as_str(),
        lang.title(),
        lang.sdk_dir_name(),
        start.display()
    )
}

/// A language's SDK directory and the contract it ships.
#[derive(Debug, Clone)]
pub(super) struct SdkTree {
    sdk: PathBuf,
    wit: PathBuf,
}

impl SdkTree {
    /// The SDK directory `sdk` when given; else the JavaScript SDK a project's `npm install`
    /// put in its `node_modules`; else the SDK of the first checkout above `start`, the
    /// current directory or the running binary. `command` (`new`, `build`) is named in the
    /// error that says which SDK to pass.
    pub(super) fn find(
        lang: Lang,
        sdk: Option<&Path>,
        start: &Path,
        command: &'static str,
    ) -> Result<SdkTree, SdkError> {
        if let Some(sdk) = sdk {
            return Self::at(lang, sdk);
        }
        let installed = start.join(JS_INSTALLED);
        if lang == Lang::Js && installed.join(marker(lang)).is_file() {
            return Self::at(lang, &installed);
        }
        let mut starts = vec![start.to_path_buf()];
        starts.extend(std::env::current_dir().ok());
        starts.extend(std::env::current_exe().ok());
        let root = starts
            .iter()
            .flat_map(|start| start.ancestors())
            .find(|dir| {
                dir.join("wit/worlds.wit").is_file()
                    && dir
                        .join("plugins")
                        .join(lang.sdk_dir_name())
                        .join(marker(lang))
                        .is_file()
            })
            .ok_or_else(|| SdkError::Missing {
                command,
                lang,
                start: start.to_path_buf(),
            })?;
        Self::at(lang, &root.join("plugins").join(lang.sdk_dir_name()))
    }

    /// The SDK directory `sdk`, checked to be the language's and to carry its contract.
    fn at(lang: Lang, sdk: &Path) -> Result<SdkTree, SdkError> {
        let unusable = |reason: String| SdkError::Unusable {
            lang,
            path: sdk.to_path_buf(),
            reason,
        };
        let dir = sdk.canonicalize().map_err(|e| unusable(e.to_string()))?;
        if dir.is_file() {
            return Err(unusable(
                "a packaged SDK (.whl, .tgz) is installed into a project by `wasmlet plugin new --sdk`; here give the SDK directory".into(),
            ));
        }
        let marker = marker(lang);
        if !dir.join(marker).is_file() {
            return Err(unusable(format!("no {marker} there")));
        }
        let wit = match lang {
            Lang::Python => dir.join("wasmlet_plugin/wit"),
            _ => dir.join("wit"),
        };
        // A Rust plugin's bindings come with the SDK crate; cargo needs no wit/ of its own.
        if lang != Lang::Rust && !wit.join("worlds.wit").is_file() {
            return Err(unusable(format!(
                "no {}/worlds.wit there (the contract the SDK was written for; scripts/sync-sdk-wit.sh copies it into a checkout's SDKs)",
                wit.strip_prefix(&dir).unwrap_or(&wit).display()
            )));
        }
        Ok(SdkTree { sdk: dir, wit })
    }

    /// The language's SDK directory.
    pub(super) fn sdk(&self) -> &Path {
        &self.sdk
    }

    /// The WIT package the components must fit: the one the SDK ships.
    pub(super) fn wit(&self) -> &Path {
        &self.wit
    }
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
