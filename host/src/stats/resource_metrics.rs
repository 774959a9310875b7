//! `/metrics/resource`: the CPU and memory part of the Summary as Prometheus series, with
//! upstream's names, help, labels and millisecond sample timestamps
//! (`pkg/kubelet/metrics/collectors/resource_metrics.go`). metrics-server scrapes this endpoint
//! and takes each sample's time from its timestamp to compute CPU rates, so the text is written
//! by [`super::text_format`] rather than through the `prometheus-client` registry, which has no
//! sample timestamps.

use super::housekeeping::{self, Housekeeping, Housekept};
use super::summary::{CpuStats, MemoryStats, Summary, SummaryProvider};
use super::text_format::{self, Family, Kind, LabelSet, Series};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

/// The `Content-Type` of the text format.
pub use super::text_format::CONTENT_TYPE;

/// The `/metrics/resource` endpoint: the Summary's CPU and memory, read in housekeeping (the
/// runtime's `ListContainerStats` asks every shim, hundreds of ms at 110 pods), so a scrape
/// serves the last reading with the times it was taken.
pub struct ResourceMetrics {
    summary: Arc<SummaryProvider>,
    housekeeping: Housekeeping,
}

impl ResourceMetrics {
    /// The endpoint over `summary`, read every `period` while it is scraped.
    pub fn new(summary: Arc<SummaryProvider>, period: Duration) -> Self {
        Self {
            summary,
            housekeeping: Housekeeping::new(period),
        }
    }

    /// The text of a scrape (housekeeping's last rendering).
    pub async fn scrape(self: &Arc<Self>) -> Bytes {
        housekeeping::scrape(self).await
    }

    async fn read_and_render(self: Arc<Self>) -> Bytes {
        let summary = match self.summary.get(true).await {
            Ok(summary) => Some(summary),
            Err(error) => {
                tracing::error!(path = Self::PATH, %error, "cannot read resource metrics");
                None
            }
        };
        Bytes::from(encode(summary.as_ref()))
    }
}

impl Housekept for ResourceMetrics {
    const PATH: &'static str = "/metrics/resource";

    fn housekeeping(&self) -> &Housekeeping {
        &self.housekeeping
    }

    fn render(self: &Arc<Self>) -> impl std::future::Future<Output = Bytes> + Send {
        self.clone().read_and_render()
    }
}

fn container_labels(container: &str, pod: &str, namespace: &str) -> Vec<(&'static str, String)> {
    vec![
        ("container", container.to_string()),
        ("namespace", namespace.to_string()),
        ("pod", pod.to_string()),
    ]
}

fn pod_labels(pod: &str, namespace: &str) -> Vec<(&'static str, String)> {
    vec![
        ("namespace", namespace.to_string()),
        ("pod", pod.to_string()),
    ]
}

/// Cumulative CPU seconds and the time they were read, if the reading has them.
fn cpu_seconds(cpu: &Option<CpuStats>) -> Option<(f64, i64)> {
    let cpu = cpu.as_ref()?;
    let total = cpu.usage_core_nano_seconds?;
    Some((total as f64 / 1e9, cpu.time.0.as_millisecond()))
}

/// The working set and the time it was read, if the reading has it.
fn working_set(memory: &Option<MemoryStats>) -> Option<(f64, i64)> {
    let memory = memory.as_ref()?;
    Some((
        memory.working_set_bytes? as f64,
        memory.time.0.as_millisecond(),
    ))
}

