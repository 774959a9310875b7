//! Node configuration: a KubeletConfiguration document, an optional WasmletConfiguration
//! document in the same file, and command-line flags with the kubelet's names on top.

pub mod duration;
pub mod eviction;
mod flags;
pub mod kubelet;
pub mod logging;
pub mod reserved;
pub mod wasmlet;

pub use flags::{FlagError, NodeLabelError};
pub use kubelet::{ChangeDetectionStrategy, KubeletConfiguration};
pub use wasmlet::{BackOffConfig, WasmletConfiguration};

use serde::de::DeserializeOwned;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use wasmlet_plugin_host::names::is_dns_subdomain;

const KUBELET_API_VERSION: &str = "kubelet.config.k8s.io/v1beta1";
const WASMLET_API_VERSION: &str = "wasmlet.dev/v1alpha1";

/// Why a config file was refused; each names the file and, where there is one, the field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists (or was named) but could not be read.
    #[error("{file}: cannot read: {source}")]
    Read {
        /// The file named on the command line.
        file: PathBuf,
        /// What the filesystem said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not YAML: the message says where the parser stopped.
    #[error("{file}: {message}")]
    Yaml {
        /// The file named on the command line.
        file: PathBuf,
        /// What the parser found, with its line and column.
        message: String,
    },
    /// A YAML document in the file is not a mapping, or of an unknown kind.
    #[error("{file}: document {index}: {message}")]
    Document {
        /// The file the document is in.
        file: PathBuf,
        /// The document's position among the non-empty documents of the file, from 0.
        index: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A document parsed, but one of its fields has a value wasmlet refuses.
    #[error("{file}: field `{field}`: {message}")]
    Field {
        /// The file the field is in.
        file: PathBuf,
        /// The field's name as written in the file (camelCase), so it can be found there.
        field: String,
        /// What is wrong with the value and what it must be.
        message: String,
    },
    /// A command-line flag has a value wasmlet refuses.
    #[error("flag --{flag}: {source}")]
    Flag {
        /// The flag's name without the leading dashes.
        flag: &'static str,
        /// What is wrong with its value.
        #[source]
        source: FlagError,
    },
}

/// Flags that override the file, named as the kubelet names them.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--root-dir`: where pod directories and wasmlet's state live.
    pub root_dir: Option<PathBuf>,
    /// `--hostname-override`: the node's name instead of the machine's hostname.
    pub hostname_override: Option<String>,
    /// `--node-ip`: the address reported for the node instead of the default-route one.
    pub node_ip: Option<String>,
    /// `--container-runtime-endpoint`: the CRI socket, over `containerRuntimeEndpoint`.
    pub container_runtime_endpoint: Option<String>,
    /// `--pod-manifest-path`: the static pod directory, over `staticPodPath`.
    pub pod_manifest_path: Option<String>,
    /// `--read-only-port`: the unauthenticated read-only API port, over `readOnlyPort`.
    pub read_only_port: Option<u16>,
    /// `--healthz-port`: the health endpoint port, over `healthzPort`.
    pub healthz_port: Option<u16>,
    /// `--max-pods`: how many pods the node admits, over `maxPods`.
    pub max_pods: Option<i64>,
    /// `--kubeconfig`: join the cluster this kubeconfig names (standalone without it).
    pub kubeconfig: Option<PathBuf>,
    /// `--node-labels`: labels added to the Node at registration, `key=value,...`.
    pub node_labels: Option<String>,
    /// `--port`: the authenticated HTTPS port, over `port`.
    pub port: Option<u16>,
    /// `--cert-dir`: where the self-signed serving certificate is kept (default
    /// `<root-dir>/pki`, upstream's `/var/lib/kubelet/pki`).
    pub cert_dir: Option<PathBuf>,
    /// `--client-ca-file`: upstream's flag for `authentication.x509.clientCAFile`.
    pub client_ca_file: Option<String>,
    /// `--logging-format`: `text` or `json`, over `logging.format`.
    pub logging_format: Option<String>,
    /// `-v` / `--v`: log verbosity, over `logging.verbosity`.
    pub verbosity: Option<u32>,
    /// `--vmodule`: `pattern=N,...`, over `logging.vmodule`.
    pub vmodule: Option<String>,
}

