//! Staged rollout of an eviction plugin (`rollout:` in its entry). A new version that validated
//! does not replace the serving one at once: it becomes its candidate and ranks every snapshot
//! the serving version ranks (the same input; its answer is only compared). After
//! `shadowCycles` decisions without a fault, and with at most `maxDisagreements` rankings that
//! differ from the decision taken, it is promoted by the usual swap; a fault, or one
//! disagreement too many, refuses it as a version that fails validation is refused, and the
//! serving version never stops serving. Kubewarden's monitor mode only logs what a policy would
//! do; here that log is the evidence the swap waits for.

use super::decisions::{rank_candidate, Decision, EvictionSnapshot};
use super::{PluginRegistry, PluginSlot};
use crate::config::Rollout;
use crate::instance::LoadedPlugin;
use crate::metrics::RolloutResult;
use crate::timestamp::rfc3339;
use parking_lot::MutexGuard;
use std::sync::Arc;
use std::time::SystemTime;
use tracing::{info, warn};

/// Where a plugin's staged rollout stands (the `state` of its `/plugins` `rollout` object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RolloutState {
    /// No candidate has been tried yet.
    Idle,
    /// A candidate ranks beside the serving version.
    Trial,
    /// The last candidate earned its swap and serves.
    Promoted,
    /// The last candidate faulted or disagreed too often; the serving version stayed.
    Refused,
    /// The last trial ended without a verdict: a newer version replaced the candidate, the
    /// source went back to the serving version, or a version was swapped in directly.
    Withdrawn,
}

/// What a candidate on trial answered for one snapshot, for the eviction decision log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateRank {
    /// The plugin's configured name.
    pub plugin: String,
    /// The candidate version.
    pub sha256: String,
    /// Its ranking (indices of evictable pods, as a decision), or why it gave none.
    pub answer: Result<Vec<u32>, crate::error::PluginError>,
    /// Whether it ranked exactly as the decision taken (the same pods in the same order).
    pub agrees: bool,
    /// Decisions of its trial so far, this one included.
    pub decisions: u32,
    /// Decisions it must rank to be promoted.
    pub shadow_cycles: u32,
    /// Its rankings that differed from the decision taken, this one included.
    pub disagreements: u32,
    /// Where its trial stands after this decision: `Trial`, `Promoted` or `Refused`.
    pub state: RolloutState,
    /// Why this decision refused it.
    pub reason: Option<String>,
}

/// A candidate's progress, for the `wasmlet_plugin_rollout_*` gauges.
#[derive(Debug, Clone)]
pub(crate) struct TrialProgress {
    pub sha256: String,
    pub decisions: u32,
    pub disagreements: u32,
    pub shadow_cycles: u32,
}

/// A trial, running or ended: what `/plugins` shows.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct TrialRecord {
    state: RolloutState,
    /// The candidate's sha256.
    sha256: String,
    /// The OCI manifest it came in, for an `oci://` plugin.
    digest: Option<String>,
    decisions: u32,
    shadow_cycles: u32,
    disagreements: u32,
    max_disagreements: Option<u32>,
    started_at: String,
    ended_at: Option<String>,
    reason: Option<String>,
}

/// A candidate on trial.
struct Trial {
    version: Arc<LoadedPlugin>,
    /// What prefixes a refusal's reason (the reference and manifest, for `oci://`).
    origin: String,
    record: TrialRecord,
}

/// A slot's rollout: the candidate on trial, and how the last trial ended.
#[derive(Default)]
pub(super) struct Rollouts {
    trial: Option<Trial>,
    last: Option<TrialRecord>,
}

/// What became of a version offered to a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Offered {
    /// It serves (swapped in, or it already served).
    Serving,
    /// It is the serving version's candidate.
    OnTrial,
    /// It was refused; the serving version stays.
    Refused,
}

