//! Lifecycle hooks on real pods: postStart writes a file the container sees; a failing
//! postStart kills the container; preStop runs before SIGTERM and its time is taken from the
//! grace period; the sleep action.

use crate::harness::{container_status, event_time, Node};
use std::time::Duration;

/// A hostPath directory the test reads what the container and its hooks wrote.
fn shared_dir(node: &Node) -> std::path::PathBuf {
    let dir = node.dir.path().join("shared");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `stopping container` log lines of wasmlet: (grace_s, prestop_ms).
fn stop_lines(log: &str) -> Vec<(u64, u64)> {
    log.lines()
        .filter(|l| l.contains("stopping container") && l.contains("prestop_ms="))
        .filter_map(|l| {
            let field = |name: &str| {
                l.split(&format!("{name}="))
                    .nth(1)?
                    .split(|c: char| !c.is_ascii_digit())
                    .next()?
                    .parse::<u64>()
                    .ok()
            };
            Some((field("grace_s")?, field("prestop_ms")?))
        })
        .collect()
}

#[test]
fn post_start_writes_a_file_the_container_sees() {
    let node = Node::start("t-poststart");
    node.write_manifest("ps.yaml", include_str!("pods/hooks-ps.yaml"));
    let pod = node.wait_for("ready", Duration::from_secs(30), |n| {
        n.pod("ps")
            .filter(|p| container_status(p, "main")["ready"] == true)
    });
    assert_eq!(container_status(&pod, "main")["restartCount"], 0);
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    let log = node
        .logs_dir()
        .join(format!("default_ps-t-poststart_{uid}/main/0.log"));
    let text = node.wait_for("the container's output", Duration::from_secs(10), |_| {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|t| t.contains("hello-from-poststart"))
    });
    assert!(text.contains("hello-from-poststart"));
}

#[test]
fn failed_post_start_kills_the_container() {
    let node = Node::start("t-poststart-fail");
    node.write_manifest("psf.yaml", include_str!("pods/hooks-psf.yaml"));
    let pod = node.wait_for(
        "a restart after the hook failed",
        Duration::from_secs(60),
        |n| {
            n.pod("psf").filter(|p| {
                container_status(p, "main")["restartCount"]
                    .as_i64()
                    .is_some_and(|r| r >= 1)
            })
        },
    );
    let status = container_status(&pod, "main");
    assert!(
        status["lastState"]["terminated"].is_object(),
        "the killed container is lastState: {status}"
    );
    let log = node.log();
    assert!(
        log.contains("FailedPostStartHook"),
        "the failure is logged with its reason"
    );
    assert!(
        log.contains("exited with 3") && log.contains("broken"),
        "the message says what the hook did"
    );
    node.wait_for(
        "PostStartHookError or CrashLoopBackOff shown",
        Duration::from_secs(30),
        |n| {
            let pod = n.pod("psf")?;
            let reason = container_status(&pod, "main")["state"]["waiting"]["reason"]
                .as_str()?
                .to_string();
            (reason == "PostStartHookError" || reason == "CrashLoopBackOff").then_some(())
        },
    );
}

#[test]
fn pre_stop_runs_before_sigterm_and_takes_from_the_grace_period() {
    let node = Node::start("t-prestop");
    let shared = shared_dir(&node);
    node.write_manifest(
        "stop.yaml",
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: stop}}\nspec:\n  terminationGracePeriodSeconds: 8\n  containers:\n  - name: main\n    image: docker.io/library/busybox:local\n    command: [sh, -c, 'trap ''echo TERM $(date +%s) >> /shared/events; exit 0'' TERM; echo UP >> /shared/events; while :; do sleep 0.2; done']\n    lifecycle:\n      preStop:\n        exec: {{command: [sh, -c, 'echo PRESTOP $(date +%s) >> /shared/events; sleep 3; echo PRESTOP-DONE $(date +%s) >> /shared/events']}}\n    volumeMounts: [{{name: shared, mountPath: /shared}}]\n  volumes:\n  - {{name: shared, hostPath: {{path: {}, type: Directory}}}}\n",
            shared.display()
        ),
    );
    let events = shared.join("events");
    node.wait_for("the container to run", Duration::from_secs(30), |_| {
        std::fs::read_to_string(&events)
            .ok()
            .filter(|t| t.contains("UP"))
    });
    node.remove_manifest("stop.yaml");
    node.wait_for("the pod to go", Duration::from_secs(30), |n| {
        n.pod("stop").is_none().then_some(())
    });
    let text = std::fs::read_to_string(&events).unwrap();
    let time_of = |tag: &str| event_time(&text, tag);
    let (prestop, done, term) = (time_of("PRESTOP"), time_of("PRESTOP-DONE"), time_of("TERM"));
    assert!(
        prestop <= done && done <= term,
        "preStop finished before SIGTERM: {text:?}"
    );
    assert!(
        term - prestop >= 2,
        "SIGTERM came after the hook's 3 s: {text:?}"
    );
    let stops = stop_lines(&node.log());
    let (grace, spent) = *stops.first().expect("a stopping container line");
    assert!(spent >= 2900, "the hook's time was measured: {spent} ms");
    assert!(
        grace <= 5,
        "the hook's time is taken from the 8 s grace period: {grace} s left"
    );
}

#[test]
fn sleep_pre_stop_hook_delays_sigterm() {
    let node = Node::start("t-sleep-hook");
    let shared = shared_dir(&node);
    node.write_manifest(
        "sleepy.yaml",
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: sleepy}}\nspec:\n  terminationGracePeriodSeconds: 10\n  containers:\n  - name: main\n    image: docker.io/library/busybox:local\n    command: [sh, -c, 'trap \"echo TERM >> /shared/events; exit 0\" TERM; echo UP >> /shared/events; while :; do sleep 0.2; done']\n    lifecycle:\n      preStop:\n        sleep: {{seconds: 2}}\n    volumeMounts: [{{name: shared, mountPath: /shared}}]\n  volumes:\n  - {{name: shared, hostPath: {{path: {}, type: Directory}}}}\n",
            shared.display()
        ),
    );
    let events = shared.join("events");
    node.wait_for("the container to run", Duration::from_secs(30), |_| {
        std::fs::read_to_string(&events)
            .ok()
            .filter(|t| t.contains("UP"))
    });
    let removed = std::time::Instant::now();
    node.remove_manifest("sleepy.yaml");
    node.wait_for("SIGTERM", Duration::from_secs(30), |_| {
        std::fs::read_to_string(&events)
            .ok()
            .filter(|t| t.contains("TERM"))
    });
    assert!(
        removed.elapsed() >= Duration::from_secs(2),
        "SIGTERM only after the 2 s sleep"
    );
    let stops = stop_lines(&node.log());
    let (grace, spent) = *stops.first().expect("a stopping container line");
    assert!((2000..4000).contains(&spent), "slept {spent} ms");
    assert!(grace <= 8, "{grace} s left of 10");
}
