//! `lifecycle-hooks` post-start and pre-stop, scoped to a pod served by a local HTTP server.

use super::*;

fn scope_until(port: u16, deadline: Duration) -> PodScope {
    PodScope {
        pod_ip: "127.0.0.1".into(),
        ports: vec![port],
        containers: vec!["web".into()],
        deadline: Instant::now() + deadline,
        exec: None,
    }
}

#[test]
fn hook_plugins_run_pre_stop_with_the_grace_left_and_post_start() {
    let (port, requests) = counting_server();
    let setup = registry(&format!(
        "{}{}",
        plugin(
            "require-limits",
            "lifecycle-hooks",
            &components::ADMISSION_REQUIRE_LIMITS.path(),
            "  config: {namespaces: [prod]}\n",
        ),
        plugin(
            "drain",
            "lifecycle-hooks",
            &components::HOOKS_DRAIN.path(),
            &format!("  limits: {{deadlineMs: 5000}}\n  config: {{port: {port}, path: /drain, waitMs: 300, reserveMs: 100}}\n"),
        )
    ));
    let meta = || PodMeta {
        namespace: "default".into(),
        name: "web".into(),
        ..Default::default()
    };
    // post-start: both plugins keep the SDK's default (ok).
    setup
        .registry
        .post_start("web", meta(), scope_until(port, Duration::from_secs(2)))
        .expect("post-start");
    // pre-stop: the drain plugin calls the endpoint, then waits its waitMs.
    let started = Instant::now();
    setup
        .registry
        .pre_stop("web", meta(), scope_until(port, Duration::from_secs(5)))
        .expect("pre-stop");
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    assert!(started.elapsed() >= Duration::from_millis(300));
    // A grace period shorter than the wait: the wait is cut to what is left.
    let started = Instant::now();
    setup
        .registry
        .pre_stop("web", meta(), scope_until(port, Duration::from_millis(150)))
        .expect("pre-stop within a short grace");
    assert!(started.elapsed() < Duration::from_millis(1000));
    // A drain endpoint that is down fails the hook with the plugin's reason.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let setup_down = registry(&plugin(
        "drain",
        "lifecycle-hooks",
        &components::HOOKS_DRAIN.path(),
        &format!("  limits: {{deadlineMs: 5000}}\n  config: {{port: {closed}}}\n"),
    ));
    let error = setup_down
        .registry
        .pre_stop("web", meta(), scope_until(closed, Duration::from_secs(5)))
        .expect_err("the drain request cannot connect")
        .to_string();
    assert!(
        error.contains("drain") && error.contains("drain request"),
        "{error}"
    );
}
