//! Per-key exponential back-off with upstream's semantics (`client-go/util/flowcontrol`,
//! used by `doBackOff` in `kuberuntime_manager.go`): a failure at `event_time` is held back
//! while `now - event_time < backoff`; each retry doubles the back-off up to the maximum;
//! an entry whose last retry is older than the reset period at the next failure starts over.

use crate::config::BackOffConfig;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, Copy)]
struct Entry {
    backoff: Duration,
    last_update: SystemTime,
}

/// Back-off state for CrashLoopBackOff (keyed by container) or ImagePullBackOff (by image).
#[derive(Debug, Clone)]
pub struct BackOff {
    config: BackOffConfig,
    entries: HashMap<String, Entry>,
}

impl BackOff {
    /// Starts empty: no key is held back until [`BackOff::next`] records its first failure.
    pub fn new(config: BackOffConfig) -> Self {
        Self {
            config,
            entries: HashMap::new(),
        }
    }

    fn expired(&self, entry: &Entry, event_time: SystemTime) -> bool {
        event_time
            .duration_since(entry.last_update)
            .is_ok_and(|since| since > self.config.reset_period)
    }

    /// If `key` failed at `event_time` and must still wait, how long is left.
    pub fn remaining(
        &self,
        key: &str,
        event_time: SystemTime,
        now: SystemTime,
    ) -> Option<Duration> {
        let entry = self.entries.get(key)?;
        if self.expired(entry, event_time) {
            return None;
        }
        let waited = now.duration_since(event_time).unwrap_or(Duration::ZERO);
        entry
            .backoff
            .checked_sub(waited)
            .filter(|left| !left.is_zero())
    }

    /// How long `key` must still wait since its last retry (image pulls count from the pull).
    pub fn remaining_since_update(&self, key: &str, now: SystemTime) -> Option<Duration> {
        let entry = self.entries.get(key)?;
        self.remaining(key, entry.last_update, now)
    }

    /// The back-off in force for `key`, for messages ("back-off 20s restarting ...").
    pub fn current(&self, key: &str) -> Option<Duration> {
        self.entries.get(key).map(|e| e.backoff)
    }

    /// Records a retry of `key` after a failure at `event_time`.
    pub fn next(&mut self, key: &str, event_time: SystemTime, now: SystemTime) {
        let backoff = match self.entries.get(key) {
            Some(entry) if !self.expired(entry, event_time) => {
                (entry.backoff * 2).min(self.config.max_period)
            }
            _ => self.config.initial_period,
        };
        self.entries.insert(
            key.to_string(),
            Entry {
                backoff,
                last_update: now,
            },
        );
    }

    /// Rebuilds the state a previous run had reached for `key`, from what the runtime still
    /// shows: attempt `restarts` was started at `started_at`, so its retry had doubled the
    /// back-off `restarts - 1` times. Does nothing when the key is already known.
    pub fn seed(&mut self, key: &str, restarts: u32, started_at: SystemTime) {
        if restarts == 0 || self.entries.contains_key(key) {
            return;
        }
        let doublings = (restarts - 1).min(31);
        let backoff = self
            .config
            .initial_period
            .checked_mul(1u32 << doublings)
            .unwrap_or(self.config.max_period)
            .min(self.config.max_period);
        self.entries.insert(
            key.to_string(),
            Entry {
                backoff,
                last_update: started_at,
            },
        );
    }
}

/// The delays of one retry loop: `initial`, doubling up to `max` (client-go's `wait.Backoff`
/// with factor 2 and no jitter); [`Doubling::reset`] after a success starts over. Every
/// "retry until it works" loop of the node uses it, so they all back off alike.
#[derive(Debug, Clone)]
pub struct Doubling {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl Doubling {
    /// Starts at `initial`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            next: initial,
        }
    }

    /// The delay to wait now; the one after it is twice as long, up to the maximum.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        delay
    }

    /// The delay [`Doubling::next_delay`] will return (for a log line before the wait).
    pub fn peek(&self) -> Duration {
        self.next
    }

    /// After a success: the next failure waits `initial` again.
    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn doubling_doubles_to_its_maximum_and_resets() {
        let mut d = super::Doubling::new(Duration::from_millis(100), Duration::from_millis(700));
        let seen: Vec<u64> = (0..5).map(|_| d.next_delay().as_millis() as u64).collect();
        assert_eq!(seen, [100, 200, 400, 700, 700]);
        d.reset();
        assert_eq!(d.peek(), Duration::from_millis(100));
    }

    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
    }

    #[test]
    fn crash_loop_sequence_matches_upstream() {
        let mut b = BackOff::new(BackOffConfig::UPSTREAM);
        // First failure: not held back; restart immediately.
        assert_eq!(b.remaining("c", at(0), at(0)), None);
        b.next("c", at(0), at(0));
        // Second failure at t=5: wait 10s from the failure.
        assert_eq!(
            b.remaining("c", at(5), at(5)),
            Some(Duration::from_secs(10))
        );
        assert_eq!(b.remaining("c", at(5), at(15)), None);
        b.next("c", at(5), at(15));
        assert_eq!(b.current("c"), Some(Duration::from_secs(20)));
        let mut t = 15;
        for _ in 0..10 {
            t += 1;
            let wait = b.remaining("c", at(t), at(t)).unwrap();
            t += wait.as_secs();
            b.next("c", at(t - wait.as_secs()), at(t));
        }
        assert_eq!(
            b.current("c"),
            Some(Duration::from_secs(300)),
            "capped at 5m"
        );
        // A container that ran for more than 10 minutes starts over.
        assert_eq!(b.remaining("c", at(t + 601), at(t + 601)), None);
        b.next("c", at(t + 601), at(t + 601));
        assert_eq!(b.current("c"), Some(Duration::from_secs(10)));
    }

    #[test]
    fn seeding_restores_a_previous_runs_state() {
        let mut b = BackOff::new(BackOffConfig::UPSTREAM);
        b.seed("c", 3, at(0));
        assert_eq!(b.current("c"), Some(Duration::from_secs(40)));
        assert_eq!(
            b.remaining("c", at(2), at(2)),
            Some(Duration::from_secs(40))
        );
        b.seed("c", 9, at(0));
        assert_eq!(
            b.current("c"),
            Some(Duration::from_secs(40)),
            "known keys are kept"
        );
    }
}
