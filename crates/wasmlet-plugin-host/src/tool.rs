//! Tools for plugin authors: `wasmlet plugin validate` (does this component fit a world,
//! configure and self-check under its limits) and `wasmlet plugin test` (run one decision on
//! a snapshot file and print it beside the built-in default's).

use crate::config::{is_dns_label, Capabilities, DirectoryGrant, Limits, PluginSpec, World};
use crate::decisions::EvictionSnapshot;
use crate::engine::{sha256_hex, PluginEngine};
use crate::instance::{detect_world, LoadedPlugin};
use crate::records::PodMeta;
use crate::registry::PluginRegistry;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wasmlet_policy_default as policy;

/// Why a tool run failed; names the file.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The plugin (or the crate `plugin new` writes) at `file` is not usable.
    #[error("{file}: {message}")]
    Plugin {
        /// The component or crate.
        file: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The snapshot given to `plugin test` is not usable.
    #[error("{file}: field `{field}`: {message}")]
    Fixture {
        /// The fixture file.
        file: PathBuf,
        /// The field path, or `(file)`.
        field: String,
        /// What is wrong there.
        message: String,
    },
    /// A registry command (`plugin push`, `pull`, `sign`) that could not be done.
    #[error("{reference}: {message}")]
    Registry {
        /// The `oci://` reference as given.
        reference: String,
        /// What went wrong.
        message: String,
    },
    /// The registry could not be reached, or refused.
    #[error(transparent)]
    Oci(#[from] crate::oci::OciError),
    /// A `--grant-dir` flag that cannot be granted.
    #[error("--grant-dir {flag:?}: {message}")]
    Grant {
        /// The flag's value as given.
        flag: String,
        /// What is wrong with it.
        message: String,
    },
}

fn plugin_error(file: &Path, message: impl Into<String>) -> ToolError {
    ToolError::Plugin {
        file: file.to_path_buf(),
        message: message.into(),
    }
}

/// Parses a `--grant-dir HOST[:GUEST]` flag: a read-only directory, seen by the plugin at
/// GUEST (default: HOST). HOST is made absolute.
pub fn parse_grant(text: &str) -> Result<DirectoryGrant, ToolError> {
    let fail = |message: String| ToolError::Grant {
        flag: text.to_string(),
        message,
    };
    let (host, guest) = match text.split_once(':') {
        Some((host, guest)) => (host, Some(guest.to_string())),
        None => (text, None),
    };
    if host.is_empty() {
        return Err(fail("the host directory is empty".into()));
    }
    if guest.as_deref().is_some_and(|g| !g.starts_with('/')) {
        return Err(fail("the guest path must be absolute".into()));
    }
    let host_path = std::path::absolute(host).map_err(|e| fail(e.to_string()))?;
    let guest_path = guest.or_else(|| Some(host_path.display().to_string()));
    Ok(DirectoryGrant {
        host_path,
        guest_path,
        writable: false,
    })
}

/// Loads `file` for `world` (detected when `None`), then instantiates, configures and
/// self-checks it under `limits`. Returns a report to print.
pub fn validate_plugin(
    file: &Path,
    world: Option<World>,
    config_json: &str,
    limits: Limits,
    capabilities: Capabilities,
) -> Result<String, ToolError> {
    let engine = PluginEngine::new(None).map_err(|e| plugin_error(file, format!("{e:#}")))?;
    let bytes = std::fs::read(file).map_err(|e| plugin_error(file, format!("cannot read: {e}")))?;
    let sha256 = sha256_hex(&bytes);
    let started = Instant::now();
    let component = engine
        .load(file, &bytes, &sha256, limits.fuel.is_some())
        .map_err(|e| plugin_error(file, e.to_string()))?;
    let compiled = started.elapsed();
    let world = match world {
        Some(world) => world,
        None => detect_world(&component)
            .ok_or_else(|| plugin_error(file, "implements none of the worlds eviction-policy, gc-strategy, probe-handler, lifecycle-hooks of wasmlet:plugin@0.1.0"))?,
    };
    let spec = PluginSpec {
        name: "validate".into(),
        world,
        path: file.to_path_buf(),
        source: crate::config::PluginSource::File(file.to_path_buf()),
        sha256: None,
        limits,
        config_json: config_json.to_string(),
        shadow: false,
        capabilities,
    };
    let plugin = LoadedPlugin::load(&engine, &spec, &bytes, &sha256)
        .map_err(|e| plugin_error(file, e.to_string()))?;
    let started = Instant::now();
    plugin
        .validate()
        .map_err(|fault| plugin_error(file, format!("world {}: {fault}", world.as_str())))?;
    Ok(format!(
        "{}: ok\n  world: {} (wasmlet:plugin@0.1.0)\n  sha256: {sha256}\n  size: {} bytes, compiled in {:.1} ms\n  \
         instantiate + configure + self-check: ok in {:.2} ms within deadlineMs {} and memoryMiB {}",
        file.display(),
        world.as_str(),
        bytes.len(),
        compiled.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3,
        limits.deadline_ms,
        limits.memory_mib,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FixturePod {
    #[serde(default = "default_namespace")]
    namespace: String,
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    priority: i32,
    #[serde(default)]
    qos: Option<String>,
    #[serde(default)]
    is_static: bool,
    #[serde(default)]
    is_critical: bool,
    #[serde(default = "yes")]
    has_stats: bool,
    #[serde(default)]
    memory_request_bytes: u64,
    #[serde(default)]
    memory_usage_bytes: u64,
    #[serde(default)]
    disk_request_bytes: u64,
    #[serde(default)]
    disk_usage_bytes: u64,
    #[serde(default)]
    process_count: u64,
}

fn default_namespace() -> String {
    "default".into()
}
fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FixtureImage {
    #[serde(default)]
    tags: Vec<String>,
    size_bytes: u64,
    #[serde(default)]
    first_seen_unix_ms: u64,
    #[serde(default)]
    last_used_unix_ms: u64,
    #[serde(default)]
    in_use: bool,
    #[serde(default)]
    pinned: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Fixture {
    /// `memory.available`, `nodefs.available`, `pid.available`... (eviction-policy).
    #[serde(default)]
    signal: Option<String>,
    #[serde(default)]
    pods: Vec<FixturePod>,
    /// Bytes to free (gc-strategy).
    #[serde(default)]
    bytes_to_free: u64,
    #[serde(default)]
    images: Vec<FixtureImage>,
}

fn signal_named(name: &str) -> Option<policy::Signal> {
    policy::Signal::ALL.into_iter().find(|s| s.as_str() == name)
}

fn qos_named(name: Option<&str>) -> Result<policy::QosClass, String> {
    match name.unwrap_or("BestEffort") {
        "Guaranteed" => Ok(policy::QosClass::Guaranteed),
        "Burstable" => Ok(policy::QosClass::Burstable),
        "BestEffort" => Ok(policy::QosClass::BestEffort),
        other => Err(format!(
            "{other:?} is not Guaranteed, Burstable or BestEffort"
        )),
    }
}

/// Runs one decision of the plugin at `file` on the snapshot in `fixture_file`, and the
/// built-in default on the same snapshot; returns both as JSON.
pub fn test_plugin(
    file: &Path,
    fixture_file: &Path,
    config_json: &str,
    grants: &[DirectoryGrant],
) -> Result<serde_json::Value, ToolError> {
    let fixture_error = |field: String, message: String| ToolError::Fixture {
        file: fixture_file.to_path_buf(),
        field,
        message,
    };
    let text = std::fs::read_to_string(fixture_file)
        .map_err(|e| fixture_error("(file)".into(), e.to_string()))?;
    let fixture: Fixture =
        serde_path_to_error::deserialize(serde_yaml::Deserializer::from_str(&text))
            .map_err(|e| fixture_error(e.path().to_string(), e.into_inner().to_string()))?;
    let engine = PluginEngine::new(None).map_err(|e| plugin_error(file, format!("{e:#}")))?;
    let (component, _) = engine
        .load_file(file)
        .map_err(|e| plugin_error(file, e.to_string()))?;
    let world =
        detect_world(&component).ok_or_else(|| plugin_error(file, "implements no plugin world"))?;
    let dir = tempfile_dir().map_err(|e| plugin_error(file, e))?;
    let config_file = dir.join("plugins.yaml");
    let config = serde_json::json!({
        "apiVersion": "wasmlet.dev/v1alpha1",
        "kind": "PluginConfiguration",
        "plugins": [{"name": "under-test", "world": world.as_str(), "path": file.canonicalize().unwrap_or(file.to_path_buf()),
                      "config": serde_json::from_str::<serde_json::Value>(config_json).unwrap_or_default(),
                      "capabilities": {"directories": grants.iter().map(|g| serde_json::json!({
                          "hostPath": g.host_path, "guestPath": g.guest_path(), "writable": g.writable})).collect::<Vec<_>>()}}],
    });
    std::fs::write(&config_file, config.to_string())
        .map_err(|e| plugin_error(file, e.to_string()))?;
    let registry = PluginRegistry::new(engine, Some(config_file));
    let _ = std::fs::remove_dir_all(&dir);
    if let Some(rejected) = registry.report()["plugins"][0]["lastRejected"].as_object() {
        return Err(plugin_error(
            file,
            rejected["reason"]
                .as_str()
                .unwrap_or("rejected")
                .to_string(),
        ));
    }
    match world {
        World::EvictionPolicy => {
            let signal_name = fixture.signal.as_deref().unwrap_or("memory.available");
            let signal = signal_named(signal_name).ok_or_else(|| {
                fixture_error("signal".into(), format!("unknown signal {signal_name:?}"))
            })?;
            let mut snapshot = EvictionSnapshot {
                pressure: vec![policy::SignalObservation::new(signal, 0, 0, 0)],
                ..Default::default()
            };
            for (i, pod) in fixture.pods.iter().enumerate() {
                snapshot.pods.push(policy::PodInfo {
                    priority: pod.priority,
                    qos: qos_named(pod.qos.as_deref())
                        .map_err(|m| fixture_error(format!("pods[{i}].qos"), m))?,
                    is_static: pod.is_static,
                    is_critical: pod.is_critical,
                    has_stats: pod.has_stats,
                    memory_request_bytes: pod.memory_request_bytes,
                    memory_usage_bytes: pod.memory_usage_bytes,
                    disk_request_bytes: pod.disk_request_bytes,
                    disk_usage_bytes: pod.disk_usage_bytes,
                    process_count: pod.process_count,
                    container_count: 1,
                    ..Default::default()
                });
                std::sync::Arc::make_mut(&mut snapshot.meta).push(PodMeta {
                    namespace: pod.namespace.clone(),
                    name: pod.name.clone(),
                    uid: format!("fixture-{i}"),
                    labels: pod.labels.clone(),
                    annotations: pod.annotations.clone(),
                });
            }
            snapshot.node.pod_count = snapshot.pods.len() as u32;
            let decision = registry.rank(&snapshot);
            let names = |order: &[u32]| -> Vec<String> {
                order
                    .iter()
                    // The host checked every index; `get` keeps this panic-free regardless.
                    .filter_map(|&i| fixture.pods.get(i as usize))
                    .map(|pod| format!("{}/{}", pod.namespace, pod.name))
                    .collect()
            };
            Ok(serde_json::json!({
                "world": world.as_str(),
                "decidedBy": decision.decided_by,
                "order": names(&decision.order),
                "builtInOrder": names(&policy::eviction::rank(&snapshot.pressure, &snapshot.pods)),
            }))
        }
        World::GcStrategy => {
            let images: Vec<policy::ImageInfo> = fixture
                .images
                .iter()
                .map(|i| policy::ImageInfo {
                    size_bytes: i.size_bytes,
                    first_seen_unix_ms: i.first_seen_unix_ms,
                    last_used_unix_ms: i.last_used_unix_ms,
                    in_use: i.in_use,
                    pinned: i.pinned,
                })
                .collect();
            let disk = policy::DiskInfo {
                bytes_to_free: fixture.bytes_to_free,
                ..Default::default()
            };
            let tags: Vec<Vec<String>> = fixture.images.iter().map(|i| i.tags.clone()).collect();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            let decision = registry.plan_images(&disk, &images, tags.clone(), now);
            let names = |order: &[u32]| -> Vec<String> {
                order
                    .iter()
                    .filter_map(|&i| tags.get(i as usize))
                    .map(|t| t.join(","))
                    .collect()
            };
            Ok(serde_json::json!({
                "world": world.as_str(),
                "decidedBy": decision.decided_by,
                "order": names(&decision.order),
                "builtInOrder": names(&policy::gc::plan_images(&disk, &images, now)),
            }))
        }
        other => Err(plugin_error(
            file,
            format!(
                "`plugin test` runs eviction-policy and gc-strategy plugins; this one is {}",
                other.as_str()
            ),
        )),
    }
}

fn tempfile_dir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("wasmlet-plugin-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// The SDK crate a new plugin depends on: `sdk` if given, else `plugins/sdk` found from the
/// current directory upwards (a checkout of wasmlet).
fn find_sdk(sdk: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(path) = sdk {
        return path
            .canonicalize()
            .ok()
            .filter(|p| p.join("Cargo.toml").is_file())
            .ok_or_else(|| format!("--sdk {}: no Cargo.toml there", path.display()));
    }
    let start = std::env::current_dir().map_err(|e| e.to_string())?;
    start
        .ancestors()
        .map(|dir| dir.join("plugins/sdk"))
        .find(|sdk| sdk.join("Cargo.toml").is_file())
        .ok_or_else(|| {
            "cannot find plugins/sdk above the current directory: pass --sdk PATH".to_string()
        })
}

fn template(world: World, type_name: &str) -> String {
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
             impl GcStrategy for {type_name} {{}}\n\nexport!({type_name} as gc);\n"
        ),
        World::ProbeHandler => format!(
            "//! A probe: succeeds when the pod accepts TCP connections on its first declared port.\n\n\
             use wasmlet_plugin_sdk::{{export, PodAccess, ProbeHandler, ProbeRequest, ProbeResult}};\n\n\
             #[derive(Default)]\npub struct {type_name};\n\n\
             impl ProbeHandler for {type_name} {{\n    fn check(&self, request: &ProbeRequest, pod: &dyn PodAccess) -> ProbeResult {{\n        \
             let Some(&port) = request.ports.first() else {{ return ProbeResult::failure(\"the pod declares no port\") }};\n        \
             match pod.tcp_connect(port, request.timeout_ms) {{\n            Ok(()) => ProbeResult::success(format!(\"port {{port}} accepts connections\")),\n            \
             Err(error) => ProbeResult::failure(error),\n        }}\n    }}\n}}\n\nexport!({type_name} as probe);\n"
        ),
        World::LifecycleHooks => format!(
            "//! Lifecycle hooks; the trait's defaults admit every pod and do nothing at\n\
             //! post-start and pre-stop: override `admit`, `post_start` or `pre_stop`.\n\n\
             use wasmlet_plugin_sdk::{{export, LifecycleHooks}};\n\n#[derive(Default)]\npub struct {type_name};\n\n\
             impl LifecycleHooks for {type_name} {{}}\n\nexport!({type_name} as hooks);\n"
        ),
    }
}

/// Writes a ready-to-build plugin crate `name` for `world` into `dir/name`.
pub fn new_plugin(
    name: &str,
    world: World,
    dir: &Path,
    sdk: Option<&Path>,
) -> Result<PathBuf, ToolError> {
    let root = dir.join(name);
    let fail = |message: String| plugin_error(&root, message);
    if !is_dns_label(name) {
        return Err(fail(
            "the name must be a lowercase DNS label, e.g. my-eviction-policy".into(),
        ));
    }
    if root.exists() {
        return Err(fail("already exists".into()));
    }
    let sdk = find_sdk(sdk).map_err(fail)?;
    let type_name: String = name
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect();
    let type_name = if type_name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("Plugin{type_name}")
    } else {
        type_name
    };
    let cargo = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\", \"rlib\"]\n\n\
         [dependencies]\nwasmlet-plugin-sdk = {{ path = \"{}\" }}\n\n# A workspace of its own.\n[workspace]\n\n\
         [profile.release]\nopt-level = \"s\"\nlto = true\nstrip = true\n",
        sdk.display()
    );
    let readme = format!(
        "# {name}\n\nA wasmlet plugin (world `{}`).\n\n```sh\ncargo test                                             # native, with the SDK's fixtures\n\
         cargo build --release --target wasm32-wasip2\nwasmlet plugin validate target/wasm32-wasip2/release/{}.wasm\n```\n",
        world.as_str(),
        name.replace('-', "_")
    );
    let write = |path: PathBuf, text: String| {
        std::fs::write(&path, text).map_err(|e| plugin_error(&path, e.to_string()))
    };
    std::fs::create_dir_all(root.join("src")).map_err(|e| fail(e.to_string()))?;
    write(root.join("Cargo.toml"), cargo)?;
    write(root.join("README.md"), readme)?;
    write(root.join("src/lib.rs"), template(world, &type_name))?;
    Ok(root)
}
