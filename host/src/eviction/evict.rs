//! Evicting one pod: rank the snapshot (and a shadow, and a candidate on trial), log the decision, word the status
//! message, pick the grace period, hand the pod to the SyncLoop and wait for its cleanup.

use super::decision_log::{self, DecisionRecord};
use super::{signals, EvictRequest, EvictionError, EvictionManager};
use crate::config::eviction::Threshold;
use crate::events::{EventType, ObjectRef};
use crate::metrics::{decided_by_label, EvictionLabels, Metrics};
use k8s_openapi::api::core::v1::Pod;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{info, warn};
use wasmlet_plugin_host::{DecidedBy, EvictionSnapshot, PluginRegistry};
use wasmlet_policy_default::SignalObservation;

/// Upstream's pod grace for hard evictions (`immediateEvictionGracePeriodSeconds`).
const HARD_EVICTION_GRACE: Duration = Duration::from_secs(1);
/// How long a cycle waits for an evicted pod to be cleaned up (`podCleanupTimeout`).
const POD_CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);

impl EvictionManager {
    /// Ranks the running pods, logs the decision, and evicts the first, waiting for it to be
    /// cleaned up.
    pub(super) async fn evict_one(
        &self,
        cycle: u64,
        threshold: &Threshold,
        available: i64,
        capacity: i64,
    ) -> Result<(), EvictionError> {
        let stats_taken = Instant::now();
        let observed = SignalObservation::new(
            threshold.signal,
            available,
            capacity,
            threshold.value.resolve(capacity),
        );
        let (snapshot, pods) = self.snapshot(vec![observed]).await;
        let snapshot = Arc::new(snapshot);
        let (chosen, record) = {
            let (plugins, metrics) = (self.plugins.clone(), self.metrics.clone());
            let (snapshot, threshold) = (snapshot.clone(), threshold.clone());
            // The cycle's span, for the events `decide` logs off the executor.
            let span = tracing::Span::current();
            tokio::task::spawn_blocking(move || {
                span.in_scope(|| {
                    decide(
                        &plugins, &metrics, &snapshot, cycle, &threshold, available, capacity,
                    )
                })
            })
            .await
            .map_err(EvictionError::RankingTask)?
        };
        let name = |i: u32| snapshot.meta[i as usize].name.clone();
        let plugin = decided_by_label(&record.decided_by);
        let threshold_value = threshold.value.resolve(capacity);
        let Some(index) = chosen else {
            warn!(
                signal = threshold.signal.as_str(),
                "eviction threshold met but no pod can be evicted"
            );
            self.log.push(record);
            return Ok(());
        };
        let pod = &pods[index as usize];
        let message = signals::eviction_message(
            threshold,
            threshold_value,
            available,
            signals::pod_usage(threshold.signal, &snapshot.pods[index as usize]),
        );
        let grace = if threshold.is_hard() {
            HARD_EVICTION_GRACE
        } else {
            self.soft_grace(pod)
        };
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let pod_name = name(index);
        warn!(pod = %pod_name, signal = threshold.signal.as_str(), %plugin, grace_s = grace.as_secs(), %message, "evicting pod");
        self.record_eviction(
            pod,
            pod_name,
            &message,
            record,
            threshold.signal.as_str(),
            plugin,
        );
        let kubelet = crate::metrics::kubelet::kubelet();
        let signal = crate::metrics::kubelet::label("eviction_signal", threshold.signal.as_str());
        kubelet.evictions.get_or_create(&signal).inc();
        kubelet
            .eviction_stats_age
            .get_or_create(&signal)
            .observe(stats_taken.elapsed().as_secs_f64());
        self.hand_over(uid, message, grace).await;
        Ok(())
    }

    /// What every eviction leaves behind: the pod's `Evicted` event, the decision with the
    /// pod and its message in `/evictions`, and `wasmlet_evictions_total{eviction_signal,plugin}`.
    pub(super) fn record_eviction(
        &self,
        pod: &Pod,
        pod_name: String,
        message: &str,
        mut record: DecisionRecord,
        signal: &str,
        plugin: String,
    ) {
        self.events.record(
            &ObjectRef::pod(pod),
            EventType::Warning,
            "Evicted",
            message.to_string(),
        );
        record.evicted = Some(pod_name);
        record.message = Some(message.to_string());
        self.log.push(record);
        self.metrics
            .evictions
            .get_or_create(&EvictionLabels {
                eviction_signal: signal.into(),
                plugin,
            })
            .inc();
    }

    /// A soft eviction's grace: the pod's own, capped by `evictionMaxPodGracePeriod`.
    pub(super) fn soft_grace(&self, pod: &Pod) -> Duration {
        let pod_grace = Duration::from_secs(
            pod.spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
                .unwrap_or(30)
                .max(0) as u64,
        );
        if self.config.max_pod_grace_period.is_zero() {
            pod_grace
        } else {
            pod_grace.min(self.config.max_pod_grace_period)
        }
    }

    /// Hands the pod to the SyncLoop to be killed and marked Evicted, and waits (at most
    /// `podCleanupTimeout` past the grace) for it to be cleaned up before the next cycle.
    pub(super) async fn hand_over(&self, uid: String, message: String, grace: Duration) {
        let request = EvictRequest {
            uid: uid.clone(),
            message,
            grace,
        };
        if self.evictions.send(request).await.is_err() {
            // The SyncLoop is gone: the node is shutting down.
            return;
        }
        // Wait for the pod to be cleaned up before the next cycle (`podCleanupTimeout`).
        let deadline = Instant::now() + POD_CLEANUP_TIMEOUT + grace;
        while Instant::now() < deadline {
            let evicted = self.store.get(&uid).is_none_or(|p| {
                p.status
                    .as_ref()
                    .is_some_and(|s| s.reason.as_deref() == Some("Evicted"))
            });
            if evicted {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        warn!(%uid, "evicted pod not cleaned up within the timeout");
    }
}

/// Ranks `snapshot` with the serving eviction plugin, beside the candidate version on trial
/// (`rollout:`) and the shadow plugin when there are, and words the decision as `/evictions`
/// shows it; the pod to evict is the first of the ranking. Blocking: the plugins are called
/// here, off the executor.
pub(super) fn decide(
    plugins: &PluginRegistry,
    metrics: &Metrics,
    snapshot: &EvictionSnapshot,
    cycle: u64,
    threshold: &Threshold,
    available: i64,
    capacity: i64,
) -> (Option<u32>, DecisionRecord) {
    let (decision, candidate) = plugins.rank_with_candidate(snapshot);
    let shadow = plugins.rank_shadow(snapshot);
    if let DecidedBy::BuiltIn { reason } = &decision.decided_by {
        info!(%reason, "eviction ranked by the built-in default");
    }
    let chosen = decision.order.first().copied();
    let record = DecisionRecord {
        time: crate::timestamps::now().0.to_string(),
        cycle,
        signal: threshold.signal.as_str(),
        threshold: Some(threshold.value.resolve(capacity)),
        available: Some(available),
        psi: None,
        reason: None,
        ranking: decision
            .order
            .iter()
            .map(|&i| snapshot.meta[i as usize].name.clone())
            .collect(),
        candidates: decision_log::candidates(snapshot, &decision.order),
        decided_by: decision.decided_by,
        evicted: None,
        message: None,
        shadow: shadow.map(|answer| decision_log::shadow_choice(metrics, answer, snapshot, chosen)),
        candidate: candidate.map(|rank| decision_log::CandidateChoice::of(rank, snapshot)),
    };
    (chosen, record)
}

#[cfg(test)]
mod tests;
