//! The plugin config file (`pluginConfig:` in the WasmletConfiguration): which component
//! serves which world, with what limits and what `configure` text.

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

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSpec {
    name: String,
    world: World,
    path: PathBuf,
    #[serde(default)]
    sha256: Option<String>,
    #[serde(default)]
    limits: Option<Limits>,
    #[serde(default)]
    config: Option<serde_json::Value>,
    #[serde(default)]
    shadow: bool,
    #[serde(default)]
    rollout: Option<Rollout>,
    #[serde(default)]
    capabilities: Capabilities,
    #[serde(default)]
    selector: Option<PodSelector>,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    ca_file: Option<PathBuf>,
    #[serde(default)]
    poll_period: Option<String>,
    #[serde(default)]
    verify: Option<RawVerify>,
    #[serde(default)]
    registry_config: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawVerify {
    public_key: PathBuf,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawFile {
    api_version: String,
    kind: String,
    #[serde(default)]
    plugins: Vec<serde_yaml::Value>,
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

/// Where in the file a parse error is: the root (`.`), or the empty key a YAML scan error
/// leaves behind (`&a:\nb`), is the file's; its message gives the line and column.
fn file_place(path: &serde_path_to_error::Path) -> String {
    match path.to_string() {
        place if place.is_empty() || place == "." => "(file)".into(),
        place => place,
    }
}

/// Parses plugin config text; `file` names it in errors and anchors relative paths.
pub fn parse(file: &Path, text: &str) -> Result<Vec<PluginSpec>, PluginConfigError> {
    let error = |place: String, message: String| PluginConfigError {
        file: file.to_path_buf(),
        place,
        message,
    };
    let raw: RawFile = serde_path_to_error::deserialize(serde_yaml::Deserializer::from_str(text))
        .map_err(|e| error(file_place(e.path()), e.into_inner().to_string()))?;
    if raw.api_version != API_VERSION || raw.kind != KIND {
        return Err(error(
            "apiVersion/kind".into(),
            format!(
                "expected {API_VERSION} {KIND}, got {} {}",
                raw.api_version, raw.kind
            ),
        ));
    }
    let base = file.parent().unwrap_or(Path::new("."));
    let mut specs: Vec<PluginSpec> = Vec::new();
    for (index, value) in raw.plugins.into_iter().enumerate() {
        let name = value
            .get("name")
            .and_then(|n| n.as_str())
            .unwrap_or("?")
            .to_string();
        let place = |field: &str| {
            let field = if field.is_empty() || field == "." {
                String::new()
            } else {
                format!(".{field}")
            };
            format!("plugins[{index}] ({name}){field}")
        };
        let spec: RawSpec = serde_path_to_error::deserialize(value)
            .map_err(|e| error(place(&e.path().to_string()), e.into_inner().to_string()))?;
        if spec.name.is_empty() || !is_dns_subdomain(&spec.name) {
            return Err(error(place("name"), "must be a lowercase DNS name".into()));
        }
        if specs.iter().any(|s| s.name == spec.name) {
            return Err(error(
                place("name"),
                format!("duplicate plugin name {:?}", spec.name),
            ));
        }
        if spec.shadow && spec.world != World::EvictionPolicy {
            return Err(error(
                place("shadow"),
                "only an eviction-policy plugin can run as a shadow".into(),
            ));
        }
        if let Some(rollout) = &spec.rollout {
            if spec.world != World::EvictionPolicy {
                return Err(error(
                    place("rollout"),
                    "only an eviction-policy plugin can be rolled out as a candidate".into(),
                ));
            }
            if spec.shadow {
                return Err(error(
                    place("rollout"),
                    "a shadow plugin decides nothing: its new versions need no rollout".into(),
                ));
            }
            if rollout.shadow_cycles == 0 {
                return Err(error(
                    place("rollout.shadowCycles"),
                    "must be at least 1".into(),
                ));
            }
        }
        // Eviction and GC ask the one plugin of their world; probe plugins are chosen by name
        // and every lifecycle-hooks plugin runs, so those worlds may have several.
        let single = matches!(spec.world, World::EvictionPolicy | World::GcStrategy);
        if single
            && specs
                .iter()
                .any(|s| s.world == spec.world && s.shadow == spec.shadow)
        {
            return Err(error(
                place("world"),
                format!(
                    "a {} plugin{} is already configured",
                    spec.world.as_str(),
                    if spec.shadow { " (shadow)" } else { "" }
                ),
            ));
        }
        let limits = spec.limits.unwrap_or_default();
        if limits.deadline_ms == 0 || limits.deadline_ms > 60_000 {
            return Err(error(
                place("limits.deadlineMs"),
                "must be between 1 and 60000".into(),
            ));
        }
        if limits.memory_mib == 0 || limits.memory_mib > 4096 {
            return Err(error(
                place("limits.memoryMiB"),
                "must be between 1 and 4096".into(),
            ));
        }
        if let Some(pin) = &spec.sha256 {
            if pin.len() != 64 || !pin.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(error(place("sha256"), "must be 64 hex digits".into()));
            }
        }
        let absolute = |path: PathBuf| {
            if path.is_relative() {
                base.join(path)
            } else {
                path
            }
        };
        let oci_only = |field: &str| {
            error(
                place(field),
                "applies only to a plugin whose path is oci://".into(),
            )
        };
        let (path, source) = match spec.path.to_str().and_then(|p| p.strip_prefix("oci://")) {
            Some(text) => {
                let reference = crate::oci::OciReference::parse(text)
                    .map_err(|e| error(place("path"), e.to_string()))?;
                let poll_period = match &spec.poll_period {
                    None => DEFAULT_POLL_PERIOD,
                    Some(_) if reference.tag().is_none() => {
                        return Err(error(
                            place("pollPeriod"),
                            "a digest reference never changes: pollPeriod applies to tags only"
                                .into(),
                        ))
                    }
                    Some(text) => match humantime::parse_duration(text) {
                        Ok(period) if period >= std::time::Duration::from_millis(100) => period,
                        Ok(_) => {
                            return Err(error(place("pollPeriod"), "must be at least 100ms".into()))
                        }
                        Err(e) => {
                            return Err(error(
                                place("pollPeriod"),
                                format!("{text:?} is not a duration like 30s or 5m: {e}"),
                            ))
                        }
                    },
                };
                if spec.insecure && spec.ca_file.is_some() {
                    return Err(error(
                        place("caFile"),
                        "a CA file is for HTTPS and insecure: true asks for plain HTTP: give one"
                            .into(),
                    ));
                }
                let source = OciSource {
                    reference,
                    insecure: spec.insecure,
                    ca_file: spec.ca_file.map(absolute),
                    poll_period,
                    public_key: spec.verify.map(|v| absolute(v.public_key)),
                    registry_config: spec.registry_config.map(absolute),
                };
                (spec.path, PluginSource::Oci(source))
            }
            None => {
                if spec.insecure {
                    return Err(oci_only("insecure"));
                }
                if spec.ca_file.is_some() {
                    return Err(oci_only("caFile"));
                }
                if spec.poll_period.is_some() {
                    return Err(oci_only("pollPeriod"));
                }
                if spec.verify.is_some() {
                    return Err(oci_only("verify"));
                }
                if spec.registry_config.is_some() {
                    return Err(oci_only("registryConfig"));
                }
                let path = absolute(spec.path);
                (path.clone(), PluginSource::File(path))
            }
        };
        let mut capabilities = spec.capabilities;
        for (i, grant) in capabilities.directories.iter_mut().enumerate() {
            let field = |name: &str| place(&format!("capabilities.directories[{i}].{name}"));
            if grant.host_path.as_os_str().is_empty() {
                return Err(error(field("hostPath"), "must not be empty".into()));
            }
            if grant.host_path.is_relative() {
                grant.host_path = base.join(&grant.host_path);
            }
            if let Some(guest) = &grant.guest_path {
                if !guest.starts_with('/') {
                    return Err(error(
                        field("guestPath"),
                        format!("{guest:?} must be an absolute path"),
                    ));
                }
            }
        }
        if let Some(name) = capabilities
            .environment
            .keys()
            .find(|k| k.is_empty() || k.contains('='))
        {
            return Err(error(
                place(&format!("capabilities.environment.{name}")),
                "a variable name must be non-empty and contain no '='".into(),
            ));
        }
        if let Some((i, _)) = capabilities
            .exec
            .iter()
            .enumerate()
            .find(|(_, c)| c.as_str() != "*" && !is_dns_label(c))
        {
            return Err(error(
                place(&format!("capabilities.exec[{i}]")),
                "must be a container name or \"*\" (every container of the pod)".into(),
            ));
        }
        if !capabilities.exec.is_empty()
            && !matches!(spec.world, World::ProbeHandler | World::LifecycleHooks)
        {
            return Err(error(
                place("capabilities.exec"),
                "only probe-handler and lifecycle-hooks plugins reach a pod's containers".into(),
            ));
        }
        if capabilities.evict_guaranteed && spec.world != World::EvictionPolicy {
            return Err(error(
                place("capabilities.evictGuaranteed"),
                "only eviction-policy plugins evict pods".into(),
            ));
        }
        if let Some(selector) = &spec.selector {
            if spec.world != World::LifecycleHooks {
                return Err(error(
                    place("selector"),
                    "only lifecycle-hooks plugins (admission and hooks) choose their pods; a probe plugin is chosen by the pod's annotation".into(),
                ));
            }
            if let Some((field, reason)) = selector.problem() {
                return Err(error(place(&format!("selector.{field}")), reason));
            }
        }
        specs.push(PluginSpec {
            name: spec.name,
            world: spec.world,
            path,
            source,
            sha256: spec.sha256.map(|s| s.to_lowercase()),
            limits,
            config_json: spec
                .config
                .map_or_else(|| "{}".to_string(), |v| v.to_string()),
            shadow: spec.shadow,
            rollout: spec.rollout,
            capabilities,
            selector: spec.selector,
        });
    }
    Ok(specs)
}

/// A DNS subdomain (RFC 1123), as Kubernetes names objects: what a plugin name must be.
fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// A DNS label (RFC 1123): a container name, and what `plugin new` accepts as a crate name.
pub(crate) fn is_dns_label(name: &str) -> bool {
    name.len() <= 63 && !name.contains('.') && is_dns_subdomain(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "/etc/wasmlet/plugins.yaml";

    /// The `plugin_config` fuzz target's crash (fuzz/README.md): an anchor on a key YAML
    /// cannot scan left an empty place in the error.
    #[test]
    fn a_yaml_scan_error_is_placed_in_the_file() {
        let error = parse(Path::new(FILE), "&d:\n}").unwrap_err();
        assert_eq!(error.place, "(file)", "{error}");
        assert!(error.message.contains("line 2 column 1"), "{error}");
    }

    #[test]
    fn parses_the_documented_shape() {
        let specs = parse(
            Path::new(FILE),
            concat!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n",
                "- name: eviction-batch-first\n  world: eviction-policy\n  path: eviction_batch_first.wasm\n",
                "  limits: {deadlineMs: 20, memoryMiB: 16}\n  config: {protectNamespaces: [kube-system]}\n",
            ),
        )
        .unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].world, World::EvictionPolicy);
        assert_eq!(
            specs[0].path,
            Path::new("/etc/wasmlet/eviction_batch_first.wasm")
        );
        assert_eq!(
            specs[0].limits,
            Limits {
                deadline_ms: 20,
                memory_mib: 16,
                fuel: None
            }
        );
        assert_eq!(
            specs[0].config_json,
            r#"{"protectNamespaces":["kube-system"]}"#
        );
        assert_eq!(specs[0].capabilities, Capabilities::default());
    }

    #[test]
    fn capabilities_grant_directories_read_only_by_default() {
        let specs = parse(
            Path::new(FILE),
            concat!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n",
                "- name: gc\n  world: gc-strategy\n  path: gc.wasm\n  capabilities:\n",
                "    directories:\n    - hostPath: keep\n      guestPath: /keep\n",
                "    - {hostPath: /var/lib/scratch, writable: true}\n",
                "    environment: {MODE: strict}\n",
            ),
        )
        .unwrap();
        let grants = &specs[0].capabilities;
        assert_eq!(
            grants.directories[0].host_path,
            Path::new("/etc/wasmlet/keep")
        );
        assert_eq!(grants.directories[0].guest_path(), "/keep");
        assert!(!grants.directories[0].writable);
        assert_eq!(grants.directories[1].guest_path(), "/var/lib/scratch");
        assert!(grants.directories[1].writable);
        assert_eq!(grants.environment["MODE"], "strict");
        let err = |grant: &str| {
            parse(
                Path::new(FILE),
                &format!(
                    "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: gc\n  world: gc-strategy\n  path: gc.wasm\n  capabilities: {grant}\n"
                ),
            )
            .unwrap_err()
        };
        let e = err("{directories: [{hostPath: /a, guestPath: rel}]}");
        assert_eq!(
            e.place,
            "plugins[0] (gc).capabilities.directories[0].guestPath"
        );
        let e = err("{network: true}");
        assert!(e.place.starts_with("plugins[0] (gc).capabilities"), "{e}");
        assert!(e.message.contains("unknown field `network`"), "{e}");
        let e = err("{directories: [{hostPath: /a, readOnly: false}]}");
        assert!(e.message.contains("unknown field `readOnly`"), "{e}");
    }

    #[test]
    fn exec_grants_and_selectors_are_checked_per_world() {
        let parse_one = |world: &str, extra: &str| {
            parse(
                Path::new(FILE),
                &format!(
                    "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: p\n  world: {world}\n  path: p.wasm\n{extra}"
                ),
            )
        };
        let specs = parse_one(
            "lifecycle-hooks",
            "  capabilities: {exec: [main, '*']}\n  selector: {namespaces: [prod], matchLabels: {team: a}}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(specs[0].capabilities.may_exec_in("anything"));
        assert_eq!(
            specs[0].selector.as_ref().map(|s| s.namespaces.len()),
            Some(1)
        );
        let specs = parse_one("probe-handler", "  capabilities: {exec: [main]}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(specs[0].capabilities.may_exec_in("main"));
        assert!(!specs[0].capabilities.may_exec_in("side"));
        assert!(
            !Capabilities::default().may_exec_in("main"),
            "none by default"
        );
        let place = |world: &str, extra: &str| match parse_one(world, extra) {
            Ok(_) => panic!("{world} {extra} was accepted"),
            Err(e) => e.place,
        };
        assert_eq!(
            place("eviction-policy", "  capabilities: {exec: [main]}\n"),
            "plugins[0] (p).capabilities.exec"
        );
        assert_eq!(
            place("probe-handler", "  capabilities: {exec: [Main_1]}\n"),
            "plugins[0] (p).capabilities.exec[0]"
        );
        assert_eq!(
            place("probe-handler", "  selector: {namespaces: [a]}\n"),
            "plugins[0] (p).selector"
        );
        assert_eq!(
            place(
                "lifecycle-hooks",
                "  selector: {matchExpressions: [{key: a, operator: In}]}\n"
            ),
            "plugins[0] (p).selector.matchExpressions[0].values"
        );
        assert!(place("lifecycle-hooks", "  selector: {labels: {a: b}}\n")
            .starts_with("plugins[0] (p).selector"));
    }

    #[test]
    fn errors_name_the_plugin_and_field() {
        let err = parse(
            Path::new(FILE),
            concat!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n",
                "- name: ok\n  world: gc-strategy\n  path: a.wasm\n",
                "- name: bad\n  world: eviction-policy\n  path: b.wasm\n  limits: {deadlineMs: 0}\n",
            ),
        )
        .unwrap_err();
        assert_eq!(err.place, "plugins[1] (bad).limits.deadlineMs");
        let err = parse(
            Path::new(FILE),
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: w\n  world: weather\n  path: a.wasm\n",
        )
        .unwrap_err();
        assert!(err.place.starts_with("plugins[0] (w).world"), "{err}");
    }

    #[test]
    fn one_eviction_and_one_shadow_but_many_hook_plugins() {
        let text = |entries: &str| {
            format!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{entries}"
            )
        };
        let specs = parse(
            Path::new(FILE),
            &text(concat!(
                "- name: active\n  world: eviction-policy\n  path: a.wasm\n",
                "- name: trial\n  world: eviction-policy\n  path: b.wasm\n  shadow: true\n",
                "- name: admit\n  world: lifecycle-hooks\n  path: c.wasm\n",
                "- name: drain\n  world: lifecycle-hooks\n  path: d.wasm\n",
            )),
        )
        .expect("valid");
        assert!(specs[1].shadow && !specs[0].shadow);
        let err = parse(
            Path::new(FILE),
            &text(concat!(
                "- name: one\n  world: eviction-policy\n  path: a.wasm\n",
                "- name: two\n  world: eviction-policy\n  path: b.wasm\n",
            )),
        )
        .unwrap_err();
        assert_eq!(err.place, "plugins[1] (two).world");
        let err = parse(
            Path::new(FILE),
            &text("- name: g\n  world: gc-strategy\n  path: a.wasm\n  shadow: true\n"),
        )
        .unwrap_err();
        assert_eq!(err.place, "plugins[0] (g).shadow");
    }

    #[test]
    fn rollout_is_for_serving_eviction_plugins_with_at_least_one_cycle() {
        let text = |world: &str, extra: &str| {
            format!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: p\n  world: {world}\n  path: a.wasm\n{extra}"
            )
        };
        let specs = parse(
            Path::new(FILE),
            &text(
                "eviction-policy",
                "  rollout: {shadowCycles: 20, maxDisagreements: 2}\n",
            ),
        )
        .unwrap();
        assert_eq!(
            specs[0].rollout,
            Some(Rollout {
                shadow_cycles: 20,
                max_disagreements: Some(2)
            })
        );
        let specs = parse(
            Path::new(FILE),
            &text("eviction-policy", "  rollout: {shadowCycles: 1}\n"),
        )
        .unwrap();
        assert_eq!(specs[0].rollout.and_then(|r| r.max_disagreements), None);
        let err =
            |world: &str, extra: &str| parse(Path::new(FILE), &text(world, extra)).unwrap_err();
        let e = err("gc-strategy", "  rollout: {shadowCycles: 3}\n");
        assert_eq!(e.place, "plugins[0] (p).rollout");
        assert!(e.message.contains("only an eviction-policy plugin"), "{e}");
        let e = err("eviction-policy", "  rollout: {shadowCycles: 0}\n");
        assert_eq!(e.place, "plugins[0] (p).rollout.shadowCycles");
        let e = err(
            "eviction-policy",
            "  shadow: true\n  rollout: {shadowCycles: 3}\n",
        );
        assert_eq!(e.place, "plugins[0] (p).rollout");
        let e = err("eviction-policy", "  rollout: {maxDisagreements: 3}\n");
        assert!(e.place.starts_with("plugins[0] (p).rollout"), "{e}");
        assert!(e.message.contains("shadowCycles"), "{e}");
        let e = err(
            "eviction-policy",
            "  rollout: {shadowCycles: 3, cycles: 4}\n",
        );
        assert!(e.message.contains("unknown field `cycles`"), "{e}");
        let e = err("eviction-policy", "  rollout: {shadowCycles: -1}\n");
        assert_eq!(e.place, "plugins[0] (p).rollout.shadowCycles");
    }

    #[test]
    fn oci_paths_parse_into_sources() {
        let text = |entry: &str| {
            format!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: p\n  world: eviction-policy\n{entry}"
            )
        };
        let specs = parse(
            Path::new(FILE),
            &text("  path: oci://registry.example:5000/plugins/evict:v2\n  pollPeriod: 30s\n  insecure: true\n  verify: {publicKey: keys/cosign.pub}\n  registryConfig: /etc/wasmlet/docker.json\n"),
        )
        .unwrap();
        let with_ca = parse(
            Path::new(FILE),
            &text("  path: oci://127.0.0.1:5000/plugins/evict:v2\n  caFile: certs/ca.pem\n"),
        )
        .unwrap();
        let PluginSource::Oci(tls) = &with_ca[0].source else {
            panic!("not an OCI source: {:?}", with_ca[0].source)
        };
        assert_eq!(
            tls.ca_file.as_deref(),
            Some(Path::new("/etc/wasmlet/certs/ca.pem"))
        );
        assert!(
            !tls.access().plain_http(&tls.reference),
            "a CA file asks for HTTPS"
        );
        let PluginSource::Oci(source) = &specs[0].source else {
            panic!("not an OCI source: {:?}", specs[0].source)
        };
        assert_eq!(source.reference.registry(), "registry.example:5000");
        assert_eq!(source.reference.tag(), Some("v2"));
        assert_eq!(source.poll_period, std::time::Duration::from_secs(30));
        assert!(source.insecure);
        assert_eq!(
            source.public_key.as_deref(),
            Some(Path::new("/etc/wasmlet/keys/cosign.pub"))
        );
        assert_eq!(
            specs[0].path,
            Path::new("oci://registry.example:5000/plugins/evict:v2")
        );
        let specs = parse(Path::new(FILE), &text("  path: oci://r.example/p:v1\n")).unwrap();
        let PluginSource::Oci(source) = &specs[0].source else {
            panic!()
        };
        assert_eq!(source.poll_period, DEFAULT_POLL_PERIOD);
        assert!(!source.insecure && source.public_key.is_none());

        let err = |entry: &str| parse(Path::new(FILE), &text(entry)).unwrap_err();
        let e = err("  path: oci://plugins/evict:v1\n");
        assert_eq!(e.place, "plugins[0] (p).path");
        assert!(e.message.contains("name the registry"), "{e}");
        let digest = format!("oci://r.example/p@sha256:{}", "a".repeat(64));
        let e = err(&format!("  path: {digest}\n  pollPeriod: 1m\n"));
        assert_eq!(e.place, "plugins[0] (p).pollPeriod");
        let e = err("  path: oci://r.example/p:v1\n  pollPeriod: soon\n");
        assert!(e.message.contains("not a duration"), "{e}");
        let e = err("  path: a.wasm\n  insecure: true\n");
        assert_eq!(e.place, "plugins[0] (p).insecure");
        let e = err("  path: a.wasm\n  caFile: ca.pem\n");
        assert_eq!(e.place, "plugins[0] (p).caFile");
        assert!(e.message.contains("oci://"), "{e}");
        let e = err("  path: oci://r.example/p:v1\n  insecure: true\n  caFile: ca.pem\n");
        assert_eq!(e.place, "plugins[0] (p).caFile");
        assert!(e.message.contains("plain HTTP"), "{e}");
        let e = err("  path: a.wasm\n  verify: {publicKey: k.pub}\n");
        assert_eq!(e.place, "plugins[0] (p).verify");
        let e = err("  path: oci://r.example/p:v1\n  verify: {key: k.pub}\n");
        assert!(e.message.contains("unknown field `key`"), "{e}");
    }
}
