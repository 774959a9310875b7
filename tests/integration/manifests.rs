//! The static pod directory: removal terminates gracefully, an edit replaces the pod, a bad
//! file is reported and nothing else is affected.

use crate::harness::{busybox_pod, secs, Node};
use std::time::{Duration, Instant};

#[test]
fn removing_the_manifest_stops_the_pod_within_its_grace_period() {
    let node = Node::start("t-remove");
    // PID 1 ignores SIGTERM: only SIGKILL at the 3s grace deadline stops it.
    node.write_manifest(
        "stubborn.yaml",
        &busybox_pod(
            "stubborn",
            "  terminationGracePeriodSeconds: 3\n",
            "exec sleep 3600",
        ),
    );
    // A shell that exits on SIGTERM stops at once.
    node.write_manifest(
        "polite.yaml",
        &busybox_pod(
            "polite",
            "  terminationGracePeriodSeconds: 30\n",
            "trap 'exit 0' TERM; while true; do sleep 0.1; done",
        ),
    );
    node.wait_phase("stubborn", "Running", Duration::from_secs(30));
    node.wait_phase("polite", "Running", Duration::from_secs(30));

    let removed = Instant::now();
    node.remove_manifest("stubborn.yaml");
    node.remove_manifest("polite.yaml");
    let gone = |name: &'static str| {
        move |n: &Node| {
            (n.containers(Some(name)).is_empty() && n.sandboxes(Some(name)).is_empty())
                .then(Instant::now)
        }
    };
    let polite_gone = node.wait_for(
        "polite to be removed",
        Duration::from_secs(20),
        gone("polite"),
    );
    let stubborn_gone = node.wait_for(
        "stubborn to be removed",
        Duration::from_secs(20),
        gone("stubborn"),
    );
    let polite = secs(polite_gone - removed);
    let stubborn = secs(stubborn_gone - removed);
    assert!(
        polite < 5.0,
        "a container that exits on SIGTERM took {polite:.1}s"
    );
    assert!(
        (2.5..9.0).contains(&stubborn),
        "the grace period of 3s was not honoured: {stubborn:.1}s"
    );
    node.wait_for("the pods to leave /pods", Duration::from_secs(5), |n| {
        (n.pod("stubborn").is_none() && n.pod("polite").is_none()).then_some(())
    });
}

#[test]
fn editing_the_manifest_replaces_the_pod() {
    let node = Node::start("t-edit");
    node.write_manifest(
        "app.yaml",
        &busybox_pod(
            "app",
            "  terminationGracePeriodSeconds: 2\n",
            "exec sleep 3600",
        ),
    );
    let old = node.wait_phase("app", "Running", Duration::from_secs(30));
    let old_uid = old["metadata"]["uid"].as_str().unwrap().to_string();

    node.write_manifest(
        "app.yaml",
        &busybox_pod(
            "app",
            "  terminationGracePeriodSeconds: 2\n",
            "echo v2; exec sleep 3600",
        ),
    );
    let new = node.wait_for("the new pod to run", Duration::from_secs(30), |n| {
        n.pod("app").filter(|p| {
            p["metadata"]["uid"] != old_uid.as_str() && p["status"]["phase"] == "Running"
        })
    });
    let new_uid = new["metadata"]["uid"].as_str().unwrap().to_string();
    node.wait_for(
        "exactly one sandbox, the new pod's",
        Duration::from_secs(20),
        |n| {
            let sandboxes = n.sandboxes(Some("app"));
            (sandboxes.len() == 1 && sandboxes[0].labels["io.kubernetes.pod.uid"] == new_uid)
                .then_some(())
        },
    );
    let containers = node.containers(Some("app"));
    assert!(
        containers
            .iter()
            .all(|c| c.labels["io.kubernetes.pod.uid"] == new_uid),
        "old containers removed"
    );
}

