//! Evictions an eviction plugin asks for on the node's pressure stall information
//! (`pressure-watch`, contract 0.1.2) while no threshold acts. The host bounds them: at most
//! one per `psiEvictionWindow`, never a critical or static pod, never a `Guaranteed` pod
//! within its requests unless the plugin's config grants it, and each one in `/evictions`
//! and the pod's event with the reading that caused it.

use super::decision_log::{self, DecisionRecord, PsiReading};
use super::{EvictionError, EvictionManager};
use crate::metrics::decided_by_label;
use crate::stats::psi;
use crate::stats::summary::{PsiData, PsiStats};
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use tracing::{info, warn};
use wasmlet_plugin_host::PressureDecision;
use wasmlet_policy_default::{NodePsi, PodInfo, PsiLine, PsiResource, QosClass};

/// The `eviction_signal` label of the evictions counter for a pressure decision.
const PSI_SIGNAL: &str = "psi";

/// The node's PSI in the contract's units (hundredths of a percent); `None` when the kernel
/// has none (memory is the resource every PSI kernel reports).
pub(super) fn node_psi(reading: &psi::Pressure, read_unix_ms: u64) -> Option<NodePsi> {
    let memory = reading.memory.as_ref()?;
    let resource = |stats: Option<&PsiStats>| {
        stats.map_or_else(PsiResource::default, |s| PsiResource {
            some: line(&s.some),
            full: line(&s.full),
        })
    };
    Some(NodePsi {
        cpu: resource(reading.cpu.as_ref()),
        memory: resource(Some(memory)),
        io: resource(reading.io.as_ref()),
        read_unix_ms,
    })
}

fn line(data: &PsiData) -> PsiLine {
    let hundredths = |percent: f64| (percent * 100.0).round().clamp(0.0, 10_000.0) as u32;
    PsiLine {
        avg10: hundredths(data.avg10),
        avg60: hundredths(data.avg60),
        avg300: hundredths(data.avg300),
        total_us: data.total,
    }
}

/// A `Guaranteed` pod whose usage is within its requests, which a pressure decision leaves
/// alone unless the plugin is granted it.
fn protected(pod: &PodInfo, may_evict_guaranteed: bool) -> bool {
    !may_evict_guaranteed
        && pod.qos == QosClass::Guaranteed
        && pod.memory_usage_bytes <= pod.memory_request_bytes
        && pod.cpu_usage_millis <= pod.cpu_request_millis
}

/// The first pod of the decision the host may evict.
fn eligible(decision: &PressureDecision, pods: &[PodInfo]) -> Option<u32> {
    decision.order.iter().copied().find(|&i| {
        pods.get(i as usize)
            .is_some_and(|pod| !protected(pod, decision.may_evict_guaranteed))
    })
}

/// The evicted pod's status message: the reading, the plugin and its reason.
fn eviction_message(psi: &NodePsi, plugin: &str, reason: &str) -> String {
    let percent = |v: u32| f64::from(v) / 100.0;
    format!(
        "The node was under pressure: memory full avg10 {:.2}%, some avg10 {:.2}%; io full avg10 {:.2}%. Eviction plugin {plugin}: {reason}",
        percent(psi.memory.full.avg10),
        percent(psi.memory.some.avg10),
        percent(psi.io.full.avg10),
    )
}

