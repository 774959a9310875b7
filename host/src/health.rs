//! Liveness of the node agent's loops, for `/healthz`: the SyncLoop and the PLEG each record
//! when they last completed an iteration; a loop silent for longer than its threshold fails
//! the check, as upstream's `syncloop` and `PLEG` health checks do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The loops that are stalled; `/healthz` answers 500 with this text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .stalled.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct HealthError {
    /// Each stalled loop, the SyncLoop first: never empty.
    pub stalled: Vec<StalledLoop>,
}

/// One loop silent past its threshold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} was last seen active {silent:?} ago; threshold is {threshold:?}")]
pub struct StalledLoop {
    /// `syncloop` or `pleg`, as upstream's health checks name them.
    pub name: &'static str,
    /// How long since the loop last reported in.
    pub silent: Duration,
    /// The silence it is allowed.
    pub threshold: Duration,
}

/// Last-seen times of the loops, shared by the loops and the HTTP server.
#[derive(Debug)]
pub struct Health {
    epoch: Instant,
    syncloop_ms: AtomicU64,
    pleg_ms: AtomicU64,
    syncloop_threshold: Duration,
    pleg_threshold: Duration,
}

impl Health {
    /// Thresholds of silence after which a loop counts as stalled (upstream: the SyncLoop
    /// max(2 x syncFrequency, 5m), the PLEG 3m).
    pub fn new(syncloop_threshold: Duration, pleg_threshold: Duration) -> Self {
        Self {
            epoch: Instant::now(),
            syncloop_ms: AtomicU64::new(0),
            pleg_ms: AtomicU64::new(0),
            syncloop_threshold,
            pleg_threshold,
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Called by the SyncLoop on every iteration, so `/healthz` knows it is not stuck.
    pub fn syncloop_alive(&self) {
        self.syncloop_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// Called by the PLEG after every relist, so `/healthz` knows it is not stuck.
    pub fn pleg_relisted(&self) {
        self.pleg_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// `Ok` when both loops are live; otherwise which one is stuck and for how long.
    pub fn check(&self) -> Result<(), HealthError> {
        let now = self.now_ms();
        let mut stalled = Vec::new();
        for (name, last, threshold) in [
            ("syncloop", &self.syncloop_ms, self.syncloop_threshold),
            ("pleg", &self.pleg_ms, self.pleg_threshold),
        ] {
            let silent = Duration::from_millis(now.saturating_sub(last.load(Ordering::Relaxed)));
            if silent > threshold {
                stalled.push(StalledLoop {
                    name,
                    silent,
                    threshold,
                });
            }
        }
        if stalled.is_empty() {
            Ok(())
        } else {
            Err(HealthError { stalled })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_loop_fails_the_check() {
        let health = Health::new(Duration::from_millis(30), Duration::from_secs(60));
        health.syncloop_alive();
        health.pleg_relisted();
        assert!(health.check().is_ok());
        std::thread::sleep(Duration::from_millis(60));
        let err = health.check().unwrap_err().to_string();
        assert!(err.starts_with("syncloop was last seen active"), "{err}");
        health.syncloop_alive();
        assert!(health.check().is_ok());
    }

    #[test]
    fn both_stalled_loops_are_named() {
        let health = Health::new(Duration::ZERO, Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        let err = health.check().unwrap_err();
        let names: Vec<&str> = err.stalled.iter().map(|s| s.name).collect();
        assert_eq!(names, ["syncloop", "pleg"]);
        let text = err.to_string();
        assert_eq!(text, format!("{}; {}", err.stalled[0], err.stalled[1]));
        assert!(text.starts_with("syncloop was last seen active "), "{text}");
        assert!(
            text.contains(" ago; threshold is 0ns; pleg was last seen active "),
            "{text}"
        );
        assert!(text.ends_with(" ago; threshold is 0ns"), "{text}");
    }
}
