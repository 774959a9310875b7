//! The decision log served at `/evictions` ("why was my pod evicted"): for every cycle that
//! ranked pods, who ranked them, the candidates in that order, what a shadow plugin would have
//! done, what a new plugin version on trial (`rollout:`) ranked, and which pod was evicted with
//! what message.

use crate::metrics::{decided_by_label, Metrics, PluginLabels};
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::VecDeque;
use tracing::info;
use wasmlet_plugin_host::{CandidateRank, DecidedBy, Decision, EvictionSnapshot, RolloutState};

/// Decisions kept for `/evictions`.
const DECISION_LOG_LEN: usize = 100;

/// A ranked candidate in the decision log.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// The pod's name.
    pub pod: String,
    /// The pod's namespace.
    pub namespace: String,
    /// `Guaranteed`, `Burstable` or `BestEffort`.
    pub qos_class: &'static str,
    /// The pod's priority.
    pub priority: i32,
    /// Working set of the pod cgroup.
    pub memory_usage_bytes: u64,
    /// Sum of the containers' memory requests.
    pub memory_request_bytes: u64,
}

/// What a shadow plugin chose for the same snapshot.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowChoice {
    /// The shadow plugin, or the built-in default with the reason it stood in.
    pub decided_by: DecidedBy,
    /// The pod the shadow would have evicted (`None`: none, or it faulted).
    pub would_evict: Option<String>,
    /// The shadow's ranking, by pod name.
    pub ranking: Vec<String>,
    /// Whether it would have evicted the same pod.
    pub agrees: bool,
    /// Why the shadow gave no answer.
    pub error: Option<String>,
}

/// What a new version of the eviction plugin, on trial beside the serving one, ranked for the
/// same snapshot (one decision of its trial).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateChoice {
    /// The plugin.
    pub plugin: String,
    /// The candidate version.
    pub sha256: String,
    /// The pod it would have evicted (`None`: none, or it faulted).
    pub would_evict: Option<String>,
    /// Its ranking, by pod name.
    pub ranking: Vec<String>,
    /// Whether it ranked exactly as the decision taken.
    pub agrees: bool,
    /// Why it gave no answer.
    pub error: Option<String>,
    /// Decisions of its trial so far, this one included.
    pub decisions: u32,
    /// Decisions it must rank to be promoted.
    pub shadow_cycles: u32,
    /// Its rankings that differed from the decision taken.
    pub disagreements: u32,
    /// `trial`, or `promoted` / `refused` when this decision ended its trial.
    pub state: RolloutState,
    /// Why it was refused.
    pub reason: Option<String>,
}

impl CandidateChoice {
    /// The candidate's answer, by pod name.
    pub(super) fn of(rank: CandidateRank, snapshot: &EvictionSnapshot) -> Self {
        let name = |i: &u32| snapshot.meta[*i as usize].name.clone();
        let (ranking, error) = match rank.answer {
            Ok(order) => (order.iter().map(name).collect::<Vec<_>>(), None),
            Err(error) => (Vec::new(), Some(error.to_string())),
        };
        info!(plugin = %rank.plugin, candidate_sha256 = %rank.sha256, would_evict = ?ranking.first(), agrees = rank.agrees, decisions = rank.decisions, shadow_cycles = rank.shadow_cycles, disagreements = rank.disagreements, state = ?rank.state, "candidate eviction plugin ranked");
        Self {
            plugin: rank.plugin,
            sha256: rank.sha256,
            would_evict: ranking.first().cloned(),
            ranking,
            agrees: rank.agrees,
            error,
            decisions: rank.decisions,
            shadow_cycles: rank.shadow_cycles,
            disagreements: rank.disagreements,
            state: rank.state,
            reason: rank.reason,
        }
    }
}

/// One eviction cycle that ranked pods: who decided, what was ranked, what happened.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    /// When the decision was made (RFC 3339).
    pub time: String,
    /// Cycle number of the eviction manager, to see that no cycle was missed or doubled.
    pub cycle: u64,
    /// The signal whose threshold was met; `psi` for a plugin's pressure decision.
    pub signal: &'static str,
    /// The threshold, resolved against the capacity (none for a pressure decision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<i64>,
    /// What was available when the pods were ranked (none for a pressure decision).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available: Option<i64>,
    /// The node's pressure stall information a pressure decision was made on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psi: Option<PsiReading>,
    /// The plugin's reason for a pressure decision, or why the host did not act on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The plugin that ranked, or the built-in default with the reason it stood in.
    pub decided_by: DecidedBy,
    /// Candidates in the order the plugin ranked them (evictable pods only).
    pub ranking: Vec<String>,
    /// The same candidates with what they were ranked by.
    pub candidates: Vec<Candidate>,
    /// The pod evicted, if any.
    pub evicted: Option<String>,
    /// The evicted pod's status message.
    pub message: Option<String>,
    /// What the shadow plugin would have done, when one is configured.
    pub shadow: Option<ShadowChoice>,
    /// What a new version of the plugin on trial ranked, while one is.
    pub candidate: Option<CandidateChoice>,
}

