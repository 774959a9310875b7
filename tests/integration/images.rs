//! Image policy as upstream: Never with a missing image is ErrImageNeverPull; a pull that
//! fails (no registry is reachable here) is ErrImagePull, then ImagePullBackOff.

use crate::harness::{container_status, Node};
use std::time::Duration;

fn pod_with_image(name: &str, image: &str, policy: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: main\n    image: {image}\n    imagePullPolicy: {policy}\n    command: [sleep, '3600']\n")
}

#[test]
fn missing_image_under_never_is_err_image_never_pull() {
    let node = Node::start("t-neverpull");
    node.write_manifest(
        "p.yaml",
        &pod_with_image("p", "docker.io/library/not-imported:local", "Never"),
    );
    let pod = node.wait_for("ErrImageNeverPull", Duration::from_secs(20), |n| {
        n.pod("p").filter(|p| {
            container_status(p, "main")["state"]["waiting"]["reason"] == "ErrImageNeverPull"
        })
    });
    let message = container_status(&pod, "main")["state"]["waiting"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(message, "Container image \"docker.io/library/not-imported:local\" is not present with pull policy of Never");
    assert_eq!(pod["status"]["phase"], "Pending");
}

#[test]
fn failed_pull_is_err_image_pull_then_image_pull_back_off() {
    let node = Node::start("t-pullfail");
    node.write_manifest(
        "p.yaml",
        &pod_with_image("p", "registry.invalid/nothing:1.0", "IfNotPresent"),
    );
    let reason = |n: &Node| {
        n.pod("p").map(|p| {
            container_status(&p, "main")["state"]["waiting"]["reason"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
    };
    let pod = node.wait_for("ErrImagePull", Duration::from_secs(60), |n| {
        n.pod("p")
            .filter(|p| container_status(p, "main")["state"]["waiting"]["reason"] == "ErrImagePull")
    });
    assert!(
        container_status(&pod, "main")["state"]["waiting"]["message"]
            .as_str()
            .unwrap()
            .contains("PullImage")
    );
    node.wait_for("ImagePullBackOff", Duration::from_secs(30), |n| {
        (reason(n)? == "ImagePullBackOff").then_some(())
    });
}
