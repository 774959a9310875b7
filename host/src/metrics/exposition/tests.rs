use super::*;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family as LabelledFamily;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Signal {
    eviction_signal: String,
}

/// What Prometheus 2.x sends when it scrapes.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

#[test]
fn the_scrapers_accept_header_picks_the_format() {
    assert_eq!(Format::negotiate(None), Format::Prometheus);
    assert_eq!(Format::negotiate(Some("*/*")), Format::Prometheus);
    assert_eq!(
        Format::negotiate(Some("text/plain;version=0.0.4")),
        Format::Prometheus
    );
    assert_eq!(
        Format::negotiate(Some(PROMETHEUS_ACCEPT)),
        Format::OpenMetrics
    );
    assert_eq!(
        Format::negotiate(Some("application/openmetrics-text;q=0.2, text/plain;q=0.9")),
        Format::Prometheus
    );
    assert_eq!(
        Format::negotiate(Some("application/openmetrics-text;q=0, text/plain;q=0.1")),
        Format::Prometheus
    );
    assert_eq!(
        Format::negotiate(Some("application/json, ;;;, \u{7f}")),
        Format::Prometheus
    );
}

fn sample_registry() -> Registry {
    let mut registry = Registry::default();
    let evictions = LabelledFamily::<Signal, Counter>::default();
    evictions
        .get_or_create(&Signal {
            eviction_signal: "memory.available".into(),
        })
        .inc();
    register_verbatim(
        &mut registry,
        "kubelet_evictions",
        "[ALPHA] Cumulative number of pod evictions by eviction signal",
        evictions,
    );
    let started = Counter::<u64>::default();
    started.inc_by(3);
    register_verbatim(
        &mut registry,
        "kubelet_started_pods",
        "[ALPHA] Cumulative number of pods started",
        started,
    );
    let running = Gauge::<i64>::default();
    running.set(2);
    register_verbatim(
        &mut registry,
        "kubelet_running_pods",
        "[ALPHA] Number of pods that have a running pod sandbox",
        running,
    );
    let relist = Histogram::new([0.005, 0.01]);
    relist.observe(0.007);
    register_verbatim(
        &mut registry,
        "kubelet_pleg_relist_duration_seconds",
        "[ALPHA] Duration in seconds for relisting pods in PLEG.",
        relist,
    );
    register_verbatim(
        &mut registry,
        "kubelet_build",
        "wasmlet's version",
        Info::new(vec![("version".to_string(), "1".to_string())]),
    );
    registry
}

#[test]
fn prometheus_text_names_counter_families_as_their_samples() {
    let text = render(Format::Prometheus, &[&sample_registry()]);
    let expected = "\
# HELP kubelet_evictions [ALPHA] Cumulative number of pod evictions by eviction signal
# TYPE kubelet_evictions counter
kubelet_evictions{eviction_signal=\"memory.available\"} 1
# HELP kubelet_started_pods_total [ALPHA] Cumulative number of pods started
# TYPE kubelet_started_pods_total counter
kubelet_started_pods_total 3
# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge
kubelet_running_pods 2
# HELP kubelet_pleg_relist_duration_seconds [ALPHA] Duration in seconds for relisting pods in PLEG.
# TYPE kubelet_pleg_relist_duration_seconds histogram
kubelet_pleg_relist_duration_seconds_sum 0.007
kubelet_pleg_relist_duration_seconds_count 1
kubelet_pleg_relist_duration_seconds_bucket{le=\"0.005\"} 0
kubelet_pleg_relist_duration_seconds_bucket{le=\"0.01\"} 1
kubelet_pleg_relist_duration_seconds_bucket{le=\"+Inf\"} 1
# HELP kubelet_build_info wasmlet's version
# TYPE kubelet_build_info gauge
kubelet_build_info{version=\"1\"} 1
";
    assert_eq!(text, expected);
}

#[test]
fn openmetrics_keeps_the_family_names_and_ends_with_eof() {
    let text = render(Format::OpenMetrics, &[&sample_registry()]);
    assert!(text.contains("# TYPE kubelet_evictions counter\n"));
    assert!(text.contains("kubelet_evictions_total{eviction_signal=\"memory.available\"} 1\n"));
    assert!(text.contains("# TYPE kubelet_started_pods counter\nkubelet_started_pods_total 3\n"));
    assert!(text.contains("# TYPE kubelet_build info\n"));
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert_eq!(text.matches("# EOF").count(), 1);
}

#[test]
fn several_registries_make_one_exposition() {
    let mut other = Registry::default();
    other.register("prober_probe", "probes", Counter::<u64>::default());
    let text = render(Format::OpenMetrics, &[&sample_registry(), &other]);
    assert_eq!(text.matches("# EOF").count(), 1);
    let text = render(Format::Prometheus, &[&sample_registry(), &other]);
    assert!(text.contains("# TYPE prober_probe_total counter\nprober_probe_total 0\n"));
}
