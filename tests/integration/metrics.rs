//! `/metrics` as the kubelet's dashboards read it: upstream's names, types and labels (held to
//! testdata/metrics.txt), the format the scraper asks for, `promtool check metrics` clean on
//! every endpoint, and series that move when what they count happens.

mod upstream;

use crate::harness::{condition, promtool_check, Node, NodeOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Family name -> (type, label names seen on its samples, without `le`).
fn families(text: &str) -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut families: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            families.insert(name.to_string(), (kind.to_string(), BTreeSet::new()));
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap();
        let sample = &line[..name_end];
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                let base = sample.strip_suffix(suffix)?;
                (families.get(base).map(|f| f.0.as_str()) == Some("histogram")).then_some(base)
            })
            .unwrap_or(sample);
        let Some((_, labels)) = families.get_mut(family) else {
            panic!("sample {sample} has no # TYPE line:\n{text}");
        };
        if let Some(set) = line[name_end..].strip_prefix('{') {
            let set = &set[..set.rfind('}').unwrap()];
            for pair in set.split("\",").filter(|p| !p.is_empty()) {
                let name = pair.split_once('=').unwrap().0.trim_start_matches(',');
                if name != "le" {
                    labels.insert(name.to_string());
                }
            }
        }
    }
    families
}

/// The value of the sample `series` (name and labels exactly as written), if present.
pub(crate) fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.split(' ').next()?.parse().ok())
}

