use super::*;
use std::path::Path;

/// The pod and container cgroups the fixtures hold.
pub(crate) const POD: &str = "/kubepods/burstable/podu1";
pub(crate) const CONTAINER: &str = "/kubepods/burstable/podu1/c1";
/// The pod's sandbox cgroup, whose process 4242 is in the pod's network namespace.
pub(crate) const SANDBOX: &str = "/kubepods/burstable/podu1/s1";

fn write(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write");
    }
}

/// A cgroup v1 tree (memory, cpu and cpuacct mounted apart) with the root, the pod and its
/// container: the container is limited to 64Mi and half a CPU, was OOM-killed twice and
/// throttled in 7 of 40 periods.
pub(crate) fn v1_tree(root: &Path) {
    write(
        &root.join("memory"),
        &[
            ("memory.usage_in_bytes", "1073741824\n"),
            (
                "memory.stat",
                "total_rss 536870912\ntotal_cache 268435456\ntotal_inactive_file 134217728\n",
            ),
            ("memory.limit_in_bytes", "9223372036854771712\n"),
            (
                "memory.oom_control",
                "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
            ),
        ],
    );
    write(&root.join("cpuacct"), &[("cpuacct.usage", "90000000000\n")]);
    write(
        &root.join("cpu"),
        &[
            (
                "cpu.stat",
                "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
            ),
            ("cpu.cfs_period_us", "100000\n"),
            ("cpu.cfs_quota_us", "-1\n"),
            ("cpu.shares", "1024\n"),
        ],
    );
    for (cgroup, usage, limit, oom) in [
        (POD, "20971520\n", "67108864\n", "0"),
        (CONTAINER, "10485760\n", "67108864\n", "2"),
    ] {
        let relative = cgroup.trim_start_matches('/');
        let oom_control = format!("oom_kill_disable 0\nunder_oom 0\noom_kill {oom}\n");
        write(
            &root.join("memory").join(relative),
            &[
                ("memory.usage_in_bytes", usage),
                ("memory.stat", "cache 1\ntotal_rss 4194304\ntotal_cache 6291456\ntotal_inactive_file 2097152\n"),
                ("memory.limit_in_bytes", limit),
                ("memory.oom_control", &oom_control),
            ],
        );
        write(
            &root.join("cpuacct").join(relative),
            &[("cpuacct.usage", "2500000000\n")],
        );
        write(
            &root.join("cpu").join(relative),
            &[
                (
                    "cpu.stat",
                    "nr_periods 40\nnr_throttled 7\nthrottled_time 350000000\n",
                ),
                ("cpu.cfs_period_us", "100000\n"),
                ("cpu.cfs_quota_us", "50000\n"),
                ("cpu.shares", "512\n"),
            ],
        );
    }
    write(
        &root.join("memory").join(SANDBOX.trim_start_matches('/')),
        &[
            ("memory.usage_in_bytes", "4096\n"),
            ("memory.stat", "total_rss 4096\n"),
            ("cgroup.procs", "4242\n"),
        ],
    );
}

/// The same pod and container on the cgroup v2 unified tree (whose root has no
/// memory.current).
pub(crate) fn v2_tree(root: &Path) {
    write(
        root,
        &[
            ("cgroup.controllers", "cpu memory pids\n"),
            ("cpu.stat", "usage_usec 90000000\n"),
            (
                "memory.stat",
                "anon 536870912\nfile 268435456\ninactive_file 134217728\n",
            ),
        ],
    );
    for (cgroup, usage, oom) in [(POD, "20971520\n", "0"), (CONTAINER, "10485760\n", "2")] {
        let events = format!("low 0\nhigh 0\nmax 3\noom 2\noom_kill {oom}\n");
        write(
            &root.join(cgroup.trim_start_matches('/')),
            &[
                ("memory.current", usage),
                ("memory.stat", "anon 4194304\nfile 6291456\ninactive_file 2097152\n"),
                ("memory.max", "67108864\n"),
                ("memory.events", &events),
                ("cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nnr_periods 40\nnr_throttled 7\nthrottled_usec 350000\n"),
                ("cpu.max", "50000 100000\n"),
                ("cpu.weight", "20\n"),
            ],
        );
    }
    write(
        &root.join(SANDBOX.trim_start_matches('/')),
        &[
            ("memory.current", "4096\n"),
            ("memory.stat", "anon 4096\n"),
            ("cgroup.procs", "4242\n"),
        ],
    );
}

fn expected_container(shares: u64) -> CgroupSnapshot {
    CgroupSnapshot {
        cpu_usage_ns: Some(2_500_000_000),
        cfs: Some(Cfs {
            periods: 40,
            throttled_periods: 7,
            throttled_ns: 350_000_000,
        }),
        cpu_spec: Some(CpuSpec {
            period_us: 100_000,
            quota_us: 50_000,
            shares,
        }),
        memory: Some(CgroupMemory {
            usage: 10 << 20,
            working_set: 8 << 20,
            limit: Some(64 << 20),
            counters: crate::stats::cgroup::MemoryCounters {
                rss: Some(4 << 20),
                page_faults: None,
                major_page_faults: None,
                cache: Some(6 << 20),
            },
        }),
        oom_kills: Some(2),
        created: None,
    }
}

fn without_time(snapshot: Option<CgroupSnapshot>) -> CgroupSnapshot {
    let snapshot = snapshot.expect("the cgroup exists");
    assert!(snapshot.created.is_some());
    CgroupSnapshot {
        created: None,
        ..snapshot
    }
}

#[test]
fn a_v1_container_cgroup_is_read_from_three_hierarchies() {
    let dir = tempfile::tempdir().expect("tempdir");
    v1_tree(dir.path());
    let h = Hierarchies::detect(dir.path());
    assert!(h.is_v1());
    assert_eq!(
        without_time(read_cgroup(&h, CONTAINER)),
        expected_container(512)
    );
    let root = without_time(read_cgroup(&h, "/"));
    assert_eq!(root.cpu_spec.map(|s| s.quota_us), Some(0), "-1 is no quota");
    assert_eq!(root.memory.and_then(|m| m.limit), None, "unlimited");
    assert_eq!(read_cgroup(&h, "/kubepods/besteffort/podgone"), None);
}

#[test]
fn a_v2_container_cgroup_is_read_from_the_unified_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    v2_tree(dir.path());
    let h = Hierarchies::detect(dir.path());
    assert!(!h.is_v1());
    assert_eq!(
        without_time(read_cgroup(&h, CONTAINER)),
        expected_container(500)
    );
    let root = without_time(read_cgroup(&h, "/"));
    assert_eq!(root.cpu_usage_ns, Some(90_000_000_000));
    assert_eq!(root.memory, None, "the v2 root has no memory.current");
}

#[test]
fn cpu_limits_parse_as_cadvisor_reports_them() {
    assert_eq!(parse_cpu_max("max 100000\n"), Some((0, 100_000)));
    assert_eq!(parse_cpu_max("25000 50000"), Some((25_000, 50_000)));
    assert_eq!(parse_cpu_max("lots"), None);
    assert_eq!(parse_cfs_quota("-1\n"), Some(0));
    assert_eq!(parse_cfs_quota("20000"), Some(20_000));
    // runc maps shares 2, 1024 and 262144 to weights 1, 39 and 10000.
    assert_eq!(weight_to_shares(1), 2);
    assert_eq!(weight_to_shares(39), 998);
    assert_eq!(weight_to_shares(10_000), 262_144);
    assert_eq!(parse_cfs(false, "usage_usec 5\n"), None);
}
