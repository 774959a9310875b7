use super::*;

const FILE: &str = "/etc/wasmlet/plugins.yaml";

/// The `plugin_config` fuzz target's crash (fuzz/README.md): an anchor on a key YAML
/// cannot scan left an empty place in the error.
#[test]
fn a_yaml_scan_error_is_placed_in_the_file() {
    let error = parse(Path::new(FILE), "&d:\n}").unwrap_err();
    assert_eq!(error.place, "(file)", "{error}");
    assert!(error.message.contains("line 2, column 1"), "{error}");
}

#[test]
fn parses_the_documented_shape() {
    let specs = parse(
        Path::new(FILE),
        concat!(
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n",
            "- name: eviction-batch-first\n  world: eviction-policy\n  path: eviction_batch_first.wasm\n",
            "  limits: {deadlineMs: 20, memoryMiB: 16}\n  config: {protectNamespaces: [kube-system]}\n",
        ),
    )
    .unwrap();
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].world, World::EvictionPolicy);
    assert_eq!(
        specs[0].path,
        Path::new("/etc/wasmlet/eviction_batch_first.wasm")
    );
    assert_eq!(
        specs[0].limits,
        Limits {
            deadline_ms: 20,
            memory_mib: 16,
            fuel: None
        }
    );
    assert_eq!(
        specs[0].config_json,
        r#"{"protectNamespaces":["kube-system"]}"#
    );
    assert_eq!(specs[0].capabilities, Capabilities::default());
}

#[test]
fn capabilities_grant_directories_read_only_by_default() {
    let specs = parse(
        Path::new(FILE),
        concat!(
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n",
            "- name: gc\n  world: gc-strategy\n  path: gc.wasm\n  capabilities:\n",
            "    directories:\n    - hostPath: keep\n      guestPath: /keep\n",
            "    - {hostPath: /var/lib/scratch, writable: true}\n",
            "    environment: {MODE: strict}\n",
        ),
    )
    .unwrap();
    let grants = &specs[0].capabilities;
    assert_eq!(
        grants.directories[0].host_path,
        Path::new("/etc/wasmlet/keep")
    );
    assert_eq!(grants.directories[0].guest_path(), "/keep");
    assert!(!grants.directories[0].writable);
    assert_eq!(grants.directories[1].guest_path(), "/var/lib/scratch");
    assert!(grants.directories[1].writable);
    assert_eq!(grants.environment["MODE"], "strict");
    let err = |grant: &str| {
        parse(
            Path::new(FILE),
            &format!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: gc\n  world: gc-strategy\n  path: gc.wasm\n  capabilities: {grant}\n"
            ),
        )
        .unwrap_err()
    };
    let e = err("{directories: [{hostPath: /a, guestPath: rel}]}");
    assert_eq!(
        e.place,
        "plugins[0] (gc).capabilities.directories[0].guestPath"
    );
    let e = err("{network: true}");
    assert!(e.place.starts_with("plugins[0] (gc).capabilities"), "{e}");
    assert!(e.message.contains("unknown field `network`"), "{e}");
    let e = err("{directories: [{hostPath: /a, readOnly: false}]}");
    assert!(e.message.contains("unknown field `readOnly`"), "{e}");
}

