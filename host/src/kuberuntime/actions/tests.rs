//! `compute_pod_actions` as a table of named cases, in the style of upstream's
//! `TestComputePodActions`: a pod, what the runtime holds, the back-off and probe state, and
//! the actions expected.

use super::*;
use crate::config::BackOffConfig;
use crate::runtime_status::Sandbox;

const NOW_SECS: u64 = 1_000_000;

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(NOW_SECS)
}

/// Nanoseconds since the epoch, `secs_ago` before [`now`].
fn ago(secs_ago: u64) -> i64 {
    ((NOW_SECS - secs_ago) * 1_000_000_000) as i64
}

fn pod(restart_policy: &str, init: &[&str], app: &[&str]) -> Pod {
    let containers = |names: &[&str]| {
        names
            .iter()
            .map(|n| Container {
                name: n.to_string(),
                image: Some("busybox:local".into()),
                ..Default::default()
            })
            .collect::<Vec<_>>()
    };
    Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("p".into()),
            namespace: Some("default".into()),
            uid: Some("uid-1".into()),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            restart_policy: Some(restart_policy.into()),
            init_containers: (!init.is_empty()).then(|| containers(init)),
            containers: containers(app),
            ..Default::default()
        }),
        status: None,
    }
}

fn sandbox(ready: bool, attempt: u32) -> Sandbox {
    Sandbox {
        id: format!("sandbox-{attempt}"),
        ready,
        attempt,
        created_at: ago(100) + i64::from(attempt),
        ips: vec!["10.88.0.2".into()],
    }
}

#[derive(Clone, Copy)]
enum State {
    Created,
    Running,
    Exited(i32),
    Unknown,
}

fn container(name: &str, attempt: u32, state: State) -> api::ContainerStatus {
    let (state, exit_code, finished_at) = match state {
        State::Created => (api::ContainerState::ContainerCreated, 0, 0),
        State::Running => (api::ContainerState::ContainerRunning, 0, 0),
        State::Exited(code) => (api::ContainerState::ContainerExited, code, ago(5)),
        State::Unknown => (api::ContainerState::ContainerUnknown, 0, 0),
    };
    api::ContainerStatus {
        id: format!("{name}-{attempt}"),
        metadata: Some(api::ContainerMetadata {
            name: name.into(),
            attempt,
        }),
        state: state as i32,
        created_at: ago(60) + i64::from(attempt),
        started_at: if matches!(state, api::ContainerState::ContainerCreated) {
            0
        } else {
            ago(50)
        },
        finished_at,
        exit_code,
        ..Default::default()
    }
}

fn with_hash(mut status: api::ContainerStatus, hash: &str) -> api::ContainerStatus {
    status
        .annotations
        .insert(labels::CONTAINER_HASH.into(), hash.into());
    status
}

fn runtime(sandboxes: Vec<Sandbox>, containers: Vec<api::ContainerStatus>) -> PodRuntimeStatus {
    let mut runtime = PodRuntimeStatus {
        sandboxes,
        containers,
    };
    runtime
        .sandboxes
        .sort_by_key(|s| std::cmp::Reverse(s.created_at));
    runtime
        .containers
        .sort_by_key(|c| std::cmp::Reverse(runtime_status::attempt(c)));
    runtime
}

fn ready() -> Vec<Sandbox> {
    vec![sandbox(true, 0)]
}

fn start(name: &str, attempt: u32) -> StartAction {
    StartAction {
        name: name.into(),
        init: false,
        attempt,
        failed_at: None,
    }
}

fn start_init(name: &str, attempt: u32) -> StartAction {
    StartAction {
        init: true,
        ..start(name, attempt)
    }
}

fn restart(name: &str, attempt: u32) -> StartAction {
    StartAction {
        failed_at: Some(now() - Duration::from_secs(5)),
        ..start(name, attempt)
    }
}

fn restart_init(name: &str, attempt: u32) -> StartAction {
    StartAction {
        init: true,
        ..restart(name, attempt)
    }
}

