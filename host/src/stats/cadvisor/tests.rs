use super::collect::{pod_subjects, Runtime};
use super::*;
use crate::cri::api;
use crate::stats::cgroup::snapshot::tests::{v1_tree, v2_tree, CONTAINER, POD, SANDBOX};
use crate::stats::cgroup::snapshot::Hierarchies;
use std::path::Path;

const AT_MS: i64 = 1_700_000_000_000;
const MOUNTINFO: &str = "22 1 8:1 / / rw - ext4 /dev/vda1 rw\n\
                         30 22 0:26 / /var/lib/containerd rw - xfs /dev/vdb rw\n";

fn runtime() -> Runtime {
    let sandbox = api::PodSandbox {
        id: "s1".into(),
        metadata: Some(api::PodSandboxMetadata {
            name: "burner".into(),
            uid: "u1".into(),
            namespace: "default".into(),
            attempt: 0,
        }),
        state: api::PodSandboxState::SandboxReady as i32,
        created_at: 1_699_999_000_000_000_000,
        ..Default::default()
    };
    let running = api::Container {
        id: "c1".into(),
        pod_sandbox_id: "s1".into(),
        metadata: Some(api::ContainerMetadata {
            name: "burn".into(),
            attempt: 0,
        }),
        image: Some(api::ImageSpec {
            image: "docker.io/library/busybox:local".into(),
            ..Default::default()
        }),
        image_ref: "sha256:abc".into(),
        state: api::ContainerState::ContainerRunning as i32,
        created_at: 1_699_999_001_000_000_000,
        ..Default::default()
    };
    // An exited container has no cgroup and no series.
    let exited = api::Container {
        id: "c0".into(),
        state: api::ContainerState::ContainerExited as i32,
        ..running.clone()
    };
    let stats = api::ContainerStats {
        attributes: Some(api::ContainerAttributes {
            id: "c1".into(),
            ..Default::default()
        }),
        writable_layer: Some(api::FilesystemUsage {
            fs_id: Some(api::FilesystemIdentifier {
                mountpoint: "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs".into(),
            }),
            used_bytes: Some(api::UInt64Value { value: 12288 }),
            ..Default::default()
        }),
        ..Default::default()
    };
    Runtime {
        sandboxes: vec![sandbox],
        containers: vec![exited, running],
        stats: vec![stats],
    }
}

fn machine() -> Machine {
    Machine {
        cores: 4,
        memory_bytes: 8 << 30,
        machine_id: "m".into(),
        system_uuid: "u".into(),
        boot_id: "b".into(),
    }
}

fn eth0(pid: u32) -> Option<Vec<InterfaceCounters>> {
    (pid == 4242).then(|| {
        vec![InterfaceCounters {
            name: "eth0".into(),
            rx_bytes: 1000,
            rx_packets: 10,
            tx_bytes: 2000,
            tx_packets: 20,
            ..Default::default()
        }]
    })
}

fn scrape(tree: fn(&Path)) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    tree(dir.path());
    let h = Hierarchies::detect(dir.path());
    let subjects = pod_subjects(
        &h,
        &runtime(),
        &crate::stats::fs::Mounts::parse(MOUNTINFO),
        eth0,
    );
    encode(&machine(), &subjects, AT_MS, false)
}

/// Every family the endpoint serves, with its type.
const FAMILIES: [(&str, &str); 28] = [
    ("container_cpu_cfs_periods_total", "counter"),
    ("container_cpu_cfs_throttled_periods_total", "counter"),
    ("container_cpu_cfs_throttled_seconds_total", "counter"),
    ("container_cpu_usage_seconds_total", "counter"),
    ("container_fs_usage_bytes", "gauge"),
    ("container_last_seen", "gauge"),
    ("container_memory_cache", "gauge"),
    ("container_memory_rss", "gauge"),
    ("container_memory_usage_bytes", "gauge"),
    ("container_memory_working_set_bytes", "gauge"),
    ("container_network_receive_bytes_total", "counter"),
    ("container_network_receive_errors_total", "counter"),
    ("container_network_receive_packets_dropped_total", "counter"),
    ("container_network_receive_packets_total", "counter"),
    ("container_network_transmit_bytes_total", "counter"),
    ("container_network_transmit_errors_total", "counter"),
    (
        "container_network_transmit_packets_dropped_total",
        "counter",
    ),
    ("container_network_transmit_packets_total", "counter"),
    ("container_oom_events_total", "counter"),
    ("container_scrape_error", "gauge"),
    ("container_spec_cpu_period", "gauge"),
    ("container_spec_cpu_quota", "gauge"),
    ("container_spec_cpu_shares", "gauge"),
    ("container_spec_memory_limit_bytes", "gauge"),
    ("container_start_time_seconds", "gauge"),
    ("machine_cpu_cores", "gauge"),
    ("machine_memory_bytes", "gauge"),
    ("machine_scrape_error", "gauge"),
];

