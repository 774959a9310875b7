//! The prober's Prometheus metrics with upstream's names and labels, served at
//! `/metrics/probes`: `prober_probe_total{probe_type, result, container, pod, namespace,
//! pod_uid}` counts every probe run by result (`successful`, `failed`, `unknown`), and
//! `prober_probe_duration_seconds{probe_type, container, pod, namespace}` is a histogram of
//! how long runs took. A pod's series go away with the pod.

use super::{ProbeKind, ProbeTarget};
use crate::metrics::exposition::register_verbatim;
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// Prometheus' default buckets, which upstream's histogram uses.
const BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    probe_type: String,
    result: String,
    container: String,
    pod: String,
    namespace: String,
    pod_uid: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    probe_type: String,
    container: String,
    pod: String,
    namespace: String,
}

type HistogramFamily = Family<DurationLabels, Histogram, fn() -> Histogram>;

/// The label sets one pod has used.
#[derive(Default)]
struct PodSeries {
    results: HashSet<ResultLabels>,
    durations: HashSet<DurationLabels>,
}

/// The registry behind `/metrics/probes`.
pub struct ProbeMetrics {
    registry: Registry,
    results: Family<ResultLabels, Counter>,
    durations: HistogramFamily,
    /// The series of each pod UID, so they can be removed with it.
    series: Mutex<HashMap<String, PodSeries>>,
}

impl Default for ProbeMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ProbeMetrics {
    /// The two families, registered under upstream's names.
    pub fn new() -> Self {
        let results = Family::<ResultLabels, Counter>::default();
        let durations: HistogramFamily = Family::new_with_constructor(|| Histogram::new(BUCKETS));
        let mut registry = Registry::default();
        // prometheus-client appends `_total` to counters: this is `prober_probe_total`.
        register_verbatim(
            &mut registry,
            "prober_probe",
            "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.",
            results.clone(),
        );
        register_verbatim(
            &mut registry,
            "prober_probe_duration_seconds",
            "[ALPHA] Duration in seconds for a probe response.",
            durations.clone(),
        );
        Self {
            registry,
            results,
            durations,
            series: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one probe run of `target`'s container and records how long it took.
    pub fn observe(&self, target: &ProbeTarget, kind: ProbeKind, result: &str, took: Duration) {
        let result_labels = ResultLabels {
            probe_type: kind.as_str().into(),
            result: result.into(),
            container: target.container.clone(),
            pod: target.pod_name.clone(),
            namespace: target.namespace.clone(),
            pod_uid: target.pod_uid.clone(),
        };
        let duration_labels = DurationLabels {
            probe_type: kind.as_str().into(),
            container: target.container.clone(),
            pod: target.pod_name.clone(),
            namespace: target.namespace.clone(),
        };
        self.results.get_or_create(&result_labels).inc();
        self.durations
            .get_or_create(&duration_labels)
            .observe(took.as_secs_f64());
        let mut series = self.series.lock();
        let entry = series.entry(target.pod_uid.clone()).or_default();
        entry.results.insert(result_labels);
        entry.durations.insert(duration_labels);
    }

    /// Drops every series of the pod `uid` (it was removed).
    pub fn forget_pod(&self, uid: &str) {
        let removed = self.series.lock().remove(uid);
        if let Some(series) = removed {
            for labels in &series.results {
                self.results.remove(labels);
            }
            for labels in &series.durations {
                self.durations.remove(labels);
            }
        }
    }

    /// The registry, for the exposition (see `crate::metrics::exposition`).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}
