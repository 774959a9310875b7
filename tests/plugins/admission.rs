//! `lifecycle-hooks` admission: a plugin refuses pods by its config.

use super::*;

#[test]
fn admission_plugin_refuses_pods_without_limits() {
    let setup = registry(&plugin(
        "require-limits",
        "lifecycle-hooks",
        &components::ADMISSION_REQUIRE_LIMITS.path(),
        "  config: {namespaces: [prod]}\n",
    ));
    let container = |name: &str, limits: bool| AdmissionContainer {
        name: name.into(),
        is_init: false,
        has_cpu_request: limits,
        has_memory_request: limits,
        has_cpu_limit: limits,
        has_memory_limit: limits,
    };
    let pod = |containers| AdmissionPod {
        priority: 0,
        qos: policy::QosClass::BestEffort,
        is_static: true,
        is_critical: false,
        containers,
    };
    let meta = |namespace: &str| PodMeta {
        namespace: namespace.into(),
        name: "web".into(),
        ..Default::default()
    };
    let refused = setup.registry.admit(
        &pod(vec![container("ok", true), container("greedy", false)]),
        meta("prod"),
    );
    let (reason, _) = refused.expect_err("a container without limits in prod is refused");
    assert!(reason.contains("greedy"), "{reason}");
    assert!(setup
        .registry
        .admit(&pod(vec![container("ok", true)]), meta("prod"))
        .is_ok());
    assert!(setup
        .registry
        .admit(&pod(vec![container("greedy", false)]), meta("dev"))
        .is_ok());
}
