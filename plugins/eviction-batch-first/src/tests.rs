use wasmlet_plugin_sdk::fixtures::{EvictionCase, PodFixture, MI};
use wasmlet_plugin_sdk::EvictionPolicy;

use super::BatchFirst;

fn policy(config: &str) -> BatchFirst {
    let mut p = BatchFirst::default();
    p.configure(config).unwrap();
    p
}

fn case() -> EvictionCase {
    EvictionCase::memory_pressure()
        .pod(PodFixture::new("web", "frontend").memory(0, 800 * MI))
        .pod(
            PodFixture::new("jobs", "report")
                .memory(0, 100 * MI)
                .label("workload-class", "batch"),
        )
        .pod(PodFixture::new("infra", "dns").memory(0, 900 * MI))
        .pod(
            PodFixture::new("jobs", "etl")
                .memory(0, 300 * MI)
                .label("workload-class", "batch"),
        )
        .pod(
            PodFixture::new("jobs", "service")
                .memory(0, 50 * MI)
                .label("workload-class", "service"),
        )
}

#[test]
fn batch_first_in_upstream_order_then_the_rest_without_protected() {
    let p = policy(r#"{"protectNamespaces": ["infra"]}"#);
    assert_eq!(
        case().rank_names(&p).unwrap(),
        ["jobs/etl", "jobs/report", "web/frontend", "jobs/service"]
    );
}

#[test]
fn custom_label() {
    let p = policy(r#"{"batchLabel": "tier", "batchValue": "low"}"#);
    let case = case().pod(
        PodFixture::new("x", "cheap")
            .memory(0, MI)
            .label("tier", "low"),
    );
    assert_eq!(case.rank_names(&p).unwrap()[0], "x/cheap");
}

#[test]
fn no_config_is_upstream_with_batch_first() {
    let p = policy("");
    assert_eq!(
        case().rank_names(&p).unwrap(),
        [
            "jobs/etl",
            "jobs/report",
            "infra/dns",
            "web/frontend",
            "jobs/service"
        ]
    );
}

#[test]
fn bad_config_is_refused() {
    let mut p = BatchFirst::default();
    assert!(p
        .configure(r#"{"protectNamespaces": "kube-system"}"#)
        .is_err());
    assert!(p.configure(r#"{"batchLabel": ""}"#).is_err());
}
