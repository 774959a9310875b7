//! `oci://` plugins in the registry: a tag resolved at load and then every `pollPeriod`, a
//! new manifest pulled (or found in the node's store), its digests and signature checked, then
//! offered to the same validate-then-swap as a changed file. While the registry is
//! unreachable the serving version stays, requests are retried with a doubling back-off, and
//! a node that starts without its registry loads the digest the tag resolved to last.

use super::{Offered, PluginRegistry, PluginSlot};
use crate::config::{OciSource, PluginSource, PluginSpec, DEFAULT_POLL_PERIOD};
use crate::metrics::PullResult;
use crate::oci::{self, OciError, Remote};
use parking_lot::MutexGuard;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// What the registry said last about one `oci://` plugin.
#[derive(Debug, Default)]
pub(super) struct OciState {
    /// The manifest digest of the version serving.
    serving: Option<String>,
    /// A manifest that failed to pull, load or validate: not offered again until the tag
    /// moves or the plugin's config changes. (An unsigned one is retried: it may be signed
    /// after it was pushed.)
    refused: Option<String>,
    /// When to ask the registry next; `None` when there is nothing to ask (a digest loaded).
    next_poll: Option<Instant>,
    /// Consecutive requests that did not reach the registry.
    failures: u32,
    /// The last request did not reach the registry.
    unreachable: bool,
    /// Why the last request failed.
    last_error: Option<String>,
}

impl OciState {
    /// `digest` is the manifest of the version serving.
    pub(super) fn serving_manifest(&mut self, digest: &str) {
        self.serving = Some(digest.to_string());
        self.refused = None;
    }

    /// `digest` was refused: not offered again until the tag moves.
    pub(super) fn refused_manifest(&mut self, digest: &str) {
        self.refused = Some(digest.to_string());
    }
}

/// The wait before retrying after `failures` unreachable requests: from one second (or the
/// poll period, if shorter) doubling up to the poll period.
pub(super) fn retry_delay(failures: u32, period: Duration) -> Duration {
    let first = period.min(Duration::from_secs(1));
    first
        .saturating_mul(1u32 << failures.saturating_sub(1).min(20))
        .min(period)
}

/// Resolves due tags (and retries failed pulls) until the registry is dropped.
pub(super) fn start_poller(registry: &Arc<PluginRegistry>) {
    let weak = Arc::downgrade(registry);
    let started = std::thread::Builder::new()
        .name("plugin-oci-poll".into())
        .spawn(move || loop {
            let Some(registry) = weak.upgrade() else {
                return;
            };
            let wait = registry.poll_due();
            drop(registry);
            std::thread::sleep(wait);
        });
    if let Err(error) = started {
        warn!(%error, "cannot start the oci:// plugin poller; tags will not be polled");
    }
}

impl PluginSlot {
    pub(super) fn oci(&self) -> MutexGuard<'_, OciState> {
        self.oci.lock()
    }

    fn spec_now(&self) -> PluginSpec {
        self.spec.lock().clone()
    }

    fn set_spec(&self, spec: PluginSpec) {
        *self.spec.lock() = spec;
    }

    /// The `oci` object of a `/plugins` entry.
    pub(super) fn oci_report(&self) -> serde_json::Value {
        let state = self.oci();
        serde_json::json!({
            "digest": state.serving,
            "refusedDigest": state.refused,
            "registry": if state.unreachable { "unreachable" } else { "reachable" },
            "lastError": state.last_error,
        })
    }

    /// Records a refusal unless it is the one recorded last (a poll retrying an unsigned
    /// version would otherwise count and log it every period).
    fn reject_once(&self, reason: String) {
        let repeated = self
            .stats()
            .last_rejected
            .as_ref()
            .is_some_and(|r| r.sha256.is_empty() && r.reason == reason);
        if !repeated {
            self.reject("", reason);
        }
    }
}

