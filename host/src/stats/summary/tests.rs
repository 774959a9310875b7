use super::*;
use crate::stats::network::InterfaceCounters;
use serde_json::{json, Value};

fn at(seconds: i64) -> Time {
    api_time_of(seconds * 1_000_000_000).expect("a positive time")
}

fn fs(time: &Time) -> FsStats {
    FsStats::on(
        time,
        Some(&fs::FsStats {
            capacity_bytes: 1000,
            available_bytes: 400,
            used_bytes: 600,
            inodes: 50,
            inodes_free: 20,
        }),
        10,
        2,
    )
}

/// PSI whose `some` line averages `avg10` over every window, with `full` at half of it.
fn pressure(avg10: f64) -> PsiStats {
    let line = |avg: f64| PsiData {
        total: 1_000_000,
        avg10: avg,
        avg60: avg,
        avg300: avg,
    };
    PsiStats {
        some: line(avg10),
        full: line(avg10 / 2.0),
    }
}

/// A summary with every field set once, as a full `/stats/summary` has them.
pub(crate) fn sample() -> Summary {
    let t = at(1_700_000_000);
    let cpu = CpuStats {
        time: t.clone(),
        usage_nano_cores: Some(250_000_000),
        usage_core_nano_seconds: Some(12_500_000_000),
        psi: None,
    };
    let memory = MemoryStats {
        time: t.clone(),
        available_bytes: None,
        usage_bytes: Some(8 << 20),
        working_set_bytes: Some(4 << 20),
        rss_bytes: Some(3 << 20),
        page_faults: Some(100),
        major_page_faults: Some(1),
        psi: None,
    };
    Summary {
        node: NodeStats {
            node_name: "node-a".into(),
            system_containers: vec![ContainerStats {
                name: "pods".into(),
                start_time: at(1_600_000_000),
                cpu: Some(cpu.clone()),
                memory: Some(memory.clone()),
                rootfs: None,
                logs: None,
                swap: None,
            }],
            start_time: at(1_600_000_000),
            cpu: Some(CpuStats {
                psi: Some(pressure(1.5)),
                ..cpu.clone()
            }),
            memory: Some(MemoryStats {
                available_bytes: Some(1 << 30),
                psi: Some(pressure(2.5)),
                ..memory.clone()
            }),
            network: Some(network_stats(
                &t,
                vec![InterfaceCounters {
                    name: "eth0".into(),
                    rx_bytes: 1,
                    rx_errors: 2,
                    tx_bytes: 3,
                    tx_errors: 4,
                    ..Default::default()
                }],
            )),
            fs: Some(fs(&t)),
            runtime: Some(RuntimeStats {
                image_fs: Some(fs(&t)),
                container_fs: Some(fs(&t)),
            }),
            rlimit: Some(RlimitStats {
                time: t.clone(),
                maxpid: Some(4_194_304),
                curproc: Some(300),
            }),
            swap: Some(SwapStats {
                time: t.clone(),
                swap_available_bytes: Some(0),
                swap_usage_bytes: Some(0),
            }),
            io: Some(IoStats {
                time: t.clone(),
                psi: Some(pressure(3.5)),
            }),
        },
        pods: vec![PodStats {
            pod_ref: PodReference {
                name: "burner".into(),
                namespace: "default".into(),
                uid: "uid-1".into(),
            },
            start_time: at(1_699_999_000),
            containers: vec![ContainerStats {
                name: "main".into(),
                start_time: at(1_699_999_001),
                cpu: Some(cpu.clone()),
                memory: Some(memory.clone()),
                rootfs: Some(fs(&t)),
                logs: Some(fs(&t)),
                swap: None,
            }],
            cpu: Some(cpu),
            memory: Some(memory),
            network: None,
            volume_stats: vec![VolumeStats {
                fs: fs(&t),
                name: "scratch".into(),
            }],
            ephemeral_storage: Some(fs(&t)),
            process_stats: Some(ProcessStats {
                process_count: Some(2),
            }),
            swap: None,
        }],
    }
}

