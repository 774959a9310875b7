//! What a probe or hook plugin reaches of its pod: the ports the pod declares, `exec` only in
//! the containers its entry grants, and (hooks and admission) only the pods its selector
//! selects. `guest_pod_access` answers success when the host let its call through and failure
//! with the host's refusal otherwise.

use super::*;
use std::sync::atomic::AtomicUsize;
use wasmlet_plugin_host::{ExecFn, ExecOutput};

/// An exec that counts the commands that reached it.
fn counting_exec() -> (ExecFn, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let exec: ExecFn = Arc::new(move |_: &str, _: &[String], _: Duration| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(ExecOutput::default())
    });
    (exec, count)
}

#[test]
fn a_plugin_reaches_only_declared_ports_and_granted_containers() {
    let (declared, _) = counting_server();
    let (undeclared, _) = counting_server();
    let reach = components::GUEST_POD_ACCESS.path();
    let setup = registry(&format!(
        "{}{}{}",
        plugin("no-grant", "probe-handler", &reach, ""),
        plugin(
            "main-only",
            "probe-handler",
            &reach,
            "  capabilities: {exec: [main]}\n"
        ),
        plugin(
            "every-container",
            "probe-handler",
            &reach,
            "  capabilities: {exec: ['*']}\n"
        ),
    ));
    let (exec, execs) = counting_exec();
    let scope = || PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![declared],
        containers: vec!["main".into(), "side".into()],
        deadline: Instant::now() + Duration::from_secs(5),
        exec: Some(exec.clone()),
    };
    let probe = |plugin: &str, args: String| {
        let request = ProbeRequest {
            args,
            timeout_ms: 5000,
            pod_ip: "127.0.0.1".into(),
            ports: vec![declared],
            containers: vec!["main".into(), "side".into()],
            container: "main".into(),
            kind: ProbeKind::Readiness,
        };
        setup.registry.probe(plugin, &request, scope())
    };

    // Ports: the declared one answers; another port on the same address is refused by the
    // host before any connection is made, for http-get and tcp-connect alike.
    let ok = probe("no-grant", format!(r#"{{"http": {declared}}}"#));
    assert_eq!(ok.outcome, ProbeOutcome::Success, "{}", ok.message);
    let ok = probe("no-grant", format!(r#"{{"tcp": {declared}}}"#));
    assert_eq!(ok.outcome, ProbeOutcome::Success, "{}", ok.message);
    for args in [
        format!(r#"{{"http": {undeclared}}}"#),
        format!(r#"{{"tcp": {undeclared}}}"#),
    ] {
        let refused = probe("no-grant", args.clone());
        assert_eq!(refused.outcome, ProbeOutcome::Failure, "{args}");
        assert!(
            refused
                .message
                .contains(&format!("port {undeclared} is not declared")),
            "{args}: {}",
            refused.message
        );
    }

    // exec: none without a grant, only the granted container with one, any with "*", and
    // never a container the pod does not have.
    let refused = probe("no-grant", r#"{"exec": "main"}"#.into());
    assert_eq!(refused.outcome, ProbeOutcome::Failure);
    assert!(
        refused.message.contains("capabilities.exec"),
        "{}",
        refused.message
    );
    assert_eq!(execs.load(Ordering::SeqCst), 0, "refused before CRI");
    let ok = probe("main-only", r#"{"exec": "main"}"#.into());
    assert_eq!(ok.outcome, ProbeOutcome::Success, "{}", ok.message);
    assert_eq!(execs.load(Ordering::SeqCst), 1);
    let refused = probe("main-only", r#"{"exec": "side"}"#.into());
    assert_eq!(refused.outcome, ProbeOutcome::Failure);
    assert!(
        refused.message.contains("not granted"),
        "{}",
        refused.message
    );
    let ok = probe("every-container", r#"{"exec": "side"}"#.into());
    assert_eq!(ok.outcome, ProbeOutcome::Success, "{}", ok.message);
    let refused = probe("every-container", r#"{"exec": "elsewhere"}"#.into());
    assert_eq!(refused.outcome, ProbeOutcome::Failure);
    assert!(
        refused.message.contains("not a container of this pod"),
        "{}",
        refused.message
    );
    assert_eq!(execs.load(Ordering::SeqCst), 2);
    let report = setup.registry.report();
    assert_eq!(report["plugins"][1]["exec"], serde_json::json!(["main"]));
}

#[test]
fn hook_and_admission_plugins_run_only_for_the_pods_their_selector_selects() {
    let (drain_port, drains) = counting_server();
    let setup = registry(&format!(
        "{}{}",
        plugin(
            "require-limits",
            "lifecycle-hooks",
            &components::ADMISSION_REQUIRE_LIMITS.path(),
            "  config: {namespaces: [prod]}\n  selector: {matchLabels: {team: a}}\n",
        ),
        plugin(
            "drain",
            "lifecycle-hooks",
            &components::HOOKS_DRAIN.path(),
            &format!(
                "  config: {{port: {drain_port}, path: /drain, waitMs: 0, reserveMs: 0}}\n  selector:\n    namespaces: [prod]\n    matchExpressions: [{{key: tier, operator: In, values: [web]}}]\n"
            ),
        ),
    ));
    let meta = |labels: &[(&str, &str)]| PodMeta {
        namespace: "prod".into(),
        name: "web".into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    };
    let greedy = AdmissionPod {
        priority: 0,
        qos: policy::QosClass::BestEffort,
        is_static: false,
        is_critical: false,
        containers: vec![AdmissionContainer {
            name: "greedy".into(),
            ..Default::default()
        }],
    };
    let (reason, _) = setup
        .registry
        .admit(&greedy, meta(&[("team", "a")]))
        .expect_err("team a's pod is the plugin's to refuse");
    assert!(reason.contains("greedy"), "{reason}");
    let by = setup
        .registry
        .admit(&greedy, meta(&[("team", "b")]))
        .expect("another team's pod is not the plugin's");
    assert!(matches!(by, DecidedBy::BuiltIn { .. }), "{by:?}");

    let scope = || PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![drain_port],
        containers: vec!["web".into()],
        deadline: Instant::now() + Duration::from_secs(5),
        exec: None,
    };
    setup
        .registry
        .pre_stop("web", meta(&[("tier", "db")]), scope())
        .expect("not selected: nothing runs");
    assert_eq!(drains.load(Ordering::SeqCst), 0);
    setup
        .registry
        .pre_stop("web", meta(&[("tier", "web")]), scope())
        .expect("selected: the drain runs");
    assert_eq!(drains.load(Ordering::SeqCst), 1);
    assert_eq!(
        setup.registry.report()["plugins"][0]["selector"]["matchLabels"],
        serde_json::json!({"team": "a"})
    );
}