/// Everything the node runs with, after the file and the flags are merged.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// The upstream KubeletConfiguration fields, defaulted where the file is silent.
    pub kubelet: KubeletConfiguration,
    /// wasmlet's own settings (plugins, back-off), defaulted where the file is silent.
    pub wasmlet: WasmletConfiguration,
    /// `--root-dir`: pod directories and wasmlet's own state (upstream: /var/lib/kubelet).
    pub root_dir: PathBuf,
    /// `--hostname-override`, else the machine's hostname, lower-cased as upstream does.
    pub node_name: String,
    /// `--node-ip`, else the address of the interface that holds the default route.
    pub node_ip: IpAddr,
    /// `--kubeconfig`: the API server and the node's identity; `None` runs standalone.
    pub kubeconfig: Option<PathBuf>,
    /// `--node-labels`, parsed: labels the Node is registered with besides the defaults.
    pub node_labels: std::collections::BTreeMap<String, String>,
    /// `--cert-dir`, else `<root-dir>/pki`: the self-signed `kubelet.crt`/`kubelet.key`.
    pub cert_dir: PathBuf,
}

/// A warning the caller logs: the config loads, but something in it is ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigWarning {
    /// The field that is ignored, as written in the file.
    pub field: String,
    /// Why it is ignored.
    pub message: String,
}

impl NodeConfig {
    /// Loads `file` (if given), applies `overrides`, and fills in what the machine decides.
    pub fn load(
        file: Option<&Path>,
        overrides: &Overrides,
    ) -> Result<(Self, Vec<ConfigWarning>), ConfigError> {
        let (mut kubelet, mut wasmlet, warnings) = match file {
            Some(path) => parse_file(path)?,
            None => Default::default(),
        };
        kubelet.normalize_paths();
        // As upstream, a relative path in the file is relative to the file's directory.
        if let Some(dir) = file.and_then(Path::parent) {
            for path in [
                &mut kubelet.static_pod_path,
                &mut kubelet.tls_cert_file,
                &mut kubelet.tls_private_key_file,
                &mut kubelet.authentication.x509.client_ca_file,
                &mut wasmlet.plugin_config,
            ]
            .into_iter()
            .flatten()
            {
                if Path::new(path.as_str()).is_relative() {
                    *path = dir.join(path.as_str()).display().to_string();
                }
            }
        }
        if let Some(endpoint) = &overrides.container_runtime_endpoint {
            kubelet.container_runtime_endpoint = endpoint.clone();
        }
        if let Some(path) = &overrides.pod_manifest_path {
            kubelet.static_pod_path = Some(path.clone());
        }
        if let Some(port) = overrides.read_only_port {
            kubelet.read_only_port = port;
        }
        if let Some(port) = overrides.healthz_port {
            kubelet.healthz_port = port;
        }
        if let Some(max) = overrides.max_pods {
            kubelet.max_pods = max;
        }
        if let Some(port) = overrides.port {
            kubelet.port = port;
        }
        if let Some(file) = &overrides.client_ca_file {
            kubelet.authentication.x509.client_ca_file = Some(file.clone());
        }
        if let Some(format) = &overrides.logging_format {
            kubelet.logging.format = format.parse().map_err(|e| ConfigError::Flag {
                flag: "logging-format",
                source: FlagError::LogFormat(e),
            })?;
        }
        if let Some(verbosity) = overrides.verbosity {
            kubelet.logging.verbosity = verbosity;
        }
        if let Some(text) = &overrides.vmodule {
            kubelet.logging.vmodule =
                logging::parse_vmodule(text).map_err(|e| ConfigError::Flag {
                    flag: "vmodule",
                    source: FlagError::VModule(e),
                })?;
        }
        let file_name = file.map(Path::to_path_buf).unwrap_or_default();
        kubelet
            .validate()
            .map_err(|(field, message)| ConfigError::Field {
                file: file_name.clone(),
                field,
                message,
            })?;
        wasmlet
            .validate()
            .map_err(|(field, message)| ConfigError::Field {
                file: file_name,
                field,
                message,
            })?;
        let node_name = match &overrides.hostname_override {
            Some(name) => name.to_lowercase(),
            None => machine_hostname().to_lowercase(),
        };
        if node_name.is_empty() || !is_dns_subdomain(&node_name) {
            return Err(ConfigError::Flag {
                flag: "hostname-override",
                source: FlagError::NodeName(node_name),
            });
        }
        let node_ip = match &overrides.node_ip {
            Some(text) => text.parse::<IpAddr>().map_err(|source| ConfigError::Flag {
                flag: "node-ip",
                source: FlagError::NodeIp {
                    text: text.clone(),
                    source,
                },
            })?,
            None => default_route_address(),
        };
        let root_dir = overrides
            .root_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("/var/lib/kubelet"));
        let node_labels = match &overrides.node_labels {
            Some(text) => flags::parse_node_labels(text).map_err(|e| ConfigError::Flag {
                flag: "node-labels",
                source: FlagError::NodeLabels(e),
            })?,
            None => Default::default(),
        };
        let cert_dir = overrides
            .cert_dir
            .clone()
            .unwrap_or_else(|| root_dir.join("pki"));
        Ok((
            Self {
                kubelet,
                wasmlet,
                cert_dir,
                root_dir,
                node_name,
                node_ip,
                kubeconfig: overrides.kubeconfig.clone(),
                node_labels,
            },
            warnings,
        ))
    }
}

