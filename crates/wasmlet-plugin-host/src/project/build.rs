//! `wasmlet plugin build DIR`: one component, `DIR/<name>.wasm`, from a project in any SDK
//! language, with each language's own toolchain. What a language needs beyond the machine's
//! cargo, Go, Python and Node.js comes from the package registries into a tools directory,
//! pinned: componentize-py from PyPI, jco and componentize-js from npm, and the Go
//! componentizer's crates from crates.io. The result is checked against the world before
//! it is reported built.

use super::error::{project_error, ProjectError};
use super::sdk::SdkTree;
use super::{Lang, Project};
use crate::config::World;
use crate::engine::PluginEngine;
use crate::instance::detect_world;
use std::path::{Path, PathBuf};
use std::process::Command;

/// componentize-py, from PyPI.
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// What the `componentize-py` console script runs, for the venv's interpreter to run with the
/// tool's arguments.
const COMPONENTIZE_PY_MAIN: &str = "import sys\nfrom componentize_py import script\nsys.argv[0] = 'componentize-py'\nsys.exit(script())";
/// jco, from npm; it drives componentize-js.
pub const JCO_VERSION: &str = "1.35.0";
/// componentize-js (StarlingMonkey), from npm.
pub const COMPONENTIZE_JS_VERSION: &str = "0.23.0";

/// What `plugin build` was told beyond the project directory.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// `--lang`: required only where the files do not tell.
    pub lang: Option<Lang>,
    /// `--world`: required only where the imports do not tell.
    pub world: Option<World>,
    /// `--out` (default `DIR/<name>.wasm`).
    pub out: Option<PathBuf>,
    /// `--sdk`: the language's SDK directory (with the contract it ships), when the project
    /// has no manifest naming one and is outside a wasmlet checkout.
    pub sdk: Option<PathBuf>,
    /// `--tools-dir` (default `$WASMLET_PLUGIN_TOOLS`, else `~/.cache/wasmlet/plugin-tools`).
    pub tools_dir: Option<PathBuf>,
}

/// A component built from a project.
#[derive(Debug, Clone)]
pub struct Built {
    /// The project, its world settled by the component.
    pub project: Project,
    /// The component file.
    pub file: PathBuf,
}

/// Builds the project in `dir` into one component and checks it implements its world.
pub fn build_project(dir: &Path, options: &BuildOptions) -> Result<Built, ProjectError> {
    let mut project = Project::open(dir, options.lang, options.world)?;
    let out = match &options.out {
        Some(out) => std::path::absolute(out).map_err(|e| project_error(out, e.to_string()))?,
        None => project.dir.join(format!("{}.wasm", project.name)),
    };
    let tools = match &options.tools_dir {
        Some(dir) => dir.clone(),
        None => default_tools_dir(),
    };
    let sdk = options.sdk.as_deref().or(project.sdk.as_deref());
    let tree = || SdkTree::find(project.lang, sdk, &project.dir, "build");
    let builder = Builder {
        project: &project,
        out: &out,
        tools: &tools,
    };
    match project.lang {
        Lang::Rust => builder.rust()?,
        Lang::Go => builder.go(&tree()?)?,
        Lang::Python => builder.python(&tree()?)?,
        // `npm install` first: it puts an SDK installed from a tarball in node_modules.
        Lang::Js => {
            builder.npm_install()?;
            builder.js(&tree()?)?
        }
    }
    let world = check_world(&out, project.world)?;
    project.world = Some(world);
    Ok(Built { project, file: out })
}

/// `$WASMLET_PLUGIN_TOOLS`, else `$XDG_CACHE_HOME/wasmlet/plugin-tools`, else
/// `~/.cache/wasmlet/plugin-tools`.
fn default_tools_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("WASMLET_PLUGIN_TOOLS") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("wasmlet/plugin-tools")
}

