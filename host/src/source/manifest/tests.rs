use super::*;

const WEB: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: web\n    image: busybox:local\n";

#[test]
fn static_pod_identity_and_defaults() {
    let file = Path::new("/etc/manifests/web.yaml");
    let pod = load(WEB, file, "node-a").unwrap();
    assert_eq!(pod.metadata.name.as_deref(), Some("web-node-a"));
    assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
    let uid = pod.metadata.uid.clone().unwrap();
    assert_eq!(uid.len(), 32);
    let spec = pod.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));
    assert_eq!(
        spec.containers[0].image_pull_policy.as_deref(),
        Some("IfNotPresent")
    );
    // Same content elsewhere, or edited content, is another pod.
    assert_ne!(pod_uid(WEB, file, "node-b"), uid);
    assert_ne!(pod_uid(&format!("{WEB}# edit\n"), file, "node-a"), uid);
    assert_eq!(pod_uid(WEB, file, "node-a"), uid);
}

#[test]
fn json_manifests_parse() {
    let json = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}"#;
    let pod = load(json, Path::new("/m/j.json"), "n").unwrap();
    assert_eq!(
        pod.spec.unwrap().containers[0].image_pull_policy.as_deref(),
        Some("Always")
    );
}

#[test]
fn problems_name_the_field() {
    let check = |text: &str, field: &str| {
        let err = load(text, Path::new("/m/x.yaml"), "n").unwrap_err();
        assert_eq!(err.field, field, "{err}");
    };
    check("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - image: busybox\n", "spec.containers[0].name");
    check("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n    image: b\n    ports: [{containerPort: eighty}]\n", "spec.containers[0].ports[0].containerPort");
    check(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: []\n",
        "spec.containers",
    );
    check("apiVersion: v1\nkind: Pod\nmetadata: {name: X_1}\nspec:\n  containers: [{name: c, image: b}]\n", "metadata.name");
    check("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  restartPolicy: Sometimes\n  containers: [{name: c, image: b}]\n", "spec.restartPolicy");
    check("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: c, image: b}, {name: c, image: b}]\n", "spec.containers[1].name");
    check(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers: [{name: c}]\n",
        "spec.containers[0].image",
    );
}

#[test]
fn pull_policy_defaults() {
    assert_eq!(default_pull_policy("busybox"), "Always");
    assert_eq!(default_pull_policy("busybox:latest"), "Always");
    assert_eq!(default_pull_policy("localhost:5000/busybox"), "Always");
    assert_eq!(
        default_pull_policy("localhost:5000/busybox:1.2"),
        "IfNotPresent"
    );
    assert_eq!(default_pull_policy("busybox@sha256:abc"), "IfNotPresent");
}

#[test]
fn quantities_are_checked_with_the_field_named() {
    let with = |resources: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: x}}\nspec:\n  containers:\n  - name: c\n    image: b\n    resources: {resources}\n")
    };
    let check = |text: String, field: &str, words: &str| {
        let started = std::time::Instant::now();
        let err = load(&text, Path::new("/m/x.yaml"), "n").unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_millis(50));
        assert_eq!(err.field, field, "{err}");
        assert!(err.reason.contains(words), "{err}");
    };
    check(
        with("{limits: {cpu: 1e2147483647}}"),
        "spec.containers[0].resources.limits[cpu]",
        "too large",
    );
    let digits = "9".repeat(10_000);
    check(
        with(&format!("{{requests: {{memory: '{digits}'}}}}")),
        "spec.containers[0].resources.requests[memory]",
        "too large",
    );
    check(
        with("{requests: {memory: 12x}}"),
        "spec.containers[0].resources.requests[memory]",
        "unknown suffix",
    );
    check(
        with("{requests: {cpu: '-1'}}"),
        "spec.containers[0].resources.requests[cpu]",
        "greater than or equal to 0",
    );
    check(
        with("{requests: {cpu: '2'}, limits: {cpu: 1500m}}"),
        "spec.containers[0].resources.requests[cpu]",
        "less than or equal to cpu limit of 1500m",
    );
    check(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  overhead: {memory: 1e99}\n  containers: [{name: c, image: b}]\n".into(),
        "spec.overhead[memory]",
        "too large",
    );
    check(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  volumes: [{name: v, emptyDir: {sizeLimit: 1Qi}}]\n  containers: [{name: c, image: b}]\n".into(),
        "spec.volumes[0].emptyDir.sizeLimit",
        "unknown suffix",
    );
    check(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  volumes: [{name: v, downwardAPI: {items: [{path: p, resourceFieldRef: {containerName: c, resource: limits.cpu, divisor: '-1'}}]}}]\n  containers: [{name: c, image: b}]\n".into(),
        "spec.volumes[0].downwardAPI.items[0].resourceFieldRef.divisor",
        "greater than or equal to 0",
    );
    assert!(load(
        &with("{requests: {cpu: 500m}, limits: {cpu: '1', memory: 64Mi}}"),
        Path::new("/m/x.yaml"),
        "n"
    )
    .is_ok());
}