type Parsed = (
    KubeletConfiguration,
    WasmletConfiguration,
    Vec<ConfigWarning>,
);

fn parse_file(path: &Path) -> Result<Parsed, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        file: path.to_path_buf(),
        source,
    })?;
    parse_str(path, &text)
}

/// Parses the documents of one config file; `path` only names it in errors.
pub fn parse_str(path: &Path, text: &str) -> Result<Parsed, ConfigError> {
    let mut kubelet = None;
    let mut wasmlet = None;
    let mut warnings = Vec::new();
    let documents = wasmlet_plugin_host::yaml::documents(text).map_err(|e| ConfigError::Yaml {
        file: path.to_path_buf(),
        message: e.message,
    })?;
    for (index, value) in documents.into_iter().enumerate() {
        let doc_error = |message: String| ConfigError::Document {
            file: path.to_path_buf(),
            index,
            message,
        };
        if value.is_null() {
            continue;
        }
        let mapping = value
            .as_object()
            .ok_or_else(|| doc_error("is not a mapping".into()))?;
        let text_of = |key: &str| mapping.get(key).and_then(|v| v.as_str()).unwrap_or("");
        match (text_of("apiVersion"), text_of("kind")) {
            (KUBELET_API_VERSION, "KubeletConfiguration") => {
                warn_unknown(
                    mapping,
                    kubelet::KNOWN_FIELDS,
                    kubelet::NOT_YET_IMPLEMENTED,
                    &mut warnings,
                );
                kubelet = Some(typed::<KubeletConfiguration>(path, &value)?);
            }
            (WASMLET_API_VERSION, "WasmletConfiguration") => {
                warn_unknown(mapping, wasmlet::KNOWN_FIELDS, &[], &mut warnings);
                wasmlet = Some(typed::<WasmletConfiguration>(path, &value)?);
            }
            (api, kind) => {
                return Err(doc_error(format!(
                    "unsupported apiVersion/kind {api:?}/{kind:?}: expected {KUBELET_API_VERSION} \
                     KubeletConfiguration or {WASMLET_API_VERSION} WasmletConfiguration"
                )))
            }
        }
    }
    Ok((
        kubelet.unwrap_or_default(),
        wasmlet.unwrap_or_default(),
        warnings,
    ))
}

fn typed<T: DeserializeOwned>(path: &Path, value: &serde_json::Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|e| ConfigError::Field {
        file: path.to_path_buf(),
        field: e.path().to_string(),
        message: e.into_inner().to_string(),
    })
}

fn warn_unknown(
    mapping: &serde_json::Map<String, serde_json::Value>,
    known: &[&str],
    not_yet: &[&str],
    warnings: &mut Vec<ConfigWarning>,
) {
    for key in mapping.keys().map(String::as_str) {
        if known.contains(&key) {
            continue;
        }
        let message = if not_yet.contains(&key) {
            "not implemented by wasmlet yet; ignored"
        } else {
            "unknown field; ignored"
        };
        warnings.push(ConfigWarning {
            field: key.to_string(),
            message: message.into(),
        });
    }
}

/// The machine's hostname (`uname -n`), the node name when no override is given.
pub fn machine_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// The source address the kernel picks for the default route; connecting a UDP socket
/// sends nothing. Falls back to loopback on a machine with no route at all.
fn default_route_address() -> IpAddr {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|socket| {
            socket.connect("10.255.255.255:9")?;
            socket.local_addr()
        })
        .map(|addr| addr.ip())
        .unwrap_or(IpAddr::from([127, 0, 0, 1]))
}

#[cfg(test)]
mod tests;
