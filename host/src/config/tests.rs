use super::*;
use std::time::Duration;

const FILE: &str = "/etc/wasmlet/config.yaml";

fn parse(text: &str) -> Result<Parsed, ConfigError> {
    parse_str(Path::new(FILE), text)
}

#[test]
fn reads_both_documents_with_upstream_names() {
    let (kubelet, wasmlet, warnings) = parse(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         staticPodPath: /etc/kubernetes/manifests\nfileCheckFrequency: 5s\nmaxPods: 20\n\
         readOnlyPort: 10255\n---\napiVersion: wasmlet.dev/v1alpha1\nkind: WasmletConfiguration\n\
         plegRelistPeriod: 250ms\ncontainerRestartBackOff: {initialPeriod: 1s, maxPeriod: 4s, resetPeriod: 1m}\n",
    )
    .unwrap();
    assert_eq!(
        kubelet.static_pod_path.as_deref(),
        Some("/etc/kubernetes/manifests")
    );
    assert_eq!(kubelet.file_check_frequency, Duration::from_secs(5));
    assert_eq!(kubelet.max_pods, 20);
    assert_eq!(kubelet.read_only_port, 10255);
    assert_eq!(
        kubelet.sync_frequency,
        Duration::from_secs(60),
        "upstream default"
    );
    assert_eq!(wasmlet.pleg_relist_period, Duration::from_millis(250));
    assert_eq!(
        wasmlet.container_restart_back_off.max_period,
        Duration::from_secs(4)
    );
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn unknown_fields_warn_by_name() {
    let (_, _, warnings) = parse(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         serializeImagePulls: false\nfrobnicate: true\n",
    )
    .unwrap();
    let fields: Vec<_> = warnings
        .iter()
        .map(|w| (w.field.as_str(), w.message.as_str()))
        .collect();
    assert_eq!(
        fields,
        [
            (
                "serializeImagePulls",
                "not implemented by wasmlet yet; ignored"
            ),
            ("frobnicate", "unknown field; ignored")
        ]
    );
}

#[test]
fn invalid_values_name_the_field() {
    let err = parse(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: many\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with(FILE) && err.contains("`maxPods`"), "{err}");
    let err = parse("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsyncFrequency: 10x\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`syncFrequency`") && err.contains("unit"),
        "{err}"
    );
    let err = parse("apiVersion: v1\nkind: Pod\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("document 0") && err.contains("unsupported"),
        "{err}"
    );
}

#[test]
fn validation_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.yaml");
    std::fs::write(
        &file,
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: /run/x.sock\n",
    )
    .unwrap();
    let err = NodeConfig::load(Some(&file), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("`containerRuntimeEndpoint`"), "{err}");

    let overrides = Overrides {
        container_runtime_endpoint: Some("unix:///run/x.sock".into()),
        hostname_override: Some("Node-A".into()),
        node_ip: Some("10.0.0.7".into()),
        root_dir: Some("/tmp/r".into()),
        ..Default::default()
    };
    let (config, _) = NodeConfig::load(Some(&file), &overrides).unwrap();
    assert_eq!(config.node_name, "node-a");
    assert_eq!(config.node_ip.to_string(), "10.0.0.7");
    assert_eq!(config.kubelet.runtime_socket(), "/run/x.sock");
    assert_eq!(config.root_dir, PathBuf::from("/tmp/r"));

    let bad_ip = Overrides {
        node_ip: Some("nope".into()),
        ..overrides
    };
    let err = NodeConfig::load(Some(&file), &bad_ip)
        .unwrap_err()
        .to_string();
    assert!(err.contains("--node-ip"), "{err}");
}
