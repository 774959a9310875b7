//! Probes on real pods: the Kubernetes documentation's liveness examples shortened to
//! 1-second periods (exec on a file that disappears, httpGet on a server that starts
//! failing), a tcpSocket readiness probe that flips Ready, a startup probe that holds liveness
//! off, a grpc probe against a real grpc.health.v1 server in a container, and the
//! `/metrics/probes` series.

use crate::harness::{condition, container_status, seconds_between, Node};
use serde_json::Value;
use std::time::Duration;

fn restarts(pod: &Value, container: &str) -> i64 {
    container_status(pod, container)["restartCount"]
        .as_i64()
        .unwrap_or(0)
}

/// The node log's probe lines, so a timing failure names what the probes saw.
fn probe_lines(log: &str) -> String {
    log.lines()
        .filter(|line| line.contains("probe"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn running(pod: &Value, container: &str) -> bool {
    container_status(pod, container)["state"]["running"].is_object()
}

/// How many syncs after the first the node's pod workers have run (`/metrics`).
fn later_syncs(node: &Node) -> f64 {
    let metrics = node.try_get("/metrics").expect("/metrics");
    let series = r#"kubelet_pod_worker_duration_seconds_count{operation_type="sync"}"#;
    crate::metrics::value(&metrics, series).unwrap_or(0.0)
}

#[test]
fn exec_liveness_restarts_after_failure_threshold_periods() {
    let node = Node::start("t-live-exec");
    node.write_manifest(
        "liveness-exec.yaml",
        include_str!("pods/probes-liveness-exec.yaml"),
    );
    let pod = node.wait_for("a liveness restart", Duration::from_secs(60), |n| {
        n.pod("liveness-exec")
            .filter(|p| restarts(p, "liveness") >= 1)
    });
    let status = container_status(&pod, "liveness");
    let killed = &status["lastState"]["terminated"];
    assert!(
        killed.is_object(),
        "the killed container is lastState: {status}"
    );
    // The file goes at 3 s; two failures one period apart follow before the kill.
    let lived = seconds_between(&killed["startedAt"], &killed["finishedAt"]);
    assert!(
        lived >= 4.0,
        "killed after {lived} s, before failureThreshold x periodSeconds of failures"
    );
    assert!(
        node.log().contains("failed its liveness probe"),
        "the kill is logged with its reason"
    );
    // It runs again (restartPolicy Always), and the probe watches the new container.
    node.wait_for(
        "the restarted container to run",
        Duration::from_secs(30),
        |n| {
            n.pod("liveness-exec")
                .filter(|p| running(p, "liveness") && restarts(p, "liveness") >= 1)
        },
    );

    // Upstream's metric names and labels at /metrics/probes.
    let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    let metrics = node.try_get("/metrics/probes").expect("/metrics/probes");
    let failed = format!(
        "prober_probe_total{{probe_type=\"Liveness\",result=\"failed\",container=\"liveness\",pod=\"liveness-exec-t-live-exec\",namespace=\"default\",pod_uid=\"{uid}\"}}"
    );
    let line = metrics
        .lines()
        .find(|l| l.starts_with(&failed))
        .unwrap_or_else(|| panic!("{failed} missing in\n{metrics}"));
    let count: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(count >= 2.0, "{line}");
    assert!(metrics.contains("prober_probe_total{probe_type=\"Liveness\",result=\"successful\""));
    assert!(metrics.contains("# TYPE prober_probe_duration_seconds histogram"));
    assert!(
        metrics
            .contains("prober_probe_duration_seconds_bucket{le=\"0.005\",probe_type=\"Liveness\"")
            || metrics.contains("prober_probe_duration_seconds_bucket{probe_type=\"Liveness\""),
        "{metrics}"
    );

    // A removed pod's series go with it.
    node.remove_manifest("liveness-exec.yaml");
    node.wait_for("the pod's series to go", Duration::from_secs(30), |n| {
        let text = n.try_get("/metrics/probes")?;
        (n.pod("liveness-exec").is_none() && !text.contains(&uid)).then_some(())
    });
}

#[test]
fn http_liveness_restarts_a_server_that_starts_failing() {
    let node = Node::start("t-live-http");
    node.write_manifest(
        "liveness-http.yaml",
        include_str!("pods/probes-liveness-http.yaml"),
    );
    let pod = node.wait_for("a liveness restart", Duration::from_secs(60), |n| {
        n.pod("liveness-http")
            .filter(|p| restarts(p, "liveness") >= 1)
    });
    let killed = &container_status(&pod, "liveness")["lastState"]["terminated"];
    let lived = seconds_between(&killed["startedAt"], &killed["finishedAt"]);
    assert!(
        lived >= 4.0,
        "killed after {lived} s; the probe results:\n{}",
        probe_lines(&node.log())
    );
    let log = node.log();
    assert!(
        log.contains("HTTP probe failed with statuscode: 404"),
        "the reason is upstream's message"
    );
    assert!(log.contains("failed its liveness probe"));
}

#[test]
fn tcp_readiness_flips_ready() {
    let node = Node::start("t-ready-tcp");
    node.write_manifest("ready.yaml", include_str!("pods/probes-ready.yaml"));
    // Running but not ready: nothing listens yet.
    let pod = node.wait_for(
        "a running, unready container",
        Duration::from_secs(30),
        |n| n.pod("ready").filter(|p| running(p, "server")),
    );
    assert_eq!(container_status(&pod, "server")["ready"], false, "{pod}");
    assert_eq!(condition(&pod, "Ready"), "False");
    assert_eq!(condition(&pod, "ContainersReady"), "False");
    assert_eq!(pod["status"]["phase"], "Running");
    // The server listens: Ready.
    let pod = node.wait_for("Ready", Duration::from_secs(30), |n| {
        n.pod("ready").filter(|p| condition(p, "Ready") == "True")
    });
    assert_eq!(container_status(&pod, "server")["ready"], true);
    assert_eq!(condition(&pod, "ContainersReady"), "True");
    // Only the first sync ran. The PLEG reported the starts of the sandbox and the container
    // within its 100 ms relists, but the worker had started both and shows them; readiness
    // changes the status only, which is published on the last runtime view (a sync would
    // read the runtime again).
    assert_eq!(later_syncs(&node), 0.0, "{}", node.log_tail());
    // The server stops: not Ready again, and nothing restarts (readiness never kills).
    let pod = node.wait_for("not Ready again", Duration::from_secs(30), |n| {
        n.pod("ready").filter(|p| condition(p, "Ready") == "False")
    });
    assert!(running(&pod, "server"));
    assert_eq!(restarts(&pod, "server"), 0);
}

#[test]
fn startup_probe_holds_liveness_off() {
    let node = Node::start("t-startup");
    // Liveness would kill the container at once if it ran before the startup probe passed.
    node.write_manifest("slow.yaml", include_str!("pods/probes-slow.yaml"));
    let pod = node.wait_for("running, not started", Duration::from_secs(30), |n| {
        n.pod("slow").filter(|p| running(p, "app"))
    });
    let status = container_status(&pod, "app");
    assert_eq!(status["started"], false, "{status}");
    assert_eq!(status["ready"], false, "{status}");
    let pod = node.wait_for("started and ready", Duration::from_secs(40), |n| {
        n.pod("slow").filter(|p| {
            let s = container_status(p, "app");
            s["started"] == true && s["ready"] == true
        })
    });
    assert_eq!(restarts(&pod, "app"), 0, "liveness held off: {pod}");
    std::thread::sleep(Duration::from_secs(2));
    let pod = node.pod("slow").unwrap();
    assert_eq!(restarts(&pod, "app"), 0, "liveness passes once started");
    let metrics = node.try_get("/metrics/probes").unwrap();
    assert!(
        !metrics.contains("probe_type=\"Liveness\",result=\"failed\""),
        "liveness never ran before startup passed:\n{metrics}"
    );
    assert!(metrics.contains("probe_type=\"Startup\",result=\"failed\""));
    assert!(metrics.contains("probe_type=\"Startup\",result=\"successful\""));
}

#[test]
fn grpc_probes_against_a_health_server() {
    let node = Node::start("t-grpc");
    assert!(
        node.image_present("docker.io/library/wasmlet-test:local"),
        "wasmlet-test:local with grpc_health_server is missing: scripts/test.sh builds it \
         (WASMLET_EXTRA_IMAGE_FILES=target/test-image/grpc_health_server scripts/setup-node.sh)"
    );
    // The server answers SERVING for 10 s from its start, then NOT_SERVING. Under load it may
    // take seconds to listen: the startup probe holds liveness off until it answers.
    node.write_manifest("grpc.yaml", include_str!("pods/probes-grpc.yaml"));
    node.wait_for("Ready through grpc", Duration::from_secs(30), |n| {
        n.pod("grpc").filter(|p| condition(p, "Ready") == "True")
    });
    let pod = node.wait_for("a liveness restart", Duration::from_secs(60), |n| {
        n.pod("grpc").filter(|p| restarts(p, "server") >= 1)
    });
    let killed = &container_status(&pod, "server")["lastState"]["terminated"];
    let lived = seconds_between(&killed["startedAt"], &killed["finishedAt"]);
    assert!(
        lived >= 10.0,
        "killed after {lived} s, while still serving; the probe results:\n{}",
        probe_lines(&node.log())
    );
    assert!(
        node.log()
            .contains("service unhealthy (responded with \\\"NOT_SERVING\\\")")
            || node
                .log()
                .contains("service unhealthy (responded with \"NOT_SERVING\")"),
        "upstream's grpc failure message"
    );
}

#[test]
fn grpc_probe_of_an_unknown_service_fails() {
    let node = Node::start("t-grpc-unknown");
    assert!(node.image_present("docker.io/library/wasmlet-test:local"));
    node.write_manifest(
        "grpc-unknown.yaml",
        include_str!("pods/probes-grpc-unknown.yaml"),
    );
    node.wait_for("running", Duration::from_secs(30), |n| {
        n.pod("grpc-unknown").filter(|p| running(p, "server"))
    });
    node.wait_for(
        "the NotFound failure counted",
        Duration::from_secs(20),
        |n| {
            let metrics = n.try_get("/metrics/probes")?;
            metrics
                .contains("probe_type=\"Readiness\",result=\"failed\",container=\"server\"")
                .then_some(())
        },
    );
    // The first failure may still be "connection refused" while the server starts.
    node.wait_for(
        "upstream's NotFound message",
        Duration::from_secs(20),
        |n| {
            n.log()
                .contains("health rpc probe failed: NotFound")
                .then_some(())
        },
    );
    let pod = node.pod("grpc-unknown").unwrap();
    assert_eq!(condition(&pod, "Ready"), "False");
}

#[test]
fn exec_probe_past_its_timeout_fails() {
    let node = Node::start("t-exec-timeout");
    node.write_manifest("slow-exec.yaml", include_str!("pods/probes-slow-exec.yaml"));
    node.wait_for(
        "the timeout counted as a failure",
        Duration::from_secs(30),
        |n| {
            let metrics = n.try_get("/metrics/probes")?;
            metrics
                .contains("probe_type=\"Readiness\",result=\"failed\",container=\"main\"")
                .then_some(())
        },
    );
    let pod = node.pod("slow-exec").unwrap();
    assert_eq!(condition(&pod, "Ready"), "False");
    assert!(
        node.log().contains("timed out after 1s"),
        "the reason names the timeout"
    );
}

#[test]
fn failed_startup_probe_kills_with_the_probes_own_grace_period() {
    let node = Node::start("t-startup-fail");
    // The pod's grace is 60 s and sleep as PID 1 ignores SIGTERM: only the probe's own
    // terminationGracePeriodSeconds (2 s) lets the restart come this soon.
    node.write_manifest("never.yaml", include_str!("pods/probes-never.yaml"));
    let pod = node.wait_for(
        "a restart after the startup probe failed",
        Duration::from_secs(25),
        |n| n.pod("never").filter(|p| restarts(p, "app") >= 1),
    );
    let killed = &container_status(&pod, "app")["lastState"]["terminated"];
    let lived = seconds_between(&killed["startedAt"], &killed["finishedAt"]);
    assert!(
        lived < 20.0,
        "stopped with the probe's 2 s, not the pod's 60 s: {lived} s"
    );
    let log = node.log();
    assert!(
        log.contains("failed its startup probe"),
        "the kill is logged"
    );
    assert!(
        log.contains("grace_s=2"),
        "StopContainer got the probe's grace"
    );
}