impl EvictionManager {
    /// Asks the eviction plugin, if it watches pressure, whether to evict on this period's
    /// PSI, and acts on its answer within the host's bounds.
    pub(super) async fn watch_pressure(&self, cycle: u64) -> Result<(), EvictionError> {
        if !self.plugins.watches_pressure() {
            return Ok(());
        }
        let read_unix_ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let Some(psi) = node_psi(
            &psi::Pressure::node_in(&self.config.node_pressure_path),
            read_unix_ms,
        ) else {
            return Ok(());
        };
        let (snapshot, pods) = self.snapshot(Vec::new()).await;
        let snapshot = Arc::new(snapshot);
        let answer = {
            let (plugins, snapshot) = (self.plugins.clone(), snapshot.clone());
            let span = tracing::Span::current();
            tokio::task::spawn_blocking(move || {
                span.in_scope(|| plugins.watch_pressure(&snapshot, &psi))
            })
            .await
            .map_err(EvictionError::RankingTask)?
        };
        let decision = match answer {
            Ok(Some(decision)) => decision,
            Ok(None) => return Ok(()),
            Err(error) => {
                warn!(%error, "pressure watch failed; nothing is evicted on pressure this period");
                return Ok(());
            }
        };
        let plugin = decided_by_label(&decision.decided_by);
        let now = Instant::now();
        {
            let state = self.state.lock();
            if let Some(last) = state.last_psi_eviction {
                let since = now.duration_since(last);
                if since < self.config.psi_eviction_window {
                    info!(%plugin, reason = %decision.reason, since_s = since.as_secs(), window_s = self.config.psi_eviction_window.as_secs(), "pressure eviction asked for inside psiEvictionWindow: not acted on");
                    return Ok(());
                }
            }
        }
        let name = |i: u32| snapshot.meta[i as usize].name.clone();
        let mut record = DecisionRecord {
            time: crate::timestamps::now().0.to_string(),
            cycle,
            signal: PSI_SIGNAL,
            threshold: None,
            available: None,
            psi: Some(PsiReading::of(&psi)),
            reason: Some(decision.reason.clone()),
            ranking: decision.order.iter().map(|&i| name(i)).collect(),
            candidates: decision_log::candidates(&snapshot, &decision.order),
            decided_by: decision.decided_by.clone(),
            evicted: None,
            message: None,
            shadow: None,
            candidate: None,
        };
        let Some(index) = eligible(&decision, &snapshot.pods) else {
            warn!(%plugin, reason = %decision.reason, "pressure eviction asked for, but no pod it named may be evicted (Guaranteed pods within their requests are left alone)");
            record.reason = Some(format!(
                "{}; not acted on: no pod named may be evicted (Guaranteed within its requests)",
                decision.reason
            ));
            self.log.push(record);
            return Ok(());
        };
        let pod = &pods[index as usize];
        let message = eviction_message(&psi, &plugin, &decision.reason);
        let grace = self.soft_grace(pod);
        let pod_name = name(index);
        warn!(pod = %pod_name, %plugin, grace_s = grace.as_secs(), %message, "evicting pod on pressure stall information");
        self.state.lock().last_psi_eviction = Some(now);
        self.record_eviction(pod, pod_name, &message, record, PSI_SIGNAL, plugin);
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        self.hand_over(uid, message, grace).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmlet_plugin_host::DecidedBy;

    fn pod(qos: QosClass, memory: (u64, u64), cpu: (u64, u64)) -> PodInfo {
        PodInfo {
            qos,
            memory_request_bytes: memory.0,
            memory_usage_bytes: memory.1,
            cpu_request_millis: cpu.0,
            cpu_usage_millis: cpu.1,
            ..PodInfo::default()
        }
    }

    fn decision(order: Vec<u32>, may_evict_guaranteed: bool) -> PressureDecision {
        PressureDecision {
            order,
            reason: "memory full avg10 over 20% for 10s".into(),
            may_evict_guaranteed,
            decided_by: DecidedBy::Plugin {
                name: "psi-guard".into(),
                sha256: "0".into(),
            },
        }
    }

    #[test]
    fn guaranteed_pods_within_requests_are_left_alone_unless_granted() {
        let pods = [
            pod(QosClass::Guaranteed, (100, 90), (500, 100)),
            pod(QosClass::Guaranteed, (100, 150), (500, 100)),
            pod(QosClass::BestEffort, (0, 900), (0, 10)),
        ];
        assert_eq!(eligible(&decision(vec![0, 2], false), &pods), Some(2));
        // Over its memory request, a Guaranteed pod is no longer protected.
        assert_eq!(eligible(&decision(vec![0, 1, 2], false), &pods), Some(1));
        assert_eq!(eligible(&decision(vec![0], false), &pods), None);
        assert_eq!(eligible(&decision(vec![0, 2], true), &pods), Some(0));
        assert_eq!(eligible(&decision(vec![], true), &pods), None);
    }

    #[test]
    fn readings_cross_in_hundredths_of_a_percent() {
        let stats = |avg10| PsiStats {
            some: PsiData {
                avg10,
                avg60: 1.5,
                avg300: 0.0,
                total: 42,
            },
            full: PsiData {
                avg10: avg10 / 2.0,
                ..PsiData::default()
            },
        };
        let reading = psi::Pressure {
            cpu: None,
            memory: Some(stats(12.34)),
            io: Some(stats(100.0)),
        };
        let node = node_psi(&reading, 7).expect("memory is read");
        assert_eq!(node.memory.some.avg10, 1234);
        assert_eq!(node.memory.full.avg10, 617);
        assert_eq!(node.memory.some.avg60, 150);
        assert_eq!(node.memory.some.total_us, 42);
        assert_eq!(node.io.some.avg10, 10_000);
        assert_eq!(node.cpu, PsiResource::default());
        assert_eq!(node.read_unix_ms, 7);
        assert!(node_psi(&psi::Pressure::default(), 0).is_none());
        let message = eviction_message(&node, "psi-guard", "thrashing");
        assert!(
            message.contains("memory full avg10 6.17%, some avg10 12.34%")
                && message.ends_with("Eviction plugin psi-guard: thrashing"),
            "{message}"
        );
    }
}