impl PluginSlot {
    fn rollouts(&self) -> MutexGuard<'_, Rollouts> {
        self.rollout.lock()
    }

    /// Whether `sha256`, loaded for `spec`, is the candidate on trial.
    pub(super) fn is_candidate(&self, sha256: &str, spec: &crate::config::PluginSpec) -> bool {
        self.rollouts()
            .trial
            .as_ref()
            .is_some_and(|t| t.version.sha256 == sha256 && t.version.spec == *spec)
    }

    /// The manifest digest of the candidate on trial, when it came from a registry.
    pub(super) fn candidate_digest(&self) -> Option<String> {
        self.rollouts()
            .trial
            .as_ref()
            .and_then(|t| t.record.digest.clone())
    }

    /// Swaps a validated `version` in, or puts it on trial when its entry asks for a rollout
    /// and another version serves (the first version, or one replacing a failed plugin, is
    /// swapped in: there is nothing to compare it with). A newer candidate replaces the one on
    /// trial, whose trial starts over.
    pub(super) fn adopt(
        &self,
        version: LoadedPlugin,
        digest: Option<&str>,
        origin: &str,
    ) -> Offered {
        let mut rollouts = self.rollouts();
        let serving = self.serving();
        let rollout = version.spec.rollout;
        match (rollout, serving) {
            (Some(rollout), Some(serving)) if serving.sha256 != version.sha256 => {
                self.end_trial(
                    &mut rollouts,
                    RolloutState::Withdrawn,
                    Some(format!("replaced by the newer version {}", version.sha256)),
                );
                self.start_trial(&mut rollouts, version, rollout, digest, origin, &serving);
                Offered::OnTrial
            }
            _ => {
                self.end_trial(
                    &mut rollouts,
                    RolloutState::Withdrawn,
                    Some(format!(
                        "version {} was swapped in directly",
                        version.sha256
                    )),
                );
                self.install(Arc::new(version), digest);
                Offered::Serving
            }
        }
    }

    fn start_trial(
        &self,
        rollouts: &mut Rollouts,
        version: LoadedPlugin,
        rollout: Rollout,
        digest: Option<&str>,
        origin: &str,
        serving: &LoadedPlugin,
    ) {
        info!(plugin = %self.name, candidate_sha256 = %version.sha256, serving_sha256 = %serving.sha256, digest = digest.unwrap_or(""), shadow_cycles = rollout.shadow_cycles, max_disagreements = ?rollout.max_disagreements, "plugin version on trial: it ranks beside the serving version before it may be promoted");
        self.metrics.rollout(RolloutResult::Started);
        rollouts.trial = Some(Trial {
            record: TrialRecord {
                state: RolloutState::Trial,
                sha256: version.sha256.clone(),
                digest: digest.map(str::to_string),
                decisions: 0,
                shadow_cycles: rollout.shadow_cycles,
                disagreements: 0,
                max_disagreements: rollout.max_disagreements,
                started_at: rfc3339(SystemTime::now()),
                ended_at: None,
                reason: None,
            },
            version: Arc::new(version),
            origin: origin.to_string(),
        });
    }

    /// Ends the trial on record, if any, as `state`; returns the candidate.
    fn end_trial(
        &self,
        rollouts: &mut Rollouts,
        state: RolloutState,
        reason: Option<String>,
    ) -> Option<Trial> {
        let mut trial = rollouts.trial.take()?;
        let record = &mut trial.record;
        record.state = state;
        record.ended_at = Some(rfc3339(SystemTime::now()));
        record.reason = reason;
        match state {
            RolloutState::Promoted => {
                info!(plugin = %self.name, sha256 = %record.sha256, decisions = record.decisions, disagreements = record.disagreements, "plugin candidate promoted after its trial");
                self.metrics.rollout(RolloutResult::Promoted);
            }
            RolloutState::Refused => {
                warn!(plugin = %self.name, sha256 = %record.sha256, decisions = record.decisions, disagreements = record.disagreements, reason = record.reason.as_deref().unwrap_or(""), "plugin candidate refused after its trial; the serving version stays");
                self.metrics.rollout(RolloutResult::Refused);
            }
            _ => {
                info!(plugin = %self.name, sha256 = %record.sha256, decisions = record.decisions, reason = record.reason.as_deref().unwrap_or(""), "plugin candidate withdrawn from its trial");
                self.metrics.rollout(RolloutResult::Withdrawn);
            }
        }
        rollouts.last = Some(record.clone());
        Some(trial)
    }

    /// Ends a trial without a verdict (the source named the serving version again).
    pub(super) fn withdraw(&self, reason: &str) {
        let mut rollouts = self.rollouts();
        self.end_trial(
            &mut rollouts,
            RolloutState::Withdrawn,
            Some(reason.to_string()),
        );
    }

    /// The candidate's progress, while one is on trial.
    pub(crate) fn trial_progress(&self) -> Option<TrialProgress> {
        let rollouts = self.rollouts();
        let record = &rollouts.trial.as_ref()?.record;
        Some(TrialProgress {
            sha256: record.sha256.clone(),
            decisions: record.decisions,
            disagreements: record.disagreements,
            shadow_cycles: record.shadow_cycles,
        })
    }

    /// The `rollout` object of a `/plugins` entry: the trial running, else the last one, else
    /// the configured terms (`state: idle`); none for a plugin that never had a rollout.
    pub(super) fn rollout_report(&self) -> Option<serde_json::Value> {
        let rollouts = self.rollouts();
        let record = rollouts
            .trial
            .as_ref()
            .map(|t| &t.record)
            .or(rollouts.last.as_ref());
        if let Some(record) = record {
            return serde_json::to_value(record).ok();
        }
        let rollout = self.spec.lock().rollout?;
        Some(serde_json::json!({
            "state": RolloutState::Idle,
            "shadowCycles": rollout.shadow_cycles,
            "maxDisagreements": rollout.max_disagreements,
        }))
    }
}

