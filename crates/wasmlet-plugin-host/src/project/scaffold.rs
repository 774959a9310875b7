//! `wasmlet plugin new NAME --world W --lang L`: a project that builds as it is, with a
//! native test of its logic, in the layout of the language's SDK examples. The Go, Python and
//! JavaScript sources are files under `scaffold/<lang>/`, with `@NAME@` (and `@SDK@`)
//! replaced when written.

use super::error::{project_error, ProjectError};
use super::install::SdkSource;
use super::sdk::SdkTree;
use super::{Lang, Manifest, MANIFEST};
use crate::config::{is_dns_label, World};
use std::path::{Path, PathBuf};

/// Writes a ready-to-build plugin project `name` for `world` in `lang` into `dir/name`.
/// `sdk` is the language's SDK: a directory, which the project refers to by absolute path, or
/// (Python, JavaScript) the SDK's package, a wheel or an `npm pack` tarball, installed into
/// the project. Without it, the SDK of the wasmlet checkout above the current directory or
/// the binary; without one either, the error names the SDK to pass.
pub fn new_plugin(
    name: &str,
    world: World,
    lang: Lang,
    dir: &Path,
    sdk: Option<&Path>,
) -> Result<PathBuf, ProjectError> {
    let root =
        std::path::absolute(dir.join(name)).map_err(|e| project_error(dir, e.to_string()))?;
    let fail = |message: String| project_error(&root, message);
    if !is_dns_label(name) {
        return Err(fail(
            "the name must be a lowercase DNS label, e.g. my-eviction-policy".into(),
        ));
    }
    if !lang.worlds().contains(&world) {
        return Err(fail(format!(
            "the {} SDK has no {} world",
            lang.as_str(),
            world.as_str()
        )));
    }
    if root.exists() {
        return Err(fail("already exists".into()));
    }
    let start = std::env::current_dir().map_err(|e| fail(e.to_string()))?;
    let source = match sdk {
        Some(sdk) => SdkSource::of(lang, sdk)?,
        None => SdkSource::Dir(
            SdkTree::find(lang, None, &start, "new")?
                .sdk()
                .to_path_buf(),
        ),
    };
    let (reference, manifest_sdk) = source.reference();
    let files = project_files(name, world, lang, &reference, &manifest_sdk);
    let written = write_files(&root, files)
        .and_then(|()| source.install(lang, &root).map_err(ProjectError::from));
    if let Err(error) = written {
        // Nothing half-made: the same command works once the cause is fixed.
        let _ = std::fs::remove_dir_all(&root);
        return Err(error);
    }
    Ok(root)
}

fn write_files(root: &Path, files: Vec<(&'static str, String)>) -> Result<(), ProjectError> {
    for (file, text) in files {
        let path = root.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| project_error(parent, e.to_string()))?;
        }
        std::fs::write(&path, text).map_err(|e| project_error(&path, e.to_string()))?;
    }
    Ok(())
}

