//! Test a plugin natively, without a kubelet (not compiled for wasm32).
//!
//! A *case* holds a snapshot as the host would pass it, plus the names,
//! labels, annotations and image tags that [`crate::host`] answers while the
//! case calls your plugin. Builders default to a plausible node so a test
//! states only what matters to it.
//!
//! ```
//! use wasmlet_plugin_sdk::fixtures::{EvictionCase, PodFixture, MI};
//! use wasmlet_plugin_sdk::{host, EvictionPolicy, NodeInfo, PodInfo, SignalObservation};
//!
//! #[derive(Default)]
//! struct SparePrefixed;
//! impl EvictionPolicy for SparePrefixed {
//!     fn rank(&self, _: &NodeInfo, _: &[SignalObservation], pods: &[PodInfo]) -> Result<Vec<u32>, String> {
//!         Ok((0..pods.len() as u32).filter(|&i| !host::pod_name(i).starts_with("keep-")).collect())
//!     }
//! }
//!
//! let case = EvictionCase::memory_pressure()
//!     .pod(PodFixture::new("default", "keep-me").memory(0, 10 * MI))
//!     .pod(PodFixture::new("default", "batch-1").memory(0, 10 * MI));
//! assert_eq!(case.rank_names(&SparePrefixed).unwrap(), ["default/batch-1"]);
//! ```

pub(crate) mod mock;

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::types::*;
use crate::{EvictionPolicy, GcStrategy, LifecycleHooks, PodAccess};

pub const KI: u64 = 1 << 10;
pub const MI: u64 = 1 << 20;
pub const GI: u64 = 1 << 30;
pub const MINUTE_MS: u64 = 60_000;
/// The wall clock of every case (2023-11-14T22:13:20Z); relative times in
/// builders count back from it.
pub const NOW_MS: u64 = 1_700_000_000_000;

/// One event a plugin logged through [`crate::host::log`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub level: LogLevel,
    pub message: String,
    pub fields: Vec<(String, String)>,
}

/// Takes the events logged on this thread so far.
pub fn take_logs() -> Vec<LogRecord> {
    mock::take_logs()
}

/// Fixes [`crate::host::now_unix_ms`] on this thread (`None`: the real clock).
/// Cases set [`NOW_MS`] themselves while they call a plugin.
pub fn set_now(now_unix_ms: Option<u64>) {
    mock::set_now(now_unix_ms)
}

/// What [`crate::host`] tells about one pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodMeta {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
}

impl PodMeta {
    pub fn new(namespace: &str, name: &str) -> Self {
        PodMeta {
            namespace: namespace.into(),
            name: name.into(),
            uid: format!("uid-{namespace}-{name}"),
            ..PodMeta::default()
        }
    }

    /// `namespace/name`, as tests compare them.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Runs `f` with `pods` (and image `tags`) installed as the call's snapshot
/// and the clock at [`NOW_MS`]: for calling a plugin method by hand.
pub fn with_snapshot<R>(pods: &[PodMeta], tags: &[Vec<String>], f: impl FnOnce() -> R) -> R {
    mock::set_now(Some(NOW_MS));
    let r = mock::with_snapshot(pods.to_vec(), tags.to_vec(), f);
    mock::set_now(None);
    r
}

// ---------------------------------------------------------------- eviction

/// A pod for an [`EvictionCase`]: its [`PodInfo`] and its [`PodMeta`].
///
/// Starts as a running best-effort pod with stats, one container, priority
/// 0 and no usage.
#[derive(Clone, Debug)]
pub struct PodFixture {
    pub info: PodInfo,
    pub meta: PodMeta,
}

impl PodFixture {
    pub fn new(namespace: &str, name: &str) -> Self {
        PodFixture {
            info: PodInfo {
                has_stats: true,
                container_count: 1,
                start_time_unix_ms: NOW_MS - 60 * MINUTE_MS,
                ..PodInfo::default()
            },
            meta: PodMeta::new(namespace, name),
        }
    }

    pub fn priority(mut self, priority: i32) -> Self {
        self.info.priority = priority;
        self
    }

    pub fn qos(mut self, qos: QosClass) -> Self {
        self.info.qos = qos;
        self
    }

    /// Critical (`system-node-critical` and the like): never evictable.
    pub fn critical(mut self) -> Self {
        self.info.is_critical = true;
        self.info.priority = self.info.priority.max(2_000_000_000);
        self
    }