/// The text of `/metrics/resource` for `summary` (CPU and memory are enough), or for a failed
/// reading (`None`): then only `resource_scrape_error 1`, as upstream.
pub fn encode(summary: Option<&Summary>) -> String {
    let mut node_cpu = Family::new(
        "node_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
        Kind::Counter,
    );
    let mut node_memory = Family::new(
        "node_memory_working_set_bytes",
        "[STABLE] Current working set of the node in bytes",
        Kind::Gauge,
    );
    let mut node_swap = Family::new(
        "node_swap_usage_bytes",
        "[ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems",
        Kind::Gauge,
    );
    let mut container_start = Family::new(
        "container_start_time_seconds",
        "[STABLE] Start time of the container since unix epoch in seconds",
        Kind::Gauge,
    );
    let mut container_cpu = Family::new(
        "container_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
        Kind::Counter,
    );
    let mut container_memory = Family::new(
        "container_memory_working_set_bytes",
        "[STABLE] Current working set of the container in bytes",
        Kind::Gauge,
    );
    let mut pod_cpu = Family::new(
        "pod_cpu_usage_seconds_total",
        "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
        Kind::Counter,
    );
    let mut pod_memory = Family::new(
        "pod_memory_working_set_bytes",
        "[STABLE] Current working set of the pod in bytes",
        Kind::Gauge,
    );
    let mut scrape_error = Family::new(
        "resource_scrape_error",
        "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
        Kind::Gauge,
    );
    scrape_error.series.push(Series {
        labels: LabelSet::default(),
        value: if summary.is_some() { 0.0 } else { 1.0 },
        timestamp_ms: None,
    });

    if let Some(summary) = summary {
        let node = &summary.node;
        if let Some((value, ms)) = cpu_seconds(&node.cpu) {
            node_cpu.series.push(sample(Vec::new(), value, ms));
        }
        if let Some((value, ms)) = working_set(&node.memory) {
            node_memory.series.push(sample(Vec::new(), value, ms));
        }
        // Upstream stamps node swap with the memory reading's time.
        if let (Some(usage), Some(memory)) = (
            node.swap.as_ref().and_then(|s| s.swap_usage_bytes),
            &node.memory,
        ) {
            let ms = memory.time.0.as_millisecond();
            node_swap.series.push(sample(Vec::new(), usage as f64, ms));
        }
        for pod in &summary.pods {
            let (name, namespace) = (&pod.pod_ref.name, &pod.pod_ref.namespace);
            for container in &pod.containers {
                let labels = || container_labels(&container.name, name, namespace);
                let started = container.start_time.0.as_nanosecond();
                if started >= 1_000_000_000 {
                    container_start.series.push(Series {
                        labels: labels().into(),
                        value: started as f64 / 1e9,
                        timestamp_ms: None,
                    });
                }
                if let Some((value, ms)) = cpu_seconds(&container.cpu) {
                    container_cpu.series.push(sample(labels(), value, ms));
                }
                if let Some((value, ms)) = working_set(&container.memory) {
                    container_memory.series.push(sample(labels(), value, ms));
                }
            }
            if let Some((value, ms)) = cpu_seconds(&pod.cpu) {
                pod_cpu
                    .series
                    .push(sample(pod_labels(name, namespace), value, ms));
            }
            if let Some((value, ms)) = working_set(&pod.memory) {
                pod_memory
                    .series
                    .push(sample(pod_labels(name, namespace), value, ms));
            }
        }
    }

    let mut families = [
        node_cpu,
        node_memory,
        node_swap,
        container_start,
        container_cpu,
        container_memory,
        pod_cpu,
        pod_memory,
        scrape_error,
    ];
    text_format::encode(&mut families)
}

fn sample(labels: Vec<(&'static str, String)>, value: f64, timestamp_ms: i64) -> Series {
    Series {
        labels: labels.into(),
        value,
        timestamp_ms: Some(timestamp_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_has_upstreams_names_labels_and_timestamps() {
        let summary = crate::stats::summary::tests::sample();
        let text = encode(Some(&summary));
        let expected = "\
# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container=\"main\",namespace=\"default\",pod=\"burner\"} 12.5 1700000000000
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container=\"main\",namespace=\"default\",pod=\"burner\"} 4.194304e+06 1700000000000
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container=\"main\",namespace=\"default\",pod=\"burner\"} 1.699999001e+09
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 12.5 1700000000000
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 4.194304e+06 1700000000000
# HELP node_swap_usage_bytes [ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems
# TYPE node_swap_usage_bytes gauge
node_swap_usage_bytes 0 1700000000000
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace=\"default\",pod=\"burner\"} 12.5 1700000000000
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace=\"default\",pod=\"burner\"} 4.194304e+06 1700000000000
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
";
        assert_eq!(text, expected);
    }

    #[test]
    fn a_failed_reading_is_only_the_scrape_error() {
        assert_eq!(
            encode(None),
            "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n\
             # TYPE resource_scrape_error gauge\nresource_scrape_error 1\n"
        );
    }

    #[test]
    fn series_are_sorted_and_label_values_escaped() {
        let mut summary = crate::stats::summary::tests::sample();
        let mut other = summary.pods[0].clone();
        other.pod_ref.name = "a\"b\\c".into();
        summary.pods.push(other);
        let text = encode(Some(&summary));
        let pods: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("pod_cpu_usage_seconds_total{"))
            .collect();
        assert_eq!(
            pods,
            [
                "pod_cpu_usage_seconds_total{namespace=\"default\",pod=\"a\\\"b\\\\c\"} 12.5 1700000000000",
                "pod_cpu_usage_seconds_total{namespace=\"default\",pod=\"burner\"} 12.5 1700000000000",
            ]
        );
    }
}
