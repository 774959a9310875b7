//! Upstream's `EventCorrelator` (`client-go/tools/record/events_cache.go`), in short: a
//! per-(source, object) spam filter, then aggregation of identical events within
//! [`AGGREGATION_WINDOW`] into one Event with a count.

use super::{AGGREGATION_WINDOW, SPAM_BURST, SPAM_REFILL};
use k8s_openapi::api::core::v1::Event;
use std::collections::HashMap;
use std::time::SystemTime;

/// Entries of the correlator's caches (upstream's `maxLruCacheEntries`).
const CACHE_ENTRIES: usize = 4096;

/// What the correlator made of an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Correlated {
    /// Write a new Event.
    Create(Event),
    /// The same event happened again within the window: PATCH `count` and `lastTimestamp` of
    /// the Event written before. `event` is the whole updated Event, created instead when the
    /// old one is gone (Events expire after an hour).
    Patch {
        /// The updated Event (name and first timestamp of the first one).
        event: Event,
        /// The strategic-merge patch body.
        patch: serde_json::Value,
    },
    /// The spam filter dropped it.
    Dropped,
}

/// An event written before, by its identity.
#[derive(Debug, Clone)]
struct Seen {
    name: String,
    count: i32,
    first: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    last: SystemTime,
}

/// A token bucket of one (source, object), refilled passively.
#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    at: SystemTime,
}

impl Bucket {
    fn take(&mut self, now: SystemTime) -> bool {
        if let Ok(elapsed) = now.duration_since(self.at) {
            let refill = elapsed.as_secs_f64() / SPAM_REFILL.as_secs_f64();
            self.tokens = (self.tokens + refill).min(SPAM_BURST);
            self.at = now;
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Upstream's `EventCorrelator`, in short: the spam filter, then aggregation of identical
/// events into one Event with a count.
#[derive(Debug, Default)]
pub struct Correlator {
    seen: HashMap<String, Seen>,
    spam: HashMap<String, Bucket>,
}

/// Upstream's `getSpamKey`: the source and the object.
fn spam_key(event: &Event) -> String {
    let source = event.source.clone().unwrap_or_default();
    let o = &event.involved_object;
    [
        source.component,
        source.host,
        o.kind.clone(),
        o.namespace.clone(),
        o.name.clone(),
        o.uid.clone(),
        o.api_version.clone(),
    ]
    .map(Option::unwrap_or_default)
    .join("\0")
}

/// Upstream's `getEventKey`: the source, the object (and field path), type, reason, message.
fn event_key(event: &Event) -> String {
    let o = &event.involved_object;
    [
        spam_key(event),
        o.field_path.clone().unwrap_or_default(),
        event.type_.clone().unwrap_or_default(),
        event.reason.clone().unwrap_or_default(),
        event.message.clone().unwrap_or_default(),
    ]
    .join("\0")
}

/// Keeps `map` within [`CACHE_ENTRIES`] by forgetting the entry used longest ago.
fn bound<V>(map: &mut HashMap<String, V>, last: impl Fn(&V) -> SystemTime) {
    while map.len() > CACHE_ENTRIES {
        let Some(oldest) = map
            .iter()
            .min_by_key(|(_, v)| last(v))
            .map(|(k, _)| k.clone())
        else {
            return;
        };
        map.remove(&oldest);
    }
}

impl Correlator {
    /// Decides what to write for `event`, which happened at `now`.
    pub fn correlate(&mut self, mut event: Event, now: SystemTime) -> Correlated {
        let bucket = self.spam.entry(spam_key(&event)).or_insert(Bucket {
            tokens: SPAM_BURST,
            at: now,
        });
        let allowed = bucket.take(now);
        bound(&mut self.spam, |b| b.at);
        if !allowed {
            return Correlated::Dropped;
        }
        let key = event_key(&event);
        let recent = self.seen.get_mut(&key).filter(|seen| {
            now.duration_since(seen.last)
                .is_ok_and(|d| d < AGGREGATION_WINDOW)
        });
        match recent {
            Some(seen) => {
                seen.count += 1;
                seen.last = now;
                event.metadata.name = Some(seen.name.clone());
                event.count = Some(seen.count);
                event.first_timestamp = seen.first.clone();
                let patch = serde_json::json!({
                    "count": seen.count,
                    "lastTimestamp": event.last_timestamp,
                });
                Correlated::Patch { event, patch }
            }
            None => {
                self.seen.insert(
                    key,
                    Seen {
                        name: event.metadata.name.clone().unwrap_or_default(),
                        count: 1,
                        first: event.first_timestamp.clone(),
                        last: now,
                    },
                );
                bound(&mut self.seen, |s| s.last);
                Correlated::Create(event)
            }
        }
    }
}