const C: &str = "container=\"burn\",id=\"/kubepods/burstable/podu1/c1\",\
                 image=\"docker.io/library/busybox:local\",name=\"c1\",namespace=\"default\",pod=\"burner\"";

/// The container's series, as upstream writes them for the fixtures (v1 and v2 alike).
fn container_lines(shares: u64) -> Vec<String> {
    let ts = AT_MS;
    vec![
        format!("container_cpu_usage_seconds_total{{container=\"burn\",cpu=\"total\",id=\"/kubepods/burstable/podu1/c1\",image=\"docker.io/library/busybox:local\",name=\"c1\",namespace=\"default\",pod=\"burner\"}} 2.5 {ts}"),
        format!("container_cpu_cfs_periods_total{{{C}}} 40 {ts}"),
        format!("container_cpu_cfs_throttled_periods_total{{{C}}} 7 {ts}"),
        format!("container_cpu_cfs_throttled_seconds_total{{{C}}} 0.35 {ts}"),
        format!("container_memory_cache{{{C}}} 6.291456e+06 {ts}"),
        format!("container_memory_rss{{{C}}} 4.194304e+06 {ts}"),
        format!("container_memory_usage_bytes{{{C}}} 1.048576e+07 {ts}"),
        format!("container_memory_working_set_bytes{{{C}}} 8.388608e+06 {ts}"),
        format!("container_oom_events_total{{{C}}} 2 {ts}"),
        format!("container_fs_usage_bytes{{container=\"burn\",device=\"/dev/vdb\",id=\"/kubepods/burstable/podu1/c1\",image=\"docker.io/library/busybox:local\",name=\"c1\",namespace=\"default\",pod=\"burner\"}} 12288 {ts}"),
        format!("container_start_time_seconds{{{C}}} 1.699999001e+09"),
        format!("container_last_seen{{{C}}} 1.7e+09 {ts}"),
        format!("container_spec_cpu_period{{{C}}} 100000"),
        format!("container_spec_cpu_quota{{{C}}} 50000"),
        format!("container_spec_cpu_shares{{{C}}} {shares}"),
        format!("container_spec_memory_limit_bytes{{{C}}} 6.7108864e+07"),
    ]
}

fn assert_upstream_shape(text: &str, shares: u64) {
    let lines: Vec<&str> = text.lines().collect();
    for (name, kind) in FAMILIES {
        let type_line = format!("# TYPE {name} {kind}");
        assert!(
            lines.contains(&type_line.as_str()),
            "{name} ({kind}) missing:\n{text}"
        );
    }
    for line in container_lines(shares) {
        assert!(lines.contains(&line.as_str()), "missing {line}\n{text}");
    }
    // The pod cgroup: the pod's labels, no container, name or image.
    let pod = format!(
        "container_memory_working_set_bytes{{container=\"\",id=\"{POD}\",image=\"\",name=\"\",namespace=\"default\",pod=\"burner\"}} 1.8874368e+07 {AT_MS}"
    );
    assert!(lines.contains(&pod.as_str()), "missing {pod}\n{text}");
    // The sandbox carries the pod's network, per interface.
    let network = format!(
        "container_network_receive_bytes_total{{container=\"\",id=\"{SANDBOX}\",image=\"\",interface=\"eth0\",name=\"s1\",namespace=\"default\",pod=\"burner\"}} 1000 {AT_MS}"
    );
    assert!(
        lines.contains(&network.as_str()),
        "missing {network}\n{text}"
    );
    assert_eq!(
        text.matches("container_network_transmit_packets_total{")
            .count(),
        1,
        "only the sandbox has a network"
    );
    // The QoS parent is reported with its cgroup path only.
    assert!(
        text.contains("container_oom_events_total{container=\"\",id=\"/kubepods/burstable\",image=\"\",name=\"\",namespace=\"\",pod=\"\"} 0 "),
        "{text}"
    );
    // The exited container has no series.
    assert!(!text.contains("name=\"c0\""), "{text}");
    assert!(
        lines.contains(&"machine_cpu_cores{boot_id=\"b\",machine_id=\"m\",system_uuid=\"u\"} 4")
    );
    assert!(lines.contains(
        &"machine_memory_bytes{boot_id=\"b\",machine_id=\"m\",system_uuid=\"u\"} 8.589934592e+09"
    ));
    assert!(lines.contains(&"container_scrape_error 0"));
}

