use super::*;
use k8s_openapi::api::core::v1::{Node, PodSpec, Volume};
use tokio::sync::watch;

struct Refuse(&'static str);

impl AdmitHandler for Refuse {
    fn admit(&self, _: &AdmitAttributes<'_>) -> Result<(), Rejection> {
        Err(Rejection::new(self.0, self.0.to_lowercase()))
    }
}

fn pod_with_volume(volume: Volume) -> Pod {
    Pod {
        spec: Some(PodSpec {
            volumes: Some(vec![volume]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn attrs(pod: &Pod) -> AdmitAttributes<'_> {
    AdmitAttributes {
        pod,
        other_pods: &[],
    }
}

#[test]
fn the_first_rejection_in_order_wins() {
    // No Node known: the predicates admit, and the next handler decides.
    let (_tx, no_node) = watch::channel(None::<Node>);
    let chain = PodAdmitChain::with_handlers(vec![
        Box::new(predicates::PredicateAdmitHandler::new(no_node)),
        Box::new(Refuse("First")),
        Box::new(Refuse("Second")),
    ]);
    let pod = Pod::default();
    let rejection = chain.admit(&attrs(&pod)).unwrap_err();
    assert_eq!(rejection.reason, "First");
}

#[test]
fn volumes_that_need_an_api_server_are_refused() {
    let secret = pod_with_volume(Volume {
        name: "token".into(),
        secret: Some(Default::default()),
        ..Default::default()
    });
    let rejection = VolumeAdmitHandler.admit(&attrs(&secret)).unwrap_err();
    assert_eq!(rejection.reason, "UnsupportedVolume");
    assert!(
        rejection.message.starts_with("volume \"token\""),
        "{}",
        rejection.message
    );
    let empty_dir = pod_with_volume(Volume {
        name: "scratch".into(),
        empty_dir: Some(Default::default()),
        ..Default::default()
    });
    assert_eq!(VolumeAdmitHandler.admit(&attrs(&empty_dir)), Ok(()));
}

#[test]
fn static_mirror_and_system_critical_pods_are_critical() {
    let with =
        |yaml: &str| -> Pod { wasmlet_plugin_host::yaml::from_str(yaml).expect("fixture pod") };
    let file = with("metadata: {annotations: {kubernetes.io/config.source: file}}");
    let api = with("metadata: {annotations: {kubernetes.io/config.source: api}}");
    let mirror = with("metadata: {annotations: {kubernetes.io/config.mirror: abc}}");
    let system = with("spec: {containers: [], priority: 2000000000}");
    let user = with("spec: {containers: [], priority: 1999999999}");
    assert!(is_static_pod(&file) && is_critical_pod(&file));
    assert!(!is_static_pod(&api) && !is_critical_pod(&api));
    assert!(!is_static_pod(&mirror) && is_critical_pod(&mirror));
    assert!(is_critical_pod(&system));
    assert!(!is_critical_pod(&user) && !is_critical_pod(&Pod::default()));
}
