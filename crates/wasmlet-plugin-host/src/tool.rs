//! Tools for plugin authors: `wasmlet plugin validate` (does this component fit a world,
//! configure and self-check under its limits) and `wasmlet plugin test` (run one decision on
//! a snapshot file and print it beside the built-in default's).

use crate::config::{Capabilities, DirectoryGrant, Limits, PluginSpec, World, CONTRACT_VERSION};
use crate::engine::{sha256_hex, PluginEngine};
use crate::instance::{contract_version, detect_world, LoadedPlugin};
use crate::records::PodMeta;
use crate::registry::EvictionSnapshot;
use crate::registry::PluginRegistry;
use crate::wasi;
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
    /// `plugin validate` refused a component that compiled: the report so far (world, digest,
    /// size, the WASI it imports and what it was given) is worth printing beside the reason,
    /// since a grant the component needs and did not get shows there.
    #[error("{file}: {message}")]
    Invalid {
        /// The component.
        file: PathBuf,
        /// Why it was refused.
        message: String,
        /// What `validate` found before it refused it.
        report: String,
    },
    /// A `--grant-dir` or `--grant-env` flag that cannot be granted.
    #[error("{option} {flag:?}: {message}")]
    Grant {
        /// `--grant-dir` or `--grant-env`.
        option: &'static str,
        /// The flag's value as given.
        flag: String,
        /// What is wrong with it.
        message: String,
    },
}

/// The error of a tool run about `file` (a component, a project directory or a key).
pub(crate) fn plugin_error(file: &Path, message: impl Into<String>) -> ToolError {
    ToolError::Plugin {
        file: file.to_path_buf(),
        message: message.into(),
    }
}

