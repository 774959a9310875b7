//! Typed plugin configuration.
//!
//! The host passes the `config` value of the plugin config file to
//! `configure` as JSON text. Deserialize it into your own struct:
//!
//! ```
//! #[derive(serde::Deserialize, Default, Debug)]
//! #[serde(rename_all = "camelCase", default, deny_unknown_fields)]
//! struct Config {
//!     protect_namespaces: Vec<String>,
//! }
//!
//! let c: Config = wasmlet_plugin_sdk::config::parse(r#"{"protectNamespaces": ["kube-system"]}"#).unwrap();
//! assert_eq!(c.protect_namespaces, ["kube-system"]);
//! // Empty text, `{}` or `null` mean "all defaults".
//! let c: Config = wasmlet_plugin_sdk::config::parse("").unwrap();
//! assert!(c.protect_namespaces.is_empty());
//! let err = wasmlet_plugin_sdk::config::parse::<Config>(r#"{"protect": 1}"#).unwrap_err();
//! assert!(err.contains("unknown field `protect`"), "{err}");
//! ```

use serde::de::DeserializeOwned;

/// Parses `text` as JSON into `T`; empty text or `null` yields `T::default()`.
///
/// The error names the problem and where it is (`line:column`), ready to
/// return from `configure`, which the host shows to the operator.
pub fn parse<T: DeserializeOwned + Default>(text: &str) -> Result<T, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return Ok(T::default());
    }
    serde_json::from_str(trimmed).map_err(|e| format!("invalid plugin config: {e}"))
}

/// Like [`parse`] for a value that is not a whole config, such as a probe's
/// `args`; the error says "invalid probe args" (or whatever `what` is).
pub fn parse_as<T: DeserializeOwned + Default>(what: &str, text: &str) -> Result<T, String> {
    parse(text).map_err(|e| e.replacen("plugin config", what, 1))
}