impl PluginRegistry {
    /// One decision of `slot`'s candidate, if one is on trial: it ranks `snapshot`, its answer
    /// is compared with `decision` (the one taken), and the trial promotes or refuses it when
    /// it has its verdict.
    pub(crate) fn judge_candidate(
        &self,
        slot: &Arc<PluginSlot>,
        snapshot: &EvictionSnapshot,
        decision: &Decision,
    ) -> Option<CandidateRank> {
        let version = slot.rollouts().trial.as_ref()?.version.clone();
        let answer = rank_candidate(slot, version.clone(), snapshot);
        let mut rollouts = slot.rollouts();
        // A newer version may have replaced the candidate while it ranked: not its decision.
        let trial = rollouts
            .trial
            .as_mut()
            .filter(|t| Arc::ptr_eq(&t.version, &version))?;
        let record = &mut trial.record;
        record.decisions += 1;
        let agrees = answer.as_ref().is_ok_and(|order| *order == decision.order);
        if answer.is_ok() && !agrees {
            record.disagreements += 1;
        }
        let (decisions, cycles, disagreements) =
            (record.decisions, record.shadow_cycles, record.disagreements);
        let verdict = match (&answer, record.max_disagreements) {
            (Err(error), _) => Some(Err(format!(
                "faulted in decision {decisions} of its trial of {cycles}: {error}"
            ))),
            (Ok(_), Some(most)) if disagreements > most => Some(Err(format!(
                "ranked {disagreements} of {decisions} decisions differently from the serving version (at most {most} allowed)"
            ))),
            (Ok(_), _) if decisions >= cycles => Some(Ok(())),
            (Ok(_), _) => None,
        };
        let mut rank = CandidateRank {
            plugin: slot.name.clone(),
            sha256: version.sha256.clone(),
            answer,
            agrees,
            decisions,
            shadow_cycles: cycles,
            disagreements,
            state: RolloutState::Trial,
            reason: None,
        };
        match verdict {
            None => {}
            Some(Ok(())) => {
                let trial = slot.end_trial(&mut rollouts, RolloutState::Promoted, None)?;
                // Swapped in under the rollout lock: no offer sees the old version meanwhile.
                slot.install(trial.version, trial.record.digest.as_deref());
                drop(rollouts);
                self.record_tag(slot, trial.record.digest.as_deref());
                rank.state = RolloutState::Promoted;
            }
            Some(Err(reason)) => {
                let trial =
                    slot.end_trial(&mut rollouts, RolloutState::Refused, Some(reason.clone()))?;
                drop(rollouts);
                slot.refuse(
                    &trial.record.sha256,
                    trial.record.digest.as_deref(),
                    format!("{}refused after its trial: {reason}", trial.origin),
                );
                rank.state = RolloutState::Refused;
                rank.reason = Some(reason);
            }
        }
        Some(rank)
    }
}
