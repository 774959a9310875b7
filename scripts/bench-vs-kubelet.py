#!/usr/bin/env python3
"""bench-vs-kubelet.py - wasmlet against the upstream kubelet of the same release, in turn, on the
same containerd with the same pods: the comparison a user makes before choosing.

For each agent (wasmlet, then the kubelet that `scripts/control-plane.sh build` builds):
  standalone  N static pods (default 110) written at once -> all Running in /pods; container
              exit -> terminated in /pods; RSS and CPU at rest with the N pods.
  cluster     the same as API pods bound to the agent's node (`spec.nodeName`) -> all Running in
              the API; one pod created bound -> Running in the API (watch), BENCH_BOUND times one
              after another (issue 15's single-pod start, measured for both agents alike); exit ->
              terminated in the API (watch); RSS and CPU at rest; API requests
              per pod lifecycle (create -> Running -> delete -> gone) and at rest, from
              kube-apiserver's apiserver_request_total minus the control plane's own rate and
              this script's own requests.

  kubelet-api the authenticated port (10250) of each agent joined to the cluster: `kubectl exec
              -- true` round trip through the API server, and the same exec sent straight to
              the node (WebSocket, the admin client certificate): the node's share of it;
              `kubectl port-forward` throughput, and a port-forward straight to the node,
              against a direct download from the pod IP;
              the agent's RSS with 100 concurrent `logs -f` followers on its port.

A container exit is triggered by a line written to a FIFO the container reads from a hostPath
volume, so its moment is known to the microsecond on the bench's clock.

Run as root after scripts/setup-node.sh, `cargo build --release --bin wasmlet` and
`scripts/control-plane.sh build`; it starts the control plane in WASMLET_BENCH_DIR
(/var/lib/wasmlet-bench-cluster) for the cluster part and stops it at the end.
Environment: BENCH_PODS=110 BENCH_BOUND=20 BENCH_EXITS=10 BENCH_IDLE_S=30 BENCH_LIFECYCLES=5
             BENCH_EXECS=20 BENCH_FOLLOWERS=100 BENCH_BLOB_MIB=256
             BENCH_MODES="standalone cluster kubelet-api" BENCH_AGENTS="wasmlet kubelet"
"""

import base64
import json
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import http.client
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRI = "unix:///var/lib/wasmlet-node/containerd.sock"
DIR = Path(os.environ.get("WASMLET_BENCH_DIR", "/var/lib/wasmlet-bench-cluster"))
PODS = int(os.environ.get("BENCH_PODS", "110"))
EXITS = int(os.environ.get("BENCH_EXITS", "10"))
BOUND = int(os.environ.get("BENCH_BOUND", "20"))
IDLE = int(os.environ.get("BENCH_IDLE_S", "30"))
LIFECYCLES = int(os.environ.get("BENCH_LIFECYCLES", "5"))
EXECS = int(os.environ.get("BENCH_EXECS", "20"))
FOLLOWERS = int(os.environ.get("BENCH_FOLLOWERS", "100"))
BLOB_MIB = int(os.environ.get("BENCH_BLOB_MIB", "256"))
MODES = os.environ.get("BENCH_MODES", "standalone cluster kubelet-api").split()
AGENTS = os.environ.get("BENCH_AGENTS", "wasmlet kubelet").split()
READ_ONLY = 10255
SECURE = 10250
IMAGE = "docker.io/library/busybox:local"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(*args):
    print("bench-vs-kubelet:", *args, file=sys.stderr, flush=True)


def control_plane_bin(name):
    return DIR / "bin" / name


