//! A test node: the real `wasmlet` binary with its own node name, manifest directory, log
//! directory and ports, on the shared real containerd. Each node only sees and touches the
//! sandboxes labelled with its own node name, so tests run side by side. The secure port is
//! off (`port: 0`) unless a test asks for it, on a free port.

use super::options::NodeOptions;
use super::pods::container_status;
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

/// The `wasmlet` binary cargo built beside the running test or benchmark: `WASMLET_BIN` when
/// set, else `wasmlet` in the profile directory above `deps/`, where cargo puts test and bench
/// executables (it builds a package's binaries before its tests and benchmarks).
pub fn wasmlet_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("WASMLET_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let mut dir = exe.parent().expect("the test executable's directory");
    if dir.ends_with("deps") {
        dir = dir.parent().expect("the profile directory above deps/");
    }
    let binary = dir.join("wasmlet");
    assert!(
        binary.exists(),
        "no wasmlet binary at {} (cargo builds it for the wasmlet package's tests; else set WASMLET_BIN)",
        binary.display()
    );
    binary
}

/// A loopback TCP port free at the time of asking.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running `wasmlet run` process with its own directories and ports; stopped, and its pods
/// removed, on drop.
pub struct Node {
    /// The node name (`--hostname-override`); static pods are named `<pod>-<node>`.
    pub name: String,
    /// How often `wait_for` polls (50 ms; benchmarks poll faster).
    pub poll: Duration,
    /// The node's own directory: config, root dir, pod logs and wasmlet's log.
    pub dir: tempfile::TempDir,
    /// The static pod directory (`staticPodPath`).
    pub manifests: PathBuf,
    /// The read-only port on loopback.
    pub port: u16,
    /// The secure port, when the options asked for one.
    pub secure_port: Option<u16>,
    config: PathBuf,
    extra_args: Vec<String>,
    rust_log: Option<String>,
    child: Option<Child>,
    runtime: tokio::runtime::Runtime,
    /// A CRI client of the node's containerd, for looking under wasmlet.
    pub cri: CriClient,
}

impl Node {
    /// Starts a node with the default (short-period) options and waits for its read-only port.
    pub fn start(name: &str) -> Node {
        Self::start_with(name, NodeOptions::default())
    }

    /// Starts a node with `options`, after removing any sandbox a previous node of this name left.
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
        let mut command = Command::new(wasmlet_binary());
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

    /// wasmlet's own log (its stderr).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("wasmlet.log")
    }

    /// wasmlet's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The node's `podLogsDir`.
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

    /// Kills wasmlet and starts it again on the same directories, as after a crash.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Puts a static pod manifest in place atomically.
    pub fn write_manifest(&self, file: &str, text: &str) {
        // Write and rename, as a config-management tool would, so no half file is read.
        let tmp = self.dir.path().join(format!(".{file}.tmp"));
        let mut f = std::fs::File::create(&tmp).unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f.sync_all().unwrap();
        std::fs::rename(&tmp, self.manifests.join(file)).unwrap();
    }

    /// Removes a static pod manifest.
    pub fn remove_manifest(&self, file: &str) {
        std::fs::remove_file(self.manifests.join(file)).unwrap();
    }

    /// The body of `GET path` on the read-only port, `None` on any failure.
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

    /// `GET path` on the read-only port as JSON; fails the test with the log when unanswered.
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

    /// The last 40 lines of wasmlet's log, for failure messages.
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

    /// Removes every sandbox and container labelled with this node, leftovers included. A
    /// create the killed node had sent can land after the first listing, so it lists again
    /// until nothing is left, and names what stays after a few rounds.
    fn remove_everything(&self) {
        let selector = self.selector(&[]);
        for round in 0..5 {
            if round > 0 {
                std::thread::sleep(Duration::from_millis(300));
            }
            let (containers, sandboxes) = self.runtime.block_on(async {
                let containers = self.cri.list_containers(selector.clone()).await;
                let sandboxes = self.cri.list_pod_sandbox(selector.clone()).await;
                (
                    containers.unwrap_or_default(),
                    sandboxes.unwrap_or_default(),
                )
            });
            if containers.is_empty() && sandboxes.is_empty() {
                return;
            }
            if round == 4 {
                let names = sandboxes.iter().filter_map(|s| s.metadata.as_ref());
                let names: Vec<_> = names.map(|m| m.name.as_str()).collect();
                eprintln!(
                    "node {}: {} containers and the sandboxes {names:?} remain in the runtime",
                    self.name,
                    containers.len()
                );
                return;
            }
            self.runtime.block_on(async {
                for c in &containers {
                    let _ = self.cri.stop_container(&c.id, Duration::ZERO).await;
                    let _ = self.cri.remove_container(&c.id).await;
                }
                for s in &sandboxes {
                    let _ = self.cri.stop_pod_sandbox(&s.id).await;
                    let _ = self.cri.remove_pod_sandbox(&s.id).await;
                }
            });
        }
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
