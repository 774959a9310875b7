//! The Summary API (`/stats/summary`), `/metrics/resource` and `/metrics/cadvisor` on a real
//! pod: a CPU burner's CPU and memory show up non-zero in all three, with upstream's names, the
//! resource metrics carry timestamps from which a CPU rate follows, as metrics-server computes
//! it, and the cAdvisor series carry the pod spec's limits and pass `promtool check metrics`.

use crate::harness::Node;
use serde_json::Value;
use std::time::Duration;

const BURNER: &str = include_str!("pods/stats-burner.yaml");

/// The pod named `full` in a summary.
fn pod_in<'a>(summary: &'a Value, full: &str) -> Option<&'a Value> {
    summary["pods"]
        .as_array()?
        .iter()
        .find(|p| p["podRef"]["name"] == full)
}

fn positive(value: &Value, what: &str) -> u64 {
    let number = value.as_u64().unwrap_or(0);
    assert!(number > 0, "{what} is {value}, not a positive number");
    number
}

/// `(value, timestamp ms)` of the series starting with `prefix` (name and labels).
fn series(text: &str, prefix: &str) -> Option<(f64, Option<i64>)> {
    let line = text.lines().find(|l| l.starts_with(prefix))?;
    let mut fields = line[prefix.len()..].split_whitespace();
    let value = fields.next()?.parse().ok()?;
    Some((value, fields.next().and_then(|t| t.parse().ok())))
}