def kubelet_binary():
    # Built once per version (a cache outside the checkout), then only looked up.
    out = subprocess.run([str(ROOT / "scripts/control-plane.sh"), "build-kubelet"],
                         capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.split():
        sys.exit("scripts/control-plane.sh build-kubelet failed:\n" + out.stderr)
    return out.stdout.split()[-1] + "/kubelet"


# ---------------------------------------------------------------- pods


def sleeper(name, namespace, node=None):
    spec = {
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                        "command": ["sleep", "86400"]}],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def exiter(name, namespace, fifo_dir, node=None):
    """A pod whose container exits 3 as soon as a line arrives on its FIFO."""
    pod = sleeper(name, namespace, node)
    spec = pod["spec"]
    spec["restartPolicy"] = "Never"
    spec["containers"][0]["command"] = ["sh", "-c", f"read line < /fifos/{name}; exit 3"]
    spec["containers"][0]["volumeMounts"] = [{"name": "fifos", "mountPath": "/fifos"}]
    spec["volumes"] = [{"name": "fifos", "hostPath": {"path": str(fifo_dir)}}]
    return pod


def container_terminated(pod):
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if "terminated" in (status.get("state") or {}):
            return True
    return False


def trigger(fifo):
    """Writes one line to the FIFO (the container already holds it open for reading)."""
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"go\n")
    os.close(fd)
    return time.monotonic()