#[test]
fn the_json_has_upstreams_names() {
    let value = serde_json::to_value(sample()).expect("serializable");
    let node = &value["node"];
    assert_eq!(node["nodeName"], "node-a");
    assert_eq!(node["startTime"], "2020-09-13T12:26:40Z");
    assert_eq!(node["systemContainers"][0]["name"], "pods");
    // PSI as KEP-4205 shapes it: `full` and `some`, each total (µs) and three averages.
    let psi = |avg: f64| {
        let half = avg / 2.0;
        json!({"full": {"total": 1_000_000, "avg10": half, "avg60": half, "avg300": half},
               "some": {"total": 1_000_000, "avg10": avg, "avg60": avg, "avg300": avg}})
    };
    assert_eq!(
        node["cpu"],
        json!({"time": "2023-11-14T22:13:20Z", "usageNanoCores": 250_000_000u64,
               "usageCoreNanoSeconds": 12_500_000_000u64, "psi": psi(1.5)})
    );
    assert_eq!(
        node["memory"],
        json!({"time": "2023-11-14T22:13:20Z", "availableBytes": 1u64 << 30,
               "usageBytes": 8u64 << 20, "workingSetBytes": 4u64 << 20, "rssBytes": 3u64 << 20,
               "pageFaults": 100, "majorPageFaults": 1, "psi": psi(2.5)})
    );
    assert_eq!(
        node["io"],
        json!({"time": "2023-11-14T22:13:20Z", "psi": psi(3.5)})
    );
    assert!(
        value["pods"][0]["containers"][0]["cpu"]
            .get("psi")
            .is_none(),
        "no PSI is left out, not zero"
    );
    // The default interface is inline, beside the list of all of them.
    assert_eq!(
        node["network"],
        json!({"time": "2023-11-14T22:13:20Z", "name": "eth0", "rxBytes": 1, "rxErrors": 2,
               "txBytes": 3, "txErrors": 4,
               "interfaces": [{"name": "eth0", "rxBytes": 1, "rxErrors": 2, "txBytes": 3,
                               "txErrors": 4}]})
    );
    let fs = json!({"time": "2023-11-14T22:13:20Z", "availableBytes": 400, "capacityBytes": 1000,
                    "usedBytes": 10, "inodesFree": 20, "inodes": 50, "inodesUsed": 2});
    assert_eq!(node["fs"], fs);
    assert_eq!(node["runtime"], json!({"imageFs": fs, "containerFs": fs}));
    assert_eq!(
        node["rlimit"],
        json!({"time": "2023-11-14T22:13:20Z", "maxpid": 4_194_304, "curproc": 300})
    );
    assert_eq!(
        node["swap"],
        json!({"time": "2023-11-14T22:13:20Z", "swapAvailableBytes": 0, "swapUsageBytes": 0})
    );

    let pod = &value["pods"][0];
    assert_eq!(
        pod["podRef"],
        json!({"name": "burner", "namespace": "default", "uid": "uid-1"})
    );
    assert_eq!(pod["startTime"], "2023-11-14T21:56:40Z");
    let container = &pod["containers"][0];
    assert_eq!(container["name"], "main");
    assert_eq!(container["rootfs"], fs);
    assert_eq!(container["logs"], fs);
    // Unknown numbers are left out, not zero: no availableBytes without a limit.
    assert!(container["memory"].get("availableBytes").is_none());
    let mut volume = fs.clone();
    volume["name"] = json!("scratch");
    assert_eq!(pod["volume"], json!([volume]));
    assert_eq!(pod["ephemeral-storage"], fs);
    assert_eq!(pod["process_stats"], json!({"process_count": 2}));
    let keys: Vec<&String> = pod.as_object().expect("object").keys().collect();
    assert!(!keys.contains(&&"network".to_string()), "{keys:?}");
    assert!(!keys.contains(&&"swap".to_string()), "{keys:?}");
}

#[test]
fn the_json_reads_back() {
    let text = serde_json::to_string(&sample()).expect("serializable");
    let back: Summary = serde_json::from_str(&text).expect("decodable");
    let again = serde_json::to_string(&back).expect("serializable");
    assert_eq!(text, again);
}

#[test]
fn an_empty_node_has_an_empty_pod_list() {
    let summary = Summary {
        node: NodeStats {
            node_name: "n".into(),
            system_containers: Vec::new(),
            start_time: at(1),
            cpu: None,
            memory: None,
            network: None,
            fs: None,
            runtime: None,
            rlimit: None,
            swap: None,
            io: None,
        },
        pods: Vec::new(),
    };
    let value: Value = serde_json::to_value(summary).expect("serializable");
    assert_eq!(
        value,
        json!({"node": {"nodeName": "n", "startTime": "1970-01-01T00:00:01Z"}, "pods": []})
    );
}

#[test]
fn network_without_eth0_has_an_empty_default() {
    let stats = network_stats(
        &at(1),
        vec![InterfaceCounters {
            name: "ens4".into(),
            ..Default::default()
        }],
    );
    assert_eq!(stats.default_interface, InterfaceStats::default());
    assert_eq!(stats.interfaces.len(), 1);
}

fn sandbox(uid: &str, created_at: i64, ready: bool) -> api::PodSandbox {
    api::PodSandbox {
        id: format!("{uid}-{created_at}"),
        metadata: Some(api::PodSandboxMetadata {
            name: "p".into(),
            uid: uid.into(),
            namespace: "ns".into(),
            ..Default::default()
        }),
        state: if ready {
            api::PodSandboxState::SandboxReady as i32
        } else {
            api::PodSandboxState::SandboxNotready as i32
        },
        created_at,
        ..Default::default()
    }
}

#[test]
fn one_ready_sandbox_per_pod_the_newest() {
    let sandboxes = vec![
        sandbox("a", 1, true),
        sandbox("a", 3, true),
        sandbox("a", 5, false),
        sandbox("b", 2, false),
    ];
    let ready = ready_sandboxes(&sandboxes);
    let ids: Vec<&str> = ready.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["a-3"]);
}

#[test]
fn volumes_are_listed_by_name_with_their_usage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scratch = dir.path().join(EMPTY_DIR_PLUGIN).join("scratch");
    std::fs::create_dir_all(&scratch).expect("mkdir");
    std::fs::write(scratch.join("f"), vec![1u8; 8192]).expect("write");
    std::fs::create_dir_all(dir.path().join("kubernetes.io~configmap/config")).expect("mkdir");
    let volumes = volume_stats(&at(1), dir.path());
    let names: Vec<&str> = volumes.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["config", "scratch"]);
    assert!(volumes[1].fs.used_bytes.is_some_and(|b| b >= 8192));
    assert_eq!(volumes[1].fs.inodes_used, Some(1));
    assert!(volumes[1].fs.capacity_bytes.is_some());
    assert!(volume_stats(&at(1), &dir.path().join("missing")).is_empty());
}
