//! Plugin projects in any of the four SDK languages: `wasmlet plugin new --lang` writes one
//! ([`scaffold`]) and `wasmlet plugin build DIR` turns one into a component ([`build`]).
//!
//! A project is a directory. Its language shows in its files (`Cargo.toml`, `go.mod`,
//! `app.py`, `component.js`), its world in what its code imports from the SDK, and its name
//! is the directory's; a `wasmlet-plugin.yaml` beside the code, which `plugin new` writes,
//! says all three and where the language's SDK lives, so a project builds wherever it is.

mod build;
mod componentize;
mod error;
mod install;
mod scaffold;
mod sdk;

pub use build::{build_project, BuildOptions, Built};
use error::project_error;
pub use error::ProjectError;
pub use scaffold::new_plugin;
pub use sdk::{SdkError, SDK_VERSION};

use crate::config::{is_dns_label, World};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file that names a project's language, world and SDK.
pub const MANIFEST: &str = "wasmlet-plugin.yaml";

/// A language with a wasmlet plugin SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// `plugins/sdk`, built with cargo for `wasm32-wasip2`.
    Rust,
    /// `plugins/sdk-go`, built with Go's `wasip1` port and made a component by
    /// `plugins/componentize`.
    Go,
    /// `plugins/sdk-python`, built with componentize-py.
    Python,
    /// `plugins/sdk-js`, built with jco / componentize-js.
    Js,
}

impl Lang {
    /// Every language, in the order the docs list them.
    pub const ALL: [Lang; 4] = [Lang::Rust, Lang::Go, Lang::Python, Lang::Js];

    /// The name `--lang` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Go => "go",
            Lang::Python => "python",
            Lang::Js => "js",
        }
    }

    /// Parses `--lang`; `javascript` and `golang` are accepted too.
    pub fn parse(text: &str) -> Option<Lang> {
        match text {
            "rust" => Some(Lang::Rust),
            "go" | "golang" => Some(Lang::Go),
            "python" | "py" => Some(Lang::Python),
            "js" | "javascript" => Some(Lang::Js),
            _ => None,
        }
    }

    /// The worlds this language's SDK can export: every SDK has all four.
    pub fn worlds(self) -> &'static [World] {
        &World::ALL
    }

    /// The language's name in prose.
    pub fn title(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::Go => "Go",
            Lang::Python => "Python",
            Lang::Js => "JavaScript",
        }
    }

    /// The SDK's directory under `plugins/` in a wasmlet checkout.
    fn sdk_dir_name(self) -> &'static str {
        match self {
            Lang::Rust => "sdk",
            Lang::Go => "sdk-go",
            Lang::Python => "sdk-python",
            Lang::Js => "sdk-js",
        }
    }
}

/// `wasmlet-plugin.yaml`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Manifest {
    name: String,
    world: World,
    lang: Lang,
    /// The language's SDK directory; relative paths are relative to the manifest (an SDK
    /// `plugin new` installed into the project from a package).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sdk: Option<PathBuf>,
}

/// A plugin project, its facts settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The project directory (absolute).
    pub dir: PathBuf,
    /// The plugin's name; the component is written as `<name>.wasm`.
    pub name: String,
    /// Its language.
    pub lang: Lang,
    /// The world it exports; for a Rust crate without a manifest, known once built.
    pub world: Option<World>,
    /// The language's SDK directory, when the manifest names one.
    pub sdk: Option<PathBuf>,
}

