//! A small map of answers that expire: upstream caches TokenReview and SubjectAccessReview
//! answers for their TTLs so a busy client costs the API server one review, not one a request.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// Entries kept at most; a full cache first drops what expired, then what expires soonest.
const CAPACITY: usize = 4096;

/// Answers by key, each until its own deadline. Errors are never stored, only answers.
#[derive(Debug)]
pub struct TtlCache<K, V> {
    entries: Mutex<HashMap<K, (Instant, V)>>,
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
        let mut entries = self.lock();
        match entries.get(key) {
            Some((expires, value)) if *expires > now => Some(value.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `value` for `ttl` from `now`; a zero TTL keeps nothing (upstream: no caching).
    pub fn insert(&self, key: K, value: V, ttl: Duration, now: Instant) {
        if ttl.is_zero() {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= CAPACITY && !entries.contains_key(&key) {
            entries.retain(|_, (expires, _)| *expires > now);
            if entries.len() >= CAPACITY {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, (expires, _))| *expires)
                    .map(|(k, _)| k.clone());
                if let Some(soonest) = soonest {
                    entries.remove(&soonest);
                }
            }
        }
        entries.insert(key, (now + ttl, value));
    }

    /// How many answers are held (expired ones included until they are looked at).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<K, (Instant, V)>> {
        self.entries.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_expire_and_the_size_is_bounded() {
        let cache = TtlCache::default();
        let t0 = Instant::now();
        cache.insert("a", 1, Duration::from_secs(10), t0);
        assert_eq!(cache.get(&"a", t0 + Duration::from_secs(9)), Some(1));
        assert_eq!(cache.get(&"a", t0 + Duration::from_secs(10)), None);
        assert!(cache.is_empty(), "an expired entry is dropped when seen");
        cache.insert("b", 2, Duration::ZERO, t0);
        assert_eq!(cache.get(&"b", t0), None, "a zero TTL caches nothing");

        let cache = TtlCache::default();
        for i in 0..CAPACITY + 10 {
            cache.insert(i, i, Duration::from_secs(1 + i as u64), t0);
        }
        assert_eq!(cache.len(), CAPACITY);
        assert_eq!(cache.get(&0, t0), None, "the soonest to expire went first");
        assert_eq!(cache.get(&(CAPACITY + 9), t0), Some(CAPACITY + 9));
    }
}
