//! The Node object in the API server (upstream's `kubelet_node_status.go`): registration at
//! start (create, or reconcile an existing Node, never delete it), then every
//! `nodeStatusUpdateFrequency` the status is computed and patched when it changed or every
//! `nodeStatusReportFrequency`, and a watch keeps the API's view of the Node (labels, taints,
//! allocatable) for admission and mirror pods.

use super::api_backoff;
use super::{ApiClients, ApiError, HEARTBEAT_TIMEOUT};
use crate::events::{EventRecorder, EventType, ObjectRef};
use crate::node_status::NodeView;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tracing::{debug, info, warn};

/// The labels a kubelet keeps on its Node whatever else changes them (upstream's
/// `reconcileDefaultLabels`).
const DEFAULT_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

/// Runs a heartbeat call (Lease, Node) with the heartbeat deadline.
pub(super) async fn heartbeat<T>(
    call: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiError> {
    super::within(HEARTBEAT_TIMEOUT, call).await
}

/// The status part of a strategic-merge patch for `node`: conditions merge by type, the maps
/// by key, and addresses are replaced whole (upstream's `fixupPatchForNodeStatusAddresses`:
/// the field is annotated as a merge list by mistake).
pub fn status_patch(node: &Node) -> serde_json::Value {
    let status = node.status.clone().unwrap_or_default();
    let mut addresses: Vec<serde_json::Value> = status
        .addresses
        .unwrap_or_default()
        .into_iter()
        .map(|a| json!({"type": a.type_, "address": a.address}))
        .collect();
    addresses.push(json!({"$patch": "replace"}));
    json!({
        "status": {
            "capacity": status.capacity,
            "allocatable": status.allocatable,
            "conditions": status.conditions,
            "addresses": addresses,
            "daemonEndpoints": status.daemon_endpoints,
            "nodeInfo": status.node_info,
        }
    })
}

/// The labels of `existing` that must be (re)set: missing or changed default labels.
pub fn label_reconcile(
    existing: &Node,
    desired: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let current = existing.metadata.labels.clone().unwrap_or_default();
    DEFAULT_LABELS
        .iter()
        .filter_map(|key| {
            let want = desired.get(*key)?;
            (current.get(*key) != Some(want)).then(|| (key.to_string(), want.clone()))
        })
        .collect()
}

/// Whether two status views differ in anything but heartbeat times (upstream's
/// `nodeConditionsHaveChanged` plus the rest of the status).
pub fn status_changed(before: &Node, after: &Node) -> bool {
    fn strip(node: &Node) -> serde_json::Value {
        let mut status = node.status.clone().unwrap_or_default();
        if let Some(conditions) = status.conditions.as_mut() {
            for c in conditions.iter_mut() {
                c.last_heartbeat_time = None;
            }
            conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
        }
        serde_json::to_value(status).unwrap_or_default()
    }
    strip(before) != strip(after)
}

/// Registers the Node, retrying with upstream's back-off (100 ms doubling to 7 s) until the
/// API server takes it; returns the Node as the API server holds it.
pub async fn register(clients: &ApiClients, view: &NodeView) -> Node {
    let nodes: Api<Node> = Api::all(clients.heartbeat.clone());
    let mut backoff = api_backoff();
    loop {
        match try_register(&nodes, view).await {
            Ok(node) => return node,
            Err(error) => {
                warn!(node = %clients.node_name, %error, retry_ms = backoff.peek().as_millis() as u64, "unable to register node with API server");
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}

/// With `registerNode: false`: waits until someone else has created the Node.
pub async fn wait_for_node(clients: &ApiClients) -> Node {
    let nodes: Api<Node> = Api::all(clients.heartbeat.clone());
    let mut backoff = api_backoff();
    loop {
        match heartbeat(nodes.get(&clients.node_name)).await {
            Ok(node) => return node,
            Err(error) => {
                warn!(node = %clients.node_name, %error, "waiting for the Node object to exist");
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}

async fn try_register(nodes: &Api<Node>, view: &NodeView) -> Result<Node, ApiError> {
    let Some(desired) = view.current() else {
        return Err(ApiError::RuntimeNotReady);
    };
    let name = desired.metadata.name.clone().unwrap_or_default();
    match heartbeat(nodes.create(&PostParams::default(), &desired)).await {
        Ok(created) => {
            info!(node = %name, "successfully registered node");
            Ok(created)
        }
        Err(error) if error.is_conflict() => {
            // The Node exists (a restart, or someone created it): reconcile, never delete.
            let existing = heartbeat(nodes.get(&name)).await?;
            let labels = label_reconcile(
                &existing,
                &desired.metadata.labels.clone().unwrap_or_default(),
            );
            if !labels.is_empty() {
                let patch = json!({"metadata": {"labels": labels}});
                heartbeat(nodes.patch(&name, &PatchParams::default(), &Patch::Strategic(&patch)))
                    .await?;
            }
            let patched = heartbeat(nodes.patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Strategic(&status_patch(&desired)),
            ))
            .await?;
            info!(node = %name, "node was previously registered; reconciled");
            Ok(patched)
        }
        Err(error) => Err(error),
    }
}

/// Keeps the node status in the API server up to date until the process ends: computed every
/// `update` (with 4 % jitter), patched when it changed or `report` has passed. Condition
/// transitions become node events (`NodeReady`, `NodeHasSufficientMemory`, ...).
pub async fn run_status(
    clients: ApiClients,
    view: Arc<NodeView>,
    registered: Node,
    update: Duration,
    report: Duration,
    events: Arc<dyn EventRecorder>,
) {
    let nodes: Api<Node> = Api::all(clients.heartbeat.clone());
    let name = clients.node_name.clone();
    let object = ObjectRef::node(&name, registered.metadata.uid.as_deref().unwrap_or(&name));
    events.record(
        &object,
        EventType::Normal,
        "Starting",
        "Starting kubelet.".into(),
    );
    let mut last_reported = registered;
    let mut last_report_at = Instant::now();
    let mut last_conditions: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let Some(current) = view.current() else {
            tokio::time::sleep(update).await;
            continue;
        };
        for (type_, status) in condition_states(&current) {
            if last_conditions.get(&type_) != Some(&status) {
                if let Some((kind, reason, message)) = node_event(&name, &type_, &status) {
                    events.record(&object, kind, reason, message);
                }
                last_conditions.insert(type_, status);
            }
        }
        if report_due(&last_reported, &current, last_report_at.elapsed(), report) {
            let patch = status_patch(&current);
            match heartbeat(nodes.patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            ))
            .await
            {
                Ok(_) => {
                    // Compared with what was sent, not with the API's answer: the API
                    // normalises quantities ("2000m" is "2"), which is no change.
                    debug!(node = %name, "node status patched");
                    last_reported = current;
                    last_report_at = Instant::now();
                }
                Err(error) if error.is_not_found() => {
                    // Deleted under us: register again, as upstream does after a restart.
                    warn!(node = %name, "node object is gone; registering again");
                    last_reported = register(&clients, &view).await;
                    last_report_at = Instant::now();
                }
                Err(error) => warn!(node = %name, %error, "error updating node status, will retry"),
            }
        }
        tokio::time::sleep(jittered(update)).await;
    }
}

/// Whether the node status is patched now: it changed since the last report, or `report`
/// (`nodeStatusReportFrequency`) has passed since then even though nothing changed.
fn report_due(
    last_reported: &Node,
    current: &Node,
    since_report: Duration,
    report: Duration,
) -> bool {
    status_changed(last_reported, current) || since_report >= report
}

/// `period` stretched by up to 4 %, as upstream's `wait.JitterUntil(…, 0.04)`.
pub fn jittered(period: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    period + period.mul_f64(0.04 * (nanos % 1000) as f64 / 1000.0)
}

fn condition_states(node: &Node) -> Vec<(String, String)> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs: &Vec<NodeCondition>| {
            cs.iter()
                .map(|c| (c.type_.clone(), c.status.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The event upstream's status setters record when a condition turns (`recordNodeStatusEvent`).
fn node_event(node: &str, type_: &str, status: &str) -> Option<(EventType, &'static str, String)> {
    let on = status == "True";
    let (reason, text) = match (type_, on) {
        ("Ready", true) => ("NodeReady", "NodeReady"),
        ("Ready", false) => ("NodeNotReady", "NodeNotReady"),
        ("MemoryPressure", false) => ("NodeHasSufficientMemory", "NodeHasSufficientMemory"),
        ("MemoryPressure", true) => ("NodeHasInsufficientMemory", "NodeHasInsufficientMemory"),
        ("DiskPressure", false) => ("NodeHasNoDiskPressure", "NodeHasNoDiskPressure"),
        ("DiskPressure", true) => ("NodeHasDiskPressure", "NodeHasDiskPressure"),
        ("PIDPressure", false) => ("NodeHasSufficientPID", "NodeHasSufficientPID"),
        ("PIDPressure", true) => ("NodeHasInsufficientPID", "NodeHasInsufficientPID"),
        _ => return None,
    };
    let kind = if on == (type_ == "Ready") {
        EventType::Normal
    } else {
        EventType::Warning
    };
    // Upstream: "Node <name> status is now: NodeReady".
    Some((kind, reason, format!("Node {node} status is now: {text}")))
}

/// Watches this node's Node object (the only one the Node authorizer lets it read) and
/// publishes the API's view: its labels, taints and allocatable decide admission.
pub async fn watch_node(clients: ApiClients, view: watch::Sender<Option<Node>>) {
    let nodes: Api<Node> = Api::all(clients.main.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={}", clients.node_name));
    let mut stream =
        super::watch_backoff::backed_off(watcher::watcher(nodes, config), "node").boxed();
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Apply(node)) | Ok(watcher::Event::InitApply(node)) => {
                let _ = view.send(Some(node));
            }
            Ok(_) => {}
            Err(error) => warn!(%error, "node watch failed; the watch resumes with back-off"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeAddress, NodeStatus};

    fn node_with(conditions: &[(&str, &str, i64)]) -> Node {
        Node {
            status: Some(NodeStatus {
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(t, s, beat)| NodeCondition {
                            type_: t.to_string(),
                            status: s.to_string(),
                            last_heartbeat_time: Some(crate::timestamps::api_time(
                                std::time::UNIX_EPOCH + Duration::from_secs(*beat as u64),
                            )),
                            ..Default::default()
                        })
                        .collect(),
                ),
                addresses: Some(vec![NodeAddress {
                    type_: "InternalIP".into(),
                    address: "10.0.0.2".into(),
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn an_unchanged_status_is_reported_once_the_report_period_passed() {
        let ms = Duration::from_millis;
        let before = node_with(&[("Ready", "True", 1)]);
        let beat = node_with(&[("Ready", "True", 2)]);
        let unready = node_with(&[("Ready", "False", 2)]);
        assert!(
            !report_due(&before, &beat, ms(40), ms(50)),
            "a heartbeat alone waits"
        );
        assert!(
            report_due(&before, &beat, ms(50), ms(50)),
            "the period passed"
        );
        assert!(
            report_due(&before, &unready, ms(0), ms(50)),
            "a change goes at once"
        );
    }

    #[test]
    fn heartbeat_times_alone_are_no_change() {
        let a = node_with(&[("Ready", "True", 1), ("MemoryPressure", "False", 1)]);
        let b = node_with(&[("MemoryPressure", "False", 9), ("Ready", "True", 9)]);
        assert!(!status_changed(&a, &b));
        let c = node_with(&[("Ready", "False", 9), ("MemoryPressure", "False", 9)]);
        assert!(status_changed(&a, &c));
    }

    #[test]
    fn the_patch_replaces_addresses_and_merges_conditions() {
        let patch = status_patch(&node_with(&[("Ready", "True", 1)]));
        let addresses = patch["status"]["addresses"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(addresses.last(), Some(&json!({"$patch": "replace"})));
        assert_eq!(addresses[0]["address"], "10.0.0.2");
        assert_eq!(patch["status"]["conditions"][0]["type"], "Ready");
    }

    #[test]
    fn missing_default_labels_are_restored_others_left_alone() {
        let mut existing = Node::default();
        existing.metadata.labels = Some(
            [
                ("kubernetes.io/hostname".to_string(), "n1".to_string()),
                ("team".to_string(), "a".to_string()),
            ]
            .into(),
        );
        let desired: BTreeMap<String, String> = [
            ("kubernetes.io/hostname", "n1"),
            ("kubernetes.io/os", "linux"),
            ("extra", "x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let fix = label_reconcile(&existing, &desired);
        assert_eq!(fix.len(), 1);
        assert_eq!(fix["kubernetes.io/os"], "linux");
    }

    #[test]
    fn condition_events_use_upstream_reasons() {
        let (kind, reason, message) =
            node_event("n1", "Ready", "True").unwrap_or((EventType::Warning, "", String::new()));
        assert_eq!((kind, reason), (EventType::Normal, "NodeReady"));
        assert_eq!(message, "Node n1 status is now: NodeReady");
        let (kind, reason, _) = node_event("n1", "MemoryPressure", "True").unwrap_or((
            EventType::Normal,
            "",
            String::new(),
        ));
        assert_eq!(
            (kind, reason),
            (EventType::Warning, "NodeHasInsufficientMemory")
        );
    }
}
