//! `probe-handler` plugins: scoped http-get, and the probe's timeout as the deadline.

use super::*;

#[test]
fn probe_plugin_checks_a_json_health_body_with_scoped_http() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let healthy = Arc::new(AtomicBool::new(true));
    let serving = healthy.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 1024];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let body = if serving.load(Ordering::SeqCst) {
                r#"{"status":"ok"}"#
            } else {
                r#"{"status":"degraded"}"#
            };
            let reply = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
            let _ = std::io::Write::write_all(&mut stream, reply.as_bytes());
        }
    });
    let setup = registry(&plugin(
        "probe-json-health",
        "probe-handler",
        &components::PROBE_JSON_HEALTH.path(),
        "  limits: {deadlineMs: 2000}\n",
    ));
    let request = ProbeRequest {
        args: format!(
            r#"{{"port": {port}, "path": "/health", "field": "status", "expected": "ok"}}"#
        ),
        timeout_ms: 1000,
        pod_ip: "127.0.0.1".into(),
        ports: vec![port],
        containers: vec!["app".into()],
        container: "app".into(),
        kind: ProbeKind::Readiness,
    };
    let scope = || PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![port],
        containers: vec!["app".into()],
        deadline: Instant::now() + Duration::from_secs(2),
        exec: None,
    };
    let result = setup.registry.probe("probe-json-health", &request, scope());
    assert_eq!(result.outcome, ProbeOutcome::Success, "{}", result.message);
    healthy.store(false, Ordering::SeqCst);
    let result = setup.registry.probe("probe-json-health", &request, scope());
    assert_eq!(result.outcome, ProbeOutcome::Failure, "{}", result.message);
    // Scoped: another address is out of reach whatever the plugin asks.
    let mut elsewhere = scope();
    elsewhere.pod_ip = "127.0.0.2".into();
    let result = setup
        .registry
        .probe("probe-json-health", &request, elsewhere);
    assert_eq!(result.outcome, ProbeOutcome::Failure);
}

#[test]
fn a_probe_plugin_runs_until_the_earlier_of_its_deadline_and_the_probe_timeout() {
    let faulty = |deadline_ms: u64| {
        registry(&plugin(
            "faulty",
            "probe-handler",
            &components::GUEST_PROBE_FAULT.path(),
            &format!("  limits: {{deadlineMs: {deadline_ms}}}\n"),
        ))
    };
    let request = |fault: &str, timeout_ms: u32| ProbeRequest {
        args: format!(r#"{{"fault": "{fault}"}}"#),
        timeout_ms,
        pod_ip: "127.0.0.1".into(),
        ports: vec![],
        containers: vec!["main".into()],
        container: "main".into(),
        kind: ProbeKind::Liveness,
    };
    let scope = |timeout| PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![],
        containers: vec!["main".into()],
        deadline: Instant::now() + timeout,
        exec: None,
    };
    let setup = faulty(20);
    let ok = setup.registry.probe(
        "faulty",
        &request("none", 500),
        scope(Duration::from_millis(500)),
    );
    assert_eq!(ok.outcome, ProbeOutcome::Success, "{}", ok.message);
    // The plugin's 20 ms come before the probe's 300 ms.
    let started = Instant::now();
    let spun = setup.registry.probe(
        "faulty",
        &request("loop", 300),
        scope(Duration::from_millis(300)),
    );
    let took = started.elapsed();
    assert_eq!(spun.outcome, ProbeOutcome::Failure);
    assert!(spun.message.contains("20 ms deadline"), "{}", spun.message);
    assert!(
        took < Duration::from_millis(250),
        "the plugin's 20 ms, not the probe's 300 ms: {took:?}"
    );
    // The probe's 300 ms come before the plugin's 5 s.
    let setup = faulty(5000);
    let started = Instant::now();
    let spun = setup.registry.probe(
        "faulty",
        &request("loop", 300),
        scope(Duration::from_millis(300)),
    );
    let took = started.elapsed();
    assert_eq!(spun.outcome, ProbeOutcome::Failure);
    assert!(spun.message.contains("deadline"), "{}", spun.message);
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_millis(2000),
        "the probe's 300 ms, not the plugin's 5 s: {took:?}"
    );
    let missing = setup.registry.probe(
        "nope",
        &request("none", 100),
        scope(Duration::from_millis(100)),
    );
    assert_eq!(missing.outcome, ProbeOutcome::Failure);
    assert!(missing.message.contains("\"nope\""), "{}", missing.message);
}