fn unhealthy(container_id: &str) -> Unhealthy {
    Unhealthy {
        container_id: container_id.into(),
        probe: ProbeKind::Liveness,
        message: "HTTP probe failed with statuscode: 500".into(),
        grace: None,
    }
}

fn kill_unhealthy(id: &str) -> KillAction {
    KillAction {
        name: id.rsplit_once('-').map_or(id, |(name, _)| name).into(),
        id: id.into(),
        reason: KillReason::Unhealthy(unhealthy(id)),
    }
}

/// A back-off that holds `name` for 10 s after a failure 5 s ago (its second failure).
fn holding(name: &str) -> BackOff {
    let mut backoff = BackOff::new(BackOffConfig::UPSTREAM);
    let first = now() - Duration::from_secs(30);
    backoff.next(name, first, first);
    backoff
}

struct Case {
    name: &'static str,
    pod: Pod,
    runtime: PodRuntimeStatus,
    terminal: bool,
    backoff: BackOff,
    unhealthy: HashMap<String, Unhealthy>,
    expected: PodActions,
}

impl Case {
    fn new(name: &'static str, pod: Pod, runtime: PodRuntimeStatus, expected: PodActions) -> Self {
        Self {
            name,
            pod,
            runtime,
            terminal: false,
            backoff: BackOff::new(BackOffConfig::UPSTREAM),
            unhealthy: HashMap::new(),
            expected,
        }
    }

    fn terminal(mut self) -> Self {
        self.terminal = true;
        self
    }

    fn backoff(mut self, backoff: BackOff) -> Self {
        self.backoff = backoff;
        self
    }

    fn unhealthy(mut self, name: &str, probe: Unhealthy) -> Self {
        self.unhealthy.insert(name.into(), probe);
        self
    }
}

fn starts(start: Vec<StartAction>) -> PodActions {
    PodActions {
        start,
        ..Default::default()
    }
}

fn nothing() -> PodActions {
    PodActions::default()
}

