//! `plugin new --sdk PATH`: the SDK a new project is made against. A directory is used where
//! it is (the project names it by absolute path); a packaged SDK is installed into the project
//! the way its ecosystem installs packages, so the project needs no wasmlet checkout: a Python
//! wheel by `pip install --target .wasmlet/sdk-python`, an npm tarball copied into the project,
//! named by its `package.json` and installed by `npm install` into `node_modules`. Neither
//! reaches a package registry: the wheel is installed with `--no-index` and the tarball has no
//! dependencies.

use super::sdk::{SdkError, SdkTree, JS_INSTALLED, PYTHON_INSTALLED};
use super::Lang;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `--sdk` (or the checkout found) gives a new project.
#[derive(Debug)]
pub(super) enum SdkSource {
    /// An SDK directory, checked, absolute.
    Dir(PathBuf),
    /// A Python SDK wheel (`wasmlet_plugin-<version>-py3-none-any.whl`).
    Wheel(PathBuf),
    /// A JavaScript SDK package (`wasmlet-plugin-sdk-<version>.tgz`, from `npm pack`).
    Tarball(PathBuf),
}

impl SdkSource {
    /// Tells what `path` is: an SDK directory of `lang`, or a package of its SDK.
    pub(super) fn of(lang: Lang, path: &Path) -> Result<SdkSource, SdkError> {
        let unusable = |reason: &str| SdkError::Unusable {
            lang,
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        if path.is_dir() {
            return SdkTree::find(lang, Some(path), path, "new")
                .map(|tree| SdkSource::Dir(tree.sdk().to_path_buf()));
        }
        if !path.is_file() {
            return Err(unusable("no such file or directory"));
        }
        let file = std::path::absolute(path).map_err(|e| unusable(&e.to_string()))?;
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        match (lang, extension) {
            (Lang::Python, "whl") => Ok(SdkSource::Wheel(file)),
            (Lang::Js, "tgz") => Ok(SdkSource::Tarball(file)),
            (_, "whl") => Err(unusable("a wheel is the Python SDK's package (--lang python)")),
            (_, "tgz") => Err(unusable("an npm tarball is the JavaScript SDK's package (--lang js)")),
            _ => Err(unusable(
                "neither an SDK directory nor an SDK package (a .whl for --lang python, a .tgz from `npm pack` for --lang js)",
            )),
        }
    }

    /// How the project's files name the SDK (`@SDK@` in the templates: the Go `replace`, the
    /// npm dependency, the Python path) and the SDK directory its manifest records.
    pub(super) fn reference(&self) -> (String, PathBuf) {
        match self {
            SdkSource::Dir(dir) => (dir.display().to_string(), dir.clone()),
            SdkSource::Wheel(_) => (PYTHON_INSTALLED.to_string(), PYTHON_INSTALLED.into()),
            SdkSource::Tarball(file) => {
                let name = file.file_name().unwrap_or_default().to_string_lossy();
                (format!("./{name}"), JS_INSTALLED.into())
            }
        }
    }

    /// Installs a packaged SDK into the project `root`, whose files are written, and checks
    /// the installed SDK as a directory SDK is checked. A directory needs nothing.
    pub(super) fn install(&self, lang: Lang, root: &Path) -> Result<(), SdkError> {
        let failed = |package: &Path, step: &str, output: String| SdkError::Install {
            lang,
            package: package.to_path_buf(),
            project: root.to_path_buf(),
            step: step.to_string(),
            output,
        };
        match self {
            SdkSource::Dir(_) => return Ok(()),
            SdkSource::Wheel(wheel) => {
                let mut pip = Command::new("python3");
                pip.args(["-m", "pip", "install", "--quiet", "--no-deps", "--no-index"])
                    .args(["--disable-pip-version-check", "--target"])
                    .arg(root.join(PYTHON_INSTALLED))
                    .arg(wheel);
                run(&mut pip, |output| {
                    failed(wheel, "pip install --target", output)
                })?;
            }
            SdkSource::Tarball(tarball) => {
                let name = tarball.file_name().unwrap_or_default();
                std::fs::copy(tarball, root.join(name))
                    .map_err(|e| failed(tarball, "copying it into the project", e.to_string()))?;
                let mut npm = Command::new("npm");
                npm.args(["install", "--no-audit", "--no-fund", "--silent"])
                    .current_dir(root);
                run(&mut npm, |output| failed(tarball, "npm install", output))?;
            }
        }
        let (_, installed) = self.reference();
        SdkTree::find(lang, Some(&root.join(installed)), root, "new").map(drop)
    }
}

/// Runs an install step; on failure, `failed` with the tail of its output (or why it could not
/// start).
fn run(command: &mut Command, failed: impl Fn(String) -> SdkError) -> Result<(), SdkError> {
    let output = command
        .output()
        .map_err(|e| failed(format!("cannot run {:?}: {e}", command.get_program())))?;
    if output.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&output.stderr).into_owned()
        + &String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    Err(failed(format!(
        "{}\n{}",
        output.status,
        lines[lines.len().saturating_sub(20)..].join("\n")
    )))
}
