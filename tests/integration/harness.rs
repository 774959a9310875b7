//! A test node: the real `wasmlet` binary with its own node name, manifest directory, log
//! directory and ports, on the shared real containerd. Each node only sees and touches the
//! sandboxes labelled with its own node name, so tests run side by side. The secure port is
//! off (`port: 0`) unless a test asks for it, on a free port.

use serde_json::Value;
use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wasmlet::cri::{api, labels, CriClient, Labels};

/// The CRI socket tests use: `WASMLET_TEST_CRI_SOCKET`, else the one scripts/setup-node.sh starts.
pub fn cri_socket() -> PathBuf {
    let socket = std::env::var("WASMLET_TEST_CRI_SOCKET")
        .unwrap_or_else(|_| "/var/lib/wasmlet-node/containerd.sock".into());
    let path = PathBuf::from(socket);
    assert!(
        path.exists(),
        "no containerd at {} — run scripts/setup-node.sh first (the test command does)",
        path.display()
    );
    path
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Settings a test may change; the defaults keep periods short.
pub struct NodeOptions {
    pub extra_kubelet: String,
    pub extra_wasmlet: String,
    /// Another containerd than the shared one (e.g. the image GC node's).
    pub runtime_socket: Option<PathBuf>,
    /// More `wasmlet run` flags (the cluster tests pass `--kubeconfig`).
    pub extra_args: Vec<String>,
    /// Serve the secure port (on a free port); off (`port: 0`) when `None`.
    pub secure_port: Option<SecurePortOptions>,
    /// `RUST_LOG` of the wasmlet process (`info,wasmlet=debug`); `None` leaves it unset so
    /// `-v`/`--vmodule` and the config file decide.
    pub rust_log: Option<String>,
}

/// The secure port of a test node.
#[derive(Debug, Clone, Default)]
pub struct SecurePortOptions {
    /// `authentication.x509.clientCAFile`: the CA whose client certificates are accepted.
    pub client_ca: Option<PathBuf>,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self {
            extra_kubelet: String::new(),
            extra_wasmlet:
                "containerRestartBackOff: {initialPeriod: 1s, maxPeriod: 4s, resetPeriod: 60s}\ncadvisorHousekeepingPeriod: 1s\n"
                    .into(),
            runtime_socket: None,
            extra_args: Vec::new(),
            secure_port: None,
            rust_log: Some("info,wasmlet=debug".into()),
        }
    }
}

pub struct Node {
    pub name: String,
    /// How often `wait_for` polls (50 ms; benchmarks poll faster).
    pub poll: Duration,
    pub dir: tempfile::TempDir,
    pub manifests: PathBuf,
    pub port: u16,
    /// The secure port, when the options asked for one.
    pub secure_port: Option<u16>,
    config: PathBuf,
    extra_args: Vec<String>,
    rust_log: Option<String>,
    child: Option<Child>,
    runtime: tokio::runtime::Runtime,
    pub cri: CriClient,
}

impl Node {
    pub fn start(name: &str) -> Node {
        Self::start_with(name, NodeOptions::default())
    }