#[test]
fn cgroup_v1_fixtures_give_upstreams_families_labels_and_values() {
    assert_upstream_shape(&scrape(v1_tree), 512);
}

#[test]
fn cgroup_v2_fixtures_give_upstreams_families_labels_and_values() {
    assert_upstream_shape(&scrape(v2_tree), 500);
}

#[test]
fn unlimited_cpu_has_no_quota_or_throttling_series_and_no_memory_limit_is_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    v1_tree(dir.path());
    let cpu = dir
        .path()
        .join("cpu")
        .join(CONTAINER.trim_start_matches('/'));
    std::fs::write(cpu.join("cpu.cfs_quota_us"), "-1\n").expect("write");
    let memory = dir
        .path()
        .join("memory")
        .join(CONTAINER.trim_start_matches('/'));
    std::fs::write(
        memory.join("memory.limit_in_bytes"),
        "9223372036854771712\n",
    )
    .expect("write");
    let h = Hierarchies::detect(dir.path());
    let text = encode(
        &machine(),
        &pod_subjects(
            &h,
            &runtime(),
            &crate::stats::fs::Mounts::parse(MOUNTINFO),
            eth0,
        ),
        AT_MS,
        false,
    );
    assert!(
        !text.contains(&format!("container_spec_cpu_quota{{{C}}}")),
        "{text}"
    );
    assert!(
        !text.contains(&format!("container_cpu_cfs_periods_total{{{C}}}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("container_spec_cpu_period{{{C}}} 100000\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("container_spec_memory_limit_bytes{{{C}}} 0\n")),
        "{text}"
    );
}

#[test]
fn a_failed_listing_is_a_scrape_error_with_the_machine_still_served() {
    let text = encode(&machine(), &[], AT_MS, true);
    assert!(text.contains("\ncontainer_scrape_error 1\n"), "{text}");
    assert!(text.contains("\nmachine_cpu_cores{"), "{text}");
    assert!(!text.contains("container_memory"), "{text}");
}

#[test]
fn cgroup_v2_pressure_files_give_cadvisors_pressure_series_and_v1_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    v2_tree(dir.path());
    let container = dir.path().join(CONTAINER.trim_start_matches('/'));
    let pressure = "some avg10=1.00 avg60=0.50 avg300=0.25 total=1500000\n\
                    full avg10=0.50 avg60=0.25 avg300=0.10 total=250000\n";
    for resource in ["cpu", "memory", "io"] {
        std::fs::write(container.join(format!("{resource}.pressure")), pressure).expect("write");
    }
    let h = Hierarchies::detect(dir.path());
    let mounts = crate::stats::fs::Mounts::parse(MOUNTINFO);
    let text = encode(
        &machine(),
        &pod_subjects(&h, &runtime(), &mounts, eth0),
        AT_MS,
        false,
    );
    for resource in ["cpu", "memory", "io"] {
        for (kind, seconds) in [("waiting", "1.5"), ("stalled", "0.25")] {
            let name = format!("container_pressure_{resource}_{kind}_seconds_total");
            let line = format!("{name}{{{C}}} {seconds} {AT_MS}");
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
            assert!(text.contains(&format!("# TYPE {name} counter")), "{text}");
        }
    }
    // The pod cgroup has no pressure files in the fixture: no series for it.
    assert!(!text.contains(&format!(
        "container_pressure_cpu_waiting_seconds_total{{container=\"\",id=\"{POD}\""
    )));
    assert!(
        !scrape(v1_tree).contains("container_pressure_"),
        "cgroup v1 has no per-cgroup pressure"
    );
}
