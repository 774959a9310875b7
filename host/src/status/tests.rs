use super::*;
use crate::cri::api;
use crate::resources::{PendingReason, PendingResize};
use crate::runtime_status::Sandbox;
use crate::source::manifest;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::path::Path;

fn pod(text: &str) -> Pod {
    manifest::load(text, Path::new("/m/p.yaml"), "node").unwrap()
}

fn exited(name: &str, attempt: u32, code: i32, reason: &str) -> api::ContainerStatus {
    api::ContainerStatus {
        id: format!("{name}-{attempt}"),
        metadata: Some(api::ContainerMetadata {
            name: name.into(),
            attempt,
        }),
        state: api::ContainerState::ContainerExited as i32,
        exit_code: code,
        reason: reason.into(),
        started_at: 1_000_000_000,
        finished_at: 2_000_000_000,
        ..Default::default()
    }
}

fn running(name: &str, attempt: u32) -> api::ContainerStatus {
    api::ContainerStatus {
        state: api::ContainerState::ContainerRunning as i32,
        finished_at: 0,
        ..exited(name, attempt, 0, "")
    }
}

fn generate_for(
    pod: &Pod,
    containers: Vec<api::ContainerStatus>,
    waiting: HashMap<String, Waiting>,
) -> PodStatus {
    generate_probed(pod, containers, waiting, HashMap::new())
}

fn generate_probed(
    pod: &Pod,
    containers: Vec<api::ContainerStatus>,
    waiting: HashMap<String, Waiting>,
    probes: HashMap<String, crate::prober::ProbeView>,
) -> PodStatus {
    let runtime = PodRuntimeStatus {
        sandboxes: vec![Sandbox {
            id: "s".into(),
            ready: true,
            attempt: 0,
            created_at: 1,
            ips: vec!["10.88.0.9".into()],
        }],
        containers,
    };
    generate(&StatusInput {
        pod,
        runtime: &runtime,
        waiting: &waiting,
        probes: &probes,
        host_ip: "10.0.0.1",
        runtime_name: "containerd",
        start_time: None,
        previous: None,
        terminal: false,
        applied: &Default::default(),
        resize_pending: None,
    })
}

const ONE: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: busybox:local}]\n";

/// The status (`True`/`False`) of the pod condition `kind`; empty when there is none.
fn condition_status(status: &PodStatus, kind: &str) -> String {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == kind)
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

#[test]
fn running_pod_is_ready_with_ip() {
    let status = generate_for(&pod(ONE), vec![running("c", 0)], HashMap::new());
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!(status.pod_ip.as_deref(), Some("10.88.0.9"));
    let cs = &status.container_statuses.unwrap()[0];
    assert!(cs.ready);
    assert_eq!(cs.container_id.as_deref(), Some("containerd://c-0"));
    let ready = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(ready.status, "True");
}

#[test]
fn crash_loop_shows_waiting_with_last_state() {
    let waiting = HashMap::from([(
        "c".to_string(),
        Waiting {
            reason: "CrashLoopBackOff".into(),
            message: "back-off 10s".into(),
        },
    )]);
    let status = generate_for(
        &pod(ONE),
        vec![exited("c", 1, 1, "Error"), exited("c", 0, 1, "Error")],
        waiting,
    );
    assert_eq!(
        status.phase.as_deref(),
        Some("Running"),
        "restartPolicy Always keeps it Running"
    );
    let cs = &status.container_statuses.unwrap()[0];
    assert_eq!(cs.restart_count, 1);
    assert_eq!(
        cs.state
            .as_ref()
            .unwrap()
            .waiting
            .as_ref()
            .unwrap()
            .reason
            .as_deref(),
        Some("CrashLoopBackOff")
    );
    assert_eq!(
        cs.last_state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap()
            .exit_code,
        1
    );
}

#[test]
fn restart_policies_decide_terminal_phases() {
    let never = ONE.replace("spec:\n", "spec:\n  restartPolicy: Never\n");
    let on_failure = ONE.replace("spec:\n", "spec:\n  restartPolicy: OnFailure\n");
    let phase = |text: &str, code: i32| {
        generate_for(&pod(text), vec![exited("c", 0, code, "")], HashMap::new())
            .phase
            .unwrap()
    };
    assert_eq!(phase(&never, 0), "Succeeded");
    assert_eq!(phase(&never, 3), "Failed");
    assert_eq!(phase(&on_failure, 0), "Succeeded");
    assert_eq!(phase(&on_failure, 3), "Running");
}

#[test]
fn init_containers_gate_the_pod() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  initContainers: [{name: i, image: busybox:local}]\n  containers: [{name: c, image: busybox:local}]\n";
    let p = pod(text);
    let status = generate_for(&p, vec![running("i", 0)], HashMap::new());
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    let app = &status.container_statuses.unwrap()[0];
    assert_eq!(
        app.state
            .as_ref()
            .unwrap()
            .waiting
            .as_ref()
            .unwrap()
            .reason
            .as_deref(),
        Some("PodInitializing")
    );
    let failed = generate_for(&p, vec![exited("i", 0, 1, "Error")], HashMap::new());
    assert_eq!(failed.phase.as_deref(), Some("Failed"));
    let init_cond = failed
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Initialized")
        .unwrap();
    assert_eq!(init_cond.status, "False");
    assert_eq!(
        init_cond.message.as_deref(),
        Some("containers with incomplete status: [i]")
    );
}

