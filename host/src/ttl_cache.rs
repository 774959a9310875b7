//! A small map of API answers that expire, shared by the callers that reuse an answer for a
//! TTL: upstream caches TokenReview and SubjectAccessReview answers for their TTLs so a busy
//! client costs the API server one review, not one a request (`secure_port`), and serves a
//! configMap, secret or Service list for a minute under the `Cache` strategy (`cluster`).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// Entries kept at most; a full cache first drops what expired, then what expires soonest.
const CAPACITY: usize = 4096;

/// One answer: fresh until `expires`; held until an insert finds it past `kept_until` (one
/// more TTL), for [`TtlCache::last`].
#[derive(Debug)]
struct Entry<V> {
    expires: Instant,
    kept_until: Instant,
    value: V,
}

/// Answers by key, each until its own deadline. Errors are never stored, only answers.
#[derive(Debug)]
pub struct TtlCache<K, V> {
    entries: Mutex<HashMap<K, Entry<V>>>,
}

impl<K, V> Default for TtlCache<K, V> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> TtlCache<K, V> {
    /// The answer stored for `key` if it is still fresh at `now`.
    pub fn get(&self, key: &K, now: Instant) -> Option<V> {
        self.entries
            .lock()
            .get(key)
            .filter(|entry| entry.expires > now)
            .map(|entry| entry.value.clone())
    }

    /// The answer stored for `key`, fresh or not: the last good answer, for a caller whose
    /// refresh failed. Expired answers go only when an insert finds them a TTL past their
    /// expiry, so while nothing new is stored (the API server is unreachable) the last
    /// answers stay.
    pub fn last(&self, key: &K) -> Option<V> {
        self.entries
            .lock()
            .get(key)
            .map(|entry| entry.value.clone())
    }

    /// Keeps `value` for `ttl` from `now`; a zero TTL keeps nothing (upstream: no caching).
    /// Entries past their keeping go first, so the map stays the size of what is in use.
    pub fn insert(&self, key: K, value: V, ttl: Duration, now: Instant) {
        if ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock();
        entries.retain(|_, entry| entry.kept_until > now);
        if entries.len() >= CAPACITY && !entries.contains_key(&key) {
            entries.retain(|_, entry| entry.expires > now);
            if entries.len() >= CAPACITY {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, entry)| entry.expires)
                    .map(|(k, _)| k.clone());
                if let Some(soonest) = soonest {
                    entries.remove(&soonest);
                }
            }
        }
        let expires = now + ttl;
        entries.insert(
            key,
            Entry {
                expires,
                kept_until: expires + ttl,
                value,
            },
        );
    }

    /// How many answers are held (expired ones included until an insert drops them).
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_expire_and_the_size_is_bounded() {
        let cache = TtlCache::default();
        let t0 = Instant::now();
        let secs = Duration::from_secs;
        cache.insert("a", 1, secs(10), t0);
        assert_eq!(cache.get(&"a", t0 + secs(9)), Some(1));
        assert_eq!(cache.get(&"a", t0 + secs(10)), None);
        assert_eq!(
            cache.last(&"a"),
            Some(1),
            "the last answer stays until replaced"
        );
        cache.insert("b", 2, Duration::ZERO, t0);
        assert_eq!(cache.get(&"b", t0), None, "a zero TTL caches nothing");

        let cache = TtlCache::default();
        for i in 0..CAPACITY + 10 {
            cache.insert(i, i, secs(1 + i as u64), t0);
        }
        assert_eq!(cache.len(), CAPACITY);
        assert_eq!(cache.get(&0, t0), None, "the soonest to expire went first");
        assert_eq!(cache.get(&(CAPACITY + 9), t0), Some(CAPACITY + 9));
    }

    #[test]
    fn an_insert_drops_what_is_past_its_keeping() {
        let cache = TtlCache::default();
        let t0 = Instant::now();
        cache.insert("old", 1, Duration::from_secs(1), t0);
        cache.insert(
            "new",
            2,
            Duration::from_secs(1),
            t0 + Duration::from_secs(2),
        );
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.last(&"old"), None);
    }
}