#[test]
fn a_bad_manifest_is_reported_and_the_others_keep_running() {
    let node = Node::start("t-badfile");
    node.write_manifest("good.yaml", &busybox_pod("good", "", "exec sleep 3600"));
    let good = node.wait_phase("good", "Running", Duration::from_secs(30));
    let started_at =
        good["status"]["containerStatuses"][0]["state"]["running"]["startedAt"].clone();

    node.write_manifest("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n  - name: c\n    image: docker.io/library/busybox:local\n    ports: [{containerPort: eighty}]\n");
    let report = node.wait_for(
        "the bad manifest to be reported",
        Duration::from_secs(10),
        |n| {
            let report = n.get_json("/manifests");
            report["errors"]
                .as_array()
                .filter(|e| !e.is_empty())
                .map(|e| e[0].clone())
        },
    );
    assert!(
        report["file"].as_str().unwrap().ends_with("bad.yaml"),
        "{report}"
    );
    let message = report["message"].as_str().unwrap();
    assert!(
        message.contains("spec.containers[0].ports[0].containerPort"),
        "{message}"
    );
    let log = node.log();
    assert!(
        log.contains("bad.yaml") && log.contains("containerPort"),
        "the log names the file and the field"
    );

    std::thread::sleep(Duration::from_secs(1));
    let good = node.pod("good").expect("the good pod is still there");
    assert_eq!(good["status"]["phase"], "Running");
    assert_eq!(good["status"]["containerStatuses"][0]["restartCount"], 0);
    assert_eq!(
        good["status"]["containerStatuses"][0]["state"]["running"]["startedAt"],
        started_at
    );
    assert!(node.pod("bad").is_none());
}

#[test]
fn a_manifest_rewritten_while_its_pod_starts_ends_with_one_sandbox() {
    let node = Node::start("t-rewrite");
    for version in 0..4 {
        let script = format!("echo v{version}; exec sleep 3600");
        node.write_manifest(
            "racy.yaml",
            &busybox_pod("racy", "  terminationGracePeriodSeconds: 2\n", &script),
        );
        std::thread::sleep(Duration::from_millis(60 + 40 * version));
    }
    let last = node.wait_for("the last version to run", Duration::from_secs(60), |n| {
        let pod = n.pod("racy")?;
        let command = pod["spec"]["containers"][0]["command"][2]
            .as_str()?
            .to_string();
        (command.starts_with("echo v3") && pod["status"]["phase"] == "Running").then_some(pod)
    });
    let uid = last["metadata"]["uid"].as_str().unwrap().to_string();
    node.wait_for(
        "exactly one sandbox, the last version's",
        Duration::from_secs(30),
        |n| {
            let sandboxes = n.sandboxes(Some("racy"));
            (sandboxes.len() == 1 && sandboxes[0].labels["io.kubernetes.pod.uid"] == uid)
                .then_some(())
        },
    );
    let containers = node.containers(Some("racy"));
    assert_eq!(containers.len(), 1, "one container: {containers:?}");
    assert_eq!(containers[0].labels["io.kubernetes.pod.uid"], uid);
}

/// A file moved out and back (a config tool's delete + create) keeps its UID; upstream marks
/// such a pod "restart requested" and runs it again once the old instance has terminated.
#[test]
fn a_manifest_removed_and_put_back_runs_again_after_the_old_instance_terminated() {
    let node = Node::start("t-readd");
    // PID 1 ignores SIGTERM, so each old instance holds its 3 s grace period.
    let manifest = |name: &str| {
        busybox_pod(
            name,
            "  terminationGracePeriodSeconds: 3\n",
            "exec sleep 3600",
        )
    };
    // Put back after a few ms (the scan may never see it gone), within the grace period, and
    // after it.
    let delays = [("quick", 5), ("within", 1500), ("after", 5000)];
    let mut old = Vec::new();
    for (name, _) in delays {
        node.write_manifest(&format!("{name}.yaml"), &manifest(name));
    }
    for (name, _) in delays {
        let pod = node.wait_phase(name, "Running", Duration::from_secs(30));
        let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
        let id = node.containers(Some(name))[0].id.clone();
        old.push((name, uid, id));
    }
    let removed = Instant::now();
    for (name, _) in delays {
        node.remove_manifest(&format!("{name}.yaml"));
    }
    for (name, delay_ms) in delays {
        let at = removed + Duration::from_millis(delay_ms);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        node.write_manifest(&format!("{name}.yaml"), &manifest(name));
    }
    for (name, uid, old_id) in &old {
        let pod = node.wait_for(
            &format!("{name} to run again"),
            Duration::from_secs(40),
            |n| {
                let pod = n.pod(name)?;
                let running = pod["status"]["phase"] == "Running"
                    && pod["metadata"]["deletionTimestamp"].is_null();
                let containers = n.containers(Some(name));
                // A removal seen by the scan replaced the container.
                let replaced =
                    *name == "quick" || containers.first().is_some_and(|c| c.id != *old_id);
                (running && containers.len() == 1 && replaced).then_some(pod)
            },
        );
        assert_eq!(
            pod["metadata"]["uid"],
            uid.as_str(),
            "{name}: same file, same UID"
        );
        assert_eq!(node.sandboxes(Some(name)).len(), 1, "{name}: one sandbox");
    }
}
