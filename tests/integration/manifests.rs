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

    node.write_manifest("bad.yaml", include_str!("pods/manifests-bad.yaml"));
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

/// Files that cannot be read at all (not UTF-8, a directory, a dangling symlink, past the
/// 1 MiB cap, an alias bomb) are each named in `/manifests` and the log and skipped; a file
/// that was valid and turns unreadable keeps its pod untouched until it is removed.
#[test]
fn unreadable_manifests_are_named_and_a_valid_one_that_turns_bad_keeps_its_pod() {
    let node = Node::start("t-unreadable");
    node.write_manifest("good.yaml", &busybox_pod("good", "", "exec sleep 3600"));
    node.write_manifest(
        "turns-bad.yaml",
        &busybox_pod(
            "turnsbad",
            "  terminationGracePeriodSeconds: 2\n",
            "exec sleep 3600",
        ),
    );
    let started_at = |pod: &serde_json::Value| {
        pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"].clone()
    };
    let good = started_at(&node.wait_phase("good", "Running", Duration::from_secs(30)));
    let turns_bad = node.wait_phase("turnsbad", "Running", Duration::from_secs(30));
    let turns_bad_uid = turns_bad["metadata"]["uid"].clone();
    let turns_bad_started = started_at(&turns_bad);

    let manifests = &node.manifests;
    std::fs::write(
        manifests.join("latin1.yaml"),
        b"metadata: {name: caf\xe9}\n",
    )
    .unwrap();
    std::fs::create_dir(manifests.join("subdir.yaml")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/pod.yaml", manifests.join("dangling.yaml")).unwrap();
    let big = std::fs::File::create(manifests.join("big.yaml")).unwrap();
    big.set_len(20 << 20).unwrap();
    // Expanded into the one field that takes any JSON (`managedFields[].fieldsV1`).
    let mut bomb = String::from("apiVersion: v1\nkind: Pod\n");
    bomb.push_str("x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for level in 1..9 {
        let alias = format!("*x{}", level - 1);
        let refs = [alias.as_str(); 9].join(", ");
        bomb.push_str(&format!("x{level}: &x{level} [{refs}]\n"));
    }
    bomb.push_str("metadata: {name: bomb, managedFields: [{fieldsV1: *x8}]}\n");
    bomb.push_str("spec: {containers: [{name: c, image: busybox}]}\n");
    node.write_manifest("bomb.yaml", &bomb);
    // The file of a running pod becomes unreadable.
    std::fs::write(manifests.join("turns-bad.yaml"), b"\xff\xfe\x00").unwrap();

    let expected = [
        ("latin1.yaml", "not UTF-8"),
        ("subdir.yaml", "is a directory"),
        ("dangling.yaml", "does not exist"),
        ("big.yaml", "more than the 1048576 bytes"),
        ("bomb.yaml", "budget breached"),
        ("turns-bad.yaml", "keeps running"),
    ];
    let errors = node.wait_for(
        "each bad file to be reported",
        Duration::from_secs(15),
        |n| {
            let report = n.get_json("/manifests");
            let errors = report["errors"].as_array()?.clone();
            (errors.len() == expected.len()).then_some(errors)
        },
    );
    for (file, words) in expected {
        let error = errors
            .iter()
            .find(|e| e["file"].as_str().is_some_and(|f| f.ends_with(file)))
            .unwrap_or_else(|| panic!("{file} not reported: {errors:?}"));
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(words), "{file}: {message}");
    }
    let log = node.log();
    for (file, _) in expected {
        assert!(log.contains(file), "the log names {file}");
    }

    // Nothing else moved: both pods run as they did, the one whose file went bad included.
    std::thread::sleep(Duration::from_secs(2));
    for (name, started) in [("good", &good), ("turnsbad", &turns_bad_started)] {
        let pod = node.pod(name).unwrap_or_else(|| panic!("{name} is gone"));
        assert_eq!(pod["status"]["phase"], "Running", "{name}");
        assert_eq!(&started_at(&pod), started, "{name} was not restarted");
        assert_eq!(pod["status"]["containerStatuses"][0]["restartCount"], 0);
    }
    assert_eq!(
        node.pod("turnsbad").unwrap()["metadata"]["uid"],
        turns_bad_uid
    );
    assert_eq!(node.containers(Some("turnsbad")).len(), 1);

    // Removed, the file's pod goes.
    node.remove_manifest("turns-bad.yaml");
    node.wait_for(
        "the pod of the removed file to go",
        Duration::from_secs(20),
        |n| {
            (n.pod("turnsbad").is_none() && n.containers(Some("turnsbad")).is_empty()).then_some(())
        },
    );
    assert_eq!(started_at(&node.pod("good").unwrap()), good);
}