    /// From the static manifest directory: never evictable.
    pub fn static_pod(mut self) -> Self {
        self.info.is_static = true;
        self.info.is_critical = true;
        self
    }

    /// No usage sample yet.
    pub fn no_stats(mut self) -> Self {
        self.info.has_stats = false;
        self
    }

    /// Memory request and working set, bytes. Sets the QoS class to
    /// burstable when a request is given.
    pub fn memory(mut self, request: u64, usage: u64) -> Self {
        self.info.memory_request_bytes = request;
        self.info.memory_usage_bytes = usage;
        if request > 0 && self.info.qos == QosClass::BestEffort {
            self.info.qos = QosClass::Burstable;
        }
        self
    }

    /// CPU request and usage, millicores.
    pub fn cpu(mut self, request: u64, usage: u64) -> Self {
        self.info.cpu_request_millis = request;
        self.info.cpu_usage_millis = usage;
        self
    }

    /// Ephemeral-storage request and usage, bytes.
    pub fn disk(mut self, request: u64, usage: u64) -> Self {
        self.info.disk_request_bytes = request;
        self.info.disk_usage_bytes = usage;
        self
    }

    pub fn inodes(mut self, used: u64) -> Self {
        self.info.inodes_used = used;
        self
    }

    pub fn processes(mut self, count: u64) -> Self {
        self.info.process_count = count;
        self
    }

    pub fn restarts(mut self, count: u32) -> Self {
        self.info.restart_count = count;
        self
    }

    pub fn containers(mut self, count: u32) -> Self {
        self.info.container_count = count;
        self
    }

    pub fn started_at(mut self, unix_ms: u64) -> Self {
        self.info.start_time_unix_ms = unix_ms;
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.meta.labels.push((key.into(), value.into()));
        self
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.meta.annotations.push((key.into(), value.into()));
        self
    }
}

/// One `rank` call: node, thresholds met and pods.
#[derive(Clone, Debug)]
pub struct EvictionCase {
    pub node: NodeInfo,
    pub pressure: Vec<SignalObservation>,
    pub pods: Vec<PodFixture>,
}

impl EvictionCase {
    /// A 4-core, 8 GiB, 110-pod node with `signal`'s threshold met.
    pub fn new(signal: Signal) -> Self {
        let (available, capacity, threshold) = match signal.pressure() {
            Pressure::Memory => (50 * MI as i64, 8 * GI as i64, 100 * MI as i64),
            Pressure::Pid => (1_000, 32_768, 3_276),
            Pressure::Disk => (5 * GI as i64, 100 * GI as i64, 10 * GI as i64),
            Pressure::Inodes => (10_000, 6_000_000, 300_000),
        };
        EvictionCase {
            node: NodeInfo {
                memory_capacity_bytes: 8 * GI,
                memory_allocatable_bytes: 8 * GI - 256 * MI,
                cpu_capacity_millis: 4000,
                cpu_allocatable_millis: 3900,
                pods_capacity: 110,
                pod_count: 0,
                pid_capacity: 32_768,
                nodefs_capacity_bytes: 100 * GI,
                imagefs_capacity_bytes: 0,
            },
            pressure: vec![SignalObservation::new(
                signal, available, capacity, threshold,
            )],
            pods: Vec::new(),
        }
    }

    /// `memory.available` below its threshold.
    pub fn memory_pressure() -> Self {
        Self::new(Signal::MemoryAvailable)
    }

    /// `nodefs.available` below its threshold.
    pub fn disk_pressure() -> Self {
        Self::new(Signal::NodefsAvailable)
    }

    /// `pid.available` below its threshold.
    pub fn pid_pressure() -> Self {
        Self::new(Signal::PidAvailable)
    }

    /// Adds one more threshold met, after the first.
    pub fn also(mut self, signal: Signal) -> Self {
        let extra = Self::new(signal).pressure;
        self.pressure.extend(extra);
        self
    }

    pub fn pod(mut self, pod: PodFixture) -> Self {
        self.pods.push(pod);
        self
    }

    pub fn pods(mut self, pods: impl IntoIterator<Item = PodFixture>) -> Self {
        self.pods.extend(pods);
        self
    }

    /// The `pods` argument of `rank`.
    pub fn infos(&self) -> Vec<PodInfo> {
        self.pods.iter().map(|p| p.info.clone()).collect()
    }

