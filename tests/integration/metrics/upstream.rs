//! wasmlet's exposition held to the upstream kubelet's own registry: `scripts/upstream-metrics.sh`
//! lists every family the kubelet of the control plane's release registers (built from
//! k8s.io/kubernetes), and every family wasmlet serves that upstream also has must have
//! upstream's type, help text, label names and histogram buckets.
//!
//! A labelled family with no series yet shows only `# HELP`/`# TYPE`; its label names are then
//! checked from `testdata/metrics.txt`, which the other metrics test holds to the series that
//! exist. An empty histogram shows no buckets: those are listed on stderr as unchecked.

use crate::harness::{condition, Node, NodeOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Upstream's differences that are wasmlet's on purpose, by family: why, in a word.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    // Upstream fills kubelet_volume_stats_* for PersistentVolumeClaims only, labelled by claim;
    // wasmlet mounts no claims and shows its emptyDirs with `pod` and `volume` added to tell
    // them apart (host/src/metrics/volume_stats.rs).
    ("kubelet_volume_stats_capacity_bytes", "emptyDir labels"),
    ("kubelet_volume_stats_available_bytes", "emptyDir labels"),
    ("kubelet_volume_stats_used_bytes", "emptyDir labels"),
    ("kubelet_volume_stats_inodes", "emptyDir labels"),
    ("kubelet_volume_stats_inodes_free", "emptyDir labels"),
    ("kubelet_volume_stats_inodes_used", "emptyDir labels"),
];

/// One family as upstream's registry or wasmlet's exposition has it.
#[derive(Debug, Default, Clone, PartialEq)]
struct Family {
    kind: String,
    help: String,
    /// Label names without `le`, sorted.
    labels: BTreeSet<String>,
    /// Upper bounds without `+Inf`; for wasmlet, those of the first series.
    buckets: Vec<f64>,
    /// Whether wasmlet's exposition had a sample of it.
    has_samples: bool,
}

/// Upstream's families: endpoint -> family key (see [`key`]) -> (exposed name, family).
type Upstream = BTreeMap<String, BTreeMap<String, (String, Family)>>;

/// The name a family is matched by: a counter's `_total` is dropped, since upstream's three
/// legacy counters have none and client_golang would add it in OpenMetrics.
fn key(name: &str) -> &str {
    name.strip_suffix("_total").unwrap_or(name)
}

/// Runs `scripts/upstream-metrics.sh`. `None` when Go or the build is missing outside CI (under
/// CI that fails the test).
fn upstream() -> Option<Upstream> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = std::process::Command::new(root.join("scripts/upstream-metrics.sh"))
        .stderr(std::process::Stdio::inherit())
        .output();
    let output = match output {
        Ok(output) if output.status.success() => output,
        other => {
            assert!(
                std::env::var("CI").is_err(),
                "scripts/upstream-metrics.sh failed ({other:?}): it needs Go and the module proxy"
            );
            eprintln!(
                "scripts/upstream-metrics.sh failed ({other:?}): upstream comparison skipped"
            );
            return None;
        }
    };
    let mut out = Upstream::new();
    for line in String::from_utf8(output.stdout).expect("UTF-8").lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let strings = |field: &str| -> Vec<String> {
            v[field]
                .as_array()
                .unwrap_or_else(|| panic!("{field} in {line}"))
                .iter()
                .map(|s| s.as_str().expect("a string").to_string())
                .collect()
        };
        let name = v["name"].as_str().expect("name").to_string();
        let family = Family {
            kind: v["type"].as_str().expect("type").to_string(),
            help: v["help"].as_str().expect("help").to_string(),
            labels: strings("labels").into_iter().collect(),
            buckets: v["buckets"]
                .as_array()
                .expect("buckets")
                .iter()
                .map(|b| b.as_f64().expect("a bound"))
                .collect(),
            has_samples: false,
        };
        out.entry(v["endpoint"].as_str().expect("endpoint").to_string())
            .or_default()
            .insert(key(&name).to_string(), (name, family));
    }
    Some(out)
}

/// The families of a Prometheus text exposition, by name as in `# TYPE`.
fn exposition(text: &str) -> BTreeMap<String, Family> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut helps: BTreeMap<String, String> = BTreeMap::new();
    // The series (name and labels but `le`) whose buckets were recorded, per family.
    let mut first_series: BTreeMap<String, String> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            helps.insert(name.to_string(), help.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            families.insert(
                name.to_string(),
                Family {
                    kind: kind.to_string(),
                    help: helps.get(name).cloned().unwrap_or_default(),
                    ..Family::default()
                },
            );
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap();
        let sample = &line[..name_end];
        let (family_name, suffix) = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                let base = sample.strip_suffix(suffix)?;
                matches!(
                    families.get(base).map(|f| f.kind.as_str()),
                    Some("histogram" | "summary")
                )
                .then_some((base, *suffix))
            })
            .unwrap_or((sample, ""));
        let family = families
            .get_mut(family_name)
            .unwrap_or_else(|| panic!("sample {sample} has no # TYPE line:\n{text}"));
        family.has_samples = true;
        let mut le = None;
        let mut series = String::new();
        if let Some(set) = line[name_end..].strip_prefix('{') {
            let set = &set[..set.rfind('}').unwrap()];
            for pair in set.split("\",").filter(|p| !p.is_empty()) {
                let (name, value) = pair.split_once('=').unwrap();
                let name = name.trim_start_matches(',');
                if name == "le" {
                    le = Some(value.trim_matches('"').to_string());
                } else {
                    family.labels.insert(name.to_string());
                    series.push_str(pair);
                }
            }
        }
        if suffix == "_bucket" {
            let first = first_series
                .entry(family_name.to_string())
                .or_insert_with(|| series.clone());
            if *first == series {
                if let Some(bound) = le.filter(|le| le != "+Inf") {
                    family.buckets.push(bound.parse().expect("an le bound"));
                }
            }
        }
    }
    families
}

