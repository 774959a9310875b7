//! The plugin config file (`pluginConfig:` in the WasmletConfiguration): which component
//! serves which world, with what limits and what `configure` text.

mod parse;

pub(crate) use crate::names::is_dns_label;
pub use parse::parse;

use crate::selector::PodSelector;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const API_VERSION: &str = "wasmlet.dev/v1alpha1";
const KIND: &str = "PluginConfiguration";

/// The `wasmlet:plugin` contract version this host serves (`wit/`); components built against an
/// earlier 0.1.x link too (see `wit/README.md`).
pub const CONTRACT_VERSION: &str = "0.1.2";

/// The four plugin worlds of `wasmlet:plugin@0.1.2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum World {
    /// Ranks pods for eviction under node pressure.
    EvictionPolicy,
    /// Plans image and dead-container GC.
    GcStrategy,
    /// Runs probes that pods select by annotation.
    ProbeHandler,
    /// Admission, postStart and preStop for the pods it selects.
    LifecycleHooks,
}

impl World {
    /// The WIT world name.
    pub fn as_str(self) -> &'static str {
        match self {
            World::EvictionPolicy => "eviction-policy",
            World::GcStrategy => "gc-strategy",
            World::ProbeHandler => "probe-handler",
            World::LifecycleHooks => "lifecycle-hooks",
        }
    }

    /// Every world, in the order `plugin validate` tries them.
    pub const ALL: [World; 4] = [
        World::EvictionPolicy,
        World::GcStrategy,
        World::ProbeHandler,
        World::LifecycleHooks,
    ];
}

/// Per-plugin limits; each call runs under all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock deadline of one call: enforced by epoch interruption while the guest runs
    /// Wasm, and by the call's timeout while it is blocked in a host call (`engine`).
    #[serde(default = "Limits::default_deadline_ms")]
    pub deadline_ms: u64,
    /// Cap on the whole instance: all its linear memories and tables together.
    #[serde(default = "Limits::default_memory_mib", rename = "memoryMiB")]
    pub memory_mib: u64,
    /// Optional instruction budget of one call.
    #[serde(default)]
    pub fuel: Option<u64>,
}

impl Limits {
    fn default_deadline_ms() -> u64 {
        50
    }
    fn default_memory_mib() -> u64 {
        32
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            deadline_ms: Self::default_deadline_ms(),
            memory_mib: Self::default_memory_mib(),
            fuel: None,
        }
    }
}

/// What a plugin may reach beyond the deny-all default: host directories and environment
/// variables through WASI, and, for probe and hook plugins, `exec` in the containers the
/// operator names. Network access is never granted through WASI; probe and hook plugins
/// reach their pod through the host's scoped imports instead.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Capabilities {
    /// Host directories preopened for the plugin.
    #[serde(default)]
    pub directories: Vec<DirectoryGrant>,
    /// Environment variables the plugin sees (it sees none of the host's).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// Containers a probe or hook plugin may `exec` in (`"*"`: every container of the pod it
    /// serves); none by default, so a plugin cannot run commands in pods unless granted.
    #[serde(default)]
    pub exec: Vec<String>,
    /// An eviction plugin's pressure decisions (`pressure-watch`) may evict a `Guaranteed`
    /// pod whose usage is within its requests; without it the host skips such pods.
    #[serde(default)]
    pub evict_guaranteed: bool,
}

impl Capabilities {
    /// Whether `exec` in the container `name` is granted.
    pub fn may_exec_in(&self, name: &str) -> bool {
        self.exec
            .iter()
            .any(|granted| granted == "*" || granted == name)
    }
}

/// A host directory preopened for the plugin, read-only unless `writable`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirectoryGrant {
    /// The directory on the host; relative paths are relative to the config file.
    pub host_path: PathBuf,
    /// Where the plugin sees it; defaults to `hostPath`.
    #[serde(default)]
    pub guest_path: Option<String>,
    /// Lets the plugin create, write and remove files under it.
    #[serde(default)]
    pub writable: bool,
}

impl DirectoryGrant {
    /// The path the guest opens.
    pub fn guest_path(&self) -> String {
        self.guest_path
            .clone()
            .unwrap_or_else(|| self.host_path.display().to_string())
    }
}

