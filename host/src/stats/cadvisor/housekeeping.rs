//! When `/metrics/cadvisor` reads the cgroups: in housekeeping, as cAdvisor does (the kubelet
//! runs it with a 10 s housekeeping interval), not in the scrape. Reading 330 cgroups at 110
//! pods costs tens of ms of kernel time (kernfs builds a seq_file per open), ten times what a
//! scrape may cost; a scrape serves the last rendering instead, each sample stamped with the
//! time it was read, so Prometheus places it right. Housekeeping starts with the first scrape
//! and stops once nobody has scraped for [`IDLE_AFTER`] (or three periods, if longer), so a
//! node nobody scrapes reads nothing.

use bytes::Bytes;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long housekeeping keeps reading without a scrape (a minute-long scrape interval is
/// common; five of them without a scrape means the scraper is gone).
pub const IDLE_AFTER: Duration = Duration::from_secs(300);

/// The last rendering and whether housekeeping is running.
pub struct Housekeeping {
    period: Duration,
    state: Mutex<State>,
}

struct State {
    text: Option<Bytes>,
    last_scrape: Instant,
    running: bool,
}

/// What a scrape should do, besides serving `text` (or rendering when there is none).
pub struct OnScrape {
    /// The last rendering, unless housekeeping has none yet.
    pub text: Option<Bytes>,
    /// Housekeeping is not running: the caller starts it.
    pub start: bool,
}

impl Housekeeping {
    /// Housekeeping that reads every `period`.
    pub fn new(period: Duration) -> Self {
        Self {
            period,
            state: Mutex::new(State {
                text: None,
                last_scrape: Instant::now(),
                running: false,
            }),
        }
    }

    /// How often housekeeping reads.
    pub fn period(&self) -> Duration {
        self.period
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a scrape; marks housekeeping running when it was not (the caller starts it).
    pub fn on_scrape(&self, now: Instant) -> OnScrape {
        let mut state = self.state();
        state.last_scrape = now;
        let start = !state.running;
        state.running = true;
        OnScrape {
            text: state.text.clone(),
            start,
        }
    }

    /// Keeps a new rendering for the scrapes to come.
    pub fn store(&self, text: Bytes) {
        self.state().text = Some(text);
    }

    /// Whether housekeeping should stop at `now`: nobody scraped for long enough. Stopping
    /// drops the rendering, so the next scrape reads afresh and starts housekeeping again.
    pub fn stop_if_idle(&self, now: Instant) -> bool {
        let mut state = self.state();
        let idle =
            now.saturating_duration_since(state.last_scrape) > IDLE_AFTER.max(self.period * 3);
        if idle {
            state.running = false;
            state.text = None;
        }
        idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_scrape_starts_housekeeping_and_later_ones_serve_its_rendering() {
        let h = Housekeeping::new(Duration::from_secs(10));
        let t0 = Instant::now();
        let first = h.on_scrape(t0);
        assert!(first.start && first.text.is_none());
        h.store(Bytes::from_static(b"one"));
        let second = h.on_scrape(t0 + Duration::from_secs(1));
        assert!(!second.start);
        assert_eq!(second.text.as_deref(), Some(&b"one"[..]));
    }

    #[test]
    fn housekeeping_stops_without_scrapes_and_the_next_scrape_starts_it_again() {
        let h = Housekeeping::new(Duration::from_secs(10));
        let t0 = Instant::now();
        h.on_scrape(t0);
        h.store(Bytes::from_static(b"old"));
        assert!(!h.stop_if_idle(t0 + IDLE_AFTER));
        assert!(h.stop_if_idle(t0 + IDLE_AFTER + Duration::from_secs(1)));
        let next = h.on_scrape(t0 + IDLE_AFTER * 2);
        assert!(next.start, "restarted");
        assert!(next.text.is_none(), "nothing stale is served");
    }

    #[test]
    fn a_long_period_keeps_housekeeping_for_three_of_them() {
        let h = Housekeeping::new(Duration::from_secs(200));
        let t0 = Instant::now();
        h.on_scrape(t0);
        assert!(!h.stop_if_idle(t0 + Duration::from_secs(500)));
        assert!(h.stop_if_idle(t0 + Duration::from_secs(601)));
    }
}