#[test]
fn exec_grants_and_selectors_are_checked_per_world() {
    let parse_one = |world: &str, extra: &str| {
        parse(
            Path::new(FILE),
            &format!(
                "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: p\n  world: {world}\n  path: p.wasm\n{extra}"
            ),
        )
    };
    let specs = parse_one(
        "lifecycle-hooks",
        "  capabilities: {exec: [main, '*']}\n  selector: {namespaces: [prod], matchLabels: {team: a}}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(specs[0].capabilities.may_exec_in("anything"));
    assert_eq!(
        specs[0].selector.as_ref().map(|s| s.namespaces.len()),
        Some(1)
    );
    let specs = parse_one("probe-handler", "  capabilities: {exec: [main]}\n")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(specs[0].capabilities.may_exec_in("main"));
    assert!(!specs[0].capabilities.may_exec_in("side"));
    assert!(
        !Capabilities::default().may_exec_in("main"),
        "none by default"
    );
    let place = |world: &str, extra: &str| match parse_one(world, extra) {
        Ok(_) => panic!("{world} {extra} was accepted"),
        Err(e) => e.place,
    };
    assert_eq!(
        place("eviction-policy", "  capabilities: {exec: [main]}\n"),
        "plugins[0] (p).capabilities.exec"
    );
    assert_eq!(
        place("probe-handler", "  capabilities: {exec: [Main_1]}\n"),
        "plugins[0] (p).capabilities.exec[0]"
    );
    assert_eq!(
        place("probe-handler", "  selector: {namespaces: [a]}\n"),
        "plugins[0] (p).selector"
    );
    assert_eq!(
        place(
            "lifecycle-hooks",
            "  selector: {matchExpressions: [{key: a, operator: In}]}\n"
        ),
        "plugins[0] (p).selector.matchExpressions[0].values"
    );
    assert!(place("lifecycle-hooks", "  selector: {labels: {a: b}}\n")
        .starts_with("plugins[0] (p).selector"));
}

#[test]
fn errors_name_the_plugin_and_field() {
    let err = parse(
        Path::new(FILE),
        concat!(
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n",
            "- name: ok\n  world: gc-strategy\n  path: a.wasm\n",
            "- name: bad\n  world: eviction-policy\n  path: b.wasm\n  limits: {deadlineMs: 0}\n",
        ),
    )
    .unwrap_err();
    assert_eq!(err.place, "plugins[1] (bad).limits.deadlineMs");
    let err = parse(
        Path::new(FILE),
        "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: w\n  world: weather\n  path: a.wasm\n",
    )
    .unwrap_err();
    assert!(err.place.starts_with("plugins[0] (w).world"), "{err}");
}

#[test]
fn one_eviction_and_one_shadow_but_many_hook_plugins() {
    let text = |entries: &str| {
        format!("apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{entries}")
    };
    let specs = parse(
        Path::new(FILE),
        &text(concat!(
            "- name: active\n  world: eviction-policy\n  path: a.wasm\n",
            "- name: trial\n  world: eviction-policy\n  path: b.wasm\n  shadow: true\n",
            "- name: admit\n  world: lifecycle-hooks\n  path: c.wasm\n",
            "- name: drain\n  world: lifecycle-hooks\n  path: d.wasm\n",
        )),
    )
    .expect("valid");
    assert!(specs[1].shadow && !specs[0].shadow);
    let err = parse(
        Path::new(FILE),
        &text(concat!(
            "- name: one\n  world: eviction-policy\n  path: a.wasm\n",
            "- name: two\n  world: eviction-policy\n  path: b.wasm\n",
        )),
    )
    .unwrap_err();
    assert_eq!(err.place, "plugins[1] (two).world");
    let err = parse(
        Path::new(FILE),
        &text("- name: g\n  world: gc-strategy\n  path: a.wasm\n  shadow: true\n"),
    )
    .unwrap_err();
    assert_eq!(err.place, "plugins[0] (g).shadow");
}

#[test]
fn rollout_is_for_serving_eviction_plugins_with_at_least_one_cycle() {
    let text = |world: &str, extra: &str| {
        format!(
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: p\n  world: {world}\n  path: a.wasm\n{extra}"
        )
    };
    let specs = parse(
        Path::new(FILE),
        &text(
            "eviction-policy",
            "  rollout: {shadowCycles: 20, maxDisagreements: 2}\n",
        ),
    )
    .unwrap();
    assert_eq!(
        specs[0].rollout,
        Some(Rollout {
            shadow_cycles: 20,
            max_disagreements: Some(2)
        })
    );
    let specs = parse(
        Path::new(FILE),
        &text("eviction-policy", "  rollout: {shadowCycles: 1}\n"),
    )
    .unwrap();
    assert_eq!(specs[0].rollout.and_then(|r| r.max_disagreements), None);
    let err = |world: &str, extra: &str| parse(Path::new(FILE), &text(world, extra)).unwrap_err();
    let e = err("gc-strategy", "  rollout: {shadowCycles: 3}\n");
    assert_eq!(e.place, "plugins[0] (p).rollout");
    assert!(e.message.contains("only an eviction-policy plugin"), "{e}");
    let e = err("eviction-policy", "  rollout: {shadowCycles: 0}\n");
    assert_eq!(e.place, "plugins[0] (p).rollout.shadowCycles");
    let e = err(
        "eviction-policy",
        "  shadow: true\n  rollout: {shadowCycles: 3}\n",
    );
    assert_eq!(e.place, "plugins[0] (p).rollout");
    let e = err("eviction-policy", "  rollout: {maxDisagreements: 3}\n");
    assert!(e.place.starts_with("plugins[0] (p).rollout"), "{e}");
    assert!(e.message.contains("shadowCycles"), "{e}");
    let e = err(
        "eviction-policy",
        "  rollout: {shadowCycles: 3, cycles: 4}\n",
    );
    assert!(e.message.contains("unknown field `cycles`"), "{e}");
    let e = err("eviction-policy", "  rollout: {shadowCycles: -1}\n");
    assert_eq!(e.place, "plugins[0] (p).rollout.shadowCycles");
}

#[test]
fn oci_paths_parse_into_sources() {
    let text = |entry: &str| {
        format!(
            "apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n- name: p\n  world: eviction-policy\n{entry}"
        )
    };
    let specs = parse(
        Path::new(FILE),
        &text("  path: oci://registry.example:5000/plugins/evict:v2\n  pollPeriod: 30s\n  insecure: true\n  verify: {publicKey: keys/cosign.pub}\n  registryConfig: /etc/wasmlet/docker.json\n"),
    )
    .unwrap();
    let with_ca = parse(
        Path::new(FILE),
        &text("  path: oci://127.0.0.1:5000/plugins/evict:v2\n  caFile: certs/ca.pem\n"),
    )
    .unwrap();
    let PluginSource::Oci(tls) = &with_ca[0].source else {
        panic!("not an OCI source: {:?}", with_ca[0].source)
    };
    assert_eq!(
        tls.ca_file.as_deref(),
        Some(Path::new("/etc/wasmlet/certs/ca.pem"))
    );
    assert!(
        !tls.access().plain_http(&tls.reference),
        "a CA file asks for HTTPS"
    );
    let PluginSource::Oci(source) = &specs[0].source else {
        panic!("not an OCI source: {:?}", specs[0].source)
    };
    assert_eq!(source.reference.registry(), "registry.example:5000");
    assert_eq!(source.reference.tag(), Some("v2"));
    assert_eq!(source.poll_period, std::time::Duration::from_secs(30));
    assert!(source.insecure);
    assert_eq!(
        source.public_key.as_deref(),
        Some(Path::new("/etc/wasmlet/keys/cosign.pub"))
    );
    assert_eq!(
        specs[0].path,
        Path::new("oci://registry.example:5000/plugins/evict:v2")
    );
    let specs = parse(Path::new(FILE), &text("  path: oci://r.example/p:v1\n")).unwrap();
    let PluginSource::Oci(source) = &specs[0].source else {
        panic!()
    };
    assert_eq!(source.poll_period, DEFAULT_POLL_PERIOD);
    assert!(!source.insecure && source.public_key.is_none());

    let err = |entry: &str| parse(Path::new(FILE), &text(entry)).unwrap_err();
    let e = err("  path: oci://plugins/evict:v1\n");
    assert_eq!(e.place, "plugins[0] (p).path");
    assert!(e.message.contains("name the registry"), "{e}");
    let digest = format!("oci://r.example/p@sha256:{}", "a".repeat(64));
    let e = err(&format!("  path: {digest}\n  pollPeriod: 1m\n"));
    assert_eq!(e.place, "plugins[0] (p).pollPeriod");
    let e = err("  path: oci://r.example/p:v1\n  pollPeriod: soon\n");
    assert!(e.message.contains("not a duration"), "{e}");
    let e = err("  path: a.wasm\n  insecure: true\n");
    assert_eq!(e.place, "plugins[0] (p).insecure");
    let e = err("  path: a.wasm\n  caFile: ca.pem\n");
    assert_eq!(e.place, "plugins[0] (p).caFile");
    assert!(e.message.contains("oci://"), "{e}");
    let e = err("  path: oci://r.example/p:v1\n  insecure: true\n  caFile: ca.pem\n");
    assert_eq!(e.place, "plugins[0] (p).caFile");
    assert!(e.message.contains("plain HTTP"), "{e}");
    let e = err("  path: a.wasm\n  verify: {publicKey: k.pub}\n");
    assert_eq!(e.place, "plugins[0] (p).verify");
    let e = err("  path: oci://r.example/p:v1\n  verify: {key: k.pub}\n");
    assert!(e.message.contains("unknown field `key`"), "{e}");
}