/// Every way a UID comes back while its old instance terminates: put back at delays that
/// straddle the end of the termination (the worker still stopping, just finished, forgotten),
/// and a manifest edited and reverted (twice: the last version wins). Each ends with exactly
/// one instance running, the one the directory holds.
#[test]
fn a_uid_that_comes_back_during_termination_runs_once_the_old_instance_is_gone() {
    let node = Node::start("t-comeback");
    // A preStop hook of 1 s, then PID 1 ignores SIGTERM: each termination takes the 2 s grace.
    let manifest = |name: &str, version: &str| {
        busybox_pod(
            name,
            "  terminationGracePeriodSeconds: 2\n",
            &format!("echo {version}; exec sleep 3600"),
        )
        .replace(
            "    command:",
            "    lifecycle: {preStop: {exec: {command: [sleep, '1']}}}\n    command:",
        )
    };
    let delays = [
        ("d-quick", 20),
        ("d-hook", 500),
        ("d-grace", 1500),
        ("d-end", 2100),
        ("d-after", 2600),
        ("d-later", 4500),
    ];
    for (name, _) in delays {
        node.write_manifest(&format!("{name}.yaml"), &manifest(name, "v1"));
    }
    node.write_manifest("flip.yaml", &manifest("flip", "v1"));
    node.write_manifest("flop.yaml", &manifest("flop", "v1"));
    let mut old = Vec::new();
    for name in delays.iter().map(|(n, _)| *n).chain(["flip", "flop"]) {
        let pod = node.wait_phase(name, "Running", Duration::from_secs(40));
        let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
        let id = node.containers(Some(name))[0].id.clone();
        old.push((name, uid, id));
    }
    assert!(
        node.pod("d-quick").unwrap()["spec"]["containers"][0]["lifecycle"]["preStop"].is_object(),
        "the preStop hook is in the spec"
    );
    let removed = Instant::now();
    for (name, _) in delays {
        node.remove_manifest(&format!("{name}.yaml"));
    }
    // flip: v1 -> v2 -> v1 (its first UID comes back); flop: v1 -> v2 -> v1 -> v2.
    node.write_manifest("flip.yaml", &manifest("flip", "v2"));
    node.write_manifest("flop.yaml", &manifest("flop", "v2"));
    std::thread::sleep(Duration::from_millis(300));
    node.write_manifest("flip.yaml", &manifest("flip", "v1"));
    node.write_manifest("flop.yaml", &manifest("flop", "v1"));
    std::thread::sleep(Duration::from_millis(300));
    node.write_manifest("flop.yaml", &manifest("flop", "v2"));
    for (name, delay_ms) in delays {
        let at = removed + Duration::from_millis(delay_ms);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        node.write_manifest(&format!("{name}.yaml"), &manifest(name, "v1"));
    }
    let want_version = |name: &str| if name == "flop" { "v2" } else { "v1" };
    for (name, uid, old_id) in &old {
        let pod = node.wait_for(
            &format!("{name} to run again"),
            Duration::from_secs(30),
            |n| {
                let pod = n.pod(name)?;
                let command = pod["spec"]["containers"][0]["command"][2].as_str()?;
                let running = pod["status"]["phase"] == "Running"
                    && pod["metadata"]["deletionTimestamp"].is_null()
                    && command.starts_with(&format!("echo {}", want_version(name)));
                let containers = n.containers(Some(name));
                // A removal the scan saw replaced the container; one it missed kept it.
                let replaced =
                    *name == "d-quick" || containers.first().is_some_and(|c| c.id != *old_id);
                (running && containers.len() == 1 && replaced).then_some(pod)
            },
        );
        if *name != "flop" {
            assert_eq!(pod["metadata"]["uid"], uid.as_str(), "{name}: the same UID");
        }
        let sandboxes = node.sandboxes(Some(name));
        assert_eq!(sandboxes.len(), 1, "{name}: one sandbox");
        assert_eq!(
            sandboxes[0].labels["io.kubernetes.pod.uid"],
            pod["metadata"]["uid"].as_str().unwrap(),
            "{name}: the sandbox is the running instance's"
        );
    }
    // Still there a while later: nothing terminates the restarted instances.
    std::thread::sleep(Duration::from_secs(3));
    for (name, _, _) in &old {
        let pod = node
            .pod(name)
            .unwrap_or_else(|| panic!("{name} left /pods"));
        assert_eq!(pod["status"]["phase"], "Running", "{name}");
        assert_eq!(node.containers(Some(name)).len(), 1, "{name}");
    }
}