    pub fn start_with(name: &str, options: NodeOptions) -> Node {
        let dir = tempfile::tempdir().expect("temp dir");
        let manifests = dir.path().join("manifests");
        std::fs::create_dir_all(&manifests).unwrap();
        let port = free_port();
        let secure_port = options.secure_port.as_ref().map(|_| free_port());
        // A secure port is reached on the node's IP (the API server dials the Node's
        // InternalIP), so it listens on every address; otherwise loopback only.
        let address = if secure_port.is_some() {
            "0.0.0.0"
        } else {
            "127.0.0.1"
        };
        let mut secure = format!("port: {}\n", secure_port.unwrap_or(0));
        if let Some(ca) = options
            .secure_port
            .as_ref()
            .and_then(|s| s.client_ca.as_ref())
        {
            secure.push_str(&format!(
                "authentication: {{x509: {{clientCAFile: {}}}}}\n",
                ca.display()
            ));
        }
        // The test machine's own disk fill level must not decide a test: at upstream's
        // defaults a disk over 85 % full puts every test node under DiskPressure (pods
        // rejected, the node tainted) and lets image GC delete the shared containerd's local
        // images. Tests about disk eviction or image GC set their own values.
        let mut host_independent = String::new();
        if !options.extra_kubelet.contains("evictionHard") {
            host_independent.push_str("evictionHard: {memory.available: 100Mi}\n");
        }
        if !options
            .extra_kubelet
            .contains("imageGCHighThresholdPercent")
        {
            host_independent.push_str("imageGCHighThresholdPercent: 100\n");
        }
        let socket = options.runtime_socket.clone().unwrap_or_else(cri_socket);
        let config = dir.path().join("config.yaml");
        let text = format!(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
             staticPodPath: {manifests}\ncontainerRuntimeEndpoint: unix://{socket}\n\
             fileCheckFrequency: 1s\npodLogsDir: {logs}\nreadOnlyPort: {port}\naddress: {address}\n\
             healthzPort: 0\n{secure}{host_independent}{extra_kubelet}---\n\
             apiVersion: wasmlet.dev/v1alpha1\nkind: WasmletConfiguration\n{pleg}\
             housekeepingPeriod: 500ms\n{extra_wasmlet}",
            pleg = if options.extra_wasmlet.contains("plegRelistPeriod") {
                ""
            } else {
                "plegRelistPeriod: 100ms\n"
            },
            manifests = manifests.display(),
            socket = socket.display(),
            logs = dir.path().join("logs").display(),
            extra_kubelet = options.extra_kubelet,
            extra_wasmlet = options.extra_wasmlet,
        );
        std::fs::write(&config, text).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let cri = {
            let _guard = runtime.enter();
            CriClient::connect(&socket, Duration::from_secs(60)).unwrap()
        };
        let mut node = Node {
            name: name.to_string(),
            poll: Duration::from_millis(50),
            dir,
            manifests,
            port,
            secure_port,
            config,
            extra_args: options.extra_args.clone(),
            rust_log: options.rust_log.clone(),
            child: None,
            runtime,
            cri,
        };
        node.remove_everything();
        node.spawn();
        node
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_wasmlet"));
        match &self.rust_log {
            Some(filter) => command.env("RUST_LOG", filter),
            None => command.env_remove("RUST_LOG"),
        };
        let child = command
            .args(["run", "--config"])
            .arg(&self.config)
            .args(["--hostname-override", &self.name, "--root-dir"])
            .arg(self.dir.path().join("root"))
            .args(&self.extra_args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start wasmlet");
        self.child = Some(child);
        self.wait_for("the read-only port", Duration::from_secs(20), |n| {
            n.try_get("/healthz")
        });
    }

    /// Fails the test at once if wasmlet exited.
    pub fn assert_running(&mut self) {
        if let Some(status) = self
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
        {
            panic!("wasmlet exited with {status}\n{}", self.log_tail());
        }
    }

    /// The wasmlet process ID.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("wasmlet.log")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn logs_dir(&self) -> PathBuf {
        self.dir.path().join("logs")
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn write_manifest(&self, file: &str, text: &str) {
        // Write and rename, as a config-management tool would, so no half file is read.
        let tmp = self.dir.path().join(format!(".{file}.tmp"));
        let mut f = std::fs::File::create(&tmp).unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f.sync_all().unwrap();
        std::fs::rename(&tmp, self.manifests.join(file)).unwrap();
    }

    pub fn remove_manifest(&self, file: &str) {
        std::fs::remove_file(self.manifests.join(file)).unwrap();
    }

    pub fn try_get(&self, path: &str) -> Option<String> {
        ureq::get(&format!("http://127.0.0.1:{}{path}", self.port))
            .timeout(Duration::from_secs(5))
            .call()
            .ok()?
            .into_string()
            .ok()
    }

    /// GET `path` with an `Accept` header: the `Content-Type` and the body.
    pub fn get_accepting(&self, path: &str, accept: &str) -> Option<(String, String)> {
        let response = ureq::get(&format!("http://127.0.0.1:{}{path}", self.port))
            .set("Accept", accept)
            .timeout(Duration::from_secs(5))
            .call()
            .ok()?;
        let content_type = response
            .header("Content-Type")
            .unwrap_or_default()
            .to_string();
        Some((content_type, response.into_string().ok()?))
    }

    pub fn get_json(&self, path: &str) -> Value {
        let text = self
            .try_get(path)
            .unwrap_or_else(|| panic!("GET {path} failed\n{}", self.log_tail()));
        serde_json::from_str(&text).unwrap()
    }

    /// The pod named `<name>-<node>` as `/pods` shows it.
    pub fn pod(&self, name: &str) -> Option<Value> {
        let full = format!("{name}-{}", self.name);
        let pods = serde_json::from_str::<Value>(&self.try_get("/pods")?).ok()?;
        pods["items"]
            .as_array()?
            .iter()
            .find(|p| p["metadata"]["name"] == full.as_str())
            .cloned()
    }

    /// The log of `container` of `pod` (as `/pods` shows it) read from its CRI log file, as
    /// the secure port's `/containerLogs` finds it: `<podLogsDir>/<ns>_<name>_<uid>/<container>/
    /// <restartCount>.log`.
    pub fn container_log(&self, pod: &Value, container: &str) -> Option<String> {
        let meta = &pod["metadata"];
        let dir = self.logs_dir().join(format!(
            "{}_{}_{}",
            meta["namespace"].as_str()?,
            meta["name"].as_str()?,
            meta["uid"].as_str()?
        ));
        let attempt = container_status(pod, container)["restartCount"]
            .as_u64()
            .unwrap_or(0);
        let file = wasmlet::logs::log_file(&dir, container, u32::try_from(attempt).ok()?);
        let stream = wasmlet::logs::stream(file, Default::default(), || async { false });
        self.runtime.block_on(async {
            use futures::StreamExt;
            let mut stream = std::pin::pin!(stream);
            let mut text = Vec::new();
            while let Some(chunk) = stream.next().await {
                text.extend_from_slice(&chunk.ok()?);
            }
            String::from_utf8(text).ok()
        })
    }

    pub fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Polls `check` every 50 ms until it returns `Some`, or fails the test with the log.
    pub fn wait_for<T>(
        &self,
        what: &str,
        timeout: Duration,
        check: impl Fn(&Node) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(value) = check(self) {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {timeout:?} waiting for {what}\n--- wasmlet log (tail) ---\n{}\n--- /pods ---\n{}",
                self.log_tail(),
                self.try_get("/pods").unwrap_or_default()
            );
            std::thread::sleep(self.poll);
        }
    }

