use super::*;

const MIN: u64 = 60_000;
const NOW: u64 = 1_000 * MIN;

fn image(size: u64, first_seen: u64, last_used: u64) -> ImageInfo {
    ImageInfo {
        size_bytes: size,
        first_seen_unix_ms: first_seen,
        last_used_unix_ms: last_used,
        in_use: false,
        pinned: false,
    }
}

fn disk(bytes_to_free: u64) -> DiskInfo {
    DiskInfo {
        capacity_bytes: 1000,
        available_bytes: 100,
        bytes_to_free,
        min_age_ms: 2 * MIN,
        max_age_ms: 0,
    }
}

#[test]
fn images_go_least_recently_used_first_until_enough_is_freed() {
    let images = [
        image(100, 10 * MIN, 500 * MIN), // 0
        image(100, 20 * MIN, 100 * MIN), // 1: oldest use
        image(100, 5 * MIN, 300 * MIN),  // 2
        image(100, MIN, 300 * MIN),      // 3: same use as 2, seen earlier
    ];
    assert_eq!(plan_images(&disk(150), &images, NOW), vec![1, 3]);
    assert_eq!(plan_images(&disk(10_000), &images, NOW), vec![1, 3, 2, 0]);
    assert_eq!(plan_images(&disk(0), &images, NOW), Vec::<u32>::new());
}

#[test]
fn images_in_use_pinned_or_young_are_skipped() {
    let mut in_use = image(100, 0, 0);
    in_use.in_use = true;
    let mut pinned = image(100, 0, 0);
    pinned.pinned = true;
    let young = image(100, NOW - MIN, NOW - MIN);
    let old = image(100, 0, 10);
    assert_eq!(
        plan_images(&disk(10_000), &[in_use, pinned, young, old], NOW),
        vec![3]
    );
}

#[test]
fn images_past_max_age_go_whatever_the_disk() {
    let images = [
        image(10, 0, NOW - 10 * MIN),
        image(10, 0, NOW - 100 * MIN),
        image(10, 0, NOW - 3 * MIN),
    ];
    let d = DiskInfo {
        max_age_ms: 5 * MIN,
        ..disk(0)
    };
    assert_eq!(plan_images(&d, &images, NOW), vec![1, 0]);
    // Old images count towards bytes-to-free.
    let d = DiskInfo {
        max_age_ms: 5 * MIN,
        ..disk(25)
    };
    assert_eq!(plan_images(&d, &images, NOW), vec![1, 0, 2]);
}

fn dead(unit: u32, rank: u32, finished: u64) -> DeadContainer {
    DeadContainer {
        pod_deleted: false,
        finished_unix_ms: finished,
        per_container_rank: rank,
        unit,
        pod: unit,
    }
}

#[test]
fn containers_keep_the_newest_per_unit_and_nothing_of_deleted_pods() {
    let mut gone = dead(2, 0, 50);
    gone.pod_deleted = true;
    let list = [
        dead(0, 0, 30),
        dead(0, 1, 20),
        dead(0, 2, 10),
        dead(1, 0, 40),
        gone,
    ];
    assert_eq!(
        plan_containers(&list, &ContainerGcPolicy::default()),
        vec![4, 2, 1]
    );
}

#[test]
fn containers_without_limits_only_lose_deleted_pods() {
    let list = [dead(0, 0, 30), dead(0, 1, 20)];
    let unlimited = ContainerGcPolicy {
        max_per_pod_container: -1,
        max_containers: -1,
    };
    assert!(plan_containers(&list, &unlimited).is_empty());
}

#[test]
fn containers_over_the_node_limit_go_oldest_first() {
    // Three units of two; at most 4 node-wide and 5 per unit: share is
    // 4/3 = 1 per unit, which leaves 3.
    let list = [
        dead(0, 0, 60),
        dead(0, 1, 10),
        dead(1, 0, 50),
        dead(1, 1, 20),
        dead(2, 0, 40),
        dead(2, 1, 30),
    ];
    let policy = ContainerGcPolicy {
        max_per_pod_container: 5,
        max_containers: 4,
    };
    assert_eq!(plan_containers(&list, &policy), vec![1, 3, 5]);
    // Max 1 with 3 units: one per unit is still 3 > 1, then the oldest two go.
    let policy = ContainerGcPolicy {
        max_per_pod_container: -1,
        max_containers: 1,
    };
    let mut plan = plan_containers(&list, &policy);
    assert_eq!(plan.split_off(3), vec![4, 2]);
}