fn cases() -> Vec<Case> {
    use State::*;
    let app = |policy| pod(policy, &[], &["app"]);
    let two = |policy| pod(policy, &[], &["a", "b"]);
    let inits = |policy| pod(policy, &["i1", "i2"], &["app"]);
    let hash_of = |pod: &Pod| container_hash(&pod.spec.as_ref().unwrap().containers[0]);
    let changed_pod = app("Always");
    let unchanged_hash = hash_of(&changed_pod);
    vec![
        Case::new(
            "new pod: create the first sandbox",
            app("Always"),
            runtime(vec![], vec![]),
            PodActions {
                create_sandbox: Some(0),
                ..nothing()
            },
        ),
        Case::new(
            "dead sandbox: create the next attempt",
            app("Always"),
            runtime(vec![sandbox(false, 0)], vec![container("app", 0, Running)]),
            PodActions {
                create_sandbox: Some(1),
                ..nothing()
            },
        ),
        Case::new(
            "dead sandbox among older ones: attempt follows the newest",
            app("Always"),
            runtime(vec![sandbox(false, 2), sandbox(false, 1)], vec![]),
            PodActions {
                create_sandbox: Some(3),
                ..nothing()
            },
        ),
        Case::new(
            "dead sandbox of a finished pod: finish, create nothing",
            app("Never"),
            runtime(
                vec![sandbox(false, 0)],
                vec![container("app", 0, Exited(0))],
            ),
            PodActions {
                finish: true,
                ..nothing()
            },
        )
        .terminal(),
        Case::new(
            "no sandbox and a terminal phase: finish",
            app("Never"),
            runtime(vec![], vec![]),
            PodActions {
                finish: true,
                ..nothing()
            },
        )
        .terminal(),
        Case::new(
            "ready sandbox, no containers: start every app container",
            two("Always"),
            runtime(ready(), vec![]),
            starts(vec![start("a", 0), start("b", 0)]),
        ),
        Case::new(
            "init containers: only the first starts",
            inits("Always"),
            runtime(ready(), vec![]),
            starts(vec![start_init("i1", 0)]),
        ),
        Case::new(
            "init container running: wait for it",
            inits("Always"),
            runtime(ready(), vec![container("i1", 0, Running)]),
            nothing(),
        ),
        Case::new(
            "first init succeeded: start the second",
            inits("Always"),
            runtime(ready(), vec![container("i1", 0, Exited(0))]),
            starts(vec![start_init("i2", 0)]),
        ),
        Case::new(
            "all init containers succeeded: start the app containers",
            inits("Always"),
            runtime(
                ready(),
                vec![container("i1", 0, Exited(0)), container("i2", 0, Exited(0))],
            ),
            starts(vec![start("app", 0)]),
        ),
        Case::new(
            "init failed under Always: restart it",
            inits("Always"),
            runtime(ready(), vec![container("i1", 0, Exited(1))]),
            starts(vec![restart_init("i1", 1)]),
        ),
        Case::new(
            "init failed under OnFailure: restart it",
            inits("OnFailure"),
            runtime(ready(), vec![container("i1", 0, Exited(2))]),
            starts(vec![restart_init("i1", 1)]),
        ),
        Case::new(
            "init failed under Never: nothing more starts",
            inits("Never"),
            runtime(ready(), vec![container("i1", 0, Exited(1))]),
            nothing(),
        ),
        Case::new(
            "init failed within its back-off: held",
            inits("Always"),
            runtime(ready(), vec![container("i1", 0, Exited(1))]),
            PodActions {
                back_off: vec![BackOffHold {
                    name: "i1".into(),
                    backoff: Duration::from_secs(10),
                    left: Duration::from_secs(5),
                }],
                ..nothing()
            },
        )
        .backoff(holding("i1")),
        Case::new(
            "init created but never started: start it",
            inits("Always"),
            runtime(ready(), vec![container("i1", 0, Created)]),
            PodActions {
                start_created: vec![CreatedContainer {
                    name: "i1".into(),
                    id: "i1-0".into(),
                }],
                ..nothing()
            },
        ),
        Case::new(
            "second init failed after the first succeeded: restart the second",
            inits("Always"),
            runtime(
                ready(),
                vec![container("i1", 0, Exited(0)), container("i2", 0, Exited(3))],
            ),
            starts(vec![restart_init("i2", 1)]),
        ),
        Case::new(
            "app running and healthy: nothing to do",
            app("Always"),
            runtime(ready(), vec![container("app", 0, Running)]),
            nothing(),
        ),
        Case::new(
            "app completed under Always: restart",
            app("Always"),
            runtime(ready(), vec![container("app", 0, Exited(0))]),
            starts(vec![restart("app", 1)]),
        ),
        Case::new(
            "app completed under OnFailure: stays completed",
            app("OnFailure"),
            runtime(ready(), vec![container("app", 0, Exited(0))]),
            nothing(),
        ),
        Case::new(
            "app failed under OnFailure: restart",
            app("OnFailure"),
            runtime(ready(), vec![container("app", 0, Exited(1))]),
            starts(vec![restart("app", 1)]),
        ),
        Case::new(
            "app failed under Never: stays failed",
            app("Never"),
            runtime(ready(), vec![container("app", 0, Exited(1))]),
            nothing(),
        ),
        Case::new(
            "app failed within its back-off: CrashLoopBackOff",
            app("Always"),
            runtime(ready(), vec![container("app", 3, Exited(1))]),
            PodActions {
                back_off: vec![BackOffHold {
                    name: "app".into(),
                    backoff: Duration::from_secs(10),
                    left: Duration::from_secs(5),
                }],
                ..nothing()
            },
        )
        .backoff(holding("app")),
        Case::new(
            "back-off of another container does not hold this one",
            app("Always"),
            runtime(ready(), vec![container("app", 0, Exited(1))]),
            starts(vec![restart("app", 1)]),
        )
        .backoff(holding("other")),
        Case::new(
            "restart numbering continues from the latest attempt",
            app("Always"),
            runtime(
                ready(),
                vec![
                    container("app", 3, Exited(1)),
                    container("app", 2, Exited(1)),
                ],
            ),
            starts(vec![restart("app", 4)]),
        ),
        Case::new(
            "app created but never started: start it",
            app("Always"),
            runtime(ready(), vec![container("app", 0, Created)]),
            PodActions {
                start_created: vec![CreatedContainer {
                    name: "app".into(),
                    id: "app-0".into(),
                }],
                ..nothing()
            },
        ),
        Case::new(
            "container in an unknown state counts as exited",
            app("Always"),
            runtime(ready(), vec![container("app", 0, Unknown)]),
            starts(vec![StartAction {
                failed_at: Some(now()),
                ..start("app", 1)
            }]),
        ),
        Case::new(
            "liveness failed, no earlier exit: kill and start the next attempt in the same sync",
            app("Always"),
            runtime(ready(), vec![container("app", 0, Running)]),
            PodActions {
                kill: vec![kill_unhealthy("app-0")],
                start: vec![start("app", 1)],
                ..nothing()
            },
        )
        .unhealthy("app", unhealthy("app-0")),
        Case::new(
            "liveness failed after an earlier exit outside its back-off: kill and restart",
            app("OnFailure"),
            runtime(
                ready(),
                vec![container("app", 0, Exited(1)), container("app", 1, Running)],
            ),
            PodActions {
                kill: vec![kill_unhealthy("app-1")],
                start: vec![restart("app", 2)],
                ..nothing()
            },
        )
        .unhealthy("app", unhealthy("app-1")),
        Case::new(
            "liveness failed within the back-off of the earlier exit: kill, the restart waits",
            app("Always"),
            runtime(
                ready(),
                vec![container("app", 0, Exited(1)), container("app", 1, Running)],
            ),
            PodActions {
                kill: vec![kill_unhealthy("app-1")],
                back_off: vec![BackOffHold {
                    name: "app".into(),
                    backoff: Duration::from_secs(10),
                    left: Duration::from_secs(5),
                }],
                ..nothing()
            },
        )
        .unhealthy("app", unhealthy("app-1"))
        .backoff(holding("app")),
        Case::new(
            "liveness failed under restartPolicy Never: kill only",
            app("Never"),
            runtime(ready(), vec![container("app", 0, Running)]),
            PodActions {
                kill: vec![kill_unhealthy("app-0")],
                ..nothing()
            },
        )
        .unhealthy("app", unhealthy("app-0")),
        Case::new(
            "a failed probe of an older instance kills nothing",
            app("Always"),
            runtime(ready(), vec![container("app", 1, Running)]),
            nothing(),
        )
        .unhealthy("app", unhealthy("app-0")),
        Case::new(
            "changed container hash: kill and start the next attempt",
            changed_pod.clone(),
            runtime(
                ready(),
                vec![with_hash(container("app", 0, Running), "0123456789abcdef")],
            ),
            PodActions {
                kill: vec![KillAction {
                    name: "app".into(),
                    id: "app-0".into(),
                    reason: KillReason::SpecChanged,
                }],
                start: vec![start("app", 1)],
                ..nothing()
            },
        ),
        Case::new(
            "unchanged container hash: nothing",
            changed_pod.clone(),
            runtime(
                ready(),
                vec![with_hash(container("app", 0, Running), &unchanged_hash)],
            ),
            nothing(),
        ),
        Case::new(
            "container without a recorded hash (adopted) counts as unchanged",
            changed_pod,
            runtime(ready(), vec![container("app", 0, Running)]),
            nothing(),
        ),
        Case::new(
            "one container exited, one running: only the exited one restarts",
            two("Always"),
            runtime(
                ready(),
                vec![container("a", 0, Exited(137)), container("b", 0, Running)],
            ),
            starts(vec![restart("a", 1)]),
        ),
        Case::new(
            "one container missing, one running: start the missing one",
            two("Always"),
            runtime(ready(), vec![container("b", 0, Running)]),
            starts(vec![start("a", 0)]),
        ),
        Case::new(
            "terminal pod with its sandbox still ready: nothing restarts under Never",
            app("Never"),
            runtime(ready(), vec![container("app", 0, Exited(0))]),
            nothing(),
        )
        .terminal(),
        Case::new(
            "newest sandbox ready, older ones dead: containers decided in the ready one",
            app("Always"),
            runtime(vec![sandbox(true, 1), sandbox(false, 0)], vec![]),
            starts(vec![start("app", 0)]),
        ),
        Case::new(
            "pod without containers: nothing",
            pod("Always", &[], &[]),
            runtime(ready(), vec![]),
            nothing(),
        ),
    ]
}