def percentile(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


# ---------------------------------------------------------------- processes


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_mib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Agent:
    """One node agent process (wasmlet or the kubelet) with its own root, logs and config."""

    def __init__(self, kind, work, node, manifests=None, kubeconfig=None):
        self.kind, self.work, self.node = kind, work, node
        self.root = work / "root"
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "containerRuntimeEndpoint": CRI,
            "podLogsDir": str(work / "logs"),
            "readOnlyPort": READ_ONLY,
            "healthzPort": 0,
            "maxPods": PODS + EXITS + 20,
            # The same for both agents: this build machine's disk fill level (its available share
            # of the filesystem is below upstream's 15 %) must not reject or evict the bench's pods.
            "evictionHard": {"memory.available": "100Mi"},
            # Nothing on this machine may be garbage collected by the bench.
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
        }
        if kubeconfig:
            # As kubeadm joins a node: the API server's kubelet client certificate is accepted.
            config["authentication"] = {"x509": {"clientCAFile": str(DIR / "pki" / "ca.crt")}}
        if manifests:
            config["staticPodPath"] = str(manifests)
            config["fileCheckFrequency"] = "1s"
        if kind == "kubelet":
            config.update({
                "cgroupDriver": "cgroupfs",
                "failSwapOn": False,
                "failCgroupV1": False,
            })
            if not kubeconfig:
                config["authentication"] = {"anonymous": {"enabled": False}, "webhook": {"enabled": False}}
                config["authorization"] = {"mode": "AlwaysAllow"}
        path = work / "config.yaml"
        path.write_text(json.dumps(config))
        if kind == "wasmlet":
            cmd = [str(ROOT / "target/release/wasmlet"), "run", "--config", str(path)]
        else:
            cmd = [kubelet_binary(), "--config", str(path), "--cert-dir", str(work / "pki")]
        cmd += ["--root-dir", str(self.root), "--hostname-override", node]
        if kubeconfig:
            cmd += ["--kubeconfig", str(kubeconfig)]
        self.log_file = open(work / f"{kind}.log", "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log_file, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{READ_ONLY}/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"{kind} did not become healthy; see {work}/{kind}.log")
            time.sleep(0.2)

    def pods(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{READ_ONLY}/pods", timeout=10) as r:
            return json.load(r).get("items") or []

    def at_rest(self, settle=20):
        time.sleep(settle)
        c0 = cpu_seconds(self.proc.pid)
        time.sleep(IDLE)
        c1 = cpu_seconds(self.proc.pid)
        return rss_mib(self.proc.pid), (c1 - c0) / (IDLE * os.cpu_count()) * 100

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log_file.close()
        # The kubelet bind-mounts its root dir (and pod volumes) under itself.
        subprocess.run(["bash", "-c", f"grep -o ' {self.root}[^ ]*' /proc/mounts | sort -r | xargs -r -n1 umount -l"],
                       check=False)


# ---------------------------------------------------------------- standalone


def write_manifest(directory, pod):
    name = pod["metadata"]["name"]
    tmp = directory / f".{name}.tmp"
    tmp.write_text(json.dumps(pod))
    tmp.rename(directory / f"{name}.json")


def standalone(kind, work):
    manifests, fifos = work / "manifests", work / "fifos"
    manifests.mkdir()
    fifos.mkdir()
    node = f"bench-{kind}"
    agent = Agent(kind, work, node, manifests=manifests)
    result = {}
    try:
        # Container exit -> terminated in /pods.
        for i in range(EXITS):
            os.mkfifo(fifos / f"e{i}")
            write_manifest(manifests, exiter(f"e{i}", "default", fifos))
        wait(lambda: sum(running(p) for p in agent.pods()) >= EXITS, 120, "exit pods Running")
        time.sleep(2)
        latencies = []
        for i in range(EXITS):
            name = f"e{i}-{node}"
            t0 = trigger(fifos / f"e{i}")
            while not any(p["metadata"]["name"] == name and container_terminated(p) for p in agent.pods()):
                if time.monotonic() - t0 > 30:
                    sys.exit(f"{kind}: exit of {name} not visible after 30 s")
                time.sleep(0.005)
            latencies.append((time.monotonic() - t0) * 1000)
        result["exit_ms"] = latencies
        for i in range(EXITS):
            (manifests / f"e{i}.json").unlink()
        wait(lambda: not agent.pods(), 120, "exit pods gone")

        # N static pods at once -> all Running.
        t0 = time.monotonic()
        for i in range(PODS):
            write_manifest(manifests, sleeper(f"p{i}", "default"))
        wait(lambda: sum(running(p) for p in agent.pods()) >= PODS, 600, f"{PODS} pods Running", poll=0.1)
        result["all_running_s"] = time.monotonic() - t0
        result["rss_mib"], result["cpu_pct"] = agent.at_rest()
        for i in range(PODS):
            (manifests / f"p{i}.json").unlink()
        wait(lambda: not agent.pods(), 300, "pods gone")
    finally:
        agent.stop()
    return result


def running(pod):
    return (pod.get("status") or {}).get("phase") == "Running"


def wait(cond, timeout, what, poll=0.2):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            sys.exit(f"timed out waiting for {what}")
        time.sleep(poll)


# ---------------------------------------------------------------- cluster


class Api:
    """The API server as admin, over the client certificate; counts its own requests."""

    def __init__(self):
        pki = DIR / "pki"
        self.ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self.requests = 0

    def conn(self, timeout=30):
        return http.client.HTTPSConnection("127.0.0.1", 6443, context=self.ctx, timeout=timeout)

    def call(self, method, path, body=None, ok=(200, 201, 202)):
        self.requests += 1
        c = self.conn()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status not in ok:
            raise RuntimeError(f"{method} {path}: {r.status} {data[:300]!r}")
        return r.status, (json.loads(data) if data.startswith(b"{") else data.decode())

    def get(self, path, ok=(200,)):
        return self.call("GET", path, ok=ok)

    def watch(self, path):
        """Yields watch events of a list path (one request)."""
        self.requests += 1
        c = self.conn(timeout=120)
        sep = "&" if "?" in path else "?"
        c.request("GET", f"{path}{sep}watch=1")
        r = c.getresponse()
        while True:
            line = r.readline()
            if not line:
                return
            yield json.loads(line)

    def request_totals(self):
        _, text = self.get("/metrics")
        total = writes = 0
        by_key = {}
        for line in text.splitlines():
            if not line.startswith("apiserver_request_total{"):
                continue
            labels, value = line.rsplit(" ", 1)
            verb = labels.split('verb="', 1)[1].split('"', 1)[0]
            value = float(value)
            total += value
            if verb in ("POST", "PUT", "PATCH", "DELETE"):
                writes += value
                resource = labels.split('resource="', 1)[1].split('"', 1)[0] if 'resource="' in labels else ""
                by_key[f"{verb} {resource}"] = by_key.get(f"{verb} {resource}", 0) + value
        return total, writes, by_key


def rate(api, seconds):
    a_all, a_writes, a_keys = api.request_totals()
    own0 = api.requests
    time.sleep(seconds)
    b_all, b_writes, b_keys = api.request_totals()
    # The first /metrics GET is counted in the window, the second only after it.
    own = api.requests - own0
    writes_by = {k: v - a_keys.get(k, 0) for k, v in b_keys.items() if v - a_keys.get(k, 0) > 0}
    return (b_all - a_all - own) / seconds, (b_writes - a_writes) / seconds, writes_by


def pod_path(ns, name=""):
    return f"/api/v1/namespaces/{ns}/pods" + (f"/{name}" if name else "")


def wait_pod(api, ns, name, cond, timeout=120):
    """Watches one pod until cond(pod or None) holds; returns the time it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, pod = api.call("GET", pod_path(ns, name), ok=(200, 404))
        if cond(pod if status == 200 else None):
            return time.monotonic()
        rv = pod["metadata"]["resourceVersion"] if status == 200 else None
        path = f"{pod_path(ns)}?fieldSelector=metadata.name%3D{name}&timeoutSeconds=30"
        if rv:
            path += f"&resourceVersion={rv}"
        for event in api.watch(path):
            if event["type"] == "DELETED" and cond(None):
                return time.monotonic()
            if event["type"] in ("ADDED", "MODIFIED") and cond(event["object"]):
                return time.monotonic()
    sys.exit(f"timed out waiting for pod {ns}/{name}")


def cluster(kind, work, api, base):
    node = f"bench-{kind}"
    ns = f"bench-{kind}"
    fifos = work / "fifos"
    fifos.mkdir()
    agent = join(kind, work, api, node, ns)
    result = {}
    try:
        # One pod at a time, created bound to the node -> Running in the API (the default
        # service-account token volume included), then deleted.
        starts = []
        for i in range(BOUND + 1):
            name = f"b{i}"
            t0 = time.monotonic()
            api.call("POST", pod_path(ns), sleeper(name, ns, node))
            ran = wait_pod(api, ns, name, lambda p: p is not None and running(p))
            if i > 0:  # the first warms up the token path and the image lookups
                starts.append((ran - t0) * 1000)
            api.call("DELETE", pod_path(ns, name) + "?gracePeriodSeconds=0")
            wait_pod(api, ns, name, lambda p: p is None)
        result["bound_ms"] = starts

        # Pod lifecycles: requests of everyone but this script, minus the control plane's rate.
        before, _, _ = api.request_totals()
        own0, l0 = api.requests, time.monotonic()
        for _ in range(LIFECYCLES):
            api.call("POST", pod_path(ns), sleeper("life", ns, node))
            wait_pod(api, ns, "life", lambda p: p is not None and running(p))
            api.call("DELETE", pod_path(ns, "life"))
            wait_pod(api, ns, "life", lambda p: p is None)
        own = api.requests - own0 + 1
        after, _, _ = api.request_totals()
        result["requests_per_lifecycle"] = (after - before - own - base * (time.monotonic() - l0)) / LIFECYCLES

        # Container exit -> terminated in the API.
        for i in range(EXITS):
            os.mkfifo(fifos / f"e{i}")
            api.call("POST", pod_path(ns), exiter(f"e{i}", ns, fifos, node))
        for i in range(EXITS):
            wait_pod(api, ns, f"e{i}", lambda p: p is not None and running(p))
        time.sleep(2)
        latencies = []
        for i in range(EXITS):
            name = f"e{i}"
            _, pod = api.get(pod_path(ns, name))
            rv = pod["metadata"]["resourceVersion"]
            events = api.watch(f"{pod_path(ns)}?fieldSelector=metadata.name%3D{name}&resourceVersion={rv}")
            t0 = trigger(fifos / name)
            for event in events:
                if container_terminated(event["object"]):
                    latencies.append((time.monotonic() - t0) * 1000)
                    break
        result["exit_ms"] = latencies
        for i in range(EXITS):
            api.call("DELETE", pod_path(ns, f"e{i}"))
        for i in range(EXITS):
            wait_pod(api, ns, f"e{i}", lambda p: p is None)

        # N API pods at once -> all Running.
        t0 = time.monotonic()
        for i in range(PODS):
            api.call("POST", pod_path(ns), sleeper(f"p{i}", ns, node))

        def all_running():
            _, pods = api.get(f"{pod_path(ns)}?fieldSelector=status.phase%3DRunning")
            return len(pods["items"]) >= PODS
        wait(all_running, 600, f"{PODS} API pods Running", poll=0.25)
        result["all_running_s"] = time.monotonic() - t0
        time.sleep(20)
        c0 = cpu_seconds(agent.proc.pid)
        result["idle_all"], result["idle_writes"], result["idle_writes_by"] = rate(api, IDLE)
        c1 = cpu_seconds(agent.proc.pid)
        result["rss_mib"] = rss_mib(agent.proc.pid)
        result["cpu_pct"] = (c1 - c0) / (IDLE * os.cpu_count()) * 100
        api.call("DELETE", f"/api/v1/namespaces/{ns}")
        wait(lambda: api.get(f"/api/v1/namespaces/{ns}", ok=(200, 404))[0] == 404, 600, "namespace gone", poll=1)
    finally:
        leave(agent)
    return result


def kubectl_cmd():
    return [str(control_plane_bin("kubectl")), "--kubeconfig", str(DIR / "admin.kubeconfig")]


def join(kind, work, api, node, ns):
    """Starts `kind` as the node `node` of the cluster and waits for it and namespace `ns`."""
    subprocess.run(kubectl_cmd() + ["delete", "node", node, "--wait=true"], capture_output=True)
    subprocess.run(kubectl_cmd() + ["delete", "namespace", ns, "--wait=true"], capture_output=True)
    kubeconfig = subprocess.run([str(ROOT / "scripts/control-plane.sh"), "node-kubeconfig", str(DIR), node],
                                capture_output=True, text=True, check=True).stdout.strip()
    agent = Agent(kind, work, node, kubeconfig=kubeconfig)

    def ready():
        status, n = api.call("GET", f"/api/v1/nodes/{node}", ok=(200, 404))
        return status == 200 and any(c["type"] == "Ready" and c["status"] == "True"
                                     for c in n["status"].get("conditions") or [])
    try:
        wait(ready, 120, f"node {node} Ready", poll=0.5)
        api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        wait(lambda: api.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default", ok=(200, 404))[0] == 200
             and api.get(f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt", ok=(200, 404))[0] == 200,
             60, "default service account")
    except BaseException:
        leave(agent)
        raise
    return agent


def leave(agent):
    agent.stop()
    subprocess.run(kubectl_cmd() + ["delete", "node", agent.node, "--wait=true"], capture_output=True)


# ---------------------------------------------------------------- kubelet API


def node_tls():
    """The admin client certificate (system:masters) toward a node's self-signed port."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(str(DIR / "pki" / "admin.crt"), str(DIR / "pki" / "admin.key"))
    return ctx


def ws_open(ctx, path):
    """A WebSocket (v4.channel.k8s.io) straight to the node's port with the admin certificate;
    returns the socket and a buffered reader past the 101 answer."""
    sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", SECURE), timeout=60))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n").encode())
    stream = sock.makefile("rb")
    status_line = stream.readline()
    if b" 101 " not in status_line:
        raise RuntimeError(f"{path} refused: {status_line!r} {stream.read(300)!r}")
    while stream.readline() not in (b"\r\n", b""):
        pass
    return sock, stream


