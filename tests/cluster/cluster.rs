//! The control plane the tests join: kubectl as the admin, a node identity per test node,
//! and a lock that lets the outage test stop the control plane while no other test runs.

use crate::harness::{Node, NodeOptions, SecurePortOptions};
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Taken for reading by every test, for writing by the one that stops the control plane.
static OUTAGE: RwLock<()> = RwLock::new(());

/// Holds the control plane up for the duration of a test.
pub fn shared() -> RwLockReadGuard<'static, ()> {
    OUTAGE.read()
}

/// Holds every other test off while the control plane is stopped.
pub fn exclusive() -> RwLockWriteGuard<'static, ()> {
    OUTAGE.write()
}

pub struct Cluster {
    pub dir: PathBuf,
}

/// The control plane scripts/test.sh started (`WASMLET_TEST_CLUSTER_DIR`).
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let dir = PathBuf::from(
            std::env::var("WASMLET_TEST_CLUSTER_DIR")
                .unwrap_or_else(|_| "/var/lib/wasmlet-test-cluster".into()),
        );
        assert!(
            dir.join("admin.kubeconfig").exists(),
            "no control plane at {} - run `scripts/control-plane.sh start {}` (scripts/test.sh does)",
            dir.display(),
            dir.display()
        );
        let cluster = Cluster { dir };
        cluster.wait_until("the API server to answer", Duration::from_secs(60), || {
            cluster
                .kubectl(&["get", "--raw", "/readyz"])
                .status
                .success()
                .then_some(())
        });
        cluster
    })
}

/// The path of the repository root (scripts live there).
fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

impl Cluster {
    pub fn kubectl_path(&self) -> PathBuf {
        self.dir.join("bin/kubectl")
    }

    /// Starts a long-running kubectl as the admin (`logs -f`, `port-forward`), its stdout
    /// piped, for the test to read and kill.
    pub fn kubectl_spawn(&self, args: &[&str]) -> std::process::Child {
        Command::new(self.kubectl_path())
            .arg("--kubeconfig")
            .arg(self.dir.join("admin.kubeconfig"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("kubectl {args:?}: {e}"))
    }

    /// Runs kubectl as the admin.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_stdin(args, None)
    }