/// Every container of `runtime` as created from its spec in `pod`: nothing to resize.
fn as_created(pod: &Pod, runtime: &PodRuntimeStatus) -> AppliedResources {
    let spec = pod.spec.clone().unwrap_or_default();
    let mut applied = AppliedResources::default();
    for c in &runtime.containers {
        let name = runtime_status::container_name(c);
        let container = spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .find(|s| s.name == name);
        if let Some(container) = container {
            applied.record(c.id.clone(), crate::resources::spec_resources(container));
        }
    }
    applied
}

#[test]
fn a_resized_container_is_updated_in_place_or_restarted_by_its_policy() {
    use k8s_openapi::api::core::v1::{ContainerResizePolicy, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use State::*;
    let before = pod("Always", &[], &["app"]);
    let running = runtime(ready(), vec![container("app", 0, Running)]);
    let applied = as_created(&before, &running);
    let resized = |policy: &str| {
        let mut pod = before.clone();
        let app = &mut pod.spec.as_mut().unwrap().containers[0];
        app.resources = Some(ResourceRequirements {
            requests: Some([("cpu".to_string(), Quantity("200m".into()))].into()),
            ..Default::default()
        });
        app.resize_policy = Some(vec![ContainerResizePolicy {
            resource_name: "cpu".into(),
            restart_policy: policy.into(),
        }]);
        pod
    };
    let decide = |pod: &Pod| {
        compute_pod_actions(&ActionInput {
            pod,
            runtime: &running,
            terminal: false,
            backoff: &BackOff::new(BackOffConfig::UPSTREAM),
            unhealthy: &HashMap::new(),
            not_started: &HashSet::new(),
            applied: &applied,
            now: now(),
        })
    };
    let in_place = decide(&resized("NotRequired"));
    assert_eq!(in_place.resize.len(), 1, "{in_place:?}");
    assert!(in_place.kill.is_empty(), "resources are not in the hash");
    let restarted = decide(&resized("RestartContainer"));
    assert!(restarted.resize.is_empty());
    assert_eq!(restarted.kill[0].reason, KillReason::ResizeRestart);
    assert_eq!(restarted.start, vec![start("app", 1)]);
}

#[test]
fn compute_pod_actions_table() {
    let cases = cases();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let actual = compute_pod_actions(&ActionInput {
            pod: &case.pod,
            runtime: &case.runtime,
            terminal: case.terminal,
            backoff: &case.backoff,
            unhealthy: &case.unhealthy,
            not_started: &HashSet::new(),
            applied: &as_created(&case.pod, &case.runtime),
            now: now(),
        });
        if actual != case.expected {
            failures.push(format!(
                "{}:\n  expected {:?}\n  actual   {:?}",
                case.name, case.expected, actual
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn seeding_restores_the_back_off_of_the_latest_exited_attempt_only() {
    use State::*;
    let runtime = runtime(
        ready(),
        vec![
            container("app", 3, Exited(1)),
            container("app", 2, Exited(1)),
            container("web", 2, Running),
        ],
    );
    let mut backoff = BackOff::new(BackOffConfig::UPSTREAM);
    seed_backoff(&mut backoff, &runtime);
    assert_eq!(backoff.current("app"), Some(Duration::from_secs(40)));
    assert_eq!(
        backoff.current("web"),
        None,
        "a running container is not seeded"
    );
}

#[test]
fn container_hash_follows_the_spec() {
    let a = pod("Always", &[], &["app"]);
    let mut b = a.clone();
    let first = container_hash(&a.spec.as_ref().unwrap().containers[0]);
    assert_eq!(first.len(), 16);
    assert_eq!(
        first,
        container_hash(&b.spec.as_ref().unwrap().containers[0])
    );
    b.spec.as_mut().unwrap().containers[0].image = Some("busybox:other".into());
    assert_ne!(
        first,
        container_hash(&b.spec.as_ref().unwrap().containers[0])
    );
}

/// `pod` whose init container `sidecar` (the first) has `restartPolicy: Always`.
fn with_sidecar(restart_policy: &str, init: &[&str], app: &[&str]) -> Pod {
    let mut pod = pod(restart_policy, init, app);
    if let Some(first) = pod
        .spec
        .as_mut()
        .and_then(|s| s.init_containers.as_mut())
        .and_then(|c| c.first_mut())
    {
        first.restart_policy = Some("Always".into());
    }
    pod
}

#[test]
fn sidecars_and_ephemeral_containers() {
    use State::*;
    let decide = |pod: &Pod, runtime: &PodRuntimeStatus| {
        compute_pod_actions(&ActionInput {
            pod,
            runtime,
            terminal: false,
            backoff: &BackOff::new(BackOffConfig::UPSTREAM),
            unhealthy: &HashMap::new(),
            not_started: &HashSet::new(),
            applied: &as_created(pod, runtime),
            now: now(),
        })
    };
    let sidecar_pod = with_sidecar("Never", &["proxy", "setup"], &["app"]);
    let first = decide(&sidecar_pod, &runtime(ready(), vec![]));
    assert_eq!(
        first.start,
        vec![start_init("proxy", 0)],
        "the sidecar starts first"
    );
    let running = decide(
        &sidecar_pod,
        &runtime(ready(), vec![container("proxy", 0, Running)]),
    );
    assert_eq!(
        running.start,
        vec![start_init("setup", 0)],
        "a running sidecar lets the next init container start"
    );
    let initialized = runtime(
        ready(),
        vec![
            container("proxy", 0, Running),
            container("setup", 0, Exited(0)),
        ],
    );
    assert_eq!(
        decide(&sidecar_pod, &initialized).start,
        vec![start("app", 0)]
    );
    let exited_after = runtime(
        ready(),
        vec![
            container("proxy", 0, Exited(1)),
            container("setup", 0, Exited(0)),
            container("app", 0, Running),
        ],
    );
    assert_eq!(
        decide(&sidecar_pod, &exited_after).start,
        vec![restart_init("proxy", 1)],
        "a sidecar restarts under restartPolicy Never, and the app keeps running"
    );
    let exited_before = runtime(ready(), vec![container("proxy", 0, Exited(0))]);
    let blocked = decide(&sidecar_pod, &exited_before);
    assert_eq!(blocked.start, vec![restart_init("proxy", 1)]);

    let mut debug = pod("Always", &[], &["app"]);
    if let Some(spec) = debug.spec.as_mut() {
        spec.ephemeral_containers = Some(vec![k8s_openapi::api::core::v1::EphemeralContainer {
            name: "debugger".into(),
            image: Some("busybox:local".into()),
            ..Default::default()
        }]);
    }
    let running_app = runtime(ready(), vec![container("app", 0, Running)]);
    assert_eq!(
        decide(&debug, &running_app).start,
        vec![start("debugger", 0)]
    );
    let exited_debugger = runtime(
        ready(),
        vec![
            container("app", 0, Running),
            container("debugger", 0, Exited(0)),
        ],
    );
    assert!(
        decide(&debug, &exited_debugger).is_empty(),
        "an ephemeral container never restarts"
    );
}
