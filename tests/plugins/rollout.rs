//! Staged rollout (`rollout:`): a new version of an eviction plugin ranks beside the serving one
//! as its candidate, and is promoted after exactly `shadowCycles` decisions, or refused when it
//! faults or disagrees more than `maxDisagreements` times; a newer version restarts the trial.

use super::*;
use wasmlet_plugin_host::{CandidateRank, RolloutState};

/// A served eviction plugin whose component is the file `live`, reloaded by the test.
pub(super) struct Live {
    _dir: tempfile::TempDir,
    pub(super) live: PathBuf,
    pub(super) registry: Arc<PluginRegistry>,
}

impl Live {
    fn start(first: &Path, rollout: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("policy.wasm");
        std::fs::copy(first, &live).unwrap();
        let config = dir.path().join("plugins.yaml");
        std::fs::write(
            &config,
            format!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{}",
                plugin("rolled", "eviction-policy", &live, rollout)
            ),
        )
        .unwrap();
        let engine = PluginEngine::new(Some(dir.path().join("cache"))).unwrap();
        let registry = PluginRegistry::new(engine, Some(config));
        Self {
            _dir: dir,
            live,
            registry,
        }
    }

    /// Puts `bytes` in place with a rename and reloads, as the watcher would on the event.
    fn deploy(&self, bytes: &[u8]) {
        let tmp = self.live.with_extension("tmp");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, &self.live).unwrap();
        self.registry.reload();
    }

    fn serving(&self) -> String {
        serving_of(&self.registry, "rolled")
    }

    fn report(&self) -> serde_json::Value {
        self.registry.report()["plugins"][0].clone()
    }

    fn rank(&self, s: &EvictionSnapshot) -> (Decision, Option<CandidateRank>) {
        self.registry.rank_with_candidate(s)
    }
}

pub(super) fn serving_of(registry: &PluginRegistry, name: &str) -> String {
    registry
        .slot_named(name)
        .and_then(|s| s.serving())
        .map(|v| v.sha256.clone())
        .unwrap_or_default()
}

/// The component of `name` with a custom section appended: the same rule, another sha256
/// (custom sections may end a component; the runtime ignores them).
pub(super) fn variant(name: &str, tag: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(Component::named(name).path()).unwrap();
    let mut payload = vec![tag.len() as u8];
    payload.extend_from_slice(tag.as_bytes());
    assert!(payload.len() < 128);
    bytes.push(0);
    bytes.push(payload.len() as u8);
    bytes.extend_from_slice(&payload);
    bytes
}

/// Twenty evictable pods; pod 0 has the highest priority. With `batch`, it is labelled
/// `workload-class=batch`, so `eviction_batch_first` ranks it first while `eviction_default`
/// ranks it last; without, the two rank every pod alike.
pub(super) fn pods(batch: bool) -> EvictionSnapshot {
    let mut s = snapshot(&mut Lcg(9), 20, policy::Signal::MemoryAvailable);
    let meta = std::sync::Arc::make_mut(&mut s.meta);
    for (i, pod) in s.pods.iter_mut().enumerate() {
        pod.is_static = false;
        pod.is_critical = false;
        pod.priority = if i == 0 { 1000 } else { 0 };
        meta[i].labels.clear();
        meta[i].namespace = "default".into();
    }
    if batch {
        meta[0]
            .labels
            .insert("workload-class".into(), "batch".into());
    }
    s
}

