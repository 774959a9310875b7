#!/usr/bin/env python3
"""start-split.py - where one static pod's start spends its time: wasmlet's own work against
containerd's three CRI calls, read from containerd's log.

Starts `wasmlet run` (BIN, default target/release/wasmlet) on setup-node.sh's containerd with
an empty static pod directory, then STARTS (24) times: writes a busybox pod's manifest (a
hidden file, fsynced, renamed in: the clock starts at the rename), polls /pods every 2 ms until
its container runs, removes the manifest and waits for the pod to go. containerd logs the
arrival and the return of RunPodSandbox, CreateContainer and StartContainer at info level
(with nanoseconds), so each start splits into

  before   rename -> RunPodSandbox arrives (inotify, scan, SyncLoop, worker, pod cgroup)
  between  RunPodSandbox returns -> CreateContainer arrives, and Create -> StartContainer
  after    StartContainer returns -> /pods shows the container running (includes the
           poll's own lag, about half its period plus one request)
  CRI      the three calls as containerd times them

and prints the medians. Use it beside `cargo bench --bench pod_lifecycle`, whose ratio moves
with containerd's own time (10 ms or more between runs on a shared 2-core machine): the split
shows wasmlet's part alone. Root; needs scripts/setup-node.sh first.

Environment: BIN, STARTS, CONTAINERD_LOG (default /var/lib/wasmlet-node/log/containerd.log),
SOCKET (default /var/lib/wasmlet-node/containerd.sock), PORT (10399).
"""
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BIN", os.path.join(ROOT, "target/release/wasmlet"))
STARTS = int(os.environ.get("STARTS", "24"))
LOG = os.environ.get("CONTAINERD_LOG", "/var/lib/wasmlet-node/log/containerd.log")
SOCKET = os.environ.get("SOCKET", "/var/lib/wasmlet-node/containerd.sock")
PORT = int(os.environ.get("PORT", "10399"))
NODE = "start-split"


def pods():
    try:
        url = f"http://127.0.0.1:{PORT}/pods"
        return json.load(urllib.request.urlopen(url, timeout=2))["items"]
    except OSError:
        return None


def find(name):
    return [p for p in pods() or [] if p["metadata"]["name"] == f"{name}-{NODE}"]


def running(name):
    for pod in find(name):
        for status in pod["status"].get("containerStatuses") or []:
            if "running" in (status.get("state") or {}):
                return True
    return False


def log_time(stamp):
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    base = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S")
    base = base.replace(tzinfo=datetime.timezone.utc).timestamp()
    return base + float("0." + (fraction or "0"))


def containerd_lines(since):
    lines = []
    with open(LOG, encoding="utf-8", errors="replace") as log:
        for line in log:
            match = re.match(r'time="([^"]+)"', line)
            if match and log_time(match.group(1)) >= since:
                lines.append((log_time(match.group(1)), line))
    return lines


def split(name, written, seen, lines):
    """The parts of one start, in seconds, or None when the log lacks one of the calls."""
    window = [(t, line) for t, line in lines if written - 0.001 <= t <= seen]

    def first(pattern, after):
        return next((t for t, line in window if t >= after and re.search(pattern, line)), None)

    full = re.escape(f"{name}-{NODE}")
    rps = first(r"RunPodSandbox for &PodSandboxMetadata\{Name:" + full + ",", 0)
    rps_end = rps and first(full + r".*returns sandbox id", rps)
    create = rps_end and first("CreateContainer within sandbox", rps_end)
    create_end = create and first("returns container id", create)
    start = create_end and first("StartContainer for", create_end)
    start_end = start and first("returns successfully", start)
    if not start_end:
        return None
    return {
        "total": seen - written,
        "before": rps - written,
        "between": (create - rps_end) + (start - create_end),
        "after": seen - start_end,
        "cri": (rps_end - rps) + (create_end - create) + (start_end - start),
    }


def main():
    if not os.path.exists(BIN):
        sys.exit(f"start-split: no wasmlet binary at {BIN} (cargo build --release, or set BIN)")
    work = tempfile.mkdtemp(prefix="wasmlet-start-split-")
    manifests = os.path.join(work, "manifests")
    os.makedirs(manifests)
    config = os.path.join(work, "config.yaml")
    with open(config, "w", encoding="utf-8") as out:
        out.write(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
            f"staticPodPath: {manifests}\ncontainerRuntimeEndpoint: unix://{SOCKET}\n"
            f"fileCheckFrequency: 1s\npodLogsDir: {work}/logs\nreadOnlyPort: {PORT}\n"
            "address: 127.0.0.1\nhealthzPort: 0\nport: 0\n"
            "evictionHard: {memory.available: 100Mi}\nimageGCHighThresholdPercent: 100\n---\n"
            "apiVersion: wasmlet.dev/v1alpha1\nkind: WasmletConfiguration\n"
            "plegRelistPeriod: 1s\nplegEventedRelistPeriod: 10s\n"
        )
    log = open(os.path.join(work, "wasmlet.log"), "w", encoding="utf-8")
    command = [BIN, "run", "--config", config, "--root-dir", os.path.join(work, "root"),
               "--hostname-override", NODE]
    node = subprocess.Popen(command, stdout=log, stderr=log,
                            env=dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info")))
    starts = []
    try:
        deadline = time.time() + 30
        while pods() is None:
            if node.poll() is not None or time.time() > deadline:
                sys.exit(f"start-split: wasmlet did not serve /pods; its log: {log.name}")
            time.sleep(0.05)
        time.sleep(2)
        for i in range(STARTS):
            name = f"split{i}"
            text = (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n"
                    "  terminationGracePeriodSeconds: 0\n  containers:\n  - name: main\n"
                    "    image: docker.io/library/busybox:local\n"
                    "    command: [sh, -c, \"exec sleep 3600\"]\n")
            hidden = os.path.join(manifests, f".{name}.tmp")
            with open(hidden, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            written = time.time()
            os.rename(hidden, os.path.join(manifests, f"{name}.yaml"))
            deadline = written + 30
            while not running(name):
                if time.time() > deadline:
                    sys.exit(f"start-split: {name} did not run within 30 s; log: {log.name}")
                time.sleep(0.002)
            starts.append((name, written, time.time()))
            os.remove(os.path.join(manifests, f"{name}.yaml"))
            while find(name):
                time.sleep(0.02)
            time.sleep(0.3)
    finally:
        node.terminate()
        node.wait()
    lines = containerd_lines(min(w for _, w, _ in starts) - 1) if starts else []
    parts = [p for p in (split(n, w, s, lines) for n, w, s in starts) if p]
    if not parts:
        sys.exit(f"start-split: no start found in {LOG} (containerd logs at info?)")
    median = {k: statistics.median(p[k] for p in parts) * 1000 for k in parts[0]}
    print(f"{len(parts)} starts, medians in ms: total {median['total']:.1f} = "
          f"CRI calls {median['cri']:.1f} + wasmlet before RunPodSandbox {median['before']:.2f}, "
          f"between the calls {median['between']:.2f}, after StartContainer until /pods shows it "
          f"{median['after']:.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