/// Label names by family from testdata/metrics.txt.
fn listed_labels() -> BTreeMap<&'static str, BTreeSet<String>> {
    include_str!("../testdata/metrics.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| {
            let mut parts = line.split(' ');
            let name = parts.next().unwrap();
            let labels = parts.nth(1).unwrap();
            let labels = labels
                .split(',')
                .filter(|l| *l != "-")
                .map(str::to_string)
                .collect();
            (name, labels)
        })
        .collect()
}

#[test]
fn metrics_match_upstreams_registry() {
    let Some(upstream) = upstream() else { return };
    let node = Node::start_with(
        "t-upstream-metrics",
        NodeOptions {
            extra_kubelet: "volumeStatsAggPeriod: 1s\ncadvisorHousekeepingPeriod: 1s\n".into(),
            ..NodeOptions::default()
        },
    );
    // A probed pod, so the prober's families have series.
    node.write_manifest(
        "web.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: httpd\n    image: docker.io/library/busybox:local\n    command: [httpd, -f, -p, '8080']\n    readinessProbe:\n      tcpSocket: {port: 8080}\n      periodSeconds: 1\n",
    );
    node.wait_for("web Ready", Duration::from_secs(30), |n| {
        n.pod("web").filter(|p| condition(p, "Ready") == "True")
    });
    for endpoint in ["/metrics/resource", "/metrics/cadvisor"] {
        node.wait_for(
            &format!("a container in {endpoint}"),
            Duration::from_secs(30),
            |n| {
                n.try_get(endpoint)
                    .filter(|text| text.contains("\ncontainer_cpu_usage_seconds_total{"))
            },
        );
    }

    let listed = listed_labels();
    let known: BTreeMap<&str, &str> = KNOWN_DIFFERENCES.iter().copied().collect();
    let mut mismatches = Vec::new();
    let mut compared = 0;
    let mut unchecked_buckets = Vec::new();
    let mut lacking = Vec::new();
    for endpoint in [
        "/metrics",
        "/metrics/probes",
        "/metrics/resource",
        "/metrics/cadvisor",
    ] {
        let (_, text) = node.get_accepting(endpoint, "*/*").expect(endpoint);
        let theirs = upstream
            .get(endpoint)
            .unwrap_or_else(|| panic!("upstream lists nothing for {endpoint}"));
        let served = exposition(&text);
        let served_keys: BTreeSet<&str> = served.keys().map(|name| key(name)).collect();
        lacking.extend(
            theirs
                .iter()
                .filter(|(k, _)| !served_keys.contains(k.as_str()))
                .map(|(_, (name, _))| format!("{endpoint} {name}")),
        );
        for (name, ours) in served {
            let Some((their_name, their)) = theirs.get(key(&name)) else {
                continue;
            };
            compared += 1;
            let mut differ = |what: &str, ours: String, theirs: String| {
                if ours != theirs {
                    mismatches.push(format!(
                        "{endpoint} {name} {what}: wasmlet {ours}, upstream {theirs}"
                    ));
                }
            };
            differ("name", name.clone(), their_name.clone());
            differ("type", ours.kind.clone(), their.kind.clone());
            differ("help", ours.help.clone(), their.help.clone());
            if known.contains_key(name.as_str()) {
                continue;
            }
            let labels = if ours.has_samples {
                Some(ours.labels.clone())
            } else if endpoint == "/metrics" {
                listed.get(name.as_str()).cloned()
            } else {
                None
            };
            // A family with no series that metrics.txt does not list has unknown labels.
            let labels = labels.map_or_else(
                || "unknown (no series, not in testdata/metrics.txt)".to_string(),
                |labels| format!("{labels:?}"),
            );
            differ("labels", labels, format!("{:?}", their.labels));
            if ours.kind == "histogram" {
                if ours.has_samples {
                    // serde_json (without `float_roundtrip`) may parse a bound one ulp off.
                    let same = ours.buckets.len() == their.buckets.len()
                        && ours
                            .buckets
                            .iter()
                            .zip(&their.buckets)
                            .all(|(a, b)| (a - b).abs() <= 1e-12 * b.abs());
                    if !same {
                        differ(
                            "buckets",
                            format!("{:?}", ours.buckets),
                            format!("{:?}", their.buckets),
                        );
                    }
                } else {
                    unchecked_buckets.push(name.clone());
                }
            }
        }
    }
    // README.md's "Metrics and dashboards" says why each of these is missing.
    eprintln!("upstream families wasmlet does not serve: {lacking:?}");
    if !unchecked_buckets.is_empty() {
        eprintln!("histograms without series, buckets unchecked: {unchecked_buckets:?}");
    }
    assert!(
        compared >= 30,
        "only {compared} families matched upstream's"
    );
    assert!(
        mismatches.is_empty(),
        "wasmlet differs from upstream's registry:\n{}",
        mismatches.join("\n")
    );
}