impl Project {
    /// Reads the project in `dir`: its manifest when there is one, otherwise what its files
    /// show. `lang` and `world`, when given, must agree with what is found (or settle it
    /// where nothing is found).
    pub fn open(
        dir: &Path,
        lang: Option<Lang>,
        world: Option<World>,
    ) -> Result<Project, ProjectError> {
        let dir = std::path::absolute(dir).map_err(|e| project_error(dir, e.to_string()))?;
        if !dir.is_dir() {
            return Err(project_error(&dir, "not a directory"));
        }
        let manifest_path = dir.join(MANIFEST);
        let manifest = match std::fs::read_to_string(&manifest_path) {
            Ok(text) => Some(parse_manifest(&manifest_path, &text)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(project_error(&manifest_path, format!("cannot read: {e}"))),
        };
        let found_lang = match &manifest {
            Some(m) => Some(m.lang),
            None => detect_lang(&dir),
        };
        let lang = agree(&dir, "--lang", lang, found_lang, Lang::as_str)?.ok_or_else(|| {
            project_error(
                &dir,
                format!("no {MANIFEST}, Cargo.toml, go.mod, app.py or component.js: which language is it? (--lang)"),
            )
        })?;
        let found_world = match &manifest {
            Some(m) => Some(m.world),
            None => detect_world(&dir, lang)?,
        };
        let world = agree(&dir, "--world", world, found_world, World::as_str)?;
        // A Rust crate's world is in the component it builds, found after the build.
        if world.is_none() && lang != Lang::Rust {
            return Err(project_error(
                &dir,
                "cannot tell the world: the code imports none of the SDK's world modules (--world)",
            ));
        }
        let name = match &manifest {
            Some(m) => m.name.clone(),
            None => dir
                .file_name()
                .map(|n| n.to_string_lossy().replace('_', "-"))
                .unwrap_or_default(),
        };
        if !is_dns_label(&name) {
            return Err(project_error(
                &dir,
                format!("the plugin name {name:?} is not a lowercase DNS label: set `name` in {MANIFEST}"),
            ));
        }
        let sdk = manifest.and_then(|m| m.sdk).map(|sdk| {
            if sdk.is_relative() {
                dir.join(sdk)
            } else {
                sdk
            }
        });
        Ok(Project {
            dir,
            name,
            lang,
            world,
            sdk,
        })
    }
}

fn parse_manifest(path: &Path, text: &str) -> Result<Manifest, ProjectError> {
    crate::yaml::from_str(text)
        .map_err(|e| project_error(path, format!("field `{}`: {}", e.path, e.message)))
}

/// A flag and what the project shows must not contradict each other.
fn agree<T: Copy + PartialEq>(
    dir: &Path,
    flag: &str,
    given: Option<T>,
    found: Option<T>,
    name: fn(T) -> &'static str,
) -> Result<Option<T>, ProjectError> {
    match (given, found) {
        (Some(g), Some(f)) if g != f => Err(project_error(
            dir,
            format!("{flag} {} but the project is {}", name(g), name(f)),
        )),
        (g, f) => Ok(g.or(f)),
    }
}

fn detect_lang(dir: &Path) -> Option<Lang> {
    [
        ("Cargo.toml", Lang::Rust),
        ("go.mod", Lang::Go),
        ("main.go", Lang::Go),
        ("app.py", Lang::Python),
        ("component.js", Lang::Js),
    ]
    .into_iter()
    .find(|(file, _)| dir.join(file).is_file())
    .map(|(_, lang)| lang)
}

/// The world a Go, Python or JavaScript project exports, from the SDK module it imports.
fn detect_world(dir: &Path, lang: Lang) -> Result<Option<World>, ProjectError> {
    Ok(sdk_modules(dir, lang)?
        .iter()
        .find_map(|module| match module.as_str() {
            // `pressure`: an eviction policy that also exports `pressure-watch` (0.1.2).
            "eviction" | "pressure" => Some(World::EvictionPolicy),
            "probe" => Some(World::ProbeHandler),
            "gc" => Some(World::GcStrategy),
            "hooks" => Some(World::LifecycleHooks),
            _ => None,
        }))
}

/// The SDK modules (`eviction`, `pressure`, `probe`, ...) that the entry file of a Go,
/// Python or JavaScript project imports, in the order it names them.
fn sdk_modules(dir: &Path, lang: Lang) -> Result<Vec<String>, ProjectError> {
    let (file, prefixes): (&str, &[&str]) = match lang {
        Lang::Rust => return Ok(Vec::new()),
        Lang::Go => ("main.go", &["\"wasmlet.dev/plugin/"]),
        Lang::Python => ("app.py", &["from wasmlet_plugin."]),
        Lang::Js => ("component.js", &["/src/", "wasmlet-plugin-sdk/"]),
    };
    let path = dir.join(file);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(project_error(&path, format!("cannot read: {e}"))),
    };
    let word = |rest: &str| -> String {
        rest.chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect()
    };
    Ok(text
        .lines()
        .filter_map(|line| {
            prefixes
                .iter()
                .find_map(|prefix| line.find(prefix).map(|at| word(&line[at + prefix.len()..])))
        })
        .collect())
}

/// The WIT world a Go or JavaScript project's component is built for:
/// `pressure-eviction-policy` when its entry imports the SDK's `pressure` module (the
/// eviction world plus the `pressure-watch` export), else the project's world.
pub(crate) fn wit_world(dir: &Path, lang: Lang, world: World) -> &'static str {
    let imports_pressure = sdk_modules(dir, lang).is_ok_and(|m| m.iter().any(|m| m == "pressure"));
    if world == World::EvictionPolicy && imports_pressure {
        "pressure-eviction-policy"
    } else {
        world.as_str()
    }
}

#[cfg(test)]
mod tests;
