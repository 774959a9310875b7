//! Pod manifests and readers of the pod JSON that `/pods` serves, for tests and benchmarks.

use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// A pod manifest with one busybox container running `script`.
pub fn busybox_pod(name: &str, spec_extra: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{spec_extra}  containers:\n  - name: main\n    image: docker.io/library/busybox:local\n    command: [sh, -c, {script:?}]\n"
    )
}

static NULL: Value = Value::Null;

/// The container status named `container` in a pod from `/pods` (`null` until it has one).
pub fn container_status<'a>(pod: &'a Value, container: &str) -> &'a Value {
    for key in ["containerStatuses", "initContainerStatuses"] {
        if let Some(found) = pod["status"][key]
            .as_array()
            .and_then(|list| list.iter().find(|c| c["name"] == container))
        {
            return found;
        }
    }
    &NULL
}

/// Seconds of a `Duration` for messages.
pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The status of condition `kind` of a pod from `/pods` (`""` when absent).
pub fn condition(pod: &Value, kind: &str) -> String {
    pod["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
        .to_string()
}

/// Writes a `PluginConfiguration` listing `plugins` (YAML list items) to `dir/plugins.yaml`.
pub fn write_plugin_config(dir: &std::path::Path, plugins: &str) -> PathBuf {
    let file = dir.join("plugins.yaml");
    std::fs::write(
        &file,
        format!("apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{plugins}"),
    )
    .unwrap();
    file
}

/// The number after `tag` on its line of `text` (lines of `TAG <unix seconds>` that a test's
/// container appends to a shared file).
pub fn event_time(text: &str, tag: &str) -> u64 {
    text.lines()
        .find(|l| l.split(' ').next() == Some(tag))
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {tag} in {text:?}"))
}

/// Seconds between two RFC 3339 times of a status.
pub fn seconds_between(from: &Value, to: &Value) -> f64 {
    let parse = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<k8s_openapi::jiff::Timestamp>().ok())
            .unwrap_or_else(|| panic!("not a time: {v}"))
    };
    let (from, to) = (parse(from), parse(to));
    (to.as_nanosecond() - from.as_nanosecond()) as f64 / 1e9
}