/// Parses a `--grant-dir HOST[:GUEST]` flag: a read-only directory, seen by the plugin at
/// GUEST (default: HOST). HOST is made absolute.
pub fn parse_grant(text: &str) -> Result<DirectoryGrant, ToolError> {
    let fail = |message: String| ToolError::Grant {
        option: "--grant-dir",
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

/// Parses a `--grant-env NAME=VALUE` flag: a variable the plugin sees, as
/// `capabilities.environment` grants it (the name non-empty; the value may hold `=`).
pub fn parse_env_grant(text: &str) -> Result<(String, String), ToolError> {
    let fail = |message: &str| ToolError::Grant {
        option: "--grant-env",
        flag: text.to_string(),
        message: message.to_string(),
    };
    match text.split_once('=') {
        Some(("", _)) => Err(fail("the variable name is empty")),
        Some((name, value)) => Ok((name.to_string(), value.to_string())),
        None => Err(fail("expected NAME=VALUE")),
    }
}

/// Loads `file` for `world` (detected when `None`), then instantiates, configures and
/// self-checks it under `limits` and `capabilities`. Returns a report to print, which ends
/// with the WASI the component imports beyond what every plugin gets and what the grants give
/// it. A component that compiled but is refused is a [`ToolError::Invalid`] carrying the
/// report so far.
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
    let contract = contract_version(&component).unwrap_or_else(|| "?".into());
    let wasi_lines = wasi_section(&wasi::imports::imports(&component, &capabilities));
    let summary = |world: Option<World>| {
        let world = world.map_or_else(
            || "none of the worlds of this host".to_string(),
            |world| world.as_str().to_string(),
        );
        format!(
            "  world: {world} (built against wasmlet:plugin@{contract}; this host serves {CONTRACT_VERSION})\n  sha256: {sha256}\n  size: {} bytes, compiled in {:.1} ms",
            bytes.len(),
            compiled.as_secs_f64() * 1e3,
        )
    };
    let refused = |world: Option<World>, message: String| ToolError::Invalid {
        file: file.to_path_buf(),
        message,
        report: format!(
            "{}: refused\n{}\n{wasi_lines}",
            file.display(),
            summary(world)
        ),
    };
    let world = match world {
        Some(world) => world,
        None => detect_world(&component).ok_or_else(|| {
            refused(None, "implements none of the worlds eviction-policy, gc-strategy, probe-handler, lifecycle-hooks of wasmlet:plugin@0.1.2".into())
        })?,
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
        rollout: None,
        capabilities,
        selector: None,
    };
    let plugin = LoadedPlugin::link(&engine, &spec, &component, &sha256)
        .map_err(|e| refused(detect_world(&component), e.to_string()))?;
    let started = Instant::now();
    plugin
        .validate()
        .map_err(|fault| refused(Some(world), format!("world {}: {fault}", world.as_str())))?;
    Ok(format!(
        "{}: ok\n{}\n  instantiate + configure + self-check: ok in {:.2} ms within deadlineMs {} and memoryMiB {}\n{wasi_lines}",
        file.display(),
        summary(Some(world)),
        started.elapsed().as_secs_f64() * 1e3,
        limits.deadline_ms,
        limits.memory_mib,
    ))
}

/// The report's WASI lines: each import whose answer depends on the grants, and what it got.
fn wasi_section(imports: &[wasi::imports::WasiImport]) -> String {
    let heading = format!(
        "  wasi imports beyond {}, which every plugin gets:",
        wasi::imports::ALWAYS_GIVEN
    );
    if imports.is_empty() {
        return format!("{heading} none");
    }
    let lines: Vec<String> = imports
        .iter()
        .map(|i| format!("    {}: {}", i.name, i.given))
        .collect();
    format!("{heading}\n{}", lines.join("\n"))
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
    qos: FixtureQos,
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

/// A fixture pod's QoS class, by the name Kubernetes gives it; BestEffort when unset.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
enum FixtureQos {
    Guaranteed,
    Burstable,
    #[default]
    BestEffort,
}

impl From<FixtureQos> for policy::QosClass {
    fn from(qos: FixtureQos) -> Self {
        match qos {
            FixtureQos::Guaranteed => policy::QosClass::Guaranteed,
            FixtureQos::Burstable => policy::QosClass::Burstable,
            FixtureQos::BestEffort => policy::QosClass::BestEffort,
        }
    }
}

/// Runs one decision of the plugin at `file` on the snapshot in `fixture_file`, and the
/// built-in default on the same snapshot; returns both as JSON. `grants`' directories and
/// environment are given to the plugin as its config's `capabilities` would.
pub fn test_plugin(
    file: &Path,
    fixture_file: &Path,
    config_json: &str,
    grants: &Capabilities,
) -> Result<serde_json::Value, ToolError> {
    let fixture_error = |field: String, message: String| ToolError::Fixture {
        file: fixture_file.to_path_buf(),
        field,
        message,
    };
    let text = std::fs::read_to_string(fixture_file)
        .map_err(|e| fixture_error("(file)".into(), e.to_string()))?;
    let fixture: Fixture =
        crate::yaml::from_str(&text).map_err(|e| fixture_error(e.path, e.message))?;
    let dir = private_temp_dir().map_err(|e| plugin_error(file, e.to_string()))?;
    let loaded = serve_under_test(file, dir.path(), config_json, grants);
    drop(dir);
    let (world, registry) = loaded?;
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
                    qos: pod.qos.into(),
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

/// A registry serving the plugin at `file` as `under-test`, its config written into `dir`,
/// and the world the plugin implements.
fn serve_under_test(
    file: &Path,
    dir: &Path,
    config_json: &str,
    grants: &Capabilities,
) -> Result<(World, std::sync::Arc<PluginRegistry>), ToolError> {
    // A compile cache for this run: the registry loads the component compiled here to detect
    // its world instead of compiling it again (seconds for an interpreter's component).
    let engine = PluginEngine::new(Some(dir.join("compiled")))
        .map_err(|e| plugin_error(file, format!("{e:#}")))?;
    let (component, _) = engine
        .load_file(file)
        .map_err(|e| plugin_error(file, e.to_string()))?;
    let world =
        detect_world(&component).ok_or_else(|| plugin_error(file, "implements no plugin world"))?;
    let config_file = dir.join("plugins.yaml");
    let config = serde_json::json!({
        "apiVersion": "wasmlet.dev/v1alpha1",
        "kind": "PluginConfiguration",
        "plugins": [{"name": "under-test", "world": world.as_str(), "path": file.canonicalize().unwrap_or(file.to_path_buf()),
                      "config": serde_json::from_str::<serde_json::Value>(config_json).unwrap_or_default(),
                      "capabilities": {"directories": grants.directories.iter().map(|g| serde_json::json!({
                          "hostPath": g.host_path, "guestPath": g.guest_path(), "writable": g.writable})).collect::<Vec<_>>(),
                          "environment": grants.environment}}],
    });
    std::fs::write(&config_file, config.to_string())
        .map_err(|e| plugin_error(file, e.to_string()))?;
    Ok((world, PluginRegistry::new(engine, Some(config_file))))
}

/// A new directory for one `plugin test` run that only this user can enter: created here
/// with mode 0700 under a fresh random name, never one found in place under the shared
/// temporary directory, since compiled code is loaded from it. Removed when dropped.
fn private_temp_dir() -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix("wasmlet-plugin-test-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

#[cfg(test)]
mod tests;
