//! The Node Lease (upstream's `component-helpers/apimachinery/lease` controller as the kubelet
//! runs it): `kube-node-lease/<node>`, held by the node, renewed every quarter of
//! `nodeLeaseDurationSeconds` with 4 % jitter. A renewal is a PUT of the cached Lease without
//! a GET first; only a conflict or a missing Lease costs a GET (or a create). The owner
//! reference to the Node lets the garbage collector delete the Lease with the Node.

use super::node::heartbeat;
use super::ApiClients;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use kube::api::{Api, PostParams};
use std::time::Duration;
use tokio::sync::watch;
use tracing::{debug, warn};

/// The namespace of node leases.
pub const NAMESPACE: &str = "kube-node-lease";
/// Upstream's `maxUpdateRetries`.
const MAX_UPDATE_RETRIES: u32 = 5;

/// `lease` renewed as of now, held by `node`, owned by the Node when its UID is known.
pub fn renewed(
    mut lease: Lease,
    node: &str,
    duration_seconds: i32,
    node_uid: Option<&str>,
) -> Lease {
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = Some(node.to_string());
    spec.lease_duration_seconds = Some(duration_seconds);
    spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
    if let Some(uid) = node_uid {
        let owned = lease
            .metadata
            .owner_references
            .as_ref()
            .is_some_and(|refs| refs.iter().any(|r| r.uid == uid));
        if !owned {
            lease.metadata.owner_references = Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: node.to_string(),
                uid: uid.to_string(),
                ..Default::default()
            }]);
        }
    }
    lease
}

/// A new Lease for `node`.
pub fn new_lease(node: &str, duration_seconds: i32, node_uid: Option<&str>) -> Lease {
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(node.to_string()),
            namespace: Some(NAMESPACE.to_string()),
            ..Default::default()
        },
        spec: None,
    };
    renewed(lease, node, duration_seconds, node_uid)
}

/// Renews the Lease forever. `node_uid` is the registered Node's UID (for the owner reference).
pub async fn run(
    clients: ApiClients,
    duration_seconds: i32,
    node_uid: watch::Receiver<Option<String>>,
) {
    let leases: Api<Lease> = Api::namespaced(clients.heartbeat.clone(), NAMESPACE);
    let node = clients.node_name.clone();
    let interval = Duration::from_secs_f64(f64::from(duration_seconds.max(1)) * 0.25);
    let mut latest: Option<Lease> = None;
    loop {
        let uid = node_uid.borrow().clone();
        latest = sync(&leases, &node, duration_seconds, uid.as_deref(), latest).await;
        tokio::time::sleep(super::node::jittered(interval)).await;
    }
}

/// One renewal: PUT the cached Lease; on failure fetch (or create) it with back-off.
async fn sync(
    leases: &Api<Lease>,
    node: &str,
    duration_seconds: i32,
    node_uid: Option<&str>,
    latest: Option<Lease>,
) -> Option<Lease> {
    if let Some(cached) = latest {
        let mut attempt = renewed(cached, node, duration_seconds, node_uid);
        for _ in 0..MAX_UPDATE_RETRIES {
            match heartbeat(leases.replace(node, &PostParams::default(), &attempt)).await {
                Ok(lease) => {
                    debug!(%node, "lease renewed");
                    return Some(lease);
                }
                Err(error) if error.is_conflict() || error.is_not_found() => {
                    debug!(%node, %error, "lease changed or gone; fetching it");
                    break;
                }
                Err(error) => {
                    warn!(%node, %error, "failed to update lease");
                    attempt = renewed(attempt, node, duration_seconds, node_uid);
                }
            }
        }
    }
    ensure(leases, node, duration_seconds, node_uid).await
}

/// GET the Lease (create it when missing) and renew it, with upstream's back-off (100 ms
/// doubling to 7 s) for at most one renewal interval's worth of tries.
async fn ensure(
    leases: &Api<Lease>,
    node: &str,
    duration_seconds: i32,
    node_uid: Option<&str>,
) -> Option<Lease> {
    let mut backoff = super::api_backoff();
    for _ in 0..MAX_UPDATE_RETRIES {
        let result = match heartbeat(leases.get_opt(node)).await {
            Ok(Some(existing)) => {
                let lease = renewed(existing, node, duration_seconds, node_uid);
                heartbeat(leases.replace(node, &PostParams::default(), &lease)).await
            }
            Ok(None) => {
                let lease = new_lease(node, duration_seconds, node_uid);
                heartbeat(leases.create(&PostParams::default(), &lease)).await
            }
            Err(error) => Err(error),
        };
        match result {
            Ok(lease) => return Some(lease),
            Err(error) => {
                warn!(%node, %error, retry_ms = backoff.peek().as_millis() as u64, "failed to ensure node lease exists");
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_lease_is_held_by_the_node_and_owned_by_it() {
        let lease = new_lease("n1", 40, Some("uid-1"));
        let spec = lease.spec.clone().unwrap_or_default();
        assert_eq!(spec.holder_identity.as_deref(), Some("n1"));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert!(spec.renew_time.is_some());
        let owner = lease.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(owner.len(), 1);
        assert_eq!(
            (owner[0].kind.as_str(), owner[0].uid.as_str()),
            ("Node", "uid-1")
        );
        assert_eq!(lease.metadata.namespace.as_deref(), Some(NAMESPACE));
    }

    #[test]
    fn renewal_adds_the_owner_once_the_node_is_known() {
        let lease = new_lease("n1", 40, None);
        assert!(lease.metadata.owner_references.is_none());
        let lease = renewed(lease, "n1", 40, Some("u"));
        let again = renewed(lease, "n1", 40, Some("u"));
        assert_eq!(again.metadata.owner_references.map(|r| r.len()), Some(1));
    }
}
