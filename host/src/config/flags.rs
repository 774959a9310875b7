//! The command-line flags whose values need parsing beyond a number or a path, and why a
//! flag's value is refused ([`FlagError`], the source of `ConfigError::Flag`).

use super::logging::{UnknownLogFormat, VModuleError};
use std::collections::BTreeMap;
use wasmlet_plugin_host::names::is_dns_subdomain;

/// Why a flag's value is refused; `ConfigError::Flag` names the flag.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    /// `--logging-format` is neither text nor json.
    #[error(transparent)]
    LogFormat(UnknownLogFormat),
    /// A `--vmodule` entry is refused.
    #[error(transparent)]
    VModule(VModuleError),
    /// The node's name (`--hostname-override`, else the machine's hostname) is no DNS
    /// subdomain, so the API server would refuse the Node.
    #[error("node name {0:?} is not a valid DNS subdomain")]
    NodeName(String),
    /// `--node-ip` is not an address.
    #[error("{text:?} is not an IP address")]
    NodeIp {
        /// The flag's value.
        text: String,
        /// Why it does not parse.
        #[source]
        source: std::net::AddrParseError,
    },
    /// A `--node-labels` entry is refused.
    #[error(transparent)]
    NodeLabels(NodeLabelError),
}

/// Why a `--node-labels` entry is refused; each quotes the entry's part at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeLabelError {
    /// An entry without `=`.
    #[error("{0:?} is not key=value")]
    NotKeyValue(String),
    /// A key whose name or prefix Kubernetes would refuse.
    #[error("{0:?} is not a valid label key")]
    Key(String),
    /// A value Kubernetes would refuse.
    #[error("{value:?} is not a valid value for label {key:?}")]
    Value {
        /// The label's key.
        key: String,
        /// The refused value.
        value: String,
    },
    /// A `node-restriction.kubernetes.io` label, which the NodeRestriction admission plugin
    /// refuses from a node.
    #[error("{0:?}: a node may not set node-restriction.kubernetes.io labels on itself")]
    Restricted(String),
}

/// Parses `--node-labels` (`key=value,...`), refusing the label prefixes NodeRestriction
/// forbids a node to set on itself, as upstream's `ValidateKubeletFlags` does.
pub(super) fn parse_node_labels(text: &str) -> Result<BTreeMap<String, String>, NodeLabelError> {
    let mut labels = BTreeMap::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(NodeLabelError::NotKeyValue(pair.to_string()));
        };
        let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
        let name_ok = !name.is_empty()
            && name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok || (!prefix.is_empty() && !is_dns_subdomain(prefix)) {
            return Err(NodeLabelError::Key(key.to_string()));
        }
        let value_ok = value.len() <= 63
            && (value.is_empty()
                || (value.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && value.ends_with(|c: char| c.is_ascii_alphanumeric())
                    && value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))));
        if !value_ok {
            return Err(NodeLabelError::Value {
                key: key.to_string(),
                value: value.to_string(),
            });
        }
        if prefix == "node-restriction.kubernetes.io"
            || prefix.ends_with(".node-restriction.kubernetes.io")
        {
            return Err(NodeLabelError::Restricted(key.to_string()));
        }
        labels.insert(key.to_string(), value.to_string());
    }
    Ok(labels)
}
