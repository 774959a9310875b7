use super::*;
use serde_json::json;

/// A pod from its spec's JSON.
fn pod(spec: serde_json::Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": "p", "uid": "u1"}, "spec": spec}))
        .expect("a pod")
}

fn container(
    name: &str,
    requests: serde_json::Value,
    limits: serde_json::Value,
) -> serde_json::Value {
    json!({"name": name, "image": "i", "resources": {"requests": requests, "limits": limits}})
}

fn sidecar(mut container: serde_json::Value) -> serde_json::Value {
    container["restartPolicy"] = json!("Always");
    container
}

const MIB: i64 = 1 << 20;

#[test]
fn a_guaranteed_pod_gets_its_summed_limits() {
    let p = pod(json!({"containers": [
        container("a", json!({"cpu": "500m", "memory": "64Mi"}), json!({"cpu": "500m", "memory": "64Mi"})),
        container("b", json!({"cpu": "250m", "memory": "32Mi"}), json!({"cpu": "250m", "memory": "32Mi"})),
    ]}));
    assert_eq!(
        pod_cgroup_limits(&p),
        PodLimits {
            cpu_shares: 768,
            cpu_quota_us: Some(75_000),
            memory_bytes: Some(96 * MIB),
        }
    );
}

#[test]
fn a_burstable_pod_is_limited_only_in_what_every_container_limits() {
    // Both limit memory, only one limits CPU: no quota, a memory limit.
    let p = pod(json!({"containers": [
        container("a", json!({"cpu": "100m"}), json!({"cpu": "200m", "memory": "64Mi"})),
        container("b", json!({"cpu": "100m"}), json!({"memory": "32Mi"})),
    ]}));
    assert_eq!(
        pod_cgroup_limits(&p),
        PodLimits {
            cpu_shares: 204,
            cpu_quota_us: None,
            memory_bytes: Some(96 * MIB),
        }
    );
    // An init container without a limit leaves the pod without one too.
    let p = pod(json!({
        "initContainers": [container("init", json!({"cpu": "100m"}), json!({}))],
        "containers": [container("a", json!({"cpu": "100m"}), json!({"cpu": "200m", "memory": "64Mi"}))],
    }));
    let limits = pod_cgroup_limits(&p);
    assert_eq!((limits.cpu_quota_us, limits.memory_bytes), (None, None));
}

#[test]
fn init_containers_and_sidecars_count_as_upstreams_pod_limits() {
    // The sidecar runs beside everything; the init container runs beside the sidecar only.
    // App: 200m + sidecar 100m = 300m; init: 500m + 100m = 600m, the larger.
    let p = pod(json!({
        "initContainers": [
            sidecar(container("sidecar", json!({"cpu": "100m"}), json!({"cpu": "100m", "memory": "16Mi"}))),
            container("migrate", json!({"cpu": "500m"}), json!({"cpu": "500m", "memory": "16Mi"})),
        ],
        "containers": [container("app", json!({"cpu": "200m"}), json!({"cpu": "200m", "memory": "128Mi"}))],
    }));
    let limits = pod_cgroup_limits(&p);
    assert_eq!(limits.cpu_quota_us, Some(60_000));
    assert_eq!(limits.memory_bytes, Some(144 * MIB));
    // Requests follow the same rule: 600m of requests.
    assert_eq!(limits.cpu_shares, 614);
}

#[test]
fn pod_level_limits_and_overhead() {
    // Pod-level limits replace the containers' (which set none); overhead is added.
    let p = pod(json!({
        "resources": {"limits": {"cpu": "1", "memory": "256Mi"}},
        "overhead": {"cpu": "50m", "memory": "8Mi"},
        "containers": [container("a", json!({"cpu": "100m"}), json!({}))],
    }));
    let limits = pod_cgroup_limits(&p);
    assert_eq!(limits.cpu_quota_us, Some(105_000));
    assert_eq!(limits.memory_bytes, Some(264 * MIB));
}

#[test]
fn a_best_effort_pod_gets_the_fewest_shares_and_no_limit() {
    let p = pod(json!({"containers": [{"name": "a", "image": "i"}]}));
    assert_eq!(
        pod_cgroup_limits(&p),
        PodLimits {
            cpu_shares: 2,
            cpu_quota_us: None,
            memory_bytes: None,
        }
    );
}

#[test]
fn the_burstable_tier_sums_only_burstable_pods_requests() {
    let guaranteed = pod(json!({"containers": [
        container("a", json!({"cpu": "500m", "memory": "64Mi"}), json!({"cpu": "500m", "memory": "64Mi"})),
    ]}));
    let burstable = pod(json!({
        "containers": [container("a", json!({"cpu": "250m"}), json!({}))],
        "initContainers": [sidecar(container("s", json!({"cpu": "100m"}), json!({})))],
        "overhead": {"cpu": "10m"},
    }));
    let limits_only = pod(json!({"containers": [
        container("a", json!({}), json!({"memory": "64Mi"})),
    ]}));
    let best_effort = pod(json!({"containers": [{"name": "a", "image": "i"}]}));
    assert_eq!(
        burstable_cpu_millis([&guaranteed, &burstable, &limits_only, &best_effort]),
        360,
        "the sidecar and the overhead count; a memory-only pod adds no CPU"
    );
    assert_eq!(burstable_cpu_millis([&guaranteed, &best_effort]), 0);
}
