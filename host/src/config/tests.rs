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
    // By field name, whatever their order in the file.
    assert_eq!(
        fields,
        [
            ("frobnicate", "unknown field; ignored"),
            (
                "serializeImagePulls",
                "not implemented by wasmlet yet; ignored"
            ),
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

#[test]
fn secure_port_defaults_are_upstreams() {
    let (kubelet, _, _) =
        parse("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n").unwrap();
    assert_eq!(kubelet.port, 10250);
    assert_eq!(kubelet.tls_cert_file, None);
    assert_eq!(kubelet.authentication.x509.client_ca_file, None);
    assert!(kubelet.authentication.webhook.enabled);
    assert_eq!(
        kubelet.authentication.webhook.cache_ttl,
        Duration::from_secs(120)
    );
    assert!(
        !kubelet.authentication.anonymous.enabled,
        "never anonymous by default"
    );
    assert_eq!(
        kubelet.authorization.mode,
        kubelet::KubeletAuthorizationMode::Webhook
    );
    assert_eq!(
        kubelet.authorization.webhook.cache_authorized_ttl,
        Duration::from_secs(300)
    );
    assert_eq!(
        kubelet.authorization.webhook.cache_unauthorized_ttl,
        Duration::from_secs(30)
    );
}

#[test]
fn secure_port_fields_parse_with_upstream_names() {
    let (kubelet, _, warnings) = parse(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nport: 0\n\
         tlsCertFile: /pki/k.crt\ntlsPrivateKeyFile: /pki/k.key\n\
         authentication:\n  x509: {clientCAFile: /pki/ca.crt}\n  webhook: {enabled: false, cacheTTL: 10s}\n  anonymous: {enabled: true}\n\
         authorization:\n  mode: AlwaysAllow\n  webhook: {cacheAuthorizedTTL: 1m, cacheUnauthorizedTTL: 5s}\n",
    )
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(kubelet.port, 0);
    assert_eq!(kubelet.tls_cert_file.as_deref(), Some("/pki/k.crt"));
    assert_eq!(
        kubelet.authentication.x509.client_ca_file.as_deref(),
        Some("/pki/ca.crt")
    );
    assert!(!kubelet.authentication.webhook.enabled);
    assert_eq!(
        kubelet.authentication.webhook.cache_ttl,
        Duration::from_secs(10)
    );
    assert!(kubelet.authentication.anonymous.enabled);
    assert_eq!(
        kubelet.authorization.mode,
        kubelet::KubeletAuthorizationMode::AlwaysAllow
    );
    assert_eq!(
        kubelet.authorization.webhook.cache_unauthorized_ttl,
        Duration::from_secs(5)
    );
    // /configz writes the same names back.
    let json = serde_json::to_value(&kubelet).unwrap();
    assert_eq!(
        json["authentication"]["x509"]["clientCAFile"],
        "/pki/ca.crt"
    );
    assert_eq!(json["authentication"]["webhook"]["cacheTTL"], "10s");
    assert_eq!(
        json["authorization"]["webhook"]["cacheAuthorizedTTL"],
        "1m0s"
    );
}

#[test]
fn bad_secure_port_values_name_the_field() {
    let head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";
    let err = |body: &str| parse(&format!("{head}{body}")).unwrap_err().to_string();
    let text = err("authorization: {mode: RBAC}\n");
    assert!(
        text.contains("`authorization.mode`") && text.contains("RBAC"),
        "{text}"
    );
    let text = err("authentication: {x509: {clientCaFile: /x}}\n");
    assert!(
        text.contains("authentication.x509") && text.contains("clientCaFile"),
        "{text}"
    );
    let text = err("authentication: {webhook: {cacheTTL: '2'}}\n");
    assert!(text.contains("cacheTTL") && text.contains("unit"), "{text}");
    let text = err("port: 70000\n");
    assert!(text.contains("`port`"), "{text}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.yaml");
    std::fs::write(&file, format!("{head}tlsCertFile: k.crt\n")).unwrap();
    let text = NodeConfig::load(Some(&file), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(text.contains("`tlsPrivateKeyFile`"), "{text}");
}

#[test]
fn secure_port_paths_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.yaml");
    std::fs::write(
        &file,
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         tlsCertFile: pki/k.crt\ntlsPrivateKeyFile: /abs/k.key\nauthentication: {x509: {clientCAFile: ''}}\n",
    )
    .unwrap();
    let overrides = Overrides {
        root_dir: Some("/tmp/r".into()),
        ..Default::default()
    };
    let (config, _) = NodeConfig::load(Some(&file), &overrides).unwrap();
    // Relative to the file, as upstream; an empty path is no path.
    assert_eq!(
        config.kubelet.tls_cert_file.as_deref(),
        Some(dir.path().join("pki/k.crt").to_str().unwrap())
    );
    assert_eq!(
        config.kubelet.tls_private_key_file.as_deref(),
        Some("/abs/k.key")
    );
    assert_eq!(config.kubelet.authentication.x509.client_ca_file, None);
    assert_eq!(config.cert_dir, PathBuf::from("/tmp/r/pki"));

    let flags = Overrides {
        port: Some(0),
        cert_dir: Some("/etc/wasmlet/pki".into()),
        client_ca_file: Some("/etc/ca.crt".into()),
        ..overrides
    };
    let (config, _) = NodeConfig::load(Some(&file), &flags).unwrap();
    assert_eq!(config.kubelet.port, 0);
    assert_eq!(config.cert_dir, PathBuf::from("/etc/wasmlet/pki"));
    assert_eq!(
        config.kubelet.authentication.x509.client_ca_file.as_deref(),
        Some("/etc/ca.crt")
    );
}

#[test]
fn logging_flags_win_over_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.yaml");
    std::fs::write(
        &file,
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         logging: {format: json, verbosity: 3, vmodule: [{filePattern: gc, verbosity: 5}]}\n\
         tracing: {endpoint: 'collector:4317', samplingRatePerMillion: 250000}\n",
    )
    .unwrap();
    let base = Overrides {
        root_dir: Some("/tmp/r".into()),
        hostname_override: Some("node-a".into()),
        ..Default::default()
    };
    let (config, warnings) = NodeConfig::load(Some(&file), &base).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let logging = &config.kubelet.logging;
    assert_eq!(logging.format, logging::LogFormat::Json);
    assert_eq!(logging.verbosity, 3);
    assert_eq!(logging.vmodule[0].target().unwrap(), "wasmlet::gc");
    let tracing = config.kubelet.tracing.as_ref().unwrap();
    assert_eq!(tracing.endpoint_url(), "http://collector:4317");
    assert_eq!(tracing.sampling_ratio(), 0.25);

    let flags = Overrides {
        logging_format: Some("text".into()),
        verbosity: Some(0),
        vmodule: Some("pod_worker=4, eviction/pressure=2".into()),
        ..base.clone()
    };
    let (config, _) = NodeConfig::load(Some(&file), &flags).unwrap();
    let logging = &config.kubelet.logging;
    assert_eq!(logging.format, logging::LogFormat::Text);
    assert_eq!(logging.verbosity, 0);
    let targets: Vec<_> = logging
        .vmodule
        .iter()
        .map(|v| v.target().unwrap())
        .collect();
    assert_eq!(
        targets,
        ["wasmlet::pod_worker", "wasmlet::eviction::pressure"]
    );

    for (flags, flag) in [
        (
            Overrides {
                logging_format: Some("xml".into()),
                ..base.clone()
            },
            "--logging-format",
        ),
        (
            Overrides {
                vmodule: Some("pod_*=3".into()),
                ..base.clone()
            },
            "--vmodule",
        ),
        (
            Overrides {
                vmodule: Some("gc=high".into()),
                ..base.clone()
            },
            "--vmodule",
        ),
    ] {
        let err = NodeConfig::load(Some(&file), &flags)
            .unwrap_err()
            .to_string();
        assert!(err.contains(flag), "{err}");
    }
}

#[test]
fn bad_logging_and_tracing_fields_are_named() {
    for (body, field) in [
        ("logging: {format: xml}", "logging.format"),
        (
            "logging: {vmodule: [{filePattern: 'a b', verbosity: 2}]}",
            "logging.vmodule",
        ),
        (
            "tracing: {samplingRatePerMillion: 2000000}",
            "tracing.samplingRatePerMillion",
        ),
    ] {
        let text = format!(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n{body}\n"
        );
        let err = match parse(&text) {
            Err(e) => e.to_string(),
            Ok((kubelet, _, _)) => format!("{:?}", kubelet.validate().unwrap_err()),
        };
        assert!(err.contains(field), "{body}: {err}");
    }
}

#[test]
fn vmodule_patterns_map_to_targets() {
    let items = logging::parse_vmodule(
        "pod_worker=2,wasmlet_plugin_host=5,wasmlet::gc::images=1,kuberuntime.rs=3",
    )
    .unwrap();
    let targets: Vec<_> = items.iter().map(|v| v.target().unwrap()).collect();
    assert_eq!(
        targets,
        [
            "wasmlet::pod_worker",
            "wasmlet_plugin_host",
            "wasmlet::gc::images",
            "wasmlet::kuberuntime"
        ]
    );
    assert_eq!(items[1].verbosity, 5);
    for bad in ["gc", "gc=", "=3", "gc=-1", "*=2", "a-b=2", "gc//x=1"] {
        assert!(logging::parse_vmodule(bad).is_err(), "{bad}");
    }
    assert!(logging::parse_vmodule("").unwrap().is_empty());
}