def ws_frames(stream):
    """Yields (channel, data) of the server's binary frames until it closes."""
    while True:
        head = stream.read(2)
        if len(head) < 2:
            return
        opcode, length = head[0] & 0x0F, head[1] & 0x7F
        if length == 126:
            length = int.from_bytes(stream.read(2), "big")
        elif length == 127:
            length = int.from_bytes(stream.read(8), "big")
        payload = stream.read(length)
        if opcode == 8:
            return
        if payload:
            yield payload[0], payload[1:]


def ws_send(sock, channel, data):
    """One masked client frame (a zero mask: the payload goes as it is)."""
    payload = bytes([channel]) + data
    assert len(payload) < 126
    sock.sendall(bytes([0x82, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)


def direct_exec(ctx, ns, pod, container, command):
    """One exec sent straight to the node's port, as a client of the kubelet API would;
    returns the status the error channel carried."""
    query = "&".join(f"command={c}" for c in command) + "&output=1&error=1"
    sock, stream = ws_open(ctx, f"/exec/{ns}/{pod}/{container}?{query}")
    status = b"".join(data for channel, data in ws_frames(stream) if channel == 3)
    sock.close()
    return status.decode(errors="replace")


def direct_port_forward_mib_s(ctx, ns, pod):
    """Download speed of the pod's blob through a port-forward straight to the node (MiB/s):
    the node's share of `kubectl port-forward`, without kubectl and the API server."""
    sock, stream = ws_open(ctx, f"/portForward/{ns}/{pod}?port=8080")
    frames = ws_frames(stream)
    # Each channel (0 data, 1 error) first carries its port.
    for _ in range(2):
        next(frames)
    t0 = time.monotonic()
    ws_send(sock, 0, b"GET /blob HTTP/1.0\r\nHost: pod\r\n\r\n")
    received, want = 0, BLOB_MIB << 20
    for channel, data in frames:
        if channel == 1 and data:
            raise RuntimeError(f"port-forward error: {data[:200]!r}")
        received += len(data)
        if received >= want:
            break
    elapsed = time.monotonic() - t0
    sock.close()
    if received < want:
        raise RuntimeError(f"port-forward ended after {received} bytes")
    return received / elapsed / (1 << 20)


def port_forward_mib_s(ns, pod, pod_ip):
    """Download speed of the pod's blob through `kubectl port-forward`, and straight from the
    pod IP (MiB/s each)."""
    forward = subprocess.Popen(kubectl_cmd() + ["-n", ns, "port-forward", f"pod/{pod}", ":8080"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = forward.stdout.readline()
        port = int(line.split("127.0.0.1:")[1].split()[0])

        def speed(url):
            out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}", url],
                                 capture_output=True, text=True, check=True, timeout=300).stdout
            return float(out) / (1 << 20)
        forwarded, direct = [], []
        for _ in range(3):
            forwarded.append(speed(f"http://127.0.0.1:{port}/blob"))
            direct.append(speed(f"http://{pod_ip}:8080/blob"))
        return statistics.median(forwarded), statistics.median(direct)
    finally:
        forward.terminate()
        forward.wait()


def followers_rss(agent, ctx, ns, pod):
    """The agent's RSS before, with FOLLOWERS open `follow=true` log streams, and after they
    closed (MiB)."""
    before = rss_mib(agent.proc.pid)
    streams = []
    for _ in range(FOLLOWERS):
        sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", SECURE), timeout=30))
        sock.sendall(f"GET /containerLogs/{ns}/{pod}/c?follow=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        streams.append(sock)
    for sock in streams:
        answer = sock.recv(4096)
        if b" 200 " not in answer.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"a follower was refused: {answer[:200]!r}")
    time.sleep(10)
    during = rss_mib(agent.proc.pid)
    for sock in streams:
        sock.close()
    time.sleep(5)
    return before, during, rss_mib(agent.proc.pid)


def kubelet_api(kind, work, api):
    node, ns = f"bench-api-{kind}", f"bench-api-{kind}"
    agent = join(kind, work, api, node, ns)
    result = {}
    try:
        server = sleeper("srv", ns, node)
        server["spec"]["containers"][0]["command"] = [
            "sh", "-c", f"dd if=/dev/zero of=/tmp/blob bs=1M count={BLOB_MIB} 2>/dev/null; "
            "exec httpd -f -p 8080 -h /tmp"]
        talker = sleeper("talker", ns, node)
        talker["spec"]["containers"][0]["command"] = [
            "sh", "-c", "while true; do echo tick $(date); sleep 1; done"]
        for pod in (server, talker):
            api.call("POST", pod_path(ns), pod)
            wait_pod(api, ns, pod["metadata"]["name"], lambda p: p is not None and running(p))
        time.sleep(3)  # the blob written

        through_api, direct = [], []
        ctx = node_tls()
        for _ in range(EXECS):
            t0 = time.monotonic()
            subprocess.run(kubectl_cmd() + ["-n", ns, "exec", "srv", "--", "true"], check=True,
                           capture_output=True)
            through_api.append((time.monotonic() - t0) * 1000)
            t0 = time.monotonic()
            status = direct_exec(ctx, ns, "srv", "c", ["true"])
            direct.append((time.monotonic() - t0) * 1000)
            if "Success" not in status:
                raise RuntimeError(f"{kind}: direct exec ended with {status!r}")
        result["exec_api_ms"], result["exec_node_ms"] = through_api, direct

        _, pod = api.get(pod_path(ns, "srv"))
        result["forward_mib_s"], result["direct_mib_s"] = port_forward_mib_s(ns, "srv", pod["status"]["podIP"])
        result["node_forward_mib_s"] = statistics.median(direct_port_forward_mib_s(ctx, ns, "srv") for _ in range(3))
        result["rss_before"], result["rss_followers"], result["rss_after"] = followers_rss(agent, ctx, ns, "talker")
        api.call("DELETE", f"/api/v1/namespaces/{ns}")
        wait(lambda: api.get(f"/api/v1/namespaces/{ns}", ok=(200, 404))[0] == 404, 300, "namespace gone", poll=1)
    finally:
        leave(agent)
    return result


# ---------------------------------------------------------------- report


def fmt(v, digits=1):
    return f"{v:.{digits}f}"


def table(title, kinds, results, rows):
    print(f"\n### {title}")
    print("| measure | " + " | ".join(kinds) + (" | wasmlet / kubelet |" if len(kinds) == 2 else " |"))
    print("|---|" + "---|" * len(kinds) + ("---|" if len(kinds) == 2 else ""))
    for label, get, digits in rows:
        values = [get(results[k]) for k in kinds]
        line = f"| {label} | " + " | ".join(fmt(v, digits) for v in values) + " |"
        if len(values) == 2:
            line += f" {values[0] / values[1]:.2f} |" if values[1] else " - |"
        print(line)


def report_kubelet_api(results):
    kinds = [k for k in AGENTS if k in results]
    table(f"kubelet API: {EXECS} execs, a {BLOB_MIB} MiB download, {FOLLOWERS} followers", kinds, results, [
        ("`kubectl exec -- true` through the API server, median (ms)",
         lambda r: statistics.median(r["exec_api_ms"]), 1),
        ("the same exec straight to the node, median (ms)", lambda r: statistics.median(r["exec_node_ms"]), 1),
        ("the same exec straight to the node, p90 (ms)", lambda r: percentile(r["exec_node_ms"], 90), 1),
        ("direct download from the pod IP (MiB/s)", lambda r: r["direct_mib_s"], 1),
        ("`kubectl port-forward` download (MiB/s)", lambda r: r["forward_mib_s"], 1),
        ("`kubectl port-forward` / direct (%)", lambda r: 100 * r["forward_mib_s"] / r["direct_mib_s"], 1),
        ("port-forward straight to the node (MiB/s)", lambda r: r["node_forward_mib_s"], 1),
        ("straight to the node / direct (%)", lambda r: 100 * r["node_forward_mib_s"] / r["direct_mib_s"], 1),
        ("RSS before the followers (MiB)", lambda r: r["rss_before"], 1),
        (f"RSS with {FOLLOWERS} `logs -f` followers (MiB)", lambda r: r["rss_followers"], 1),
        ("RSS after they closed (MiB)", lambda r: r["rss_after"], 1),
    ])
    sys.stdout.flush()


def report(mode, results, base=None):
    if mode == "kubelet-api":
        return report_kubelet_api(results)
    kinds = [k for k in AGENTS if k in results]
    rows = [
        (f"{PODS} pods -> all Running (s)", lambda r: r["all_running_s"], 1),
        ("container exit -> terminated visible, median (ms)", lambda r: statistics.median(r["exit_ms"]), 1),
        ("container exit -> terminated visible, p90 (ms)", lambda r: percentile(r["exit_ms"], 90), 1),
        (f"RSS at rest with {PODS} pods (MiB)", lambda r: r["rss_mib"], 1),
        (f"CPU at rest with {PODS} pods (% of {os.cpu_count()} cores)", lambda r: r["cpu_pct"], 2),
    ]
    if mode == "cluster":
        rows += [
            ("one pod bound -> Running in the API, median (ms)", lambda r: statistics.median(r["bound_ms"]), 1),
            ("one pod bound -> Running in the API, p90 (ms)", lambda r: percentile(r["bound_ms"], 90), 1),
            ("API requests per pod lifecycle", lambda r: r["requests_per_lifecycle"], 1),
            ("API requests/s at rest (all)", lambda r: r["idle_all"] - base[0], 3),
            ("API writes/s at rest", lambda r: r["idle_writes"] - base[1], 3),
        ]
    title = f"{mode}: {PODS} pods, {EXITS} exits" + (f", {LIFECYCLES} lifecycles" if mode == "cluster" else "")
    table(title, kinds, results, rows)
    if mode == "cluster":
        for k in kinds:
            by = ", ".join(f"{key} {v / IDLE:.3f}/s" for key, v in sorted(results[k]["idle_writes_by"].items()))
            print(f"\n{k}: writes at rest by verb and resource (all clients): {by or 'none'}")
    sys.stdout.flush()


def main():
    if os.geteuid() != 0:
        sys.exit("run as root")
    print(f"# wasmlet against the upstream kubelet ({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores)")
    for mode in MODES:
        results = {}
        base = None
        api = None
        if mode in ("cluster", "kubelet-api"):
            subprocess.run([str(ROOT / "scripts/control-plane.sh"), "start", str(DIR)], check=True,
                           stdout=subprocess.DEVNULL)
            api = Api()
        if mode == "cluster":
            log(f"control plane alone: request rate over {IDLE}s")
            base = rate(api, IDLE)
        for kind in AGENTS:
            work = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-", dir="/var/tmp"))
            log(f"{mode}: {kind} in {work}")
            if mode == "standalone":
                results[kind] = standalone(kind, work)
            elif mode == "cluster":
                results[kind] = cluster(kind, work, api, base[0])
            else:
                results[kind] = kubelet_api(kind, work, api)
            log(f"{mode}: {kind}: {json.dumps({k: v for k, v in results[kind].items() if k != 'idle_writes_by'})}")
            shutil.rmtree(work, ignore_errors=True)
        report(mode, results, base)
        if api:
            subprocess.run([str(ROOT / "scripts/control-plane.sh"), "stop", str(DIR)], check=False,
                           stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
