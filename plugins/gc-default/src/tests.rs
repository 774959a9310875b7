use wasmlet_plugin_sdk::fixtures::{GcCase, ImageFixture, MI};
use wasmlet_plugin_sdk::GcStrategy;

use super::DefaultGc;

#[test]
fn images_least_recently_used_first_skipping_in_use_pinned_and_young() {
    let case = GcCase::new()
        .bytes_to_free(250 * MI)
        .image(ImageFixture::new("busybox:1.36").used_minutes_ago(10))
        .image(ImageFixture::new("nginx:1.25").used_minutes_ago(500))
        .image(ImageFixture::new("app:v1").used_minutes_ago(900).in_use())
        .image(
            ImageFixture::new("pause:3.9")
                .used_minutes_ago(999)
                .pinned(),
        )
        .image(ImageFixture::new("fresh:1").seen_minutes_ago(1))
        .image(ImageFixture::new("redis:7").used_minutes_ago(100));
    assert_eq!(
        case.plan_image_tags(&DefaultGc::default()).unwrap(),
        ["nginx:1.25", "redis:7", "busybox:1.36"]
    );
}

#[test]
fn nothing_to_free_plans_nothing() {
    let case = GcCase::new().image(ImageFixture::new("busybox:1.36").used_minutes_ago(10_000));
    assert!(case.plan_images(&DefaultGc::default()).unwrap().is_empty());
}

#[test]
fn containers_keep_newest_per_unit_and_drop_deleted_pods() {
    let case = GcCase::new()
        .dead(0, 0, 5)
        .dead(0, 1, 10)
        .dead(0, 2, 15)
        .dead(1, 0, 3)
        .dead(2, 0, 1)
        .pod_deleted(2);
    assert_eq!(
        case.plan_containers(&DefaultGc::default()).unwrap(),
        vec![4, 2, 1]
    );
}

#[test]
fn config_sets_the_container_limits() {
    let mut gc = DefaultGc::default();
    gc.configure(r#"{"maxPerPodContainer": 2}"#).unwrap();
    let case = GcCase::new().dead(0, 0, 5).dead(0, 1, 10).dead(0, 2, 15);
    assert_eq!(case.plan_containers(&gc).unwrap(), vec![2]);
    gc.configure(r#"{"maxPerPodContainer": -1, "maxContainers": 1}"#)
        .unwrap();
    assert_eq!(case.plan_containers(&gc).unwrap(), vec![2, 1]);
    assert!(gc
        .configure(r#"{"maxDead": 1}"#)
        .unwrap_err()
        .contains("unknown field"));
}