#[test]
fn metrics_have_upstreams_names_formats_and_pass_promtool() {
    let node = Node::start_with(
        "t-metrics",
        NodeOptions {
            extra_kubelet: "volumeStatsAggPeriod: 1s\n".into(),
            ..NodeOptions::default()
        },
    );
    node.write_manifest("web.yaml", include_str!("pods/metrics-web.yaml"));
    node.wait_for("web Ready", Duration::from_secs(30), |n| {
        n.pod("web").filter(|p| condition(p, "Ready") == "True")
    });
    let _ = node.try_get("/node");
    // The emptyDir's usage shows once the background measurement has run.
    node.wait_for("the emptyDir measured", Duration::from_secs(20), |n| {
        let text = n.try_get("/metrics")?;
        value(
            &text,
            "kubelet_volume_stats_used_bytes{namespace=\"default\",persistentvolumeclaim=\"\",pod=\"web-t-metrics\",volume=\"scratch\"}",
        )
        .filter(|used| *used >= 102400.0)
    });

    // The default is the Prometheus text format, as the kubelet's.
    let (content_type, text) = node.get_accepting("/metrics", "*/*").expect("/metrics");
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    promtool_check("/metrics", &text);

    // Every listed family is there with its type and labels.
    let found = families(&text);
    let expected = include_str!("testdata/metrics.txt");
    for line in expected
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut parts = line.split(' ');
        let (name, kind, labels) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let Some((found_kind, found_labels)) = found.get(name) else {
            // A labelled family with no series yet need not be shown (client_golang does not
            // show an empty vector either); one without labels always is.
            assert!(labels != "-", "{name} missing from /metrics:\n{text}");
            continue;
        };
        assert_eq!(found_kind, kind, "{name}'s type");
        let labels: BTreeSet<String> = labels
            .split(',')
            .filter(|l| *l != "-")
            .map(str::to_string)
            .collect();
        // A family with no series yet shows no labels; one with series shows exactly these.
        assert!(
            found_labels.is_empty() || *found_labels == labels,
            "{name}'s labels: {found_labels:?}, want {labels:?}"
        );
    }

    // What happened shows: the pod started, its containers started, the PLEG relisted, the
    // runtime was called, and this very request is in flight.
    assert!(
        value(&text, "kubelet_started_pods_total").is_some_and(|v| v >= 1.0),
        "{text}"
    );
    assert!(
        value(
            &text,
            "kubelet_started_containers_total{container_type=\"container\"}"
        )
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    assert_eq!(value(&text, "kubelet_running_pods"), Some(1.0), "{text}");
    // The pod's cgroup was created and its emptyDir set up, each timed as upstream times them.
    let version = if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        2.0
    } else {
        1.0
    };
    assert_eq!(value(&text, "kubelet_cgroup_version"), Some(version));
    let cgroup_operations = |text: &str, operation: &str| {
        value(
            text,
            &format!(
                "kubelet_cgroup_manager_duration_seconds_count{{operation_type=\"{operation}\"}}"
            ),
        )
        .unwrap_or(0.0)
    };
    let empty_dir_operations = |text: &str, operation: &str| {
        value(
            text,
            &format!("storage_operation_duration_seconds_count{{migrated=\"false\",operation_name=\"{operation}\",status=\"success\",volume_plugin=\"kubernetes.io/empty-dir\"}}"),
        )
        .unwrap_or(0.0)
    };
    assert!(cgroup_operations(&text, "create") >= 1.0, "{text}");
    assert!(empty_dir_operations(&text, "volume_mount") >= 1.0, "{text}");
    assert!(
        value(
            &text,
            "kubelet_running_containers{container_state=\"running\"}"
        )
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    assert_eq!(
        value(&text, "kubelet_desired_pods{static=\"true\"}"),
        Some(1.0)
    );
    assert_eq!(
        value(&text, "kubelet_active_pods{static=\"true\"}"),
        Some(1.0)
    );
    assert!(value(&text, "kubelet_pod_start_duration_seconds_count").is_some_and(|v| v >= 1.0));
    assert!(value(
        &text,
        "kubelet_pod_worker_duration_seconds_count{operation_type=\"create\"}"
    )
    .is_some_and(|v| v >= 1.0));
    assert!(value(&text, "kubelet_pleg_relist_duration_seconds_count").is_some_and(|v| v >= 1.0));
    assert!(
        value(
            &text,
            "kubelet_runtime_operations_total{operation_type=\"run_podsandbox\"}"
        )
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    assert!(
        value(&text, "kubelet_node_name{node=\"t-metrics\"}") == Some(1.0),
        "{text}"
    );
    assert!(
        value(
            &text,
            "kubelet_http_inflight_requests{long_running=\"false\",method=\"GET\",path=\"metrics\",server_type=\"readonly\"}"
        ) == Some(1.0),
        "{text}"
    );
    assert!(value(&text, "process_resident_memory_bytes").is_some_and(|v| v > 1e6));

    // OpenMetrics when the scraper prefers it (what Prometheus 2.x asks for).
    let (content_type, open) = node
        .get_accepting(
            "/metrics",
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
        )
        .expect("/metrics");
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(open.ends_with("# EOF\n"));
    assert!(open.contains("# TYPE kubelet_started_pods counter\n"));
    assert!(open.contains("\nkubelet_started_pods_total "));

    // The other metric endpoints pass too.
    for path in ["/metrics/probes", "/metrics/resource", "/metrics/cadvisor"] {
        let (_, text) = node.get_accepting(path, "*/*").expect(path);
        promtool_check(path, &text);
    }

    // A restart of a pod (file removed and added back with the same UID) is counted.
    let manifest = std::fs::read_to_string(node.manifests.join("web.yaml")).unwrap();
    node.remove_manifest("web.yaml");
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(node.manifests.join("web.yaml"), manifest).unwrap();
    node.wait_for("the restart counted", Duration::from_secs(60), |n| {
        let text = n.try_get("/metrics")?;
        value(&text, "kubelet_restarted_pods_total{static=\"true\"}").filter(|v| *v >= 1.0)
    });
    // The first run's teardown removed its cgroup and unmounted its emptyDir.
    node.wait_for("the teardown timed", Duration::from_secs(30), |n| {
        let text = n.try_get("/metrics")?;
        (cgroup_operations(&text, "destroy") >= 1.0
            && empty_dir_operations(&text, "volume_unmount") >= 1.0)
            .then_some(())
    });
}

#[test]
fn the_grafana_example_reads_only_series_wasmlet_serves() {
    let listed: BTreeSet<&str> = include_str!("testdata/metrics.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(' ').next())
        .collect();
    let dashboard: serde_json::Value = serde_json::from_str(include_str!(
        "../../examples/grafana/plugins-dashboard.json"
    ))
    .expect("the dashboard is JSON");
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            exprs.push(target["expr"].as_str().expect("expr").to_string());
        }
    }
    assert!(!exprs.is_empty());
    for expr in &exprs {
        let names = expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| word.starts_with("wasmlet_") || word.starts_with("kubelet_"));
        for name in names {
            let family = name.strip_suffix("_bucket").unwrap_or(name);
            assert!(
                listed.contains(family),
                "{family} (in {expr}) is not a series of testdata/metrics.txt"
            );
        }
    }
}