/// Where a plugin's component comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// A `.wasm` file on the node, watched for changes.
    File(PathBuf),
    /// An artifact in an OCI registry, pulled into the node's content-addressed store.
    Oci(OciSource),
}

/// An `oci://` plugin: the reference and how to reach and trust it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciSource {
    /// `registry[:port]/repository` with a tag or a digest.
    pub reference: crate::oci::OciReference,
    /// Plain HTTP to a registry that is not on loopback (loopback registries get it unless
    /// `ca_file` is given).
    pub insecure: bool,
    /// A PEM file of CA certificates trusted for the registry besides the system roots (a
    /// registry with a private CA); with it a loopback registry is reached over HTTPS too.
    pub ca_file: Option<PathBuf>,
    /// How often a tag is resolved again (digests never change).
    pub poll_period: std::time::Duration,
    /// A PEM public key whose cosign-compatible signature every version must carry.
    pub public_key: Option<PathBuf>,
    /// A docker-style `config.json` with the registry's credentials (default:
    /// `$DOCKER_CONFIG/config.json`, then `/root/.docker/config.json`).
    pub registry_config: Option<PathBuf>,
}

impl OciSource {
    /// How its registry is reached: protocol, trusted CAs, credentials.
    pub fn access(&self) -> crate::oci::RegistryAccess {
        crate::oci::RegistryAccess {
            insecure: self.insecure,
            ca_file: self.ca_file.clone(),
            registry_config: self.registry_config.clone(),
        }
    }
}

/// How often a tag is resolved when the config does not say.
pub const DEFAULT_POLL_PERIOD: std::time::Duration = std::time::Duration::from_secs(300);

/// A staged rollout (`rollout:`): a new version of an eviction plugin first ranks beside the
/// serving one, as its candidate, and is swapped in only when it earned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rollout {
    /// Decisions the candidate must rank without a fault before it is promoted (at least 1).
    pub shadow_cycles: u32,
    /// Most decisions it may rank differently from the serving version; none: no limit.
    #[serde(default)]
    pub max_disagreements: Option<u32>,
}

/// One configured plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginSpec {
    /// A DNS subdomain, unique in the file; names the plugin in logs and `/plugins`.
    pub name: String,
    /// The world the component must implement.
    pub world: World,
    /// The component, made absolute against the config file's directory; for an OCI plugin,
    /// the `oci://` reference as written.
    pub path: PathBuf,
    /// The component's file, or its OCI reference.
    pub source: PluginSource,
    /// Optional pin: a component with another hash is refused.
    pub sha256: Option<String>,
    /// Deadline, memory cap and fuel of each call.
    pub limits: Limits,
    /// The `config:` value as JSON text, passed to `configure`.
    pub config_json: String,
    /// An eviction plugin that ranks the same snapshots as the active one, for comparison
    /// only: its choices are logged and diffed, it never evicts.
    pub shadow: bool,
    /// A new version runs as the serving one's candidate before it is swapped in (eviction
    /// plugins only); none: a new version is swapped in once it validates.
    pub rollout: Option<Rollout>,
    /// WASI and exec grants; none by default.
    pub capabilities: Capabilities,
    /// The pods a `lifecycle-hooks` plugin runs for; every pod when `None`.
    pub selector: Option<PodSelector>,
}

/// A plugin config that cannot be used; names the file, the plugin and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {place}: {message}")]
pub struct PluginConfigError {
    /// The config file.
    pub file: PathBuf,
    /// `plugins[2] (eviction-batch-first).limits.deadlineMs`, or `(file)`.
    pub place: String,
    /// What is wrong there.
    pub message: String,
}

/// Parses the plugin config file. Relative `path`s are relative to the file's directory.
pub fn load(file: &Path) -> Result<Vec<PluginSpec>, PluginConfigError> {
    let error = |place: String, message: String| PluginConfigError {
        file: file.to_path_buf(),
        place,
        message,
    };
    let text = std::fs::read_to_string(file)
        .map_err(|e| error("(file)".into(), format!("cannot read: {e}")))?;
    parse(file, &text)
}

#[cfg(test)]
mod tests;
