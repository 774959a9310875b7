//! The predicates as a table of named cases (upstream's `predicate_test.go` style): a pod, the
//! active pods, a Node, and the expected decision. No runtime needed.

use super::*;
use crate::eviction::NodePressure;
use crate::node_status::NodeFacts;

/// A Node named `node-a` with the given allocatable and extra top-level YAML.
macro_rules! node {
    ($allocatable:literal) => {
        node!($allocatable, "")
    };
    ($allocatable:literal, $extra:literal) => {
        concat!(
            "metadata:\n  name: node-a\n  labels: {kubernetes.io/hostname: node-a, ",
            "kubernetes.io/os: linux, zone: z1, generation: '3'}\n",
            $extra,
            "status:\n  allocatable: ",
            $allocatable,
            "\n"
        )
    };
}

const NODE: &str =
    node!("{cpu: '2', memory: 4Gi, ephemeral-storage: 10Gi, pods: '10', example.com/gpu: '1'}");
const NODE_ONE_POD: &str = node!("{cpu: '2', memory: 4Gi, pods: '1'}");
const NODE_NO_ALLOCATABLE: &str = "metadata: {name: node-a}\n";
const NODE_BAD_ALLOCATABLE: &str = node!("{cpu: '2', memory: lots, pods: '10'}");
const NODE_TAINTED: &str = node!(
    "{cpu: '2', memory: 4Gi, pods: '10'}",
    "spec:\n  taints: [{key: dedicated, value: db, effect: NoExecute}, {key: maintenance, effect: NoSchedule}]\n"
);
const NODE_NO_SCHEDULE: &str = node!(
    "{cpu: '2', memory: 4Gi, pods: '10'}",
    "spec:\n  taints: [{key: maintenance, effect: NoSchedule}, {key: gpu, value: 'true', effect: PreferNoSchedule}]\n"
);
const NODE_STRICT_GROUPS: &str = concat!(
    node!("{cpu: '2', memory: 4Gi, pods: '10'}"),
    "  features: {supplementalGroupsPolicy: true}\n"
);

/// A pod spec (flow YAML) with required node affinity terms.
macro_rules! affinity {
    ($terms:literal) => {
        concat!(
            "{containers: [{name: a}], affinity: {nodeAffinity: ",
            "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: ",
            $terms,
            "}}}}"
        )
    };
}

/// A pod spec (flow YAML) with one container requesting `$requests`.
macro_rules! requests {
    ($requests:literal) => {
        concat!(
            "{containers: [{name: a, resources: {requests: ",
            $requests,
            "}}]}"
        )
    };
}

/// A pod spec (flow YAML) with one container binding `$ports`.
macro_rules! ports {
    ($ports:literal) => {
        concat!("{containers: [{name: a, ports: ", $ports, "}]}")
    };
}

/// A pod spec (flow YAML) with tolerations on a pod without requests.
macro_rules! tolerations {
    ($tolerations:literal) => {
        concat!("{containers: [{name: a}], tolerations: ", $tolerations, "}")
    };
}

#[derive(Debug)]
enum Want {
    Admit,
    /// The reason, and a part of the message.
    Reject(&'static str, &'static str),
}
use Want::{Admit, Reject};

struct Case {
    name: &'static str,
    /// A spec in flow YAML (`{containers: ...}`), or a whole pod starting with `metadata:`.
    pod: &'static str,
    others: &'static [&'static str],
    node: &'static str,
    want: Want,
}

const fn case(
    name: &'static str,
    pod: &'static str,
    others: &'static [&'static str],
    node: &'static str,
    want: Want,
) -> Case {
    Case {
        name,
        pod,
        others,
        node,
        want,
    }
}

const AFFINITY: &str = "NodeAffinity";
const AFFINITY_MESSAGE: &str =
    "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector";
const PORTS: &str = "NodePorts";
const PORTS_MESSAGE: &str =
    "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports";
const TAINTS: &str = "TaintToleration";
const TAINTS_MESSAGE: &str =
    "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate";
const PLAIN: &str = "{containers: [{name: a}]}";
const CPU_1500M: &str = requests!("{cpu: 1500m}");
const HOST_8080: &str = ports!("[{containerPort: 80, hostPort: 8080}]");

