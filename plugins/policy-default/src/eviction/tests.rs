use super::*;
use crate::{PodInfo, QosClass, Signal, SignalObservation};

const MI: u64 = 1 << 20;

fn pod(priority: i32, request: u64, usage: u64) -> PodInfo {
    PodInfo {
        priority,
        has_stats: true,
        memory_request_bytes: request,
        memory_usage_bytes: usage,
        qos: QosClass::Burstable,
        ..PodInfo::default()
    }
}

fn obs(signal: Signal) -> [SignalObservation; 1] {
    [SignalObservation::new(signal, 0, 0, 0)]
}

#[test]
fn memory_exceeding_requests_go_first_then_priority_then_excess() {
    let pods = [
        pod(0, 100 * MI, 50 * MI),   // 0: within request, lowest priority
        pod(100, 10 * MI, 200 * MI), // 1: exceeds, high priority
        pod(10, 10 * MI, 30 * MI),   // 2: exceeds by 20
        pod(10, 10 * MI, 90 * MI),   // 3: exceeds by 80
    ];
    assert_eq!(rank(&obs(Signal::MemoryAvailable), &pods), vec![3, 2, 1, 0]);
    assert_eq!(
        rank(&obs(Signal::AllocatableMemoryAvailable), &pods),
        vec![3, 2, 1, 0]
    );
}

#[test]
fn pods_without_stats_go_first() {
    let mut blind = pod(1000, 0, 0);
    blind.has_stats = false;
    let pods = [pod(0, 0, 500 * MI), blind];
    assert_eq!(rank(&obs(Signal::MemoryAvailable), &pods), vec![1, 0]);
    assert_eq!(rank(&obs(Signal::NodefsAvailable), &pods), vec![1, 0]);
}

#[test]
fn critical_and_static_pods_are_never_ranked() {
    let mut critical = pod(0, 0, 900 * MI);
    critical.is_critical = true;
    let mut static_pod = pod(0, 0, 800 * MI);
    static_pod.is_static = true;
    let pods = [critical, static_pod, pod(5, 0, 1)];
    assert_eq!(rank(&obs(Signal::MemoryAvailable), &pods), vec![2]);
    assert_eq!(order_for(Pressure::Memory, &pods), vec![0, 1, 2]);
}

#[test]
fn pid_pressure_ranks_by_priority_then_process_count() {
    let mut a = pod(10, 0, 0);
    a.process_count = 500;
    let mut b = pod(0, 0, 0);
    b.process_count = 3;
    let mut c = pod(0, 0, 0);
    c.process_count = 40;
    assert_eq!(rank(&obs(Signal::PidAvailable), &[a, b, c]), vec![2, 1, 0]);
}

#[test]
fn disk_pressure_uses_ephemeral_storage() {
    let disk = |priority, request, usage| PodInfo {
        priority,
        has_stats: true,
        disk_request_bytes: request,
        disk_usage_bytes: usage,
        // Memory must not matter under disk pressure.
        memory_usage_bytes: usage * 7 % 13,
        ..PodInfo::default()
    };
    let pods = [
        disk(0, 100, 10),
        disk(5, 0, 50),
        disk(5, 0, 70),
        disk(1, 10, 11),
    ];
    assert_eq!(
        rank(&obs(Signal::ImagefsAvailable), &pods),
        vec![3, 2, 1, 0]
    );
    assert_eq!(
        rank(&obs(Signal::ContainerfsAvailable), &pods),
        vec![3, 2, 1, 0]
    );
}

#[test]
fn inode_pressure_uses_inodes_used() {
    let ino = |priority, inodes| PodInfo {
        priority,
        has_stats: true,
        inodes_used: inodes,
        ..PodInfo::default()
    };
    let pods = [ino(0, 0), ino(3, 10), ino(3, 1000)];
    // Pod 0 uses none, so it does not "exceed"; the others do.
    assert_eq!(rank(&obs(Signal::NodefsInodesFree), &pods), vec![2, 1, 0]);
}

#[test]
fn first_signal_decides_and_empty_pressure_means_memory() {
    // Memory ranks b first (larger excess), PID ranks a first (more processes).
    let mut a = pod(0, 0, 10);
    a.process_count = 2;
    let mut b = pod(0, 0, 20);
    b.process_count = 1;
    let pods = [a, b];
    let both = [
        SignalObservation::new(Signal::PidAvailable, 0, 0, 0),
        SignalObservation::new(Signal::MemoryAvailable, 0, 0, 0),
    ];
    assert_eq!(rank(&both, &pods), vec![0, 1]);
    assert_eq!(rank(&[], &pods), vec![1, 0]);
}

#[test]
fn ties_keep_input_order() {
    let pods = vec![pod(0, 0, 10); 5];
    assert_eq!(
        rank(&obs(Signal::MemoryAvailable), &pods),
        vec![0, 1, 2, 3, 4]
    );
}

#[test]
fn signals_map_to_pressures() {
    for s in Signal::ALL {
        let expected = if s.as_str().starts_with("memory") || s.as_str().starts_with("allocatable")
        {
            Pressure::Memory
        } else if s.as_str().starts_with("pid") {
            Pressure::Pid
        } else if s.as_str().ends_with("inodesFree") {
            Pressure::Inodes
        } else {
            Pressure::Disk
        };
        assert_eq!(s.pressure(), expected, "{}", s.as_str());
    }
}

#[test]
fn key_order_equals_the_comparison_order() {
    // A small deterministic generator: many ties, pods with and without stats.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    for _ in 0..200 {
        let pods: Vec<PodInfo> = (0..40)
            .map(|_| PodInfo {
                priority: next(4) as i32 - 1,
                has_stats: next(5) != 0,
                memory_request_bytes: next(4) * 100,
                memory_usage_bytes: next(4) * 100,
                disk_request_bytes: next(3) * 10,
                disk_usage_bytes: next(3) * 10,
                inodes_used: next(3),
                process_count: next(3),
                ..PodInfo::default()
            })
            .collect();
        for pressure in [
            Pressure::Memory,
            Pressure::Pid,
            Pressure::Disk,
            Pressure::Inodes,
        ] {
            let mut expected: Vec<u32> = (0..pods.len() as u32).collect();
            expected.sort_by(|&a, &b| compare(pressure, &pods[a as usize], &pods[b as usize]));
            assert_eq!(order_for(pressure, &pods), expected, "{pressure:?}");
        }
    }
}
