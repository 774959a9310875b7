//! Reading the plugin config file: the raw YAML shapes, and their checks into [`PluginSpec`]s
//! with every error placed at `plugins[i] (name).field`.

use super::*;
use crate::names::{is_dns_label, is_dns_subdomain};

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
    plugins: Vec<serde_json::Value>,
}

/// Where in the file a parse error is: the root (`.`), or the empty key a YAML scan error
/// leaves behind (`&a:\nb`), is the file's; its message gives the line and column.
fn file_place(path: &str) -> String {
    match path {
        "" | "." => "(file)".into(),
        place => place.to_string(),
    }
}

/// Parses plugin config text; `file` names it in errors and anchors relative paths.
pub fn parse(file: &Path, text: &str) -> Result<Vec<PluginSpec>, PluginConfigError> {
    let error = |place: String, message: String| PluginConfigError {
        file: file.to_path_buf(),
        place,
        message,
    };
    let raw: RawFile =
        crate::yaml::from_str(text).map_err(|e| error(file_place(&e.path), e.message))?;
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