#[test]
fn a_cpu_burner_shows_in_the_summary_and_the_resource_metrics() {
    let node = Node::start("t-stats");
    node.write_manifest("burner.yaml", BURNER);
    let pod = node.wait_phase("burner", "Running", Duration::from_secs(60));
    let uid = pod["metadata"]["uid"].as_str().expect("a uid").to_string();
    let full = format!("burner-{}", node.name);

    // usageNanoCores needs two samples a second apart: poll until the rate is there.
    let summary = node.wait_for(
        "the burner's CPU rate in /stats/summary",
        Duration::from_secs(30),
        |n| {
            let summary: Value = serde_json::from_str(&n.try_get("/stats/summary")?).ok()?;
            let pod = pod_in(&summary, &full)?;
            let rate = pod["containers"][0]["cpu"]["usageNanoCores"].as_u64()?;
            (rate > 0 && pod["cpu"]["usageNanoCores"].as_u64()? > 0).then_some(summary)
        },
    );
    let stats = &summary["node"];
    assert_eq!(stats["nodeName"], node.name.as_str());
    positive(&stats["cpu"]["usageCoreNanoSeconds"], "node CPU time");
    positive(&stats["memory"]["workingSetBytes"], "node working set");
    positive(&stats["memory"]["availableBytes"], "node available memory");
    positive(&stats["fs"]["capacityBytes"], "nodefs capacity");
    positive(
        &stats["runtime"]["imageFs"]["capacityBytes"],
        "imagefs capacity",
    );
    positive(&stats["rlimit"]["maxpid"], "the PID limit");
    assert_eq!(stats["systemContainers"][0]["name"], "pods", "{stats}");
    positive(
        &stats["systemContainers"][0]["memory"]["workingSetBytes"],
        "the pods cgroup's working set",
    );

    let pod = pod_in(&summary, &full).expect("the burner");
    assert_eq!(pod["podRef"]["namespace"], "default");
    assert_eq!(pod["podRef"]["uid"], uid.as_str());
    // Limited to half a core; a busy machine may give it less, but not nothing.
    let rate = positive(&pod["cpu"]["usageNanoCores"], "the pod's CPU rate");
    assert!(
        (20_000_000..=700_000_000).contains(&rate),
        "the burner ran at {rate} nanocores under a 500m limit"
    );
    positive(&pod["cpu"]["usageCoreNanoSeconds"], "the pod's CPU time");
    positive(&pod["memory"]["workingSetBytes"], "the pod's working set");
    let container = &pod["containers"][0];
    assert_eq!(container["name"], "burn");
    positive(
        &container["cpu"]["usageCoreNanoSeconds"],
        "the container's CPU time",
    );
    positive(
        &container["memory"]["workingSetBytes"],
        "the container's working set",
    );
    // The container has a 64Mi limit, so what is left of it is reported.
    let available = positive(
        &container["memory"]["availableBytes"],
        "the container's available memory",
    );
    assert!(available <= 64 << 20);
    assert!(container["rootfs"]["usedBytes"].is_u64(), "{container}");
    assert!(container["logs"]["capacityBytes"].is_u64(), "{container}");
    assert!(pod["ephemeral-storage"]["usedBytes"].is_u64(), "{pod}");
    positive(
        &pod["process_stats"]["process_count"],
        "the pod's processes",
    );
    assert_eq!(
        pod["network"]["name"], "eth0",
        "the pod's own interface: {pod}"
    );

    // The cheap form has CPU and memory only.
    let small: Value = serde_json::from_str(
        &node
            .try_get("/stats/summary?only_cpu_and_memory=true")
            .expect("the CPU and memory summary"),
    )
    .expect("JSON");
    assert!(small["node"].get("fs").is_none(), "{}", small["node"]);
    let pod = pod_in(&small, &full).expect("the burner");
    assert!(pod.get("network").is_none() && pod.get("ephemeral-storage").is_none());
    positive(&pod["containers"][0]["cpu"]["usageCoreNanoSeconds"], "CPU");
    assert!(pod["containers"][0].get("rootfs").is_none());

    // /spec/: the machine in cAdvisor's field names, as the Node's capacity counts it.
    let spec: Value = serde_json::from_str(&node.try_get("/spec/").expect("/spec/")).expect("JSON");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    assert_eq!(spec["num_cores"].as_u64(), Some(cores), "{spec}");
    assert!(
        spec["memory_capacity"].as_u64().is_some_and(|m| m > 0),
        "{spec}"
    );
    assert!(
        !spec["boot_id"].as_str().unwrap_or_default().is_empty(),
        "{spec}"
    );

    // /metrics/resource: upstream's series, with timestamps a rate can be computed from.
    let response = ureq::get(&format!("http://127.0.0.1:{}/metrics/resource", node.port))
        .timeout(Duration::from_secs(5))
        .call()
        .expect("GET /metrics/resource");
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let first = response.into_string().expect("text");
    let container_cpu = format!(
        "container_cpu_usage_seconds_total{{container=\"burn\",namespace=\"default\",pod=\"{full}\"}}"
    );
    let container_memory = format!(
        "container_memory_working_set_bytes{{container=\"burn\",namespace=\"default\",pod=\"{full}\"}}"
    );
    let pod_cpu = format!("pod_cpu_usage_seconds_total{{namespace=\"default\",pod=\"{full}\"}}");
    let pod_memory =
        format!("pod_memory_working_set_bytes{{namespace=\"default\",pod=\"{full}\"}}");
    let start = format!(
        "container_start_time_seconds{{container=\"burn\",namespace=\"default\",pod=\"{full}\"}}"
    );
    for prefix in [&container_memory, &pod_memory, &start] {
        let (value, _) = series(&first, prefix).unwrap_or_else(|| panic!("{prefix} in\n{first}"));
        assert!(value > 0.0, "{prefix} is {value}");
    }
    for prefix in [
        "node_cpu_usage_seconds_total ",
        "node_memory_working_set_bytes ",
    ] {
        let (value, at) = series(&first, prefix).unwrap_or_else(|| panic!("{prefix} in\n{first}"));
        assert!(value > 0.0 && at.is_some(), "{prefix}: {value} at {at:?}");
    }
    assert_eq!(series(&first, "resource_scrape_error "), Some((0.0, None)));

    std::thread::sleep(Duration::from_secs(2));
    let second = node.try_get("/metrics/resource").expect("a second scrape");
    for prefix in [&container_cpu, &pod_cpu] {
        let (cpu0, at0) = series(&first, prefix).unwrap_or_else(|| panic!("{prefix} in\n{first}"));
        let (cpu1, at1) =
            series(&second, prefix).unwrap_or_else(|| panic!("{prefix} in\n{second}"));
        let (at0, at1) = (at0.expect("a timestamp"), at1.expect("a timestamp"));
        assert!(
            at1 > at0,
            "{prefix}: the sample times move on ({at0} -> {at1})"
        );
        let cores = (cpu1 - cpu0) / ((at1 - at0) as f64 / 1000.0);
        assert!(
            (0.02..=0.7).contains(&cores),
            "{prefix}: {cores} cores between two scrapes under a 500m limit"
        );
    }
}