#[test]
fn probes_decide_ready_and_started() {
    use crate::prober::ProbeView;
    let p = pod(ONE);
    let unready = HashMap::from([(
        "c".to_string(),
        ProbeView {
            started: true,
            ready: false,
        },
    )]);
    let status = generate_probed(&p, vec![running("c", 0)], HashMap::new(), unready);
    let c = &status.container_statuses.as_ref().unwrap()[0];
    assert!(!c.ready);
    assert_eq!(c.started, Some(true));
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!(condition_status(&status, "Ready"), "False");
    assert_eq!(condition_status(&status, "ContainersReady"), "False");
    let starting = HashMap::from([(
        "c".to_string(),
        ProbeView {
            started: false,
            ready: false,
        },
    )]);
    let status = generate_probed(&p, vec![running("c", 0)], HashMap::new(), starting);
    assert_eq!(
        status.container_statuses.as_ref().unwrap()[0].started,
        Some(false)
    );
    let ready = HashMap::from([(
        "c".to_string(),
        ProbeView {
            started: true,
            ready: true,
        },
    )]);
    let status = generate_probed(&p, vec![running("c", 0)], HashMap::new(), ready);
    assert!(status.container_statuses.as_ref().unwrap()[0].ready);
    assert_eq!(condition_status(&status, "Ready"), "True");
}

#[test]
fn a_running_sidecar_initializes_the_pod_and_never_holds_its_phase() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  initContainers: [{name: proxy, image: busybox:local, restartPolicy: Always}]\n  containers: [{name: c, image: busybox:local}]\n";
    let p = pod(text);
    let starting = generate_for(&p, vec![], HashMap::new());
    assert_eq!(starting.phase.as_deref(), Some("Pending"));
    assert_eq!(condition_status(&starting, "Initialized"), "False");
    let both = generate_for(
        &p,
        vec![running("proxy", 0), running("c", 0)],
        HashMap::new(),
    );
    assert_eq!(both.phase.as_deref(), Some("Running"));
    assert_eq!(condition_status(&both, "Initialized"), "True");
    assert_eq!(
        condition_status(&both, "Ready"),
        "True",
        "a running sidecar is ready without probes"
    );
    let done = generate_for(
        &p,
        vec![running("proxy", 0), exited("c", 0, 0, "Completed")],
        HashMap::new(),
    );
    assert_eq!(
        done.phase.as_deref(),
        Some("Succeeded"),
        "the sidecar does not keep the pod running"
    );
    let sidecar_failed = generate_for(
        &p,
        vec![exited("proxy", 0, 1, "Error"), running("c", 0)],
        HashMap::new(),
    );
    assert_eq!(
        sidecar_failed.phase.as_deref(),
        Some("Running"),
        "a sidecar never fails the pod"
    );
}

#[test]
fn a_container_behind_its_spec_shows_the_resize_in_progress_with_the_last_error() {
    let pod = pod("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: busybox:local\n    resources: {requests: {memory: 64Mi}, limits: {memory: 64Mi}}\n");
    let runtime = PodRuntimeStatus {
        sandboxes: vec![Sandbox {
            id: "s".into(),
            ready: true,
            attempt: 0,
            created_at: 1,
            ips: vec!["10.88.0.9".into()],
        }],
        containers: vec![running("c", 0)],
    };
    let (waiting, probes) = (HashMap::new(), HashMap::new());
    let status_pending = |applied: &AppliedResources, resize_pending: Option<&PendingResize>| {
        generate(&StatusInput {
            pod: &pod,
            runtime: &runtime,
            waiting: &waiting,
            probes: &probes,
            host_ip: "10.0.0.1",
            runtime_name: "containerd",
            start_time: None,
            previous: None,
            terminal: false,
            applied,
            resize_pending,
        })
    };
    let status_with = |applied: &AppliedResources| status_pending(applied, None);
    let in_progress = |status: &PodStatus| {
        status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "PodResizeInProgress")
            .cloned()
    };
    let spec = crate::resources::spec_resources(&pod.spec.as_ref().unwrap().containers[0]);
    let mut applied = AppliedResources::default();
    // Nothing recorded, or what the spec asks for: no resize under way.
    assert_eq!(in_progress(&status_with(&applied)), None);
    applied.record("c-0".into(), spec.clone());
    assert_eq!(in_progress(&status_with(&applied)), None);

    // The spec asks for more than the container was given: in progress, then failed.
    let mut older = spec.clone();
    older
        .limits
        .as_mut()
        .unwrap()
        .insert("memory".into(), Quantity("32Mi".into()));
    applied.record("c-0".into(), older);
    let condition = in_progress(&status_with(&applied)).expect("in progress");
    assert_eq!(
        (condition.status.as_str(), condition.reason),
        ("True", None)
    );
    applied.set_resize_errors(&["cannot decrease memory limits: x".into()]);
    let condition = in_progress(&status_with(&applied)).expect("in progress");
    assert_eq!(condition.reason.as_deref(), Some("Error"));
    assert_eq!(
        condition.message.as_deref(),
        Some("cannot decrease memory limits: x")
    );

    // A further resize the node cannot hold now: pending with its reason and message,
    // beside the one still in progress; none once the pod is terminal.
    for reason in [PendingReason::Deferred, PendingReason::Infeasible] {
        let waiting_resize = PendingResize {
            reason,
            message: "Node didn't have enough resource: memory".into(),
        };
        let status = status_pending(&applied, Some(&waiting_resize));
        assert!(in_progress(&status).is_some());
        let pending = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "PodResizePending")
            .expect("pending");
        assert_eq!(pending.reason.as_deref(), Some(reason.as_str()));
        assert_eq!(
            pending.message.as_deref(),
            Some("Node didn't have enough resource: memory")
        );
    }
}
