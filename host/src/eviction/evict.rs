//! Evicting one pod: rank the snapshot (and a shadow, and a candidate on trial), log the decision, word the status
//! message, pick the grace period, hand the pod to the SyncLoop and wait for its cleanup.

use super::decision_log::{self, DecisionRecord};
use super::{signals, EvictRequest, EvictionError, EvictionManager};
use crate::config::eviction::Threshold;
use crate::events::{EventType, ObjectRef};
use crate::metrics::{decided_by_label, EvictionLabels};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{info, warn};
use wasmlet_plugin_host::DecidedBy;

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
        let (snapshot, pods) = self.snapshot(threshold, available, capacity).await;
        let snapshot = Arc::new(snapshot);
        let ((decision, candidate), shadow) = {
            let (plugins, snapshot) = (self.plugins.clone(), snapshot.clone());
            tokio::task::spawn_blocking(move || {
                (
                    plugins.rank_with_candidate(&snapshot),
                    plugins.rank_shadow(&snapshot),
                )
            })
            .await
            .map_err(EvictionError::RankingTask)?
        };
        if let DecidedBy::BuiltIn { reason } = &decision.decided_by {
            info!(%reason, "eviction ranked by the built-in default");
        }
        let name = |i: u32| snapshot.meta[i as usize].name.clone();
        let ranking: Vec<String> = decision.order.iter().map(|&i| name(i)).collect();
        let chosen = decision.order.first().copied();
        let plugin = decided_by_label(&decision.decided_by);
        let shadow = shadow.map(|answer| self.shadow_choice(answer, &snapshot, chosen));
        let candidate = candidate.map(|rank| decision_log::CandidateChoice::of(rank, &snapshot));
        let threshold_value = threshold.value.resolve(capacity);
        let mut record = DecisionRecord {
            time: crate::timestamps::now().0.to_string(),
            cycle,
            signal: threshold.signal.as_str(),
            threshold: threshold_value,
            available,
            decided_by: decision.decided_by.clone(),
            ranking,
            candidates: decision_log::candidates(&snapshot, &decision.order),
            evicted: None,
            message: None,
            shadow,
            candidate,
        };
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
        let pod_grace = Duration::from_secs(
            pod.spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
                .unwrap_or(30)
                .max(0) as u64,
        );
        let grace = if threshold.is_hard() {
            HARD_EVICTION_GRACE
        } else if self.config.max_pod_grace_period.is_zero() {
            pod_grace
        } else {
            pod_grace.min(self.config.max_pod_grace_period)
        };
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let pod_name = name(index);
        warn!(pod = %pod_name, signal = threshold.signal.as_str(), %plugin, grace_s = grace.as_secs(), %message, "evicting pod");
        self.events.record(
            &ObjectRef::pod(pod),
            EventType::Warning,
            "Evicted",
            message.clone(),
        );
        record.evicted = Some(pod_name);
        record.message = Some(message.clone());
        self.log.push(record);
        self.metrics
            .evictions
            .get_or_create(&EvictionLabels {
                eviction_signal: threshold.signal.as_str().into(),
                plugin,
            })
            .inc();
        let kubelet = crate::metrics::kubelet::kubelet();
        let signal = crate::metrics::kubelet::label("eviction_signal", threshold.signal.as_str());
        kubelet.evictions.get_or_create(&signal).inc();
        kubelet
            .eviction_stats_age
            .get_or_create(&signal)
            .observe(stats_taken.elapsed().as_secs_f64());
        let request = EvictRequest {
            uid: uid.clone(),
            message,
            grace,
        };
        if self.evictions.send(request).await.is_err() {
            // The SyncLoop is gone: the node is shutting down.
            return Ok(());
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
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        warn!(%uid, "evicted pod not cleaned up within the timeout");
        Ok(())
    }
}