    pub fn kubectl_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut child = Command::new(self.kubectl_path())
            .arg("--kubeconfig")
            .arg(self.dir.join("admin.kubeconfig"))
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl");
        if let Some(text) = stdin {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())
                .expect("write to kubectl");
        }
        child.wait_with_output().expect("kubectl output")
    }

    /// Runs kubectl as the admin and fails the test if it fails; returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Creates (or updates) the objects in `yaml`.
    pub fn apply(&self, yaml: &str) {
        let out = self.kubectl_stdin(&["apply", "-f", "-"], Some(yaml));
        assert!(
            out.status.success(),
            "kubectl apply failed: {}\n{yaml}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `kubectl get ARGS -o json`, or `None` when it fails (not found).
    pub fn get(&self, args: &[&str]) -> Option<Value> {
        let mut all: Vec<&str> = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        let out = self.kubectl(&all);
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }

    /// A fresh namespace `<prefix>-<n>` whose `default` ServiceAccount exists (pods need it).
    /// Names are unique per run: a namespace of an earlier run may still be terminating.
    pub fn namespace(&self, prefix: &str) -> String {
        let suffix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() % 1_000_000_000);
        let name = format!("{prefix}-{suffix}");
        let name = name.as_str();
        self.kubectl_ok(&["create", "namespace", name]);
        self.wait_until(
            "the default ServiceAccount",
            Duration::from_secs(60),
            || self.get(&["-n", name, "serviceaccount", "default"]),
        );
        name.to_string()
    }

    /// A kubeconfig holding the identity `system:node:<node>` (group `system:nodes`).
    pub fn node_kubeconfig(&self, node: &str) -> PathBuf {
        let out = Command::new(repo().join("scripts/control-plane.sh"))
            .args(["node-kubeconfig"])
            .arg(&self.dir)
            .arg(node)
            .output()
            .expect("run control-plane.sh node-kubeconfig");
        assert!(
            out.status.success(),
            "control-plane.sh node-kubeconfig failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    }

    /// Starts wasmlet as node `name` of this cluster, after removing any Node of that name
    /// a previous run left.
    pub fn join(&self, name: &str, options: NodeOptions) -> Node {
        self.join_with(name, options, |kubeconfig| kubeconfig)
    }

    /// [`Self::join`] with the node's kubeconfig rewritten by `rewrite` (its text in, its
    /// text out): a test that puts something between the node and the API server.
    pub fn join_with(
        &self,
        name: &str,
        mut options: NodeOptions,
        rewrite: impl FnOnce(String) -> String,
    ) -> Node {
        let _ = self.kubectl(&["delete", "node", name, "--wait=true"]);
        // Pods an earlier run bound to this node name would otherwise run again.
        let _ = self.kubectl(&[
            "delete",
            "pods",
            "--all-namespaces",
            "--field-selector",
            &format!("spec.nodeName={name}"),
            "--force",
            "--grace-period=0",
        ]);
        let kubeconfig = self.node_kubeconfig(name);
        let text = std::fs::read_to_string(&kubeconfig).expect("read the node kubeconfig");
        let rewritten = rewrite(text.clone());
        let kubeconfig = if rewritten == text {
            kubeconfig
        } else {
            let path = kubeconfig.with_extension("rewritten.kubeconfig");
            std::fs::write(&path, rewritten).expect("write the rewritten kubeconfig");
            path
        };
        options.extra_args.push("--kubeconfig".into());
        options.extra_args.push(kubeconfig.display().to_string());
        if !options.extra_kubelet.contains("nodeStatusUpdateFrequency") {
            options
                .extra_kubelet
                .push_str("nodeStatusUpdateFrequency: 1s\n");
        }
        // The secure port on a free port, accepting the cluster CA's client certificates (the
        // API server's kubelet client among them), as a kubeadm node has it.
        if options.secure_port.is_none() {
            options.secure_port = Some(SecurePortOptions {
                client_ca: Some(self.dir.join("pki/ca.crt")),
            });
        }
        Node::start_with(name, options)
    }

    /// Waits until the Node `name` is Ready in the API; returns it.
    pub fn wait_node_ready(&self, node: &Node) -> Value {
        self.wait_for(
            node,
            "the Node to be Ready",
            Duration::from_secs(60),
            || {
                self.get(&["node", &node.name]).filter(|n| {
                    n["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            },
        )
    }

    /// Polls `check` until it returns `Some`, or fails the test.
    pub fn wait_until<T>(
        &self,
        what: &str,
        timeout: Duration,
        check: impl FnMut() -> Option<T>,
    ) -> T {
        poll(what, timeout, check, String::new)
    }

    /// Polls `check` until it returns `Some`, or fails the test with `node`'s log.
    pub fn wait_for<T>(
        &self,
        node: &Node,
        what: &str,
        timeout: Duration,
        check: impl FnMut() -> Option<T>,
    ) -> T {
        poll(what, timeout, check, || {
            format!("--- wasmlet log (tail) ---\n{}", node.log_tail())
        })
    }

    /// The pod `namespace/name` as the API server holds it.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<Value> {
        self.get(&["-n", namespace, "pod", name])
    }

    /// Waits until the API shows the pod in `phase`; returns it.
    pub fn wait_pod_phase(&self, node: &Node, namespace: &str, name: &str, phase: &str) -> Value {
        self.wait_for(
            node,
            &format!("pod {namespace}/{name} to be {phase} in the API"),
            Duration::from_secs(90),
            || {
                self.pod(namespace, name)
                    .filter(|p| p["status"]["phase"] == phase)
            },
        )
    }

    /// The events of `namespace` as `kubectl get events` shows them.
    pub fn events(&self, namespace: &str) -> Vec<Value> {
        self.get(&["-n", namespace, "events"])
            .and_then(|list| list["items"].as_array().cloned())
            .unwrap_or_default()
    }
}

fn poll<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Option<T>,
    context: impl Fn() -> String,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// No API call of the node was refused: wasmlet never needs more than its node identity.
pub fn assert_never_forbidden(node: &Node) {
    let log = node.log();
    let refused: Vec<&str> = log
        .lines()
        // The node's own secure port refusing a client is not the API server refusing it.
        .filter(|l| !l.contains("secure port: forbidden"))
        .filter(|l| {
            l.contains("403 Forbidden") || l.contains(": forbidden") || l.contains("is forbidden")
        })
        .collect();
    assert!(
        refused.is_empty(),
        "wasmlet was refused by the API server:\n{}",
        refused.join("\n")
    );
}

/// A pod bound to `node` running busybox `script`, with no API token mounted. `extra_spec`
/// lines are indented by 2, `extra_container` lines by 4.
pub fn busybox_pod(
    namespace: &str,
    name: &str,
    node: &str,
    extra_spec: &str,
    extra_container: &str,
    script: &str,
) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {namespace}
spec:
  nodeName: {node}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 10
{extra_spec}  containers:
  - name: main
    image: docker.io/library/busybox:local
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", {script:?}]
{extra_container}"#
    )
}

/// What container `container` of pod `namespace/pod` wrote, from the CRI log files under the
/// node's `podLogsDir` (`<ns>_<pod>_<uid>/<container>/<n>.log`), without the CRI prefixes.
pub fn container_log(node: &Node, namespace: &str, pod: &str, container: &str) -> String {
    let prefix = format!("{namespace}_{pod}_");
    let Ok(entries) = std::fs::read_dir(node.logs_dir()) else {
        return String::new();
    };
    let mut text = String::new();
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let log =
            std::fs::read_to_string(entry.path().join(container).join("0.log")).unwrap_or_default();
        for line in log.lines() {
            // "<time> <stream> <P|F> <text>"
            let mut fields = line.splitn(4, ' ');
            if let Some(content) = fields.nth(3) {
                text.push_str(content);
                text.push('\n');
            }
        }
    }
    text.trim().to_string()
}

/// The status of container `name` in the pod's `list` (`containerStatuses`,
/// `ephemeralContainerStatuses`).
pub fn status_of<'a>(pod: &'a Value, list: &str, name: &str) -> Option<&'a Value> {
    pod["status"][list]
        .as_array()?
        .iter()
        .find(|s| s["name"] == name)
}

/// A CPU quantity (`2`, `1500m`) in cores.
pub fn quantity_cpus(text: &str) -> f64 {
    match text.strip_suffix('m') {
        Some(millis) => millis.parse::<f64>().unwrap_or(0.0) / 1000.0,
        None => text.parse().unwrap_or(0.0),
    }
}
