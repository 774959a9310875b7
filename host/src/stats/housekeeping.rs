//! When the scraped stats endpoints (`/metrics/cadvisor`, `/metrics/resource`) read the
//! cgroups and the runtime: in housekeeping, as cAdvisor does (the kubelet runs it with a 10 s
//! housekeeping interval), not in the scrape. At 110 pods one reading costs tens of ms (kernfs
//! builds a seq_file per cgroup file opened, the runtime's `ListContainerStats` asks every
//! shim), ten times what a scrape may cost; a scrape serves the last rendering instead, each
//! sample stamped with the time it was read, so Prometheus and metrics-server place it right.
//! Housekeeping starts with the first scrape and stops once nobody has scraped for
//! [`IDLE_AFTER`] (or three periods, if longer), so a node nobody scrapes reads nothing.

use bytes::Bytes;
use parking_lot::Mutex;
use std::future::Future;
use std::sync::Arc;
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

    fn state(&self) -> parking_lot::MutexGuard<'_, State> {
        self.state.lock()
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

/// An endpoint whose text housekeeping renders.
pub trait Housekept: Send + Sync + Sized + 'static {
    /// The endpoint's path, for the logs.
    const PATH: &'static str;

    /// The endpoint's housekeeping state.
    fn housekeeping(&self) -> &Housekeeping;

    /// Reads and renders the text; a failed reading renders as the endpoint's scrape error.
    fn render(self: &Arc<Self>) -> impl Future<Output = Bytes> + Send;
}

/// The text of a scrape of `endpoint`: housekeeping's last rendering, or one read now when
/// there is none yet (the first scrape, or the first after housekeeping went idle), which
/// also starts housekeeping.
pub async fn scrape<E: Housekept>(endpoint: &Arc<E>) -> Bytes {
    let on_scrape = endpoint.housekeeping().on_scrape(Instant::now());
    if on_scrape.start {
        tokio::spawn(housekeep(endpoint.clone()));
    }
    if let Some(text) = on_scrape.text {
        return text;
    }
    let text = endpoint.render().await;
    endpoint.housekeeping().store(text.clone());
    text
}

/// Reads and renders `endpoint` every period until nobody scrapes it any more.
async fn housekeep<E: Housekept>(endpoint: Arc<E>) {
    let period = endpoint.housekeeping().period();
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if endpoint.housekeeping().stop_if_idle(Instant::now()) {
            tracing::debug!(path = E::PATH, "no scrape for a while: housekeeping stops");
            return;
        }
        let text = endpoint.render().await;
        endpoint.housekeeping().store(text);
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