/// The component must implement the project's world (or, for a Rust crate whose world is
/// not declared, any world, which becomes the project's).
fn check_world(file: &Path, expected: Option<World>) -> Result<World, ProjectError> {
    let engine = PluginEngine::new(None).map_err(|e| project_error(file, format!("{e:#}")))?;
    let (component, _) = engine
        .load_file(file)
        .map_err(|e| project_error(file, e.to_string()))?;
    match (expected, detect_world(&component)) {
        (Some(world), Some(found)) if world == found => Ok(world),
        (None, Some(found)) => Ok(found),
        (Some(world), _) => Err(project_error(
            file,
            format!(
                "the built component does not implement world {}",
                world.as_str()
            ),
        )),
        (None, None) => Err(project_error(
            file,
            "the built component implements none of the worlds of wasmlet:plugin@0.1.2",
        )),
    }
}

struct Builder<'a> {
    project: &'a Project,
    out: &'a Path,
    tools: &'a Path,
}

impl Builder<'_> {
    fn world(&self) -> Result<World, ProjectError> {
        self.project
            .world
            .ok_or_else(|| project_error(&self.project.dir, "cannot tell the world (--world)"))
    }

    /// cargo for `wasm32-wasip2`; the artifact is found in cargo's JSON messages, so
    /// `CARGO_TARGET_DIR` and workspaces are honoured.
    fn rust(&self) -> Result<(), ProjectError> {
        let manifest = self.project.dir.join("Cargo.toml");
        let output = run(
            Command::new("cargo")
                .args(["build", "--release", "--target", "wasm32-wasip2"])
                .args([
                    "--message-format",
                    "json-render-diagnostics",
                    "--manifest-path",
                ])
                .arg(&manifest),
            "cargo build",
            &self.project.dir,
        )?;
        let artifact = String::from_utf8_lossy(&output)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|message| {
                message["reason"] == "compiler-artifact"
                    && Path::new(message["manifest_path"].as_str().unwrap_or_default()) == manifest
            })
            .flat_map(|message| {
                message["filenames"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|f| f.as_str().map(PathBuf::from))
            })
            .find(|file| file.extension().is_some_and(|e| e == "wasm"));
        let artifact = artifact.ok_or_else(|| {
            project_error(
                &manifest,
                "cargo built no .wasm: the crate needs `crate-type = [\"cdylib\"]` in [lib]",
            )
        })?;
        copy(&artifact, self.out)
    }

    /// Go's `wasip1` port (`-buildmode=c-shared`, the `go:wasmexport` functions), then
    /// the componentizer (`plugins/componentize`, carried by this binary) embeds the world and
    /// wraps the module with the WASI preview1 reactor adapter.
    fn go(&self, tree: &SdkTree) -> Result<(), ProjectError> {
        let world = self.world()?;
        let core = self.out.with_extension("core.wasm");
        run(
            Command::new("go")
                .args([
                    "build",
                    "-buildmode=c-shared",
                    "-trimpath",
                    "-ldflags=-s -w",
                    "-o",
                ])
                .arg(&core)
                .arg(".")
                .current_dir(&self.project.dir)
                .env("GOOS", "wasip1")
                .env("GOARCH", "wasm"),
            "go build (GOOS=wasip1 GOARCH=wasm)",
            &self.project.dir,
        )?;
        let componentize = self.componentizer()?;
        let made = run(
            Command::new(componentize)
                .arg(tree.wit())
                .arg(super::wit_world(&self.project.dir, Lang::Go, world))
                .arg(&core)
                .arg(self.out),
            "wasmlet-componentize",
            &self.project.dir,
        );
        let _ = std::fs::remove_file(&core);
        made.map(drop)
    }

    /// Builds (or finds fresh) `wasmlet-componentize` from the sources this binary carries.
    fn componentizer(&self) -> Result<PathBuf, ProjectError> {
        let manifest = super::componentize::write_crate(self.tools)?;
        let target_dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| self.tools.join("componentize-target"));
        run(
            Command::new("cargo")
                .args(["build", "--release", "--quiet", "--manifest-path"])
                .arg(manifest)
                .arg("--target-dir")
                .arg(&target_dir),
            "cargo build (wasmlet-componentize)",
            &self.project.dir,
        )?;
        Ok(target_dir.join("release/wasmlet-componentize"))
    }

    /// componentize-py with the SDK and the project on its path; `app.py` is the module.
    fn python(&self, tree: &SdkTree) -> Result<(), ProjectError> {
        let world = self.world()?;
        let venv = self
            .tools
            .join(format!("componentize-py-{COMPONENTIZE_PY_VERSION}"));
        let tool = venv.join("bin/componentize-py");
        if !tool.is_file() {
            run(
                Command::new("python3").args(["-m", "venv"]).arg(&venv),
                "python3 -m venv",
                &self.project.dir,
            )?;
            run(
                Command::new(venv.join("bin/pip"))
                    .args(["install", "--quiet"])
                    .arg(format!("componentize-py=={COMPONENTIZE_PY_VERSION}")),
                "pip install componentize-py",
                &self.project.dir,
            )?;
        }
        // Through the venv's interpreter rather than its `componentize-py` script: pip writes
        // the venv's path at install time into the script's `#!` line, and the venv sits in a
        // target directory that later checkouts reach through paths of their own.
        run(
            Command::new(venv.join("bin/python3"))
                .arg("-c")
                .arg(COMPONENTIZE_PY_MAIN)
                .arg("-d")
                .arg(tree.wit())
                .args(["-w", world.as_str(), "componentize", "-p"])
                .arg(tree.sdk())
                .arg("-p")
                .arg(&self.project.dir)
                .args(["app", "-o"])
                .arg(self.out),
            "componentize-py",
            &self.project.dir,
        )
        .map(drop)
    }

    /// A project with a package.json and no node_modules gets its dependencies (the SDK,
    /// linked from a directory or unpacked from its tarball) installed.
    fn npm_install(&self) -> Result<(), ProjectError> {
        let dir = &self.project.dir;
        if !dir.join("package.json").is_file() || dir.join("node_modules").is_dir() {
            return Ok(());
        }
        run(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--silent"])
                .current_dir(dir),
            "npm install",
            dir,
        )
        .map(drop)
    }

    /// jco's componentize (bundled, WASI features off) through the SDK's `build.mjs`.
    fn js(&self, tree: &SdkTree) -> Result<(), ProjectError> {
        let world = self.world()?;
        let tools = self.tools.join(format!("jco-{JCO_VERSION}"));
        if !tools
            .join("node_modules/@bytecodealliance/jco/package.json")
            .is_file()
        {
            std::fs::create_dir_all(&tools).map_err(|e| project_error(&tools, e.to_string()))?;
            let package = tools.join("package.json");
            std::fs::write(
                &package,
                "{\"name\":\"wasmlet-plugin-tools\",\"private\":true}\n",
            )
            .map_err(|e| project_error(&package, e.to_string()))?;
            run(
                Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
                    .arg(&tools)
                    .arg(format!("@bytecodealliance/jco@{JCO_VERSION}"))
                    .arg(format!(
                        "@bytecodealliance/componentize-js@{COMPONENTIZE_JS_VERSION}"
                    )),
                "npm install jco",
                &self.project.dir,
            )?;
        }
        let dir = &self.project.dir;
        run(
            Command::new("node")
                .arg(tree.sdk().join("build.mjs"))
                .arg(&tools)
                .arg(dir.join("component.js"))
                .arg(super::wit_world(dir, Lang::Js, world))
                .arg(self.out)
                .arg(tree.wit())
                .current_dir(dir),
            "jco componentize",
            dir,
        )
        .map(drop)
    }
}

fn copy(from: &Path, to: &Path) -> Result<(), ProjectError> {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| project_error(to, format!("cannot copy {}: {e}", from.display())))
}

/// Runs a build step; its stdout on success, its output's tail in the error otherwise.
fn run(command: &mut Command, what: &str, dir: &Path) -> Result<Vec<u8>, ProjectError> {
    let output = command.output().map_err(|e| {
        project_error(
            dir,
            format!("{what}: cannot run {:?}: {e}", command.get_program()),
        )
    })?;
    if output.status.success() {
        return Ok(output.stdout);
    }
    let text = String::from_utf8_lossy(&output.stderr).into_owned()
        + &String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(30)..].join("\n");
    Err(project_error(
        dir,
        format!("{what} failed ({}):\n{tail}", output.status),
    ))
}
