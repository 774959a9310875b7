//! The container logs API (on the secure port, with a `system:masters` client certificate)
//! and the terminal views (`wasmlet get pods`, `wasmlet logs` reading the CRI files).

use crate::harness::{busybox_pod, container_status, Node};
use std::process::Command;
use std::time::Duration;
use wasmlet_test_support::secure_port::{secure_node, SecureClient, TestPki};

#[test]
fn container_logs_with_tail_timestamps_previous_and_follow() {
    let pki = TestPki::new("logs-ca");
    let node = secure_node("t-logs", &pki);
    let client = SecureClient::new(&node, Some(&pki.client("admin", &["system:masters"])));
    node.write_manifest(
        "lines.yaml",
        &busybox_pod(
            "lines",
            "",
            "for i in 1 2 3 4 5; do echo line $i; done; sleep 0.3; echo oops >&2; exec sleep 3600",
        ),
    );
    node.write_manifest(
        "again.yaml",
        &busybox_pod(
            "again",
            "",
            "echo started $(cat /proc/sys/kernel/random/uuid); sleep 1; exit 1",
        ),
    );
    node.write_manifest(
        "ticker.yaml",
        &busybox_pod(
            "ticker",
            "  restartPolicy: Never\n",
            "i=0; while [ $i -lt 8 ]; do echo tick $i; i=$((i+1)); sleep 0.3; done",
        ),
    );
    node.wait_phase("lines", "Running", Duration::from_secs(30));
    let base = "/containerLogs/default/lines-t-logs/main";
    let all = node.wait_for("the log", Duration::from_secs(10), |_| {
        client.get_ok(base).filter(|t| t.contains("oops"))
    });
    assert_eq!(all, "line 1\nline 2\nline 3\nline 4\nline 5\noops\n");
    assert_eq!(
        client.get_ok(&format!("{base}?tailLines=2")).unwrap(),
        "line 5\noops\n"
    );
    let stamped = client
        .get_ok(&format!("{base}?timestamps=true&tailLines=1"))
        .unwrap();
    let (stamp, rest) = stamped.split_once(' ').unwrap();
    assert!(stamp.starts_with("20") && stamp.ends_with('Z'), "{stamped}");
    assert_eq!(rest, "oops\n");
    assert_eq!(
        client.get_ok(&format!("{base}?sinceSeconds=3600")).unwrap(),
        all
    );
    assert_eq!(
        client.get_ok(&format!("{base}?limitBytes=9")).unwrap(),
        "line 1\nli"
    );
    assert_eq!(
        client
            .get("/containerLogs/default/lines-t-logs/nope")
            .unwrap(),
        (
            404,
            "container \"nope\" not found in pod \"lines-t-logs\"".to_string()
        )
    );
    assert_eq!(client.get(&format!("{base}?limitBytes=0")).unwrap().0, 422);

    // previous: the attempt before the current one.
    node.wait_for("again to restart", Duration::from_secs(30), |n| {
        n.pod("again")
            .filter(|p| container_status(p, "main")["restartCount"].as_i64() >= Some(1))
    });
    let again = "/containerLogs/default/again-t-logs/main";
    let current = node.wait_for("the current attempt's log", Duration::from_secs(10), |_| {
        client.get_ok(again).filter(|t| t.starts_with("started"))
    });
    let previous = client
        .get_ok(&format!("{again}?previous=true"))
        .expect("previous log");
    assert!(previous.starts_with("started "), "{previous}");
    assert_ne!(current, previous);

    // follow: streams until the container exits.
    node.wait_for("ticker to start", Duration::from_secs(30), |n| {
        n.pod("ticker")
            .filter(|p| p["status"]["phase"] == "Running")
    });
    let followed = client
        .get_ok("/containerLogs/default/ticker-t-logs/main?follow=true")
        .expect("follow");
    let expected: String = (0..8).map(|i| format!("tick {i}\n")).collect();
    assert_eq!(followed, expected);
}

#[test]
fn terminal_views_show_pods_and_logs() {
    let node = Node::start("t-terminal");
    node.write_manifest(
        "hello.yaml",
        &busybox_pod(
            "hello",
            "",
            "echo hello from the terminal test; exec sleep 3600",
        ),
    );
    node.wait_phase("hello", "Running", Duration::from_secs(30));
    let server = format!("http://127.0.0.1:{}", node.port);
    let out = Command::new(env!("CARGO_BIN_EXE_wasmlet"))
        .args(["get", "pods", "--server", &server])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    let header = table.lines().next().unwrap();
    assert!(
        header.starts_with("NAMESPACE") && header.contains("RESTARTS"),
        "{table}"
    );
    let row = table
        .lines()
        .find(|l| l.contains("hello-t-terminal"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("1/1") && row.contains("Running"), "{row}");

    // `wasmlet logs` reads the CRI files of the node (podLogsDir), not a port.
    let logs_dir = node.logs_dir().display().to_string();
    let socket = format!("unix://{}", crate::harness::cri_socket().display());
    let wasmlet_logs = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_wasmlet"))
            .arg("logs")
            .args(args)
            .args([
                "--pod-logs-dir",
                &logs_dir,
                "--container-runtime-endpoint",
                &socket,
            ])
            .output()
            .unwrap()
    };
    let text = node.wait_for("the log line", Duration::from_secs(10), |_| {
        let out = wasmlet_logs(&["hello-t-terminal", "--tail", "1"]);
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.is_empty()).then_some(text)
    });
    assert_eq!(text, "hello from the terminal test\n");
    let missing = wasmlet_logs(&["nope"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("not found"));

    // -f follows while the container runs and ends when it exits (the runtime says so).
    node.write_manifest(
        "count.yaml",
        &busybox_pod(
            "count",
            "  restartPolicy: Never\n",
            "sleep 1; for i in 1 2 3; do echo count $i; sleep 0.5; done",
        ),
    );
    node.wait_for("count to start", Duration::from_secs(30), |n| {
        n.pod("count").filter(|p| p["status"]["phase"] == "Running")
    });
    let started = std::time::Instant::now();
    let out = wasmlet_logs(&["count-t-terminal", "-f", "-c", "main"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "count 1\ncount 2\ncount 3\n"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}
