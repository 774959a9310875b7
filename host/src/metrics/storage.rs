//! `storage_operation_duration_seconds`, the volume manager's histogram upstream keeps in
//! `pkg/volume/util/metrics.go`: each setup of a volume (and each rewrite of one that
//! `RequiresRemount`) is a `volume_mount`, each teardown a `volume_unmount`, labelled with the
//! plugin's name and `success` or `fail-unknown`. `volumes` records them; `metrics::kubelet`
//! registers the family.

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use std::sync::LazyLock;
use std::time::Duration;

/// Upstream's buckets for storage operations, in seconds.
const BUCKETS: [f64; 13] = [
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 25.0, 50.0, 120.0, 300.0, 600.0,
];

fn histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// `storage_operation_duration_seconds{migrated,operation_name,status,volume_plugin}`.
pub type StorageOperations = Family<Vec<(&'static str, String)>, Histogram, fn() -> Histogram>;

/// The process's storage operations.
pub fn storage_operations() -> &'static StorageOperations {
    static OPERATIONS: LazyLock<StorageOperations> =
        LazyLock::new(|| StorageOperations::new_with_constructor(histogram));
    &OPERATIONS
}

/// Records one `operation` (`volume_mount`, `volume_unmount`) of `plugin`
/// (`kubernetes.io/configmap`) that took `elapsed`.
pub fn record(plugin: &str, operation: &'static str, succeeded: bool, elapsed: Duration) {
    let status = if succeeded { "success" } else { "fail-unknown" };
    let labels = vec![
        // No in-tree volume this node serves is migrated to CSI.
        ("migrated", "false".to_string()),
        ("operation_name", operation.to_string()),
        ("status", status.to_string()),
        ("volume_plugin", plugin.to_string()),
    ];
    storage_operations()
        .get_or_create(&labels)
        .observe(elapsed.as_secs_f64());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_is_counted_under_its_plugin_and_status() {
        let count = |status: &str| {
            let labels = [
                ("migrated", "false".to_string()),
                ("operation_name", "volume_mount".to_string()),
                ("status", status.to_string()),
                ("volume_plugin", "kubernetes.io/test-only".to_string()),
            ];
            let mut text = String::new();
            let mut registry = prometheus_client::registry::Registry::default();
            registry.register("ops", "", storage_operations().clone());
            prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
            let series = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{v}\""))
                .collect::<Vec<_>>()
                .join(",");
            text.lines()
                .find(|l| l.starts_with(&format!("ops_count{{{series}}}")))
                .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
                .unwrap_or(0)
        };
        record(
            "kubernetes.io/test-only",
            "volume_mount",
            true,
            Duration::from_millis(120),
        );
        record(
            "kubernetes.io/test-only",
            "volume_mount",
            false,
            Duration::from_millis(5),
        );
        record(
            "kubernetes.io/test-only",
            "volume_mount",
            true,
            Duration::from_millis(7),
        );
        assert_eq!(count("success"), 2);
        assert_eq!(count("fail-unknown"), 1);
    }
}