impl PluginRegistry {
    /// Polls the `oci://` plugins that are due; returns how long to wait for the next.
    fn poll_due(&self) -> Duration {
        let mut wait = Duration::from_secs(1);
        for slot in self.slots.load().iter() {
            let due = slot.oci().next_poll;
            let Some(at) = due else { continue };
            let now = Instant::now();
            if at > now {
                wait = wait.min(at - now);
                continue;
            }
            let _one_at_a_time = self.reload_lock.lock();
            let spec = slot.spec_now();
            let PluginSource::Oci(source) = &spec.source else {
                slot.oci().next_poll = None;
                continue;
            };
            let source = source.clone();
            self.refresh_oci(slot, spec, &source, true);
            if let Some(at) = slot.oci().next_poll {
                wait = wait.min(at.saturating_duration_since(Instant::now()));
            }
        }
        wait.max(Duration::from_millis(10))
    }

    /// Brings an `oci://` plugin to what its reference names now. `polled`: a poll of an
    /// unchanged config (an unreachable registry then changes nothing), else a load or a
    /// config change (which falls back to the store).
    pub(super) fn refresh_oci(
        &self,
        slot: &PluginSlot,
        spec: PluginSpec,
        source: &OciSource,
        polled: bool,
    ) {
        let reference = &source.reference;
        let tag = reference.tag().is_some();
        let period = if tag {
            source.poll_period
        } else {
            DEFAULT_POLL_PERIOD
        };
        let spec_changed = slot.spec_now() != spec;
        let Some(store) = &self.oci_store else {
            slot.reject_once(format!(
                "{reference}: oci:// plugins need the node's root directory for their store"
            ));
            return slot.set_spec(spec);
        };
        if spec_changed {
            *slot.oci() = OciState::default();
        } else if !polled && slot.oci().serving.is_some() && slot.current.load().is_some() {
            // A reload that changed nothing of this plugin: its tag is the poller's.
            return;
        }
        let remote = match Remote::new(reference, &source.access()) {
            Ok(remote) => remote,
            Err(error) => return self.refused(slot, spec, period, error, None),
        };
        let digest = match self.engine.block_on(remote.resolve()) {
            None => return,
            Some(Ok(digest)) => {
                self.reachable(slot);
                digest
            }
            Some(Err(error)) if error.is_unreachable() => {
                self.unreachable(slot, &error, period);
                match (polled, store.cached_ref(reference)) {
                    (false, Some(digest)) => {
                        info!(plugin = %slot.name, %reference, %digest, "registry unreachable: loading the version this tag resolved to last, from the node's store");
                        digest
                    }
                    (false, None) => {
                        slot.reject_once(error.to_string());
                        return slot.set_spec(spec);
                    }
                    (true, _) => return slot.set_spec(spec),
                }
            }
            Some(Err(error)) => return self.refused(slot, spec, period, error, None),
        };
        let on_trial = slot.candidate_digest().as_deref() == Some(digest.as_str());
        {
            let mut state = slot.oci();
            let serving =
                state.serving.as_deref() == Some(digest.as_str()) && slot.current.load().is_some();
            let refused = state.refused.as_deref() == Some(digest.as_str());
            if !spec_changed && (serving || refused || on_trial) {
                state.next_poll = tag.then(|| Instant::now() + period);
                drop(state);
                if serving {
                    // The tag went back to the serving version: no candidate to try any more.
                    slot.withdraw("the tag names the serving version again");
                }
                return slot.set_spec(spec);
            }
        }
        let wasm = match self.engine.block_on(remote.fetch(store, &digest)) {
            None => return,
            Some(Ok(wasm)) => wasm,
            Some(Err(error)) if error.is_unreachable() => {
                self.unreachable(slot, &error, period);
                if !polled {
                    slot.reject_once(error.to_string());
                }
                return slot.set_spec(spec);
            }
            Some(Err(error)) => return self.refused(slot, spec, period, error, Some(digest)),
        };
        if let Some(key) = &source.public_key {
            let checked = self.engine.block_on(oci::check_signature(
                Some(&remote),
                Some(store),
                reference,
                &digest,
                key,
            ));
            match checked {
                None => return,
                Some(Ok(())) => {}
                Some(Err(error)) if error.is_unreachable() => {
                    self.unreachable(slot, &error, period);
                    if !polled {
                        slot.reject_once(error.to_string());
                    }
                    return slot.set_spec(spec);
                }
                Some(Err(error)) => return self.refused(slot, spec, period, error, None),
            }
        }
        slot.metrics.pull(PullResult::Pulled);
        info!(plugin = %slot.name, %reference, %digest, "plugin artifact pulled and checked; validating");
        let origin = format!("{reference} (manifest {digest}): ");
        let offered = self.offer(slot, spec, &wasm, &origin, Some(&digest));
        let mut state = slot.oci();
        state.next_poll = tag.then(|| Instant::now() + period);
        state.last_error = None;
        match offered {
            Offered::Serving => {
                // Swapped in with this digest, or the serving bytes under a new manifest.
                state.serving_manifest(&digest);
                drop(state);
                self.record_tag(slot, Some(&digest));
            }
            // Its trial records the verdict (`PluginSlot::install`, `PluginSlot::refuse`).
            Offered::OnTrial => {}
            // Recorded by `PluginSlot::refuse`, or earlier for a version rejected before.
            Offered::Refused => state.refused = Some(digest),
        }
    }

