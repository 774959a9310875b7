//! The `logging` and `tracing` stanzas of KubeletConfiguration (upstream's
//! `k8s.io/component-base` `LoggingConfiguration` and `TracingConfiguration`), and the parsing
//! of the `--logging-format`, `-v` and `--vmodule` flags that override them.

use serde::{Deserialize, Serialize};

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// tracing's human-readable lines (wasmlet's format before JSON existed).
    #[default]
    Text,
    /// One JSON object per line in the shape of upstream's `k8s.io/component-base/logs/json`.
    Json,
}

/// A `--logging-format` other than `text` or `json`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported format {0:?}: expected \"text\" or \"json\"")]
pub struct UnknownLogFormat(pub String);

impl std::str::FromStr for LogFormat {
    type Err = UnknownLogFormat;

    fn from_str(text: &str) -> Result<Self, UnknownLogFormat> {
        match text {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(UnknownLogFormat(other.to_string())),
        }
    }
}

/// Why a `--vmodule` entry or a `logging.vmodule` pattern is refused; each quotes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VModuleError {
    /// klog's glob patterns have no equivalent in tracing's filter.
    #[error("{0:?}: glob patterns are not supported; name a module such as pod_worker")]
    Glob(String),
    /// The pattern has an empty segment or a character no Rust module path has.
    #[error("{0:?} is not a module path (letters, digits and _ separated by / or ::)")]
    NotModulePath(String),
    /// A `--vmodule` entry without `=`.
    #[error("{0:?} is not pattern=N")]
    NotPatternLevel(String),
    /// A `--vmodule` entry whose level is not a number.
    #[error("{entry:?}: {level:?} is not a verbosity (0, 1, 2...)")]
    Verbosity {
        /// The whole entry.
        entry: String,
        /// What stands after `=`.
        level: String,
        /// Why it is not a number.
        #[source]
        source: std::num::ParseIntError,
    },
}

/// Upstream's `LoggingConfiguration`, the parts wasmlet acts on (`flushFrequency` and
/// `options` parse and are ignored: wasmlet writes every line unbuffered).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LoggingConfiguration {
    /// `text` (default) or `json`.
    pub format: LogFormat,
    /// klog's `-v`: 0-1 info, 2-4 debug for wasmlet's own modules, 5-7 trace, 8+ also debug
    /// for libraries (see `logging::directives`).
    pub verbosity: u32,
    /// Per-module verbosity, klog's `--vmodule` as a list.
    pub vmodule: Vec<VModuleItem>,
}

/// One `--vmodule` entry: a module of wasmlet and the verbosity it logs at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VModuleItem {
    /// A module path such as `pod_worker`, `eviction/pressure` or `pod_worker::teardown`
    /// (a target of wasmlet's), or a whole crate (`wasmlet_plugin_host`). klog's glob
    /// patterns have no equivalent in tracing's filter and are refused.
    pub file_pattern: String,
    /// The verbosity of that module, on the same scale as `verbosity`.
    pub verbosity: u32,
}

impl VModuleItem {
    /// The tracing target this entry filters: `wasmlet::<pattern>` with `/` read as `::`;
    /// a pattern naming a crate of wasmlet (`wasmlet`, `wasmlet_*`, `wasmlet::...`) as is.
    pub fn target(&self) -> Result<String, VModuleError> {
        let pattern = self.file_pattern.trim();
        let pattern = pattern.strip_suffix(".rs").unwrap_or(pattern);
        if pattern.contains(['*', '?', '[']) {
            return Err(VModuleError::Glob(pattern.to_string()));
        }
        let segments: Vec<&str> = pattern.split("::").flat_map(|s| s.split('/')).collect();
        let valid =
            |s: &&str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !segments.iter().all(valid) {
            return Err(VModuleError::NotModulePath(pattern.to_string()));
        }
        let path = segments.join("::");
        let is_crate = segments[0] == "wasmlet" || segments[0].starts_with("wasmlet_");
        Ok(if is_crate {
            path
        } else {
            format!("wasmlet::{path}")
        })
    }
}

/// Parses klog's `--vmodule` value, `pattern=N[,pattern=N...]`; each pattern must also pass
/// [`VModuleItem::target`].
pub fn parse_vmodule(text: &str) -> Result<Vec<VModuleItem>, VModuleError> {
    text.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let (pattern, level) = entry
                .split_once('=')
                .ok_or_else(|| VModuleError::NotPatternLevel(entry.to_string()))?;
            let verbosity = level
                .trim()
                .parse()
                .map_err(|source| VModuleError::Verbosity {
                    entry: entry.to_string(),
                    level: level.to_string(),
                    source,
                })?;
            let item = VModuleItem {
                file_pattern: pattern.trim().to_string(),
                verbosity,
            };
            item.target()?;
            Ok(item)
        })
        .collect()
}

/// Upstream's `TracingConfiguration`: OTLP/gRPC export of spans, off while the stanza is
/// absent from the file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TracingConfiguration {
    /// The collector, `host:port` (plain gRPC, no TLS, as upstream); unset: `localhost:4317`.
    pub endpoint: Option<String>,
    /// Spans sampled per million root spans (parent-based, as upstream); unset or 0 samples
    /// none but those whose parent is sampled.
    pub sampling_rate_per_million: Option<i32>,
}

impl TracingConfiguration {
    /// The collector's URL for the gRPC client: `http://` added to a bare `host:port`.
    pub fn endpoint_url(&self) -> String {
        let endpoint = self
            .endpoint
            .as_deref()
            .filter(|e| !e.is_empty())
            .unwrap_or("localhost:4317");
        if endpoint.contains("://") {
            endpoint.to_string()
        } else {
            format!("http://{endpoint}")
        }
    }

    /// The sampled fraction of root spans, 0.0 to 1.0.
    pub fn sampling_ratio(&self) -> f64 {
        f64::from(
            self.sampling_rate_per_million
                .unwrap_or(0)
                .clamp(0, 1_000_000),
        ) / 1_000_000.0
    }
}