fn rollouts(text: &str, result: &str) -> Option<f64> {
    value(
        text,
        &format!(r#"wasmlet_plugin_rollouts_total{{plugin="rolled",result="{result}"}}"#),
    )
}

#[test]
fn an_agreeing_version_is_promoted_after_exactly_its_shadow_cycles() {
    let old = std::fs::read(components::EVICTION_DEFAULT.path()).unwrap();
    let new = std::fs::read(components::EVICTION_BATCH_FIRST.path()).unwrap();
    let node = Live::start(
        &components::EVICTION_DEFAULT.path(),
        "  rollout: {shadowCycles: 4, maxDisagreements: 1}\n",
    );
    // The first version has nothing to be compared with: it serves at once.
    assert_eq!(node.serving(), sha256_hex(&old));
    assert_eq!(node.report()["rollout"]["state"], "idle");
    assert_eq!(node.report()["rollout"]["shadowCycles"], 4);

    node.deploy(&new);
    assert_eq!(node.serving(), sha256_hex(&old), "validated, but on trial");
    let rollout = node.report()["rollout"].clone();
    assert_eq!(rollout["state"], "trial", "{rollout}");
    assert_eq!(rollout["sha256"], sha256_hex(&new));
    assert_eq!(rollout["decisions"], 0);
    assert_eq!(rollout["maxDisagreements"], 1);
    let text = scrape(&node.registry);
    assert_eq!(rollouts(&text, "started"), Some(1.0), "{text}");
    let gauge = |name: &str| {
        format!(
            r#"wasmlet_plugin_rollout_{name}{{plugin="rolled",sha256="{}"}}"#,
            sha256_hex(&new)
        )
    };
    assert_eq!(value(&text, &gauge("shadow_cycles")), Some(4.0), "{text}");
    assert_eq!(value(&text, &gauge("decisions")), Some(0.0), "{text}");

    // One disagreement (within the one allowed), then agreement: the serving version decides
    // every one of the four, the candidate only ranks beside it.
    let snapshots = [pods(true), pods(false), pods(false), pods(false)];
    for (i, s) in snapshots.iter().enumerate() {
        let (decision, candidate) = node.rank(s);
        assert_eq!(
            decision.decided_by,
            DecidedBy::Plugin {
                name: "rolled".into(),
                sha256: sha256_hex(&old)
            },
            "decision {i}"
        );
        assert_eq!(decision.order, policy::eviction::rank(&s.pressure, &s.pods));
        let candidate = candidate.expect("the candidate ranked");
        assert_eq!(candidate.sha256, sha256_hex(&new));
        assert_eq!(candidate.decisions, i as u32 + 1);
        assert_eq!(candidate.shadow_cycles, 4);
        assert_eq!(candidate.agrees, i != 0, "decision {i}");
        assert_eq!(candidate.disagreements, 1);
        if i == 0 {
            assert_eq!(candidate.answer.as_ref().unwrap()[0], 0, "batch first");
        }
        if i < 3 {
            assert_eq!(candidate.state, RolloutState::Trial);
            assert_eq!(
                node.serving(),
                sha256_hex(&old),
                "not promoted before decision 4"
            );
            let text = scrape(&node.registry);
            assert_eq!(value(&text, &gauge("decisions")), Some(i as f64 + 1.0));
            assert_eq!(value(&text, &gauge("disagreements")), Some(1.0));
        } else {
            assert_eq!(candidate.state, RolloutState::Promoted);
        }
    }
    assert_eq!(
        node.serving(),
        sha256_hex(&new),
        "promoted after decision 4"
    );
    let report = node.report();
    assert_eq!(report["rollout"]["state"], "promoted", "{report}");
    assert_eq!(report["rollout"]["decisions"], 4);
    assert_eq!(report["rollout"]["disagreements"], 1);
    assert!(report["rollout"]["endedAt"].is_string());
    assert_eq!(report["swaps"], 2);
    assert_eq!(report["faults"], 0);
    // The new rule decides now, and no candidate ranks beside it.
    let (decision, candidate) = node.rank(&pods(true));
    assert_eq!(decision.order[0], 0);
    assert!(candidate.is_none());
    let text = scrape(&node.registry);
    assert_eq!(rollouts(&text, "promoted"), Some(1.0), "{text}");
    assert_eq!(
        value(
            &text,
            r#"wasmlet_plugin_swaps_total{plugin="rolled",result="swapped"}"#
        ),
        Some(2.0)
    );
    assert!(
        !text.contains("wasmlet_plugin_rollout_decisions{"),
        "the trial ended: {text}"
    );
    // A reload of the same file changes nothing: it serves, no trial starts.
    node.registry.reload();
    assert_eq!(node.report()["rollout"]["state"], "promoted");
}

#[test]
fn a_version_that_disagrees_too_often_is_refused_and_the_old_keeps_serving() {
    let old = std::fs::read(components::EVICTION_DEFAULT.path()).unwrap();
    let new = std::fs::read(components::EVICTION_BATCH_FIRST.path()).unwrap();
    let node = Live::start(
        &components::EVICTION_DEFAULT.path(),
        "  rollout: {shadowCycles: 10, maxDisagreements: 1}\n",
    );
    node.deploy(&new);
    let (_, first) = node.rank(&pods(true));
    assert_eq!(first.unwrap().state, RolloutState::Trial);
    let (decision, second) = node.rank(&pods(true));
    assert!(plugin_decided(&decision));
    let second = second.unwrap();
    assert_eq!(second.state, RolloutState::Refused);
    assert_eq!(second.disagreements, 2);
    let reason = second.reason.unwrap();
    assert!(
        reason.contains("ranked 2 of 2 decisions differently") && reason.contains("at most 1"),
        "{reason}"
    );
    assert_eq!(node.serving(), sha256_hex(&old));
    let report = node.report();
    assert_eq!(report["rollout"]["state"], "refused", "{report}");
    assert_eq!(report["rollout"]["reason"], reason.as_str());
    assert_eq!(report["lastRejected"]["sha256"], sha256_hex(&new));
    assert!(
        report["lastRejected"]["reason"]
            .as_str()
            .unwrap()
            .contains("refused after its trial"),
        "{report}"
    );
    assert_eq!(report["swaps"], 1);
    // The old rule keeps deciding, no candidate beside it, and the refused file is not tried
    // again at the next reload.
    let (decision, candidate) = node.rank(&pods(true));
    assert_ne!(decision.order[0], 0);
    assert!(candidate.is_none());
    node.registry.reload();
    assert!(node.rank(&pods(true)).1.is_none());
    let text = scrape(&node.registry);
    assert_eq!(rollouts(&text, "refused"), Some(1.0), "{text}");
    assert_eq!(
        value(
            &text,
            r#"wasmlet_plugin_swaps_total{plugin="rolled",result="rejected"}"#
        ),
        Some(1.0)
    );
}

#[test]
fn a_version_that_faults_on_trial_is_refused_without_failing_the_serving_one() {
    for (guest, why) in [
        ("guest_trap", "trapped"),
        ("guest_nonsense", "answered nonsense"),
        ("guest_loop", "deadline"),
    ] {
        let old = std::fs::read(components::EVICTION_DEFAULT.path()).unwrap();
        let node = Live::start(
            &components::EVICTION_DEFAULT.path(),
            "  limits: {deadlineMs: 50}\n  rollout: {shadowCycles: 3}\n",
        );
        let faulty = std::fs::read(Component::named(guest).path()).unwrap();
        node.deploy(&faulty);
        assert_eq!(node.report()["rollout"]["state"], "trial", "{guest}");
        let s = pods(false);
        let (decision, candidate) = node.rank(&s);
        assert_eq!(
            decision.decided_by,
            DecidedBy::Plugin {
                name: "rolled".into(),
                sha256: sha256_hex(&old)
            },
            "{guest}: the serving version decided"
        );
        let candidate = candidate.unwrap();
        assert_eq!(candidate.state, RolloutState::Refused, "{guest}");
        let error = candidate.answer.unwrap_err().to_string();
        assert!(error.contains(why), "{guest}: {error}");
        assert!(candidate
            .reason
            .unwrap()
            .contains("faulted in decision 1 of its trial of 3"));
        let report = node.report();
        assert_eq!(report["rollout"]["state"], "refused", "{guest}: {report}");
        assert!(
            report["lastRejected"]["reason"]
                .as_str()
                .unwrap()
                .contains(why),
            "{guest}: {report}"
        );
        // The candidate's fault is not the serving version's.
        assert_eq!(report["faults"], 0, "{guest}: {report}");
        assert_eq!(report["state"], "serving");
        assert_eq!(node.serving(), sha256_hex(&old));
        assert!(node.rank(&s).1.is_none());
    }
}

#[test]
fn a_newer_version_replaces_the_candidate_and_its_trial_starts_over() {
    let old = std::fs::read(components::EVICTION_DEFAULT.path()).unwrap();
    let first = std::fs::read(components::EVICTION_BATCH_FIRST.path()).unwrap();
    let second = variant("eviction_batch_first", "second");
    let node = Live::start(
        &components::EVICTION_DEFAULT.path(),
        "  rollout: {shadowCycles: 3}\n",
    );
    node.deploy(&first);
    for _ in 0..2 {
        assert_eq!(
            node.rank(&pods(false)).1.unwrap().state,
            RolloutState::Trial
        );
    }
    node.deploy(&second);
    let rollout = node.report()["rollout"].clone();
    assert_eq!(rollout["state"], "trial");
    assert_eq!(rollout["sha256"], sha256_hex(&second), "{rollout}");
    assert_eq!(rollout["decisions"], 0, "the trial starts over");
    for i in 1..=2 {
        let candidate = node.rank(&pods(false)).1.unwrap();
        assert_eq!(
            (candidate.sha256.as_str(), candidate.decisions),
            (sha256_hex(&second).as_str(), i)
        );
        assert_eq!(candidate.state, RolloutState::Trial);
    }
    assert_eq!(node.serving(), sha256_hex(&old));

    // The file goes back to the serving version: the trial is withdrawn.
    node.deploy(&old);
    let rollout = node.report()["rollout"].clone();
    assert_eq!(rollout["state"], "withdrawn", "{rollout}");
    assert!(node.rank(&pods(false)).1.is_none());

    // Deployed again, it is tried from the start and promoted after three decisions.
    node.deploy(&second);
    for i in 1..=3 {
        let candidate = node.rank(&pods(false)).1.unwrap();
        assert_eq!(candidate.decisions, i);
    }
    assert_eq!(node.serving(), sha256_hex(&second));
    let text = scrape(&node.registry);
    assert_eq!(rollouts(&text, "started"), Some(3.0), "{text}");
    assert_eq!(rollouts(&text, "withdrawn"), Some(2.0), "{text}");
    assert_eq!(rollouts(&text, "promoted"), Some(1.0), "{text}");
    assert_eq!(node.report()["swaps"], 2);
}
