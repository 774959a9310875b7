use super::*;
use k8s_openapi::api::core::v1::{PodDNSConfigOption, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn pod(policy: Option<&str>, host_network: bool, extra: Option<PodDNSConfig>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("shop".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            dns_policy: policy.map(str::to_string),
            host_network: Some(host_network),
            dns_config: extra,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn cluster() -> DnsContext {
    DnsContext {
        cluster_dns: vec!["10.96.0.10".into()],
        cluster_domain: "cluster.local".into(),
        resolv_conf: "/etc/resolv.conf".into(),
    }
}

fn host() -> HostDns {
    parse_resolv_conf(
        "# generated\nnameserver 192.168.1.1\nnameserver 192.168.1.2\nsearch corp.example. lab.example\noptions edns0 timeout:2\n",
    )
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn resolv_conf_parses_as_upstream() {
    let parsed = host();
    assert_eq!(parsed.servers, ["192.168.1.1", "192.168.1.2"]);
    assert_eq!(parsed.searches, ["corp.example", "lab.example"]);
    assert_eq!(parsed.options, ["edns0", "timeout:2"]);
    let last_wins = parse_resolv_conf("search a\nsearch b c\noptions x\noptions y\nnameserver\n");
    assert_eq!(last_wins.searches, ["b", "c"]);
    assert_eq!(last_wins.options, ["y"]);
    assert!(last_wins.servers.is_empty());
}

#[test]
fn cluster_first_asks_the_cluster_dns() {
    for policy in [None, Some("ClusterFirst")] {
        let config = pod_dns(&pod(policy, false, None), &cluster(), &host(), "10.0.0.1");
        assert_eq!(config.servers, ["10.96.0.10"]);
        assert_eq!(
            config.searches,
            [
                "shop.svc.cluster.local",
                "svc.cluster.local",
                "cluster.local",
                "corp.example",
                "lab.example"
            ]
        );
        assert_eq!(config.options, ["ndots:5"]);
    }
}

#[test]
fn host_network_and_default_use_the_host_resolver() {
    let as_host = api::DnsConfig {
        servers: strings(&["192.168.1.1", "192.168.1.2"]),
        searches: strings(&["corp.example", "lab.example"]),
        options: strings(&["edns0", "timeout:2"]),
    };
    let host_net = pod_dns(
        &pod(Some("ClusterFirst"), true, None),
        &cluster(),
        &host(),
        "10.0.0.1",
    );
    assert_eq!(
        host_net, as_host,
        "ClusterFirst under hostNetwork falls back"
    );
    let default = pod_dns(
        &pod(Some("Default"), false, None),
        &cluster(),
        &host(),
        "10.0.0.1",
    );
    assert_eq!(default, as_host);
    let with_host_net = pod_dns(
        &pod(Some("ClusterFirstWithHostNet"), true, None),
        &cluster(),
        &host(),
        "10.0.0.1",
    );
    assert_eq!(with_host_net.servers, ["10.96.0.10"]);
    let standalone = DnsContext {
        resolv_conf: "/etc/resolv.conf".into(),
        ..Default::default()
    };
    let no_cluster_dns = pod_dns(&pod(None, false, None), &standalone, &host(), "10.0.0.1");
    assert_eq!(no_cluster_dns, as_host, "no clusterDNS: Default");
    let no_resolv_conf = DnsContext::default();
    let loopback = pod_dns(
        &pod(Some("Default"), false, None),
        &no_resolv_conf,
        &HostDns::default(),
        "fd00::1",
    );
    assert_eq!(loopback.servers, ["::1"]);
    assert_eq!(loopback.searches, ["."]);
}

#[test]
fn none_takes_only_the_pod_dns_config_and_dns_config_merges() {
    let extra = PodDNSConfig {
        nameservers: Some(strings(&["1.1.1.1", "10.96.0.10"])),
        searches: Some(strings(&["my.example", "svc.cluster.local"])),
        options: Some(vec![
            PodDNSConfigOption {
                name: Some("ndots".into()),
                value: Some("2".into()),
            },
            PodDNSConfigOption {
                name: Some("single-request".into()),
                value: None,
            },
        ]),
    };
    let none = pod_dns(
        &pod(Some("None"), false, Some(extra.clone())),
        &cluster(),
        &host(),
        "10.0.0.1",
    );
    assert_eq!(none.servers, ["1.1.1.1", "10.96.0.10"]);
    assert_eq!(none.searches, ["my.example", "svc.cluster.local"]);
    assert_eq!(none.options, ["ndots:2", "single-request"]);
    let merged = pod_dns(
        &pod(None, false, Some(extra)),
        &cluster(),
        &host(),
        "10.0.0.1",
    );
    assert_eq!(
        merged.servers,
        ["10.96.0.10", "1.1.1.1"],
        "duplicates omitted"
    );
    assert_eq!(
        merged.searches,
        [
            "shop.svc.cluster.local",
            "svc.cluster.local",
            "cluster.local",
            "corp.example",
            "lab.example",
            "my.example"
        ]
    );
    assert_eq!(
        merged.options,
        ["ndots:2", "single-request"],
        "the pod's option wins"
    );
}

#[test]
fn limits_apply_last() {
    let extra = PodDNSConfig {
        nameservers: Some(strings(&["1.1.1.1", "8.8.8.8", "9.9.9.9"])),
        searches: Some(
            (0..40)
                .map(|i| format!("s{i}.example"))
                .chain(["x".repeat(254)])
                .collect(),
        ),
        options: None,
    };
    let config = pod_dns(
        &pod(None, false, Some(extra)),
        &cluster(),
        &host(),
        "10.0.0.1",
    );
    assert_eq!(config.servers, ["10.96.0.10", "1.1.1.1", "8.8.8.8"]);
    assert_eq!(config.searches.len(), 32);
    assert!(config.searches.iter().all(|s| s.len() <= 253));
}
