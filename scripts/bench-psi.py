#!/usr/bin/env python3
"""bench-psi.py - a real page-cache thrash on a wasmlet node, with and without eviction-psi-guard:
the node's memory pressure stall information (PSI) over time, and when the thrashing pod goes.

Two runs on the local containerd (scripts/setup-node.sh), each on a fresh node:
  default    the node runs eviction_default, which does not watch PSI;
  psi-guard  the same, with eviction_psi_guard swapped in live (the plugin config rewritten)
             BENCH_SWAP_S seconds after the thrasher starts.
In both, two static pods run side by side:
  thrasher   Burstable (requests 4Mi, limit BENCH_LIMIT_MIB): rewrites a file of BENCH_DATA_MIB in
             an emptyDir and reads it back, again and again. The file does not fit the limit, so
             reclaim inside the pod's cgroup waits on writeback, which the kernel counts as memory
             stall (random re-reads barely stall here: docs/benchmarks.md, issue 31).
  guaranteed Guaranteed (96Mi), holding 48 MiB in a memory-backed emptyDir and sleeping.
/proc/pressure/{memory,io} are read every second from the thrasher's start for BENCH_RUN_S
seconds. Writes, into BENCH_OUT (default /var/tmp/wasmlet-bench-psi):
  psi-default.csv, psi-psi-guard.csv   t, memory some/full avg10, io some/full avg10
  psi.png                              memory some avg10 of both runs (gnuplot), the swap and the
                                       eviction marked
and prints a Markdown summary (the rows docs/benchmarks.md records).

Run as root after scripts/setup-node.sh, scripts/build-plugins.sh and
`cargo build --release --bin wasmlet`; needs gnuplot (apt-get install gnuplot-nox).
Environment: BENCH_RUN_S=150 BENCH_SWAP_S=40 BENCH_LIMIT_MIB=64 BENCH_DATA_MIB=128
             BENCH_GUARD_PERCENT=10 (memory some avg10; full's limit is left at 60)
             BENCH_GUARD_FOR_S=10 BENCH_OUT=/var/tmp/wasmlet-bench-psi
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRI = "unix:///var/lib/wasmlet-node/containerd.sock"
READ_ONLY = 10299
RUN_S = int(os.environ.get("BENCH_RUN_S", "150"))
SWAP_S = int(os.environ.get("BENCH_SWAP_S", "40"))
LIMIT_MIB = int(os.environ.get("BENCH_LIMIT_MIB", "64"))
DATA_MIB = int(os.environ.get("BENCH_DATA_MIB", "128"))
GUARD_PERCENT = float(os.environ.get("BENCH_GUARD_PERCENT", "10"))
GUARD_FOR_S = int(os.environ.get("BENCH_GUARD_FOR_S", "10"))
OUT = Path(os.environ.get("BENCH_OUT", "/var/tmp/wasmlet-bench-psi"))
PLUGINS = ROOT / "plugins/target/wasm32-wasip2/release"
NODE = "bench-psi"


def log(*args):
    print("bench-psi:", *args, file=sys.stderr, flush=True)


def pressure():
    """Memory and io `some`/`full` avg10 from /proc/pressure, in percent."""
    reading = {}
    for resource in ("memory", "io"):
        for line in Path(f"/proc/pressure/{resource}").read_text().splitlines():
            kind, *fields = line.split()
            values = dict(f.split("=") for f in fields)
            reading[f"{resource}_{kind}"] = float(values["avg10"])
    return reading


def thrasher():
    script = (f"while :; do dd if=/dev/zero of=/data/big bs=1M count={DATA_MIB} 2>/dev/null; "
              "cat /data/big >/dev/null; done")
    return pod("thrasher", {"requests": {"memory": "4Mi"}, "limits": {"memory": f"{LIMIT_MIB}Mi"}},
               script, {"name": "data", "emptyDir": {}}, "/data")


def guaranteed():
    both = {"cpu": "50m", "memory": "96Mi"}
    return pod("guaranteed", {"requests": both, "limits": both},
               "dd if=/dev/zero of=/hold/f bs=1M count=48 2>/dev/null; exec sleep 3600",
               {"name": "hold", "emptyDir": {"medium": "Memory"}}, "/hold")


def pod(name, resources, script, volume, mount):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 2,
            "volumes": [volume],
            "containers": [{
                "name": "main",
                "image": "docker.io/library/busybox:local",
                "command": ["sh", "-c", script],
                "resources": resources,
                "volumeMounts": [{"name": volume["name"], "mountPath": mount}],
            }],
        },
    }


def plugin_config(path, guard):
    entry = {"name": "eviction", "world": "eviction-policy",
             "path": str(PLUGINS / ("eviction_psi_guard.wasm" if guard else "eviction_default.wasm"))}
    if guard:
        entry["config"] = {"memorySomeAvg10Percent": GUARD_PERCENT, "forSeconds": GUARD_FOR_S}
    staged = path.with_suffix(".staged")
    staged.write_text(json.dumps({"apiVersion": "wasmlet.dev/v1alpha1",
                                  "kind": "PluginConfiguration", "plugins": [entry]}))
    staged.rename(path)


def get(path):
    with urllib.request.urlopen(f"http://127.0.0.1:{READ_ONLY}{path}", timeout=10) as response:
        return json.load(response)


def healthy():
    with urllib.request.urlopen(f"http://127.0.0.1:{READ_ONLY}/healthz", timeout=2) as response:
        return response.status == 200


def phase(name):
    for item in get("/pods").get("items") or []:
        if item["metadata"]["name"] == f"{name}-{NODE}":
            return item.get("status", {}).get("phase")
    return None


def wait(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except OSError:
            pass
        time.sleep(0.5)
    sys.exit(f"bench-psi: timed out waiting for {what}")


def run(mode, work):
    manifests = work / "manifests"
    manifests.mkdir()
    plugins = work / "plugins.json"
    plugin_config(plugins, guard=False)
    config = work / "config.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        f"staticPodPath: {manifests}\ncontainerRuntimeEndpoint: {CRI}\nfileCheckFrequency: 1s\n"
        f"podLogsDir: {work / 'logs'}\nreadOnlyPort: {READ_ONLY}\nhealthzPort: 0\n"
        # This machine's disk fill must not decide anything here; memory.available stays the
        # upstream default.
        "evictionHard: {memory.available: 100Mi}\nimageGCHighThresholdPercent: 100\n"
        "---\napiVersion: wasmlet.dev/v1alpha1\nkind: WasmletConfiguration\n"
        f"evictStaticPods: true\nevictionMonitoringPeriod: 1s\npsiEvictionWindow: 1h\npluginConfig: {plugins}\n"
    )
    log_file = open(work / "wasmlet.log", "w")
    proc = subprocess.Popen(
        [str(ROOT / "target/release/wasmlet"), "run", "--config", str(config),
         "--root-dir", str(work / "root"), "--hostname-override", NODE],
        stdout=log_file, stderr=subprocess.STDOUT)
    try:
        wait(healthy, 60, "the node's read-only port")
        for spec in (guaranteed(), thrasher()):
            (manifests / f"{spec['metadata']['name']}.json").write_text(json.dumps(spec))
        wait(lambda: phase("guaranteed") == "Running" and phase("thrasher") == "Running", 120,
             "both pods Running")
        log(f"{mode}: both pods Running; sampling PSI for {RUN_S} s")
        samples, swapped, evicted, failed = [], None, None, None
        start = time.monotonic()
        while (t := time.monotonic() - start) < RUN_S:
            samples.append({"t": round(t, 1), **pressure()})
            if mode == "psi-guard" and swapped is None and t >= SWAP_S:
                plugin_config(plugins, guard=True)
                swapped = t
                log(f"{mode}: eviction_psi_guard swapped in at {t:.0f} s")
            if swapped is not None and evicted is None:
                for decision in get("/evictions").get("decisions") or []:
                    if decision.get("signal") == "psi" and decision.get("evicted"):
                        evicted = {"t": t, "decision": decision}
                        log(f"{mode}: {decision['evicted']} evicted at {t:.0f} s: {decision.get('reason')}")
            if evicted is not None and failed is None and phase("thrasher") == "Failed":
                failed = t
            time.sleep(max(0.0, start + len(samples) - time.monotonic()))
        guaranteed_phase = phase("guaranteed")
        for f in manifests.iterdir():
            f.unlink()
        wait(lambda: not get("/pods").get("items"), 120, "the pods to stop")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log_file.close()
    return {"samples": samples, "swapped": swapped, "evicted": evicted, "failed": failed,
            "guaranteed": guaranteed_phase}


def write_csv(path, samples):
    keys = ["t", "memory_some", "memory_full", "io_some", "io_full"]
    path.write_text(" ".join(keys) + "\n" + "".join(
        " ".join(str(s[k]) for k in keys) + "\n" for s in samples))


def plot(results):
    guard = results["psi-guard"]
    marks = []
    if guard["swapped"] is not None:
        marks.append(f"set arrow from {guard['swapped']:.1f}, graph 0 to {guard['swapped']:.1f}, graph 1 "
                     "nohead dt 2 lc rgb 'gray40'")
        marks.append(f"set label 'psi-guard swapped in' at {guard['swapped']:.1f}, graph 0.95 offset 0.5,0")
    if guard["evicted"] is not None:
        t = guard["evicted"]["t"]
        marks.append(f"set arrow from {t:.1f}, graph 0 to {t:.1f}, graph 1 nohead dt 3 lc rgb 'red'")
        marks.append(f"set label 'thrasher evicted' at {t:.1f}, graph 0.88 offset 0.5,0 tc rgb 'red'")
    marks.append(f"set arrow from graph 0, first {GUARD_PERCENT} to graph 1, first {GUARD_PERCENT} "
                 "nohead dt 4 lc rgb 'gray60'")
    script = "\n".join([
        "set terminal pngcairo size 960,480 font 'sans,10'",
        f"set output '{OUT / 'psi.png'}'",
        "set title 'Node memory PSI (some avg10) under a page-cache thrash, wasmlet with and without eviction-psi-guard'",
        "set xlabel 'seconds since both pods ran'",
        "set ylabel 'memory some avg10 (%)'",
        "set key right center",
        "set grid",
        "set yrange [0:*]",
        *marks,
        f"plot '{OUT / 'psi-default.csv'}' using 1:2 with lines lw 2 title 'eviction-default (no PSI)', "
        f"'{OUT / 'psi-psi-guard.csv'}' using 1:2 with lines lw 2 title 'eviction-psi-guard "
        f"(memorySomeAvg10Percent {GUARD_PERCENT:g}, forSeconds {GUARD_FOR_S})'",
    ])
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def window(samples, lo, hi, key="memory_some"):
    values = [s[key] for s in samples if lo <= s["t"] < hi]
    return (sum(values) / len(values), max(values)) if values else (float("nan"), float("nan"))


def report(results):
    guard = results["psi-guard"]
    print("| run | memory some avg10 before the swap, mean / max | after the eviction (+20 s to end), mean / max "
          "| io full avg10 after, mean | evicted at | Guaranteed pod at the end |")
    print("|---|---|---|---|---|---|")
    after = (guard["evicted"]["t"] + 20) if guard["evicted"] else SWAP_S
    for mode, r in results.items():
        before = window(r["samples"], 10, SWAP_S)
        later = window(r["samples"], after, RUN_S)
        io_later = window(r["samples"], after, RUN_S, "io_full")
        evicted = f"{r['evicted']['t']:.0f} s (swap + {r['evicted']['t'] - r['swapped']:.0f} s)" if r["evicted"] else "never"
        print(f"| {mode} | {before[0]:.1f} / {before[1]:.1f} % | {later[0]:.1f} / {later[1]:.1f} % "
              f"| {io_later[0]:.1f} % | {evicted} | {r['guaranteed']} |")
    if guard["evicted"]:
        d = guard["evicted"]["decision"]
        print(f"\nThe decision: `{d.get('reason')}`; the reading behind it: `{json.dumps(d.get('psi'))}`")


def main():
    if os.geteuid() != 0:
        sys.exit("bench-psi: run as root")
    for tool, hint in (("gnuplot", "apt-get install gnuplot-nox"),):
        if not shutil.which(tool):
            sys.exit(f"bench-psi: {tool} not found ({hint})")
    for name in ("eviction_default", "eviction_psi_guard"):
        if not (PLUGINS / f"{name}.wasm").exists():
            sys.exit(f"bench-psi: {PLUGINS / name}.wasm missing: run scripts/build-plugins.sh")
    OUT.mkdir(parents=True, exist_ok=True)
    results = {}
    for mode in ("default", "psi-guard"):
        with tempfile.TemporaryDirectory(prefix=f"bench-psi-{mode}-") as work:
            results[mode] = run(mode, Path(work))
        write_csv(OUT / f"psi-{mode}.csv", results[mode]["samples"])
        # Let the node's averages settle between the runs.
        time.sleep(30)
    plot(results)
    report(results)
    log(f"wrote {OUT}/psi.png and the CSVs beside it")


if __name__ == "__main__":
    main()