/// The files of a new project, as (path in the project, contents): `sdk` is how its files
/// name the SDK, `manifest_sdk` the SDK directory its manifest records.
pub(super) fn project_files(
    name: &str,
    world: World,
    lang: Lang,
    sdk: &str,
    manifest_sdk: &Path,
) -> Vec<(&'static str, String)> {
    let type_name = type_name(name);
    let fill = |template: &str| {
        template
            .replace("@NAME@", name)
            .replace("@TYPE@", &type_name)
            .replace("@WORLD@", world.as_str())
            .replace("@SDK@", sdk)
    };
    let manifest = Manifest {
        name: name.to_string(),
        world,
        lang,
        sdk: Some(manifest_sdk.to_path_buf()),
    };
    let manifest = format!(
        "# What `wasmlet plugin build` needs to know; `wasmlet plugin new` wrote it.\n{}",
        crate::yaml::to_string(&manifest).unwrap_or_default()
    );
    let mut files = vec![(MANIFEST, manifest), ("README.md", fill(readme(lang)))];
    match lang {
        Lang::Rust => {
            files.push(("Cargo.toml", fill(RUST_CARGO)));
            files.push(("src/lib.rs", rust_lib(world, &type_name)));
        }
        Lang::Go => {
            files.push(("go.mod", fill(GO_MOD)));
            let (main, test) = match world {
                World::EvictionPolicy => (GO_EVICTION, GO_EVICTION_TEST),
                World::ProbeHandler => (GO_PROBE, GO_PROBE_TEST),
                World::GcStrategy => (GO_GC, GO_GC_TEST),
                World::LifecycleHooks => (GO_HOOKS, GO_HOOKS_TEST),
            };
            files.push(("main.go", fill(main)));
            files.push(("main_test.go", fill(test)));
        }
        Lang::Python => {
            let (app, test) = match world {
                World::EvictionPolicy => (PY_EVICTION, PY_EVICTION_TEST),
                World::ProbeHandler => (PY_PROBE, PY_PROBE_TEST),
                World::GcStrategy => (PY_GC, PY_GC_TEST),
                World::LifecycleHooks => (PY_HOOKS, PY_HOOKS_TEST),
            };
            files.push(("app.py", fill(app)));
            files.push(("test_app.py", fill(test)));
        }
        Lang::Js => {
            files.push(("package.json", fill(JS_PACKAGE)));
            let (component, plugin, test) = match world {
                World::EvictionPolicy => (JS_EVICTION_COMPONENT, JS_EVICTION, JS_EVICTION_TEST),
                World::ProbeHandler => (JS_PROBE_COMPONENT, JS_PROBE, JS_PROBE_TEST),
                World::GcStrategy => (JS_GC_COMPONENT, JS_GC, JS_GC_TEST),
                World::LifecycleHooks => (JS_HOOKS_COMPONENT, JS_HOOKS, JS_HOOKS_TEST),
            };
            files.push(("component.js", fill(component)));
            files.push(("plugin.js", fill(plugin)));
            files.push(("plugin.test.js", fill(test)));
        }
    }
    files
}

/// `my-eviction-policy` -> `MyEvictionPolicy`, a type name in every SDK language.
fn type_name(name: &str) -> String {
    let joined: String = name
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect();
    if joined.starts_with(|c: char| c.is_ascii_digit()) {
        format!("Plugin{joined}")
    } else {
        joined
    }
}

fn readme(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "# @NAME@\n\nA wasmlet plugin (world `@WORLD@`) in Rust.\n\n```sh\ncargo test                       # the logic, natively, with the SDK's fixtures\nwasmlet plugin build .           # -> @NAME@.wasm (cargo, target wasm32-wasip2)\nwasmlet plugin validate @NAME@.wasm\n```\n",
        Lang::Go => "# @NAME@\n\nA wasmlet plugin (world `@WORLD@`) in Go.\n\n```sh\ngo test ./...                    # the logic, natively, with the SDK's plugintest\nwasmlet plugin build .           # -> @NAME@.wasm (GOOS=wasip1, then made a component)\nwasmlet plugin validate @NAME@.wasm\n```\n",
        Lang::Python => "# @NAME@\n\nA wasmlet plugin (world `@WORLD@`) in Python.\n\n```sh\nPYTHONPATH=@SDK@ python3 -m unittest   # the logic, natively, with the SDK's testing module\nwasmlet plugin build .           # -> @NAME@.wasm (componentize-py from PyPI)\nwasmlet plugin validate @NAME@.wasm\n```\n",
        Lang::Js => "# @NAME@\n\nA wasmlet plugin (world `@WORLD@`) in JavaScript.\n\n```sh\nnpm install                      # installs the SDK (no download)\nnode --test                      # the logic, natively, with the SDK's testing module\nwasmlet plugin build .           # -> @NAME@.wasm (jco / componentize-js from npm)\nwasmlet plugin validate @NAME@.wasm\n```\n",
    }
}

const RUST_CARGO: &str = "[package]\nname = \"@NAME@\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\", \"rlib\"]\n\n\
[dependencies]\nwasmlet-plugin-sdk = { path = \"@SDK@\" }\n\n# A workspace of its own.\n[workspace]\n\n\
[profile.release]\nopt-level = \"s\"\nlto = true\nstrip = true\n";

