use wasmlet_plugin_sdk::fixtures::{EvictionCase, PodFixture, MI};
use wasmlet_plugin_sdk::{EvictionPolicy, QosClass};

use super::DefaultEviction;

#[test]
fn memory_pressure_follows_upstream() {
    let case = EvictionCase::memory_pressure()
        .pod(
            PodFixture::new("default", "guaranteed")
                .qos(QosClass::Guaranteed)
                .memory(512 * MI, 400 * MI),
        )
        .pod(PodFixture::new("default", "best-effort").memory(0, 100 * MI))
        .pod(
            PodFixture::new("default", "burstable-hog")
                .memory(64 * MI, 900 * MI)
                .priority(1000),
        )
        .pod(PodFixture::new("default", "burstable").memory(64 * MI, 200 * MI))
        .pod(
            PodFixture::new("kube-system", "apiserver")
                .static_pod()
                .memory(0, 2000 * MI),
        )
        .pod(PodFixture::new("default", "new").no_stats().priority(5000));
    assert_eq!(
        case.rank_names(&DefaultEviction).unwrap(),
        [
            "default/new",
            "default/burstable",
            "default/best-effort",
            "default/burstable-hog",
            "default/guaranteed"
        ]
    );
}

#[test]
fn pid_pressure_ranks_priority_then_processes() {
    let case = EvictionCase::pid_pressure()
        .pod(PodFixture::new("a", "few").processes(3))
        .pod(PodFixture::new("a", "many").processes(3000).priority(10))
        .pod(PodFixture::new("a", "some").processes(30));
    assert_eq!(
        case.rank_names(&DefaultEviction).unwrap(),
        ["a/some", "a/few", "a/many"]
    );
}

#[test]
fn disk_pressure_ranks_by_ephemeral_storage() {
    let case = EvictionCase::disk_pressure()
        .pod(
            PodFixture::new("a", "within")
                .disk(10 * MI, 5 * MI)
                .memory(0, 900 * MI),
        )
        .pod(PodFixture::new("a", "over").disk(10 * MI, 50 * MI));
    assert_eq!(
        case.rank_names(&DefaultEviction).unwrap(),
        ["a/over", "a/within"]
    );
}

#[test]
fn self_check_and_config() {
    let mut p = DefaultEviction;
    assert_eq!(p.configure("{}"), Ok(()));
    assert!(p.configure(r#"{"x":1}"#).is_err());
    assert_eq!(p.self_check(), Ok(()));
}
