//! The pod's QoS class (`GetPodQOS`).

use super::{parse_milli, requests_and_limits};
use k8s_openapi::api::core::v1::{Pod, PodSpec};

/// The pod's QoS class, as `v1.PodQOSClass` strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosClass {
    /// Every container has equal requests and limits for CPU and memory: evicted last.
    Guaranteed,
    /// At least one request or limit, but not Guaranteed.
    Burstable,
    /// No requests or limits at all: evicted first under pressure.
    BestEffort,
}

impl QosClass {
    /// The API spelling used in `status.qosClass`.
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }

    /// The pod cgroup's parent under the cgroupfs driver (`/kubepods/burstable/pod<uid>`).
    pub fn cgroup_parent(self, uid: &str) -> String {
        match self {
            QosClass::Guaranteed => format!("/kubepods/pod{uid}"),
            QosClass::Burstable => format!("/kubepods/burstable/pod{uid}"),
            QosClass::BestEffort => format!("/kubepods/besteffort/pod{uid}"),
        }
    }
}

/// QoS as `GetPodQOS` computes it, over init and app containers, for cpu and memory only.
pub fn qos_class(spec: &PodSpec) -> QosClass {
    let mut any_set = false;
    let mut guaranteed = true;
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers);
    for container in containers {
        let (requests, limits) = requests_and_limits(container.resources.as_ref());
        for resource in ["cpu", "memory"] {
            let request = requests
                .get(resource)
                .filter(|q| parse_milli(&q.0).is_ok_and(|v| v != 0));
            let limit = limits
                .get(resource)
                .filter(|q| parse_milli(&q.0).is_ok_and(|v| v != 0));
            any_set |= request.is_some() || limit.is_some();
            match (request, limit) {
                (Some(r), Some(l)) if parse_milli(&r.0) == parse_milli(&l.0) => {}
                _ => guaranteed = false,
            }
        }
    }
    match (any_set, guaranteed) {
        (false, _) => QosClass::BestEffort,
        (true, true) => QosClass::Guaranteed,
        (true, false) => QosClass::Burstable,
    }
}

/// The QoS class of a pod (BestEffort for a pod without a spec).
pub fn pod_qos(pod: &Pod) -> QosClass {
    pod.spec
        .as_ref()
        .map(qos_class)
        .unwrap_or(QosClass::BestEffort)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    pub(crate) fn container(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        let map = |pairs: &[(&str, &str)]| {
            (!pairs.is_empty()).then(|| {
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                    .collect()
            })
        };
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: map(requests),
                limits: map(limits),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn qos_classes() {
        let spec = |c: Container| PodSpec {
            containers: vec![c],
            ..Default::default()
        };
        assert_eq!(qos_class(&spec(container(&[], &[]))), QosClass::BestEffort);
        let limits_only = container(&[], &[("cpu", "500m"), ("memory", "64Mi")]);
        assert_eq!(qos_class(&spec(limits_only)), QosClass::Guaranteed);
        let partial = container(&[("memory", "32Mi")], &[("memory", "64Mi")]);
        assert_eq!(qos_class(&spec(partial)), QosClass::Burstable);
    }
}