    /// Waits until the pod's phase is `phase`; returns the pod.
    pub fn wait_phase(&self, name: &str, phase: &str, timeout: Duration) -> Value {
        self.wait_for(&format!("pod {name} to be {phase}"), timeout, |n| {
            n.pod(name).filter(|p| p["status"]["phase"] == phase)
        })
    }

    fn selector(&self, extra: &[(&str, String)]) -> Labels {
        let mut selector = Labels::from([(labels::NODE.to_string(), self.name.clone())]);
        for (k, v) in extra {
            selector.insert(k.to_string(), v.clone());
        }
        selector
    }

    /// This node's sandboxes, optionally only those of the pod named `<pod>-<node>`.
    pub fn sandboxes(&self, pod: Option<&str>) -> Vec<api::PodSandbox> {
        let extra: Vec<_> = pod
            .map(|p| (labels::POD_NAME, format!("{p}-{}", self.name)))
            .into_iter()
            .collect();
        let selector = self.selector(&extra);
        self.with_retries(|| self.cri.list_pod_sandbox(selector.clone()))
    }

    /// This node's containers with full status, optionally of the static pod `<pod>-<node>`.
    pub fn containers(&self, pod: Option<&str>) -> Vec<api::ContainerStatus> {
        self.containers_named(pod.map(|p| format!("{p}-{}", self.name)).as_deref())
    }

    /// This node's containers with full status, optionally of the pod named exactly `pod`
    /// (an API pod's name carries no node suffix).
    pub fn containers_named(&self, pod: Option<&str>) -> Vec<api::ContainerStatus> {
        let extra: Vec<_> = pod
            .map(|p| (labels::POD_NAME, p.to_string()))
            .into_iter()
            .collect();
        self.runtime.block_on(async {
            let list = self
                .cri
                .list_containers(self.selector(&extra))
                .await
                .expect("ListContainers");
            let mut out = Vec::new();
            for c in list {
                if let Ok(status) = self.cri.container_status(&c.id).await {
                    out.push(status);
                }
            }
            out
        })
    }

    /// Whether the runtime has `image` (e.g. `wasmlet-test:local`, which scripts/test.sh builds).
    pub fn image_present(&self, image: &str) -> bool {
        self.with_retries(|| self.cri.image_status(image)).is_some()
    }

    /// Runs a CRI call, retrying for a few seconds: the first call after a runtime restart
    /// fails on the dead connection.
    fn with_retries<T, F: std::future::Future<Output = Result<T, wasmlet::cri::CriError>>>(
        &self,
        call: impl Fn() -> F,
    ) -> T {
        let mut attempts = 0;
        loop {
            match self.runtime.block_on(call()) {
                Ok(value) => return value,
                Err(error) if attempts < 50 => {
                    attempts += 1;
                    eprintln!("retrying CRI call: {error}");
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(error) => panic!("{error}"),
            }
        }
    }

    /// Removes every sandbox and container labelled with this node, leftovers included.
    fn remove_everything(&self) {
        self.runtime.block_on(async {
            let selector = self.selector(&[]);
            for c in self
                .cri
                .list_containers(selector.clone())
                .await
                .unwrap_or_default()
            {
                let _ = self.cri.stop_container(&c.id, Duration::ZERO).await;
                let _ = self.cri.remove_container(&c.id).await;
            }
            for s in self
                .cri
                .list_pod_sandbox(selector)
                .await
                .unwrap_or_default()
            {
                let _ = self.cri.stop_pod_sandbox(&s.id).await;
                let _ = self.cri.remove_pod_sandbox(&s.id).await;
            }
        });
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
        self.remove_everything();
        // A pod still there when the node was killed keeps its mounts (tmpfs volumes, subPath
        // binds): unmount them as wasmlet would, so the temp dir goes without leaving any.
        let root = self.dir.path().join("root");
        for pod in std::fs::read_dir(root.join("pods"))
            .into_iter()
            .flatten()
            .flatten()
        {
            wasmlet::volumes::cleanup(&root, &pod.file_name().to_string_lossy());
        }
    }
}

/// A pod manifest with one busybox container running `script`.
pub fn busybox_pod(name: &str, spec_extra: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{spec_extra}  containers:\n  - name: main\n    image: docker.io/library/busybox:local\n    command: [sh, -c, {script:?}]\n"
    )
}