    /// `digest` serves `slot` now: recorded in the store as what its tag resolved to (a node
    /// starting without its registry loads it).
    pub(super) fn record_tag(&self, slot: &PluginSlot, digest: Option<&str>) {
        let Some(digest) = digest else { return };
        let spec = slot.spec_now();
        let (PluginSource::Oci(source), Some(store)) = (&spec.source, &self.oci_store) else {
            return;
        };
        let reference = &source.reference;
        if reference.tag().is_some() {
            if let Err(error) = store.record_ref(reference, digest) {
                warn!(plugin = %slot.name, %reference, %error, "cannot record the tag's digest in the node's store");
            }
        }
    }

    /// The registry answered with something refused: recorded as a rejected version (the
    /// serving one stays), asked again after a poll period; `digest` is not offered again.
    fn refused(
        &self,
        slot: &PluginSlot,
        spec: PluginSpec,
        period: Duration,
        error: OciError,
        digest: Option<String>,
    ) {
        slot.metrics.pull(PullResult::Refused);
        let reason = error.to_string();
        {
            // Before the rejection shows: a report with the reason has the digest too.
            let mut state = slot.oci();
            state.next_poll = Some(Instant::now() + period);
            state.last_error = Some(reason.clone());
            if digest.is_some() {
                state.refused = digest;
            }
        }
        slot.reject_once(reason);
        slot.set_spec(spec);
    }

    /// The registry was not reached: logged once until it is reached again, retried with
    /// back-off.
    fn unreachable(&self, slot: &PluginSlot, error: &OciError, period: Duration) {
        slot.metrics.pull(PullResult::Unreachable);
        let mut state = slot.oci();
        state.failures = state.failures.saturating_add(1);
        let delay = retry_delay(state.failures, period);
        if !state.unreachable {
            warn!(plugin = %slot.name, %error, retry_in_ms = delay.as_millis() as u64, "plugin registry unreachable; the serving version stays, retrying with back-off");
        }
        state.unreachable = true;
        state.last_error = Some(error.to_string());
        state.next_poll = Some(Instant::now() + delay);
    }

    fn reachable(&self, slot: &PluginSlot) {
        let mut state = slot.oci();
        if state.unreachable {
            info!(plugin = %slot.name, failures = state.failures, "plugin registry reachable again");
        }
        state.unreachable = false;
        state.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::retry_delay;
    use std::time::Duration;

    #[test]
    fn retries_double_up_to_the_poll_period() {
        let period = Duration::from_secs(300);
        let delays: Vec<u64> = (1..=10).map(|n| retry_delay(n, period).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]);
        assert_eq!(retry_delay(u32::MAX, period), period);
        let short = Duration::from_millis(200);
        assert_eq!(retry_delay(1, short), short);
        assert_eq!(retry_delay(5, short), short);
    }
}