    /// Calls `policy.rank` as the host would and returns its raw answer.
    pub fn rank<P: EvictionPolicy + ?Sized>(&self, policy: &P) -> Result<Vec<u32>, String> {
        let node = NodeInfo {
            pod_count: self.pods.len() as u32,
            ..self.node.clone()
        };
        let infos = self.infos();
        let metas: Vec<PodMeta> = self.pods.iter().map(|p| p.meta.clone()).collect();
        with_snapshot(&metas, &[], || policy.rank(&node, &self.pressure, &infos))
    }

    /// Calls `rank`, checks the answer as the host does, and names the pods
    /// (`namespace/name`). An index out of range or listed twice, or a
    /// critical or static pod, is an `Err` here.
    pub fn rank_names<P: EvictionPolicy + ?Sized>(
        &self,
        policy: &P,
    ) -> Result<Vec<String>, String> {
        let answer = self.rank(policy)?;
        check_indices(&answer, self.pods.len(), "pod")?;
        answer
            .iter()
            .map(|&i| {
                let pod = &self.pods[i as usize];
                if pod.info.is_evictable() {
                    Ok(pod.meta.key())
                } else {
                    Err(format!(
                        "proposes critical or static pod {}",
                        pod.meta.key()
                    ))
                }
            })
            .collect()
    }
}

/// The host's first check of any index answer: in range, no duplicates.
pub fn check_indices(answer: &[u32], len: usize, what: &str) -> Result<(), String> {
    let mut seen = HashSet::new();
    for &i in answer {
        if i as usize >= len {
            return Err(format!("{what} index {i} out of range (there are {len})"));
        }
        if !seen.insert(i) {
            return Err(format!("{what} index {i} listed twice"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------- gc

/// An image for a [`GcCase`]: its [`ImageInfo`] and tags.
///
/// Starts unused and unpinned, 100 MiB, first seen a day and last used an
/// hour before [`NOW_MS`].
#[derive(Clone, Debug)]
pub struct ImageFixture {
    pub info: ImageInfo,
    pub tags: Vec<String>,
}

impl ImageFixture {
    pub fn new(tag: &str) -> Self {
        ImageFixture {
            info: ImageInfo {
                size_bytes: 100 * MI,
                first_seen_unix_ms: NOW_MS - 24 * 60 * MINUTE_MS,
                last_used_unix_ms: NOW_MS - 60 * MINUTE_MS,
                in_use: false,
                pinned: false,
            },
            tags: vec![tag.into()],
        }
    }

    pub fn tag(mut self, tag: &str) -> Self {
        self.tags.push(tag.into());
        self
    }

    pub fn size(mut self, bytes: u64) -> Self {
        self.info.size_bytes = bytes;
        self
    }

    /// Last used `minutes` before [`NOW_MS`] (and first seen no later).
    pub fn used_minutes_ago(mut self, minutes: u64) -> Self {
        self.info.last_used_unix_ms = NOW_MS - minutes * MINUTE_MS;
        self.info.first_seen_unix_ms = self
            .info
            .first_seen_unix_ms
            .min(self.info.last_used_unix_ms);
        self
    }

    /// First seen (pulled) `minutes` before [`NOW_MS`], and not used since.
    pub fn seen_minutes_ago(mut self, minutes: u64) -> Self {
        self.info.first_seen_unix_ms = NOW_MS - minutes * MINUTE_MS;
        self.info.last_used_unix_ms = self.info.first_seen_unix_ms;
        self
    }

    pub fn in_use(mut self) -> Self {
        self.info.in_use = true;
        self
    }

    pub fn pinned(mut self) -> Self {
        self.info.pinned = true;
        self
    }
}

/// One GC cycle: the image filesystem, images, and dead containers.
#[derive(Clone, Debug)]
pub struct GcCase {
    pub disk: DiskInfo,
    pub images: Vec<ImageFixture>,
    pub dead: Vec<DeadContainer>,
    /// Pods that `DeadContainer::pod` refers to (may be empty).
    pub pods: Vec<PodMeta>,
}

impl Default for GcCase {
    fn default() -> Self {
        Self::new()
    }
}

impl GcCase {
    /// A 100 GiB image filesystem with 50 GiB free, nothing to free, and
    /// upstream's 2 minute minimum image age.
    pub fn new() -> Self {
        GcCase {
            disk: DiskInfo {
                capacity_bytes: 100 * GI,
                available_bytes: 50 * GI,
                bytes_to_free: 0,
                min_age_ms: 2 * MINUTE_MS,
                max_age_ms: 0,
            },
            images: Vec::new(),
            dead: Vec::new(),
            pods: Vec::new(),
        }
    }

    pub fn bytes_to_free(mut self, bytes: u64) -> Self {
        self.disk.bytes_to_free = bytes;
        self.disk.available_bytes = self.disk.available_bytes.saturating_sub(bytes);
        self
    }

    pub fn image(mut self, image: ImageFixture) -> Self {
        self.images.push(image);
        self
    }

    /// Adds dead container `rank` (0 = newest) of evict unit `unit`,
    /// finished `minutes` ago; its pod index is `unit`.
    pub fn dead(mut self, unit: u32, rank: u32, minutes: u64) -> Self {
        self.dead.push(DeadContainer {
            pod_deleted: false,
            finished_unix_ms: NOW_MS - minutes * MINUTE_MS,
            per_container_rank: rank,
            unit,
            pod: unit,
        });
        self
    }

    /// Marks the pod of `unit` deleted.
    pub fn pod_deleted(mut self, unit: u32) -> Self {
        for d in self.dead.iter_mut().filter(|d| d.unit == unit) {
            d.pod_deleted = true;
        }
        self
    }

    fn image_infos(&self) -> Vec<ImageInfo> {
        self.images.iter().map(|i| i.info.clone()).collect()
    }

    /// Calls `strategy.plan_images` as the host would; raw answer.
    pub fn plan_images<S: GcStrategy + ?Sized>(&self, strategy: &S) -> Result<Vec<u32>, String> {
        let tags: Vec<Vec<String>> = self.images.iter().map(|i| i.tags.clone()).collect();
        let infos = self.image_infos();
        with_snapshot(&self.pods, &tags, || {
            strategy.plan_images(&self.disk, &infos)
        })
    }

    /// Calls `plan_images`, checks the answer as the host does (range,
    /// duplicates, never an image in use or pinned) and returns each
    /// planned image's first tag.
    pub fn plan_image_tags<S: GcStrategy + ?Sized>(
        &self,
        strategy: &S,
    ) -> Result<Vec<String>, String> {
        let answer = self.plan_images(strategy)?;
        check_indices(&answer, self.images.len(), "image")?;
        answer
            .iter()
            .map(|&i| {
                let image = &self.images[i as usize];
                if image.info.in_use || image.info.pinned {
                    Err(format!(
                        "plans image {} which is in use or pinned",
                        image.tags[0]
                    ))
                } else {
                    Ok(image.tags[0].clone())
                }
            })
            .collect()
    }

    /// Calls `strategy.plan_containers` as the host would, and checks the
    /// answer's indices.
    pub fn plan_containers<S: GcStrategy + ?Sized>(
        &self,
        strategy: &S,
    ) -> Result<Vec<u32>, String> {
        let answer = with_snapshot(&self.pods, &[], || strategy.plan_containers(&self.dead))?;
        check_indices(&answer, self.dead.len(), "dead container")?;
        Ok(answer)
    }
}

// ------------------------------------------------------------ probes, hooks

/// A [`PodAccess`] with canned answers that records every call.
///
/// Unknown HTTP targets and closed ports answer `Err("connection refused")`;
/// unknown commands `Err("no such command")`.
#[derive(Debug, Default)]
pub struct MockPod {
    http: Vec<(u16, String, Result<HttpResponse, String>)>,
    open_ports: Vec<u16>,
    exec: Vec<(String, Vec<String>, Result<ExecOutput, String>)>,
    calls: std::cell::RefCell<Vec<String>>,
}

impl MockPod {
    pub fn new() -> Self {
        Self::default()
    }

    /// `GET :port/path` answers `status` with `body`.
    pub fn http(mut self, port: u16, path: &str, status: u16, body: impl Into<Vec<u8>>) -> Self {
        let response = HttpResponse {
            status,
            headers: Vec::new(),
            body: body.into(),
        };
        self.http.push((port, path.into(), Ok(response)));
        self
    }

    /// `GET :port/path` fails with `error` (e.g. "timed out").
    pub fn http_error(mut self, port: u16, path: &str, error: &str) -> Self {
        self.http.push((port, path.into(), Err(error.into())));
        self
    }

    pub fn tcp_open(mut self, port: u16) -> Self {
        self.open_ports.push(port);
        self
    }

    /// `command` in `container` exits with `exit_code` printing `stdout`.
    pub fn exec(mut self, container: &str, command: &[&str], exit_code: i32, stdout: &str) -> Self {
        let output = ExecOutput {
            exit_code,
            stdout: stdout.as_bytes().to_vec(),
            stderr: Vec::new(),
        };
        self.exec.push((
            container.into(),
            command.iter().map(|s| s.to_string()).collect(),
            Ok(output),
        ));
        self
    }

    /// The calls made so far: `GET :8080/healthz`, `TCP :5432`,
    /// `EXEC app: cat /tmp/ready`, `SLEEP 5000ms`.
    pub fn calls(&self) -> Vec<String> {
        self.calls.borrow().clone()
    }

    fn record(&self, call: String) {
        self.calls.borrow_mut().push(call);
    }
}

impl PodAccess for MockPod {
    fn http_get(
        &self,
        port: u16,
        path: &str,
        _headers: &[(&str, &str)],
        _timeout_ms: u32,
    ) -> Result<HttpResponse, String> {
        self.record(format!("GET :{port}{path}"));
        self.http
            .iter()
            .find(|(p, q, _)| *p == port && q == path)
            .map(|(_, _, r)| r.clone())
            .unwrap_or_else(|| Err("connection refused".into()))
    }

    fn tcp_connect(&self, port: u16, _timeout_ms: u32) -> Result<(), String> {
        self.record(format!("TCP :{port}"));
        if self.open_ports.contains(&port) {
            Ok(())
        } else {
            Err("connection refused".into())
        }
    }

    fn exec(
        &self,
        container: &str,
        command: &[&str],
        _timeout_ms: u32,
    ) -> Result<ExecOutput, String> {
        let mut call = format!("EXEC {container}:");
        for arg in command {
            let _ = write!(call, " {arg}");
        }
        self.record(call);
        self.exec
            .iter()
            .find(|(c, cmd, _)| {
                c == container && cmd.iter().map(String::as_str).eq(command.iter().copied())
            })
            .map(|(_, _, r)| r.clone())
            .unwrap_or_else(|| Err("no such command".into()))
    }

    /// Records `SLEEP <ms>ms` and returns at once.
    fn sleep(&self, ms: u32) -> Result<(), String> {
        self.record(format!("SLEEP {ms}ms"));
        Ok(())
    }
}

/// One pod for the `lifecycle-hooks` world: admission and hooks.
#[derive(Clone, Debug)]
pub struct HookCase {
    pub pod: AdmissionPod,
    pub meta: PodMeta,
}

impl HookCase {
    /// A best-effort pod with no containers yet.
    pub fn new(namespace: &str, name: &str) -> Self {
        HookCase {
            pod: AdmissionPod::default(),
            meta: PodMeta::new(namespace, name),
        }
    }

    pub fn container(mut self, container: AdmissionContainer) -> Self {
        self.pod.containers.push(container);
        self
    }

    pub fn priority(mut self, priority: i32) -> Self {
        self.pod.priority = priority;
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.meta.labels.push((key.into(), value.into()));
        self
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.meta.annotations.push((key.into(), value.into()));
        self
    }

    /// Calls `hooks.admit` with this pod as pod-meta index 0.
    pub fn admit<H: LifecycleHooks + ?Sized>(&self, hooks: &H) -> Result<(), String> {
        with_snapshot(std::slice::from_ref(&self.meta), &[], || {
            hooks.admit(&self.pod)
        })
    }

    /// Calls `hooks.post_start` for `container`, reaching `pod`.
    pub fn post_start<H: LifecycleHooks + ?Sized>(
        &self,
        hooks: &H,
        container: &str,
        pod: &MockPod,
    ) -> Result<(), String> {
        with_snapshot(std::slice::from_ref(&self.meta), &[], || {
            hooks.post_start(container, pod)
        })
    }

    /// Calls `hooks.pre_stop` for `container` with `grace_ms` left.
    pub fn pre_stop<H: LifecycleHooks + ?Sized>(
        &self,
        hooks: &H,
        container: &str,
        grace_ms: u32,
        pod: &MockPod,
    ) -> Result<(), String> {
        with_snapshot(std::slice::from_ref(&self.meta), &[], || {
            hooks.pre_stop(container, grace_ms, pod)
        })
    }
}