// One case a row or block, with its YAML on one line: rustfmt cannot break the literals.
#[rustfmt::skip]
const CASES: &[Case] = &[
    // Resources.
    case("a small pod fits", requests!("{cpu: 500m, memory: 1Gi}"), &[], NODE, Admit),
    case("a pod without requests fits", PLAIN, &[CPU_1500M], NODE, Admit),
    case(
        "cpu beyond allocatable",
        requests!("{cpu: '3'}"),
        &[],
        NODE,
        Reject("OutOfcpu", "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"),
    ),
    case(
        "the active pods' cpu counts",
        requests!("{cpu: 600m}"),
        &[CPU_1500M],
        NODE,
        Reject("OutOfcpu", "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000"),
    ),
    case("exactly what is left fits", requests!("{cpu: 500m}"), &[CPU_1500M], NODE, Admit),
    case(
        "memory beyond allocatable",
        requests!("{memory: 5Gi}"),
        &[],
        NODE,
        Reject("OutOfmemory", "Node didn't have enough resource: memory, requested: 5368709120, used: 0, capacity: 4294967296"),
    ),
    case(
        "ephemeral-storage beyond allocatable",
        requests!("{ephemeral-storage: 11Gi}"),
        &[],
        NODE,
        Reject(
            "OutOfephemeral-storage",
            "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240",
        ),
    ),
    case(
        "one pod too many",
        PLAIN,
        &[PLAIN],
        NODE_ONE_POD,
        Reject("OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"),
    ),
    case("the pod count comes before cpu", requests!("{cpu: '3'}"), &[PLAIN], NODE_ONE_POD, Reject("OutOfpods", "")),
    case(
        "an init container larger than the app containers",
        "{initContainers: [{name: i, resources: {requests: {cpu: '3'}}}], containers: [{name: a, resources: {requests: {cpu: '1'}}}]}",
        &[],
        NODE,
        Reject("OutOfcpu", "requested: 3000,"),
    ),
    case(
        "app containers add up beyond a smaller init container",
        "{initContainers: [{name: i, resources: {requests: {cpu: 1500m}}}], containers: [{name: a, resources: {requests: {cpu: 1200m}}}, {name: b, resources: {requests: {cpu: 1200m}}}]}",
        &[],
        NODE,
        Reject("OutOfcpu", "requested: 2400,"),
    ),
    case(
        "a sidecar runs beside the app containers",
        "{initContainers: [{name: s, restartPolicy: Always, resources: {requests: {cpu: '1'}}}], containers: [{name: a, resources: {requests: {cpu: 1500m}}}]}",
        &[],
        NODE,
        Reject("OutOfcpu", "requested: 2500,"),
    ),
    case(
        "an init container runs beside the sidecars before it",
        "{initContainers: [{name: s, restartPolicy: Always, resources: {requests: {cpu: '1'}}}, {name: i, resources: {requests: {cpu: 1500m}}}], containers: [{name: a, resources: {requests: {cpu: 100m}}}]}",
        &[],
        NODE,
        Reject("OutOfcpu", "requested: 2500,"),
    ),
    case(
        "overhead adds to the requests",
        "{containers: [{name: a, resources: {requests: {cpu: 1500m}}}], overhead: {cpu: 600m}}",
        &[],
        NODE,
        Reject("OutOfcpu", "requested: 2100,"),
    ),
    case(
        "limits default the requests",
        "{containers: [{name: a, resources: {limits: {cpu: '3'}}}]}",
        &[],
        NODE,
        Reject("OutOfcpu", "requested: 3000,"),
    ),
    case(
        "pod-level requests replace the containers' sum",
        "{resources: {requests: {cpu: '3'}}, containers: [{name: a, resources: {requests: {cpu: 100m}}}]}",
        &[],
        NODE,
        Reject("OutOfcpu", "requested: 3000,"),
    ),
    case("an extended resource within allocatable", requests!("{example.com/gpu: '1'}"), &[], NODE, Admit),
    case(
        "an extended resource beyond allocatable",
        requests!("{example.com/gpu: '2'}"),
        &[],
        NODE,
        Reject("OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1"),
    ),
    case(
        "an extended resource the node does not list is left out",
        requests!("{other.example/fpga: '4'}"),
        &[],
        NODE,
        Admit,
    ),
    case(
        "hugepages the node does not list are not left out",
        requests!("{hugepages-2Mi: 2Mi}"),
        &[],
        NODE,
        Reject("OutOfhugepages-2Mi", "requested: 2097152, used: 0, capacity: 0"),
    ),
    case(
        "an unreadable request names its field",
        requests!("{memory: 12x}"),
        &[],
        NODE,
        Reject(
            "UnexpectedAdmissionError",
            r#"spec.containers[0].resources.requests[memory] (container "a"): quantity "12x" has unknown suffix "x""#,
        ),
    ),
    case(
        "an unreadable limit names the limit",
        "{initContainers: [{name: i, resources: {limits: {cpu: Mi}}}], containers: [{name: a}]}",
        &[],
        NODE,
        Reject("UnexpectedAdmissionError", "spec.initContainers[0].resources.limits[cpu]"),
    ),
    case(
        "a negative request names its field",
        requests!("{cpu: '-1'}"),
        &[],
        NODE,
        Reject("UnexpectedAdmissionError", r#"requests[cpu] (container "a"): quantity "-1" must be greater than or equal to 0"#),
    ),
    case(
        "an overflowing request names its field",
        requests!("{memory: '1e40'}"),
        &[],
        NODE,
        Reject("UnexpectedAdmissionError", r#"requests[memory] (container "a"): quantity "1e40" is too large"#),
    ),
    case(
        "an absurd exponent is refused before the parser walks it",
        requests!("{cpu: '1e2147483647'}"),
        &[],
        NODE,
        Reject("UnexpectedAdmissionError", r#"quantity "1e2147483647" has an exponent beyond 64"#),
    ),
    case(
        "a huge request that can be read is only too big",
        requests!("{memory: '1e30'}"),
        &[],
        NODE,
        Reject("OutOfmemory", "requested: 1000000000000000000000000000000,"),
    ),
    case(
        "an active pod's unreadable request counts as zero",
        requests!("{memory: 1Gi}"),
        &[requests!("{memory: 12x}")],
        NODE,
        Admit,
    ),
    case(
        "an unreadable allocatable",
        PLAIN,
        &[],
        NODE_BAD_ALLOCATABLE,
        Reject("InvalidNodeInfo", r#"status.allocatable[memory]: quantity "lots""#),
    ),
    case(
        "a node without allocatable has room for no pod",
        PLAIN,
        &[],
        NODE_NO_ALLOCATABLE,
        Reject("OutOfpods", "used: 0, capacity: 0"),
    ),
    // Host ports.
    case("a host port taken on every IP", HOST_8080, &[HOST_8080], NODE, Reject(PORTS, PORTS_MESSAGE)),
    case(
        "the same host port on another protocol",
        ports!("[{containerPort: 80, hostPort: 8080, protocol: UDP}]"),
        &[HOST_8080],
        NODE,
        Admit,
    ),
    case(
        "the same host port on two different host IPs",
        ports!("[{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.2}]"),
        &[ports!("[{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.1}]")],
        NODE,
        Admit,
    ),
    case(
        "a host IP against a port taken on 0.0.0.0",
        ports!("[{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.2}]"),
        &[HOST_8080],
        NODE,
        Reject(PORTS, PORTS_MESSAGE),
    ),
    case(
        "0.0.0.0 against a port taken on one host IP",
        ports!("[{containerPort: 80, hostPort: 8080, hostIP: 0.0.0.0}]"),
        &[ports!("[{containerPort: 80, hostPort: 8080, hostIP: 10.0.0.1}]")],
        NODE,
        Reject(PORTS, PORTS_MESSAGE),
    ),
    case(
        "an explicit TCP against a default protocol",
        ports!("[{containerPort: 80, hostPort: 8080, protocol: TCP}]"),
        &[HOST_8080],
        NODE,
        Reject(PORTS, PORTS_MESSAGE),
    ),
    case(
        "a running sidecar's host port is taken",
        HOST_8080,
        &["{initContainers: [{name: s, restartPolicy: Always, ports: [{containerPort: 80, hostPort: 8080}]}], containers: [{name: a}]}"],
        NODE,
        Reject(PORTS, PORTS_MESSAGE),
    ),
    case(
        "an exited init container's host port is free",
        HOST_8080,
        &["{initContainers: [{name: i, ports: [{containerPort: 80, hostPort: 8080}]}], containers: [{name: a}]}"],
        NODE,
        Admit,
    ),
    case(
        "container ports without host ports never conflict",
        ports!("[{containerPort: 80}]"),
        &[ports!("[{containerPort: 80}]")],
        NODE,
        Admit,
    ),
    // nodeSelector and required node affinity.
    case("a matching nodeSelector", "{containers: [{name: a}], nodeSelector: {zone: z1}}", &[], NODE, Admit),
    case(
        "a nodeSelector of another value",
        "{containers: [{name: a}], nodeSelector: {zone: z2}}",
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "a nodeSelector on a label the node lacks",
        "{containers: [{name: a}], nodeSelector: {disk: ssd}}",
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case("In matching", affinity!("[{matchExpressions: [{key: zone, operator: In, values: [z0, z1]}]}]"), &[], NODE, Admit),
    case(
        "In not matching",
        affinity!("[{matchExpressions: [{key: zone, operator: In, values: [z2]}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "In on a label the node lacks",
        affinity!("[{matchExpressions: [{key: disk, operator: In, values: [ssd]}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "NotIn on a label the node lacks",
        affinity!("[{matchExpressions: [{key: disk, operator: NotIn, values: [ssd]}]}]"),
        &[],
        NODE,
        Admit,
    ),
    case(
        "NotIn excluding the node's value",
        affinity!("[{matchExpressions: [{key: zone, operator: NotIn, values: [z1]}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case("Exists on a present label", affinity!("[{matchExpressions: [{key: zone, operator: Exists}]}]"), &[], NODE, Admit),
    case(
        "Exists on a missing label",
        affinity!("[{matchExpressions: [{key: disk, operator: Exists}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "DoesNotExist on a missing label",
        affinity!("[{matchExpressions: [{key: disk, operator: DoesNotExist}]}]"),
        &[],
        NODE,
        Admit,
    ),
    case(
        "DoesNotExist on a present label",
        affinity!("[{matchExpressions: [{key: zone, operator: DoesNotExist}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case("Gt below the label", affinity!("[{matchExpressions: [{key: generation, operator: Gt, values: ['2']}]}]"), &[], NODE, Admit),
    case(
        "Gt equal to the label",
        affinity!("[{matchExpressions: [{key: generation, operator: Gt, values: ['3']}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case("Lt above the label", affinity!("[{matchExpressions: [{key: generation, operator: Lt, values: ['4']}]}]"), &[], NODE, Admit),
    case(
        "Lt equal to the label",
        affinity!("[{matchExpressions: [{key: generation, operator: Lt, values: ['3']}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "Gt with a value that is not an integer",
        affinity!("[{matchExpressions: [{key: generation, operator: Gt, values: ['2.5']}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "Lt on a label that is not an integer",
        affinity!("[{matchExpressions: [{key: zone, operator: Lt, values: ['9']}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "Gt with two values",
        affinity!("[{matchExpressions: [{key: generation, operator: Gt, values: ['1', '2']}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "In without values is invalid",
        affinity!("[{matchExpressions: [{key: zone, operator: In, values: []}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "Exists with values is invalid",
        affinity!("[{matchExpressions: [{key: zone, operator: Exists, values: [z1]}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "an unknown operator is invalid",
        affinity!("[{matchExpressions: [{key: zone, operator: Matches, values: [z1]}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "expressions of a term are ANDed",
        affinity!("[{matchExpressions: [{key: zone, operator: In, values: [z1]}, {key: disk, operator: Exists}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "terms are ORed",
        affinity!("[{matchExpressions: [{key: zone, operator: In, values: [z2]}]}, {matchExpressions: [{key: zone, operator: In, values: [z1]}]}]"),
        &[],
        NODE,
        Admit,
    ),
    case(
        "an invalid term does not stop a valid one",
        affinity!("[{matchExpressions: [{key: generation, operator: Gt, values: [x]}]}, {matchExpressions: [{key: zone, operator: Exists}]}]"),
        &[],
        NODE,
        Admit,
    ),
    case(
        "an invalid requirement fails its whole term",
        affinity!("[{matchExpressions: [{key: zone, operator: Exists}, {key: generation, operator: Gt, values: [x]}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case("an empty term matches nothing", affinity!("[{}]"), &[], NODE, Reject(AFFINITY, AFFINITY_MESSAGE)),
    case("no terms match nothing", affinity!("[]"), &[], NODE, Reject(AFFINITY, AFFINITY_MESSAGE)),
    case("matchFields In the node's name", affinity!("[{matchFields: [{key: metadata.name, operator: In, values: [node-a]}]}]"), &[], NODE, Admit),
    case(
        "matchFields In another name",
        affinity!("[{matchFields: [{key: metadata.name, operator: In, values: [node-b]}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "matchFields NotIn the node's name",
        affinity!("[{matchFields: [{key: metadata.name, operator: NotIn, values: [node-a]}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "matchFields with two values is invalid",
        affinity!("[{matchFields: [{key: metadata.name, operator: In, values: [node-a, node-b]}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "matchFields with Exists is invalid",
        affinity!("[{matchFields: [{key: metadata.name, operator: Exists}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "fields and expressions of a term are ANDed",
        affinity!("[{matchExpressions: [{key: zone, operator: In, values: [z1]}], matchFields: [{key: metadata.name, operator: In, values: [node-b]}]}]"),
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "nodeSelector and affinity must both match",
        "{containers: [{name: a}], nodeSelector: {zone: z2}, affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Exists}]}]}}}}",
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    // spec.nodeName.
    case("nodeName of this node", "{containers: [{name: a}], nodeName: node-a}", &[], NODE, Admit),
    case(
        "nodeName of another node",
        "{containers: [{name: a}], nodeName: node-b}",
        &[],
        NODE,
        Reject("NodeName", "Predicate NodeName failed: node(s) didn't match the requested node name"),
    ),
    // Taints.
    case("an untolerated NoExecute taint", PLAIN, &[], NODE_TAINTED, Reject(TAINTS, TAINTS_MESSAGE)),
    case("NoSchedule and PreferNoSchedule taints are ignored", PLAIN, &[], NODE_NO_SCHEDULE, Admit),
    case(
        "Equal with the taint's value",
        tolerations!("[{key: dedicated, operator: Equal, value: db, effect: NoExecute}]"),
        &[],
        NODE_TAINTED,
        Admit,
    ),
    case("no operator means Equal", tolerations!("[{key: dedicated, value: db}]"), &[], NODE_TAINTED, Admit),
    case(
        "Equal with another value",
        tolerations!("[{key: dedicated, operator: Equal, value: web}]"),
        &[],
        NODE_TAINTED,
        Reject(TAINTS, TAINTS_MESSAGE),
    ),
    case("Exists on the taint's key", tolerations!("[{key: dedicated, operator: Exists}]"), &[], NODE_TAINTED, Admit),
    case(
        "Exists on another key",
        tolerations!("[{key: other, operator: Exists}]"),
        &[],
        NODE_TAINTED,
        Reject(TAINTS, TAINTS_MESSAGE),
    ),
    case("Exists with an empty key tolerates every taint", tolerations!("[{operator: Exists}]"), &[], NODE_TAINTED, Admit),
    case(
        "a toleration of NoSchedule only",
        tolerations!("[{key: dedicated, operator: Exists, effect: NoSchedule}]"),
        &[],
        NODE_TAINTED,
        Reject(TAINTS, TAINTS_MESSAGE),
    ),
    case(
        "the Gt toleration operator is alpha and off",
        tolerations!("[{key: dedicated, operator: Gt, value: '1'}]"),
        &[],
        NODE_TAINTED,
        Reject(TAINTS, TAINTS_MESSAGE),
    ),
    case(
        "static pods ignore taints",
        "metadata: {name: p, annotations: {kubernetes.io/config.source: file}}\nspec: {containers: [{name: a}]}",
        &[],
        NODE_TAINTED,
        Admit,
    ),
    case(
        "pods from the API server do not",
        "metadata: {name: p, annotations: {kubernetes.io/config.source: api}}\nspec: {containers: [{name: a}]}",
        &[],
        NODE_TAINTED,
        Reject(TAINTS, TAINTS_MESSAGE),
    ),
    // The OS and the supplemental-groups policy, checked before everything else.
    case(
        "an OS label of another OS",
        "metadata: {name: p, labels: {kubernetes.io/os: windows}}\nspec: {containers: [{name: a, resources: {requests: {cpu: '3'}}}]}",
        &[],
        NODE,
        Reject(
            "PodOSSelectorNodeLabelDoesNotMatch",
            "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
        ),
    ),
    case("an OS label of this OS", "metadata: {name: p, labels: {kubernetes.io/os: linux}}\nspec: {containers: [{name: a}]}", &[], NODE, Admit),
    case(
        "an OS field of another OS",
        "{containers: [{name: a}], os: {name: windows}}",
        &[],
        NODE,
        Reject("PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"),
    ),
    case(
        "a Strict supplemental-groups policy the node does not support",
        "{containers: [{name: a}], securityContext: {supplementalGroupsPolicy: Strict}}",
        &[],
        NODE,
        Reject("SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node"),
    ),
    case(
        "a Strict supplemental-groups policy the node supports",
        "{containers: [{name: a}], securityContext: {supplementalGroupsPolicy: Strict}}",
        &[],
        NODE_STRICT_GROUPS,
        Admit,
    ),
    case(
        "the Merge supplemental-groups policy",
        "{containers: [{name: a}], securityContext: {supplementalGroupsPolicy: Merge}}",
        &[],
        NODE,
        Admit,
    ),
    // Which failure is reported.
    case(
        "a pod reports its resources first",
        "{containers: [{name: a, resources: {requests: {cpu: '3'}}}], nodeSelector: {zone: z2}}",
        &[],
        NODE,
        Reject("OutOfcpu", ""),
    ),
    case(
        "a critical pod reports any other failure first",
        "{containers: [{name: a, resources: {requests: {cpu: '3'}}}], nodeSelector: {zone: z2}, priority: 2000000000}",
        &[],
        NODE,
        Reject(AFFINITY, AFFINITY_MESSAGE),
    ),
    case(
        "a critical pod with only resource failures is refused for them (no preemption)",
        "metadata: {name: p, annotations: {kubernetes.io/config.source: file}}\nspec: {containers: [{name: a}]}",
        &[PLAIN],
        NODE_ONE_POD,
        Reject("OutOfpods", "used: 1, capacity: 1"),
    ),
];

fn pod(yaml: &str, case: &str) -> Pod {
    let yaml = if yaml.starts_with('{') {
        format!("metadata: {{name: p, namespace: default}}\nspec: {yaml}")
    } else {
        yaml.to_string()
    };
    wasmlet_plugin_host::yaml::from_str(&yaml).unwrap_or_else(|e| panic!("{case}: pod {yaml}: {e}"))
}

#[test]
fn predicates_table() {
    let mut failed = Vec::new();
    for case in CASES {
        let node: Node = wasmlet_plugin_host::yaml::from_str(case.node)
            .unwrap_or_else(|e| panic!("{}: node: {e}", case.name));
        let admitted = pod(case.pod, case.name);
        let others: Vec<Pod> = case.others.iter().map(|o| pod(o, case.name)).collect();
        let got = check(&admitted, &others, &node);
        let ok = match (&case.want, &got) {
            (Admit, Ok(())) => true,
            (Reject(reason, message), Err(r)) => r.reason == *reason && r.message.contains(message),
            _ => false,
        };
        if !ok {
            failed.push(format!(
                "{}: want {:?}, got {:?}",
                case.name, case.want, got
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        CASES.len(),
        failed.join("\n")
    );
}

#[test]
fn no_node_known_admits() {
    let (_tx, rx) = watch::channel(None);
    let handler = PredicateAdmitHandler::new(rx);
    let big = pod(requests!("{cpu: '1000'}"), "no node");
    let attrs = AdmitAttributes {
        pod: &big,
        other_pods: &[],
    };
    assert_eq!(handler.admit(&attrs), Ok(()));
}

#[test]
fn the_handler_reads_the_latest_node() {
    let node = |yaml: &str| -> Option<Node> { wasmlet_plugin_host::yaml::from_str(yaml).ok() };
    let (tx, rx) = watch::channel(node(NODE));
    let handler = PredicateAdmitHandler::new(rx);
    let plain = pod(PLAIN, "latest");
    let attrs = AdmitAttributes {
        pod: &plain,
        other_pods: &[],
    };
    assert_eq!(handler.admit(&attrs), Ok(()));
    tx.send_replace(node(NODE_TAINTED));
    let rejection = handler.admit(&attrs).unwrap_err();
    assert_eq!(rejection.reason, "TaintToleration");
}

#[test]
fn the_standalone_node_admits_up_to_max_pods() {
    let facts = NodeFacts {
        name: "node-a".into(),
        ip: "10.0.0.1".into(),
        max_pods: 2,
        memory_capacity_bytes: 4 << 30,
        cpu_capacity_millis: 2000,
        nodefs_capacity_bytes: 10 << 30,
        memory_hard_threshold_bytes: 100 << 20,
        nodefs_hard_threshold_bytes: 1 << 30,
        runtime_version: "containerd://1.6".into(),
        ..Default::default()
    };
    let node = crate::node_status::node(
        &facts,
        &NodePressure::new(false),
        &Ok(()),
        std::time::SystemTime::now(),
    );
    let static_pod = pod(
        "metadata: {name: p, annotations: {kubernetes.io/config.source: file}}\n\
         spec: {nodeName: node-a, nodeSelector: {kubernetes.io/os: linux}, containers: [{name: a, resources: {requests: {cpu: '1', memory: 1Gi}}}]}",
        "standalone",
    );
    let one = [pod(PLAIN, "standalone")];
    assert_eq!(check(&static_pod, &one, &node), Ok(()));
    let two = [pod(PLAIN, "standalone"), pod(PLAIN, "standalone")];
    let rejection = check(&static_pod, &two, &node).unwrap_err();
    assert_eq!(rejection.reason, "OutOfpods");
    assert_eq!(
        rejection.message,
        "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
    );
    let greedy = pod(requests!("{memory: 4Gi}"), "standalone");
    let rejection = check(&greedy, &[], &node).unwrap_err();
    assert_eq!(
        rejection.message,
        "Node didn't have enough resource: memory, requested: 4294967296, used: 0, capacity: 4190109696",
        "allocatable memory is capacity less the hard eviction threshold"
    );
}

#[test]
fn no_quantity_panics() {
    let texts = [
        "",
        "-",
        "+",
        ".",
        "e",
        "1e",
        "1e-",
        "1e99999999999",
        "-1e3",
        "9".repeat(60).as_str(),
        "0.0000000001",
        "1.5Ei",
        "170141183460469231731687303715884105727",
        "1Ki1",
        "🦀",
        "1 Gi",
        "-0",
        "+1",
        "1..2",
        "Ei",
        // Exponents the parser would walk for seconds.
        "0e2147483647",
        "1e2147483647",
        "1e-2147483648",
        "1E65",
    ]
    .map(str::to_string);
    for text in &texts {
        for other in &texts {
            let q = |t: &str| serde_json::json!(t);
            let pod: Pod = serde_json::from_value(serde_json::json!({
                "spec": {
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": q(text), "example.com/x": q(other)}}}],
                    "initContainers": [{"name": "i", "resources": {"limits": {"memory": q(other)}}}],
                    "overhead": {"memory": q(text)}
                }
            }))
            .expect("fixture pod");
            let node: Node = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "n"},
                "status": {"allocatable": {"cpu": q(other), "pods": q(text), "example.com/x": q(text)}}
            }))
            .expect("fixture node");
            // Any answer will do; it must come back.
            let _ = check(&pod, std::slice::from_ref(&pod), &node);
        }
    }
}