/// The node's PSI as `/evictions` shows it: percent averages as the kernel prints them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PsiReading {
    /// Memory, `some` line: avg10, avg60, avg300 (percent).
    pub memory_some: [f64; 3],
    /// Memory, `full` line.
    pub memory_full: [f64; 3],
    /// I/O, `some` line.
    pub io_some: [f64; 3],
    /// I/O, `full` line.
    pub io_full: [f64; 3],
    /// CPU, `some` line.
    pub cpu_some: [f64; 3],
}

impl PsiReading {
    /// The reading of `psi` (hundredths of a percent) in percent.
    pub fn of(psi: &wasmlet_policy_default::NodePsi) -> Self {
        let line = |l: &wasmlet_policy_default::PsiLine| {
            [l.avg10, l.avg60, l.avg300].map(|v| f64::from(v) / 100.0)
        };
        Self {
            memory_some: line(&psi.memory.some),
            memory_full: line(&psi.memory.full),
            io_some: line(&psi.io.some),
            io_full: line(&psi.io.full),
            cpu_some: line(&psi.cpu.some),
        }
    }
}

/// The most recent eviction decisions, for `/evictions` ("why was my pod evicted").
#[derive(Debug, Default)]
pub struct DecisionLog(Mutex<VecDeque<DecisionRecord>>);

impl DecisionLog {
    /// The decisions kept, oldest first.
    pub fn list(&self) -> Vec<DecisionRecord> {
        self.0.lock().iter().cloned().collect()
    }

    /// Keeps `decision`, dropping the oldest beyond [`DECISION_LOG_LEN`].
    pub(super) fn push(&self, decision: DecisionRecord) {
        let mut log = self.0.lock();
        if log.len() == DECISION_LOG_LEN {
            log.pop_front();
        }
        log.push_back(decision);
    }
}

/// The pods of `order`, as the log shows them.
pub(super) fn candidates(snapshot: &EvictionSnapshot, order: &[u32]) -> Vec<Candidate> {
    order
        .iter()
        .map(|&i| {
            let info = &snapshot.pods[i as usize];
            Candidate {
                pod: snapshot.meta[i as usize].name.clone(),
                namespace: snapshot.meta[i as usize].namespace.clone(),
                qos_class: match info.qos {
                    wasmlet_policy_default::QosClass::Guaranteed => "Guaranteed",
                    wasmlet_policy_default::QosClass::Burstable => "Burstable",
                    wasmlet_policy_default::QosClass::BestEffort => "BestEffort",
                },
                priority: info.priority,
                memory_usage_bytes: info.memory_usage_bytes,
                memory_request_bytes: info.memory_request_bytes,
            }
        })
        .collect()
}

/// The shadow plugin's answer for the log; a disagreement with `chosen` is counted.
pub(super) fn shadow_choice(
    metrics: &Metrics,
    answer: Result<Decision, wasmlet_plugin_host::PluginError>,
    snapshot: &EvictionSnapshot,
    chosen: Option<u32>,
) -> ShadowChoice {
    let name = |i: u32| snapshot.meta[i as usize].name.clone();
    match answer {
        Ok(shadow) => {
            let would = shadow.order.first().copied();
            let agrees = would == chosen;
            let label = decided_by_label(&shadow.decided_by);
            if !agrees {
                metrics
                    .shadow_disagreements
                    .get_or_create(&PluginLabels {
                        plugin: label.clone(),
                    })
                    .inc();
            }
            info!(shadow = %label, would_evict = ?would.map(name), evicting = ?chosen.map(name), agrees, "shadow eviction plugin ranked");
            ShadowChoice {
                decided_by: shadow.decided_by,
                would_evict: would.map(name),
                ranking: shadow.order.iter().map(|&i| name(i)).collect(),
                agrees,
                error: None,
            }
        }
        Err(error) => ShadowChoice {
            decided_by: DecidedBy::BuiltIn {
                reason: error.to_string(),
            },
            would_evict: None,
            ranking: Vec::new(),
            agrees: false,
            error: Some(error.to_string()),
        },
    }
}
