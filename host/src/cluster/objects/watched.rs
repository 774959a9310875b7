//! ConfigMaps and secrets kept by one watch each, upstream's `Watch` change-detection
//! strategy (`pkg/kubelet/util/manager/watch_based_manager.go`): the first read is a GET,
//! which sorts a missing or refused object precisely, then a watch of that one object
//! (`fieldSelector=metadata.name=<name>`, what the Node authorizer allows a node) keeps a
//! reflector store current, so an update reaches the next sync of every pod that names it.
//! An object seen `immutable` is never watched: it cannot change, only go. A watch no sync
//! asked for within [`IDLE`] belongs to pods that are gone and is stopped.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{watcher, WatchStreamExt};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::{debug, warn};

/// How long a watch is kept that no sync asked for (every sync of a pod reads its objects).
pub const IDLE: Duration = Duration::from_secs(10 * 60);

/// The objects a watch can keep: namespaced, and either mutable or not.
pub trait Watchable:
    kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// Whether the object can no longer change (`immutable: true`).
    fn is_immutable(&self) -> bool;
}

impl Watchable for ConfigMap {
    fn is_immutable(&self) -> bool {
        self.immutable == Some(true)
    }
}

impl Watchable for Secret {
    fn is_immutable(&self) -> bool {
        self.immutable == Some(true)
    }
}

/// What a read found among the watched objects.
#[derive(Debug, PartialEq)]
pub enum Lookup<K> {
    /// The current object.
    Found(Arc<K>),
    /// The watch saw the object deleted.
    Gone,
    /// Not watched (yet, or any more): the caller reads it and calls [`Watched::keep`].
    Unknown,
}

/// Stops the watch task when its entry goes.
struct WatchTask(tokio::task::AbortHandle);

impl Drop for WatchTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct Entry<K: Watchable> {
    /// The answer of the GET that started the entry, served until the watch's first list.
    first: Arc<K>,
    /// The watch's view; `None` for an immutable object.
    store: Option<(reflector::Store<K>, WatchTask)>,
    used: Instant,
}

/// One watch per referenced object of one kind.
pub struct Watched<K: Watchable> {
    entries: Mutex<HashMap<(String, String), Entry<K>>>,
}

impl<K: Watchable> Default for Watched<K> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Watchable> Watched<K> {
    /// The object as the watch last saw it, or as first read until the watch has listed.
    pub fn lookup(&self, namespace: &str, name: &str) -> Lookup<K> {
        let now = Instant::now();
        let mut entries = self.lock();
        entries.retain(|_, e| now.duration_since(e.used) < IDLE);
        let Some(entry) = entries.get_mut(&(namespace.to_string(), name.to_string())) else {
            return Lookup::Unknown;
        };
        entry.used = now;
        let Some((store, _)) = &entry.store else {
            return Lookup::Found(entry.first.clone());
        };
        let listed =
            futures::FutureExt::now_or_never(store.wait_until_ready()).is_some_and(|r| r.is_ok());
        if !listed {
            return Lookup::Found(entry.first.clone());
        }
        match store.get(&ObjectRef::new(name).within(namespace)) {
            Some(object) => Lookup::Found(object),
            None => Lookup::Gone,
        }
    }

    /// Keeps `object` (just read by GET) and, unless it is immutable, starts its watch over
    /// `client`. Needs a Tokio runtime.
    pub fn keep(&self, client: &kube::Client, object: Arc<K>) {
        let namespace = object.meta().namespace.clone().unwrap_or_default();
        let name = object.meta().name.clone().unwrap_or_default();
        let store = (!object.is_immutable()).then(|| watch::<K>(client, &namespace, &name));
        debug!(
            kind = %K::kind(&()),
            namespace = %namespace,
            name = %name,
            watched = store.is_some(),
            "keeping an object a pod names"
        );
        self.lock().insert(
            (namespace, name),
            Entry {
                first: object,
                store,
                used: Instant::now(),
            },
        );
    }

    /// How many objects are kept, and how many of them by a running watch.
    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let entries = self.lock();
        let watched = entries.values().filter(|e| e.store.is_some()).count();
        (entries.len(), watched)
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<(String, String), Entry<K>>> {
        // A panic while holding the lock cannot leave the map half-written; keep serving.
        self.entries.lock()
    }
}

/// A reflector of the one object `namespace/name`, with kube-runtime's default back-off.
fn watch<K: Watchable>(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> (reflector::Store<K>, WatchTask) {
    let (store, writer) = reflector::store();
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let reflector = reflector::reflector(writer, watcher::watcher(api, config));
    let stream = crate::cluster::watch_backoff::backed_off(reflector, "object").touched_objects();
    let (namespace, name) = (namespace.to_string(), name.to_string());
    let task = tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(event) = futures::StreamExt::next(&mut stream).await {
            if let Err(error) = event {
                warn!(kind = %K::kind(&()), %namespace, %name, %error, "the watch of an object a pod names failed; retrying");
            }
        }
    });
    (store, WatchTask(task.abort_handle()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map(name: &str, immutable: bool) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            immutable: immutable.then_some(true),
            ..Default::default()
        })
    }

    /// A client whose every request fails at once: nothing listens on port 1.
    fn unreachable_client() -> kube::Client {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("a valid URL"));
        kube::Client::try_from(config).expect("a client")
    }

    #[tokio::test]
    async fn immutable_objects_are_kept_without_a_watch_and_others_are_watched() {
        let watched = Watched::<ConfigMap>::default();
        let client = unreachable_client();
        assert_eq!(watched.lookup("ns", "fixed"), Lookup::Unknown);
        watched.keep(&client, config_map("fixed", true));
        watched.keep(&client, config_map("live", false));
        assert_eq!(watched.counts(), (2, 1), "only the mutable one has a watch");
        assert_eq!(
            watched.lookup("ns", "fixed"),
            Lookup::Found(config_map("fixed", true))
        );
        // Until its watch has listed (never, here), the first answer is served.
        assert_eq!(
            watched.lookup("ns", "live"),
            Lookup::Found(config_map("live", false))
        );
        assert_eq!(watched.lookup("other", "live"), Lookup::Unknown);
    }
}
