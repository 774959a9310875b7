//! The container logs API and the terminal views (`wasmlet get pods`, `wasmlet logs`).

use crate::harness::{busybox_pod, container_status, Node};
use std::process::Command;
use std::time::Duration;

#[test]
fn container_logs_with_tail_timestamps_previous_and_follow() {
    let node = Node::start("t-logs");
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
    let all = node.wait_for("the log", Duration::from_secs(10), |n| {
        n.try_get(base).filter(|t| t.contains("oops"))
    });
    assert_eq!(all, "line 1\nline 2\nline 3\nline 4\nline 5\noops\n");
    assert_eq!(
        node.try_get(&format!("{base}?tailLines=2")).unwrap(),
        "line 5\noops\n"
    );
    let stamped = node
        .try_get(&format!("{base}?timestamps=true&tailLines=1"))
        .unwrap();
    let (stamp, rest) = stamped.split_once(' ').unwrap();
    assert!(stamp.starts_with("20") && stamp.ends_with('Z'), "{stamped}");
    assert_eq!(rest, "oops\n");
    assert_eq!(
        node.try_get(&format!("{base}?sinceSeconds=3600")).unwrap(),
        all
    );
    assert_eq!(
        node.try_get(&format!("{base}?limitBytes=9")).unwrap(),
        "line 1\nli"
    );
    assert!(
        node.try_get("/containerLogs/default/lines-t-logs/nope")
            .is_none(),
        "unknown container is an error"
    );

    // previous: the attempt before the current one.
    node.wait_for("again to restart", Duration::from_secs(30), |n| {
        n.pod("again")
            .filter(|p| container_status(p, "main")["restartCount"].as_i64() >= Some(1))
    });
    let again = "/containerLogs/default/again-t-logs/main";
    let current = node.wait_for("the current attempt's log", Duration::from_secs(10), |n| {
        n.try_get(again).filter(|t| t.starts_with("started"))
    });
    let previous = node
        .try_get(&format!("{again}?previous=true"))
        .expect("previous log");
    assert!(previous.starts_with("started "), "{previous}");
    assert_ne!(current, previous);

    // follow: streams until the container exits.
    node.wait_for("ticker to start", Duration::from_secs(30), |n| {
        n.pod("ticker")
            .filter(|p| p["status"]["phase"] == "Running")
    });
    let followed = ureq::get(&format!(
        "http://127.0.0.1:{}/containerLogs/default/ticker-t-logs/main?follow=true",
        node.port
    ))
    .timeout(Duration::from_secs(30))
    .call()
    .expect("follow")
    .into_string()
    .expect("body");
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

    let text = node.wait_for("the log line", Duration::from_secs(10), |_| {
        let out = Command::new(env!("CARGO_BIN_EXE_wasmlet"))
            .args([
                "logs",
                "hello-t-terminal",
                "--tail",
                "1",
                "--server",
                &server,
            ])
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.is_empty()).then_some(text)
    });
    assert_eq!(text, "hello from the terminal test\n");
    let missing = Command::new(env!("CARGO_BIN_EXE_wasmlet"))
        .args(["logs", "nope", "--server", &server])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("not found"));
}