static NULL: Value = Value::Null;

/// The container status named `container` in a pod from `/pods` (`null` until it has one).
pub fn container_status<'a>(pod: &'a Value, container: &str) -> &'a Value {
    for key in ["containerStatuses", "initContainerStatuses"] {
        if let Some(found) = pod["status"][key]
            .as_array()
            .and_then(|list| list.iter().find(|c| c["name"] == container))
        {
            return found;
        }
    }
    &NULL
}

/// Seconds of a `Duration` for messages.
pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The status of condition `kind` of a pod from `/pods` (`""` when absent).
pub fn condition(pod: &Value, kind: &str) -> String {
    pod["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .and_then(|c| c["status"].as_str())
        .unwrap_or("")
        .to_string()
}

/// Writes a `PluginConfiguration` listing `plugins` (YAML list items) to `dir/plugins.yaml`.
pub fn write_plugin_config(dir: &std::path::Path, plugins: &str) -> PathBuf {
    let file = dir.join("plugins.yaml");
    std::fs::write(
        &file,
        format!("apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{plugins}"),
    )
    .unwrap();
    file
}

/// The number after `tag` on its line of `text` (lines of `TAG <unix seconds>` that a test's
/// container appends to a shared file).
pub fn event_time(text: &str, tag: &str) -> u64 {
    text.lines()
        .find(|l| l.split(' ').next() == Some(tag))
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {tag} in {text:?}"))
}

/// A plugin component built by scripts/build-plugins.sh (`plugins/` or `tests/guests/`).
pub fn built_plugin(name: &str) -> PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = [
        "plugins/target/wasm32-wasip2/release",
        "tests/guests/target/wasm32-wasip2/release",
    ]
    .iter()
    .map(|dir| root.join(dir).join(format!("{name}.wasm")))
    .find(|p| p.exists())
    .unwrap_or_else(|| panic!("{name}.wasm is not built: run scripts/build-plugins.sh"));
    path
}

/// Seconds between two RFC 3339 times of a status.
pub fn seconds_between(from: &Value, to: &Value) -> f64 {
    let parse = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<k8s_openapi::jiff::Timestamp>().ok())
            .unwrap_or_else(|| panic!("not a time: {v}"))
    };
    let (from, to) = (parse(from), parse(to));
    (to.as_nanosecond() - from.as_nanosecond()) as f64 / 1e9
}

/// Lint findings upstream's kubelet has too: counters it named before the `_total` rule.
const UPSTREAM_LINT: &[&str] = &[
    "kubelet_evictions counter metrics should have \"_total\" suffix",
    "kubelet_preemptions counter metrics should have \"_total\" suffix",
    "kubelet_pleg_discard_events counter metrics should have \"_total\" suffix",
];

/// Runs promtool on `text`; fails on a parse error or on any lint finding upstream lacks.
/// Without promtool the test fails under CI and says how to get it elsewhere.
pub fn promtool_check(what: &str, text: &str) {
    let child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(error) => {
            assert!(
                std::env::var("CI").is_err(),
                "promtool is missing ({error}); scripts/test.sh installs Debian's prometheus package"
            );
            eprintln!("promtool missing ({error}): {what} not linted (apt-get install prometheus)");
            return;
        }
    };
    use std::io::Write;
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(text.as_bytes()).expect("write to promtool");
    drop(stdin);
    let output = child.wait_with_output().expect("promtool ran");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let unexpected: Vec<&str> = report
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter(|line| !UPSTREAM_LINT.iter().any(|known| line.contains(known)))
        .collect();
    assert!(
        matches!(output.status.code(), Some(0) | Some(3)) && unexpected.is_empty(),
        "promtool check metrics on {what}: {:?}\n{report}\n--- text ---\n{text}",
        output.status.code()
    );
}