/// The labels and value of every series of `family` in a text exposition.
fn samples(text: &str, family: &str) -> Vec<(std::collections::HashMap<String, String>, f64)> {
    let prefix = format!("{family}{{");
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(&prefix)?;
            let (labels, value) = rest.rsplit_once("} ")?;
            let value = value.split_whitespace().next()?.parse().ok()?;
            let labels = labels
                .split("\",")
                .filter_map(|pair| {
                    let (k, v) = pair.split_once("=\"")?;
                    Some((k.to_string(), v.trim_end_matches('"').to_string()))
                })
                .collect();
            Some((labels, value))
        })
        .collect()
}

/// The one series of `family` whose labels include all of `want`.
fn sample_with(
    text: &str,
    family: &str,
    want: &[(&str, &str)],
) -> (std::collections::HashMap<String, String>, f64) {
    let mut found: Vec<_> = samples(text, family)
        .into_iter()
        .filter(|(labels, _)| {
            want.iter()
                .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
        })
        .collect();
    assert_eq!(found.len(), 1, "one {family} with {want:?} in\n{text}");
    found.remove(0)
}

#[test]
fn a_cpu_burner_shows_in_the_cadvisor_metrics() {
    let node = Node::start("t-cadvisor");
    node.write_manifest("burner.yaml", BURNER);
    node.wait_phase("burner", "Running", Duration::from_secs(60));
    let full = format!("burner-{}", node.name);

    let response = ureq::get(&format!("http://127.0.0.1:{}/metrics/cadvisor", node.port))
        .timeout(Duration::from_secs(5))
        .call()
        .expect("GET /metrics/cadvisor");
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let first = response.into_string().expect("text");
    crate::harness::promtool_check("/metrics/cadvisor", &first);

    let container = [("container", "burn"), ("pod", full.as_str())];
    let (labels, cpu0) = sample_with(&first, "container_cpu_usage_seconds_total", &container);
    assert_eq!(labels["namespace"], "default");
    assert_eq!(labels["cpu"], "total");
    assert_eq!(labels["image"], "docker.io/library/busybox:local");
    let id = &labels["name"];
    assert_eq!(id.len(), 64, "the runtime's container id: {labels:?}");
    assert!(
        labels["id"].starts_with("/kubepods/") && labels["id"].ends_with(id.as_str()),
        "the container's cgroup: {labels:?}"
    );
    let (_, limit) = sample_with(&first, "container_spec_memory_limit_bytes", &container);
    assert_eq!(limit, (64u64 << 20) as f64, "the pod spec's 64Mi limit");
    let (_, quota) = sample_with(&first, "container_spec_cpu_quota", &container);
    assert_eq!(quota, 50_000.0, "500m of a 100ms period");
    let (_, working_set) = sample_with(&first, "container_memory_working_set_bytes", &container);
    assert!(working_set > 0.0);
    sample_with(
        &first,
        "container_cpu_cfs_throttled_periods_total",
        &container,
    );
    sample_with(&first, "container_oom_events_total", &container);
    let (_, started) = sample_with(&first, "container_start_time_seconds", &container);
    assert!(started > 1.7e9, "{started}");

    // The pod cgroup, and the sandbox with the pod's own network namespace.
    let pod = [("container", ""), ("name", ""), ("pod", full.as_str())];
    sample_with(&first, "container_memory_working_set_bytes", &pod);
    let (labels, _) = sample_with(
        &first,
        "container_network_receive_bytes_total",
        &[("pod", full.as_str()), ("interface", "eth0")],
    );
    assert_eq!(labels["container"], "", "on the sandbox: {labels:?}");
    sample_with(
        &first,
        "container_network_transmit_bytes_total",
        &[("pod", full.as_str()), ("interface", "eth0")],
    );
    // The node root and the machine.
    let (_, node_cpu) = sample_with(&first, "container_cpu_usage_seconds_total", &[("id", "/")]);
    assert!(node_cpu > 0.0);
    assert!(first.contains("\nmachine_cpu_cores{"), "{first}");
    assert!(first.contains("\ncontainer_scrape_error 0\n"), "{first}");

    std::thread::sleep(Duration::from_secs(2));
    let second = node.try_get("/metrics/cadvisor").expect("a second scrape");
    let (_, cpu1) = sample_with(&second, "container_cpu_usage_seconds_total", &container);
    assert!(cpu1 > cpu0, "the burner's CPU time grows: {cpu0} -> {cpu1}");
}
