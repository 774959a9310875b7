use wasmlet_plugin_sdk::fixtures::{take_logs, HookCase};
use wasmlet_plugin_sdk::{AdmissionContainer, LifecycleHooks};

use super::RequireLimits;

fn hooks() -> RequireLimits {
    let mut h = RequireLimits::default();
    h.configure(r#"{"namespaces": ["prod"]}"#).unwrap();
    h
}

#[test]
fn pods_with_all_limits_are_admitted() {
    let pod = HookCase::new("prod", "web")
        .container(AdmissionContainer::new("app").limits(true, true))
        .container(AdmissionContainer::new("init").init().limits(true, true));
    assert_eq!(pod.admit(&hooks()), Ok(()));
}

#[test]
fn missing_limits_are_refused_naming_the_containers() {
    let pod = HookCase::new("prod", "web")
        .container(AdmissionContainer::new("app").limits(true, true))
        .container(AdmissionContainer::new("sidecar").limits(true, false))
        .container(AdmissionContainer::new("setup").init());
    let reason = pod.admit(&hooks()).unwrap_err();
    assert_eq!(
        reason,
        "namespace \"prod\" requires cpu and memory limits: container \"sidecar\" has no memory limit; \
         container \"setup\" has no cpu and memory limits"
    );
    let logs = take_logs();
    assert_eq!(logs.len(), 1);
    assert!(logs[0].fields.contains(&("pod".into(), "web".into())));
}

#[test]
fn other_namespaces_and_empty_config_admit_everything() {
    let bare = |ns| HookCase::new(ns, "x").container(AdmissionContainer::new("app"));
    assert_eq!(bare("dev").admit(&hooks()), Ok(()));
    assert_eq!(bare("prod").admit(&RequireLimits::default()), Ok(()));
}