fn rust_lib(world: World, type_name: &str) -> String {
    match world {
        World::EvictionPolicy => format!(
            "//! An eviction policy: the pods with the most restarts go first.\n\n\
             use wasmlet_plugin_sdk::{{export, EvictionPolicy, NodeInfo, PodInfo, SignalObservation}};\n\n\
             #[derive(Default)]\npub struct {type_name};\n\n\
             impl EvictionPolicy for {type_name} {{\n    fn rank(&self, _: &NodeInfo, _: &[SignalObservation], pods: &[PodInfo]) -> Result<Vec<u32>, String> {{\n        \
             let mut order: Vec<u32> = (0..pods.len() as u32).filter(|&i| pods[i as usize].is_evictable()).collect();\n        \
             order.sort_by_key(|&i| std::cmp::Reverse(pods[i as usize].restart_count));\n        Ok(order)\n    }}\n}}\n\n\
             export!({type_name} as eviction);\n\n\
             #[cfg(test)]\nmod tests {{\n    use super::*;\n    use wasmlet_plugin_sdk::fixtures::{{EvictionCase, PodFixture}};\n\n    \
             #[test]\n    fn flappy_pods_go_first() {{\n        let case = EvictionCase::memory_pressure()\n            \
             .pod(PodFixture::new(\"default\", \"calm\").restarts(0))\n            .pod(PodFixture::new(\"default\", \"flappy\").restarts(9));\n        \
             assert_eq!(case.rank_names(&{type_name}).unwrap(), [\"default/flappy\", \"default/calm\"]);\n    }}\n}}\n"
        ),
        World::GcStrategy => format!(
            "//! A GC strategy; the trait's defaults are upstream's image and container GC order:\n\
             //! override `plan_images` or `plan_containers` to change them.\n\n\
             use wasmlet_plugin_sdk::{{export, GcStrategy}};\n\n#[derive(Default)]\npub struct {type_name};\n\n\
             impl GcStrategy for {type_name} {{}}\n\nexport!({type_name} as gc);\n\n\
             #[cfg(test)]\nmod tests {{\n    use super::*;\n    use wasmlet_plugin_sdk::fixtures::{{GcCase, ImageFixture}};\n\n    \
             #[test]\n    fn least_recently_used_unused_images_go_first() {{\n        let case = GcCase::new()\n            \
             .bytes_to_free(150 << 20)\n            .image(ImageFixture::new(\"recent:1\").used_minutes_ago(10))\n            \
             .image(ImageFixture::new(\"old:1\").used_minutes_ago(300))\n            .image(ImageFixture::new(\"running:1\").in_use());\n        \
             let plan = case.plan_image_tags(&{type_name}).unwrap();\n        assert_eq!(plan, [\"old:1\", \"recent:1\"]);\n    }}\n}}\n"
        ),
        World::ProbeHandler => format!(
            "//! A probe: succeeds when the pod accepts TCP connections on its first declared port.\n\n\
             use wasmlet_plugin_sdk::{{export, PodAccess, ProbeHandler, ProbeRequest, ProbeResult}};\n\n\
             #[derive(Default)]\npub struct {type_name};\n\n\
             impl ProbeHandler for {type_name} {{\n    fn check(&self, request: &ProbeRequest, pod: &dyn PodAccess) -> ProbeResult {{\n        \
             let Some(&port) = request.ports.first() else {{ return ProbeResult::failure(\"the pod declares no port\") }};\n        \
             match pod.tcp_connect(port, request.timeout_ms) {{\n            Ok(()) => ProbeResult::success(format!(\"port {{port}} accepts connections\")),\n            \
             Err(error) => ProbeResult::failure(error),\n        }}\n    }}\n}}\n\nexport!({type_name} as probe);\n\n\
             #[cfg(test)]\nmod tests {{\n    use super::*;\n    use wasmlet_plugin_sdk::fixtures::MockPod;\n    use wasmlet_plugin_sdk::ProbeOutcome;\n\n    \
             #[test]\n    fn succeeds_once_the_first_port_accepts() {{\n        let request = ProbeRequest::new(\"\");\n        \
             let closed = {type_name}.check(&request, &MockPod::new());\n        assert_eq!(closed.outcome, ProbeOutcome::Failure, \"{{closed:?}}\");\n        \
             let open = {type_name}.check(&request, &MockPod::new().tcp_open(8080));\n        assert_eq!(open.outcome, ProbeOutcome::Success, \"{{open:?}}\");\n    }}\n}}\n"
        ),
        World::LifecycleHooks => format!(
            "//! Lifecycle hooks; the trait's defaults admit every pod and do nothing at\n\
             //! post-start and pre-stop: override `admit`, `post_start` or `pre_stop`.\n\n\
             use wasmlet_plugin_sdk::{{export, LifecycleHooks}};\n\n#[derive(Default)]\npub struct {type_name};\n\n\
             impl LifecycleHooks for {type_name} {{}}\n\nexport!({type_name} as hooks);\n\n\
             #[cfg(test)]\nmod tests {{\n    use super::*;\n    use wasmlet_plugin_sdk::fixtures::HookCase;\n    use wasmlet_plugin_sdk::AdmissionContainer;\n\n    \
             #[test]\n    fn admits_every_pod() {{\n        let case = HookCase::new(\"default\", \"web\").container(AdmissionContainer::new(\"app\"));\n        \
             assert_eq!(case.admit(&{type_name}), Ok(()));\n    }}\n}}\n"
        ),
    }
}

