//! `oci://` plugins from a registry serving HTTPS with a private CA (`caFile`, relative to the
//! config file), refused with what to do without it; and plain HTTP only on loopback or with
//! `insecure: true`.

use super::*;
use std::net::{IpAddr, Ipv4Addr};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// This machine's non-loopback IPv4 address, which a registry must be reached on over HTTPS
/// unless `insecure`; `None` (a skip) without one, which CI never allows.
fn non_loopback_ipv4() -> Option<IpAddr> {
    let found = oci_registry::non_loopback_ipv4();
    if found.is_none() {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "this machine has no non-loopback IPv4 address"
        );
        eprintln!("SKIPPED: this machine has no non-loopback IPv4 address");
    }
    found.map(IpAddr::V4)
}

/// How many pulls of `plugin` ended with `result`, from the registry's metrics.
fn pulls(registry: &PluginRegistry, plugin: &str, result: &str) -> String {
    let mut prometheus = prometheus_client::registry::Registry::with_prefix("wasmlet");
    registry.register_metrics(&mut prometheus);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &prometheus).unwrap();
    let series = format!(r#"wasmlet_plugin_pulls_total{{plugin="{plugin}",result="{result}"}} "#);
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .unwrap_or("0")
        .to_string()
}

#[test]
fn a_tls_registry_serves_with_its_ca_and_is_refused_without() {
    let Some(ip) = non_loopback_ipv4() else {
        return;
    };
    let component = components::EVICTION_BATCH_FIRST.path();
    // On loopback (plain HTTP unless a CA is given) and on another address (HTTPS always).
    for host in [LOOPBACK, ip] {
        let Some(server) = TestRegistry::start_tls(host) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let tag = server.reference("plugins/evict:v1");
        let access = RegistryAccess {
            ca_file: Some(server.ca_file()),
            ..Default::default()
        };
        let digest = push_plugin(&component, &tag, &access).expect("push over HTTPS");
        assert!(digest.contains("digest: sha256:"), "{digest}");
        std::fs::create_dir_all(dir.path().join("certs")).unwrap();
        std::fs::copy(server.ca_file(), dir.path().join("certs/ca.pem")).unwrap();
        let registry = oci_registry(
            dir.path(),
            &dir.path().join("root"),
            &format!(
                "{}{}",
                entry("with-ca", &tag, "  caFile: certs/ca.pem\n"),
                entry("without-ca", &tag, "  shadow: true\n"),
            ),
        );
        assert_eq!(
            serving_sha(&registry, "with-ca"),
            Some(file_sha(&component)),
            "{host}: {}",
            report_of(&registry, "with-ca")
        );
        assert_eq!(pulls(&registry, "with-ca", "pulled"), "1");

        assert_eq!(serving_sha(&registry, "without-ca"), None);
        let report = report_of(&registry, "without-ca");
        let reason = report["lastRejected"]["reason"].as_str().unwrap();
        // Loopback is asked over plain HTTP and answers that it wants HTTPS; another address is
        // asked over HTTPS and shows a certificate of an unknown authority.
        let why = if host.is_loopback() {
            "asks for HTTPS"
        } else {
            "not signed by an authority this node trusts"
        };
        assert!(
            reason.contains(&server.address()) && reason.contains("caFile") && reason.contains(why),
            "{host}: {reason}"
        );
        // A refusal, not an outage: counted and reported as refused, asked again each period.
        assert_eq!(report["oci"]["registry"], "reachable", "{report}");
        assert_eq!(pulls(&registry, "without-ca", "refused"), "1");
        assert_eq!(pulls(&registry, "without-ca", "unreachable"), "0");

        // A CA file that is not one is named with the reason.
        std::fs::write(dir.path().join("certs/empty.pem"), "").unwrap();
        let broken = oci_registry(
            &dir.path().join("broken"),
            &dir.path().join("root-broken"),
            &entry(
                "broken-ca",
                &tag,
                &format!(
                    "  caFile: {}\n",
                    dir.path().join("certs/empty.pem").display()
                ),
            ),
        );
        let reason = report_of(&broken, "broken-ca")["lastRejected"]["reason"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            reason.contains("empty.pem") && reason.contains("no certificate"),
            "{reason}"
        );
    }
}

#[test]
fn plain_http_only_on_loopback_or_when_insecure() {
    let Some(ip) = non_loopback_ipv4() else {
        return;
    };
    let Some(server) = TestRegistry::start_on(ip) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let component = components::EVICTION_BATCH_FIRST.path();
    let tag = server.reference("plugins/evict:v1");
    let err = push_plugin(&component, &tag, &RegistryAccess::default()).unwrap_err();
    assert!(
        err.to_string().contains(&server.address()) && err.to_string().contains("insecure"),
        "{err}"
    );
    let insecure = RegistryAccess {
        insecure: true,
        ..Default::default()
    };
    push_plugin(&component, &tag, &insecure).expect("push over plain HTTP when insecure");
    let registry = oci_registry(
        dir.path(),
        &dir.path().join("root"),
        &format!(
            "{}{}",
            entry("insecure", &tag, "  insecure: true\n"),
            entry("https", &tag, "  shadow: true\n"),
        ),
    );
    assert_eq!(
        serving_sha(&registry, "insecure"),
        Some(file_sha(&component))
    );
    assert_eq!(serving_sha(&registry, "https"), None);
    let reason = report_of(&registry, "https")["lastRejected"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains(&server.address())
            && reason.contains("does not answer in TLS")
            && reason.contains("insecure: true"),
        "{reason}"
    );

    // On loopback plain HTTP needs no flag.
    let Some(local) = TestRegistry::start() else {
        return;
    };
    let local_tag = local.reference("plugins/evict:v1");
    push(&component, &local_tag);
    let registry = oci_registry(
        &dir.path().join("local"),
        &dir.path().join("root-local"),
        &entry("local", &local_tag, ""),
    );
    assert_eq!(serving_sha(&registry, "local"), Some(file_sha(&component)));
}