const GO_MOD: &str = "module @NAME@\n\ngo 1.24\n\nrequire wasmlet.dev/plugin v0.0.0\n\nreplace wasmlet.dev/plugin => @SDK@\n";

const GO_EVICTION: &str = include_str!("scaffold/go/eviction.go");

const GO_EVICTION_TEST: &str = include_str!("scaffold/go/eviction_test.go");

const GO_PROBE: &str = include_str!("scaffold/go/probe.go");

const GO_PROBE_TEST: &str = include_str!("scaffold/go/probe_test.go");

const GO_GC: &str = include_str!("scaffold/go/gc.go");

const GO_GC_TEST: &str = include_str!("scaffold/go/gc_test.go");

const GO_HOOKS: &str = include_str!("scaffold/go/hooks.go");

const GO_HOOKS_TEST: &str = include_str!("scaffold/go/hooks_test.go");

const PY_EVICTION: &str = include_str!("scaffold/python/eviction.py");

const PY_EVICTION_TEST: &str = include_str!("scaffold/python/test_eviction.py");

const PY_PROBE: &str = include_str!("scaffold/python/probe.py");

const PY_PROBE_TEST: &str = include_str!("scaffold/python/test_probe.py");

const PY_GC: &str = include_str!("scaffold/python/gc.py");

const PY_GC_TEST: &str = include_str!("scaffold/python/test_gc.py");

const PY_HOOKS: &str = include_str!("scaffold/python/hooks.py");

const PY_HOOKS_TEST: &str = include_str!("scaffold/python/test_hooks.py");

const JS_PACKAGE: &str = include_str!("scaffold/js/package.json");

const JS_EVICTION_COMPONENT: &str = include_str!("scaffold/js/eviction_component.js");

const JS_EVICTION: &str = include_str!("scaffold/js/eviction.js");

const JS_EVICTION_TEST: &str = include_str!("scaffold/js/eviction.test.js");

const JS_PROBE_COMPONENT: &str = include_str!("scaffold/js/probe_component.js");

const JS_PROBE: &str = include_str!("scaffold/js/probe.js");

const JS_PROBE_TEST: &str = include_str!("scaffold/js/probe.test.js");

const JS_GC_COMPONENT: &str = include_str!("scaffold/js/gc_component.js");

const JS_GC: &str = include_str!("scaffold/js/gc.js");

const JS_GC_TEST: &str = include_str!("scaffold/js/gc.test.js");

const JS_HOOKS_COMPONENT: &str = include_str!("scaffold/js/hooks_component.js");

const JS_HOOKS: &str = include_str!("scaffold/js/hooks.js");

const JS_HOOKS_TEST: &str = include_str!("scaffold/js/hooks.test.js");
