#!/usr/bin/env bash
# Memory of a wasmlet node at rest with many static pods, each with an exec readiness probe
# every 10 s (the shape of issue 29's measure): resident memory split into anonymous and
# file pages, and with `heaptrack` a profile of the heap still live when the node is stopped.
#
#   scripts/heap-profile.sh rss                 # RSS only
#   scripts/heap-profile.sh heaptrack [OUT]     # profile to OUT.zst (default /tmp/wasmlet-heap)
#   scripts/heap-profile.sh text [OUT]          # the functions run, to OUT (host/text-order.txt)
#
# `rss` then releases the binary's file pages and reads again after SETTLE seconds: the
# working set at rest (WORKING_SET=0 skips it). RESTART=1 kills the node once all pods are
# ready and starts it again on the same root dir, as after an upgrade: the plugins load from
# the compile cache and the pods are adopted, so the readings leave out what only a first
# start runs.
# PODS_REQUESTS=N then reads `/pods` N times, one after another, and prints the node's CPU
# and the wall time per request (the cost of serving the pod list).
# Env: PODS (110), SETTLE seconds at rest before the reading (30), WASMLET_BIN
# (target/release/wasmlet), SOCKET (the containerd of scripts/setup-node.sh). The pods are
# removed afterwards by a second run of the node with no manifests. Read a profile with
# `heaptrack_print -f OUT.zst --flamegraph-cost-type leaked -F stacks.folded`: what is
# "leaked" is what was live when the node was stopped.
# `text` runs the node with lib/exact-text-faults.c preloaded, so that each text page it maps
# is one it ran, and writes the functions on those pages in address order, one mangled name a
# line after one naming the rustc that built it: the link order of the binary's text
# (host/build.rs), which packs what the node runs at start and at rest into as few pages as it
# takes. Needs a C compiler and Linux 6.7+.
set -euo pipefail
mode=${1:-rss}
root=$(cd "$(dirname "$0")/.." && pwd)
case $mode in
  text) out=${2:-$root/host/text-order.txt} ;;
  *) out=${2:-/tmp/wasmlet-heap} ;;
esac
pods=${PODS:-110}
settle=${SETTLE:-30}
bin=${WASMLET_BIN:-$root/target/release/wasmlet}
socket=${SOCKET:-/var/lib/wasmlet-node/containerd.sock}
port=19955
dir=$(mktemp -d /tmp/wasmlet-heap-node.XXXXXX)
mkdir -p "$dir/manifests" "$dir/logs" "$dir/root"

die() { echo "heap-profile: ERROR: $*" >&2; exit 1; }
[ -x "$bin" ] || die "no wasmlet binary at $bin (cargo build --release --bin wasmlet)"
[ -S "$socket" ] || die "no containerd socket at $socket (scripts/setup-node.sh)"
case $mode in
  rss) wrap=() ;;
  heaptrack) command -v heaptrack >/dev/null || die "heaptrack is not installed (apt-get install heaptrack)"
             wrap=(heaptrack -o "$out") ;;
  text) command -v cc >/dev/null || die "text needs a C compiler (cc) for lib/exact-text-faults.c"
        cc -O2 -shared -fPIC -o "$dir/exact-text-faults.so" "$root/scripts/lib/exact-text-faults.c" \
          || die "cannot build scripts/lib/exact-text-faults.c"
        wrap=(env LD_PRELOAD="$dir/exact-text-faults.so") ;;
  *) die "usage: $0 rss | heaptrack [OUT] | text [OUT]" ;;
esac

cat > "$dir/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: $dir/manifests
containerRuntimeEndpoint: unix://$socket
fileCheckFrequency: 1s
podLogsDir: $dir/logs
readOnlyPort: $port
address: 127.0.0.1
healthzPort: 0
port: 0
evictionHard: {memory.available: 100Mi}
imageGCHighThresholdPercent: 100
maxPods: $((pods + 50))
---
apiVersion: wasmlet.dev/v1alpha1
kind: WasmletConfiguration
plegRelistPeriod: 1s
plegEventedRelistPeriod: 10s
EOF

start_node() {
  RUST_LOG=${RUST_LOG:-info} "$@" "$bin" run --config "$dir/config.yaml" \
    --hostname-override heap-profile --root-dir "$dir/root" >> "$dir/wasmlet.log" 2>&1 &
}
# The wasmlet process itself (heaptrack runs it as a child).
node_pid() {
  for pid in $(pgrep -f "hostname-override heap-profile"); do
    [ "$(readlink "/proc/$pid/exe")" = "$(readlink -f "$bin")" ] && echo "$pid" && return
  done
}
ready_count() {
  curl -s "localhost:$port/pods" | grep -o '"ready":true' | wc -l || true
}

start_node "${wrap[@]}"
for _ in $(seq 1 50); do curl -sf "localhost:$port/healthz" >/dev/null && break; sleep 0.2; done
for i in $(seq 0 $((pods - 1))); do
  cat > "$dir/manifests/p$i.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: p$i, namespace: default}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: docker.io/library/busybox:local
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
    readinessProbe:
      exec: {command: ['true']}
      periodSeconds: 10
EOF
done
wait_ready() {
  started=$SECONDS
  until [ "$(ready_count)" -ge "$pods" ]; do
    [ $((SECONDS - started)) -lt 300 ] || die "not all $pods pods ready after 300 s; log $dir/wasmlet.log"
    sleep 1
  done
}
wait_ready
echo "$pods pods ready in $((SECONDS - started)) s"
if [ "${RESTART:-0}" = 1 ]; then
  first=$(node_pid)
  kill -9 "$first"
  while kill -0 "$first" 2>/dev/null; do sleep 0.1; done
  start_node "${wrap[@]}"
  wait_ready
  echo "restarted on the same root dir: $pods pods ready again in $((SECONDS - started)) s"
fi
echo "at rest for $settle s"
sleep "$settle"
pid=$(node_pid)
[ -n "$pid" ] || die "the wasmlet process is gone; log $dir/wasmlet.log"
grep -E "VmRSS|RssAnon|RssFile" "/proc/$pid/status"
# The node's CPU time so far, user and system, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
# The binary's own resident pages, mapping by mapping: the first read-only segment holds the
# relocation table the loader reads at start, r-xp is the text, the second r--p the
# relocated read-only data.
exe=$(readlink "/proc/$pid/exe")
awk -v exe="$exe" '/^[0-9a-f]+-[0-9a-f]+ / { mapping = ($6 == exe) ? $2 : "" }
  /^Rss:/ && mapping != "" { printf "  binary %s %d kB\n", mapping, $2 }' "/proc/$pid/smaps"
echo "threads: $(ls "/proc/$pid/task" | wc -l)"
requests=${PODS_REQUESTS:-0}
if [ "$requests" -gt 0 ]; then
  ticks_before=$(ticks)
  started_ns=$(date +%s%N)
  for _ in $(seq 1 "$requests"); do
    curl -sf -o /dev/null "localhost:$port/pods" || die "GET /pods failed"
  done
  wall_us=$(( ($(date +%s%N) - started_ns) / 1000 / requests ))
  cpu_us=$(( ($(ticks) - ticks_before) * 1000000 / $(getconf CLK_TCK) / requests ))
  echo "GET /pods x $requests ($(curl -s "localhost:$port/pods" | wc -c) bytes): $wall_us us wall, $cpu_us us of the node's CPU per request"
fi
if [ "$mode" = rss ] && [ "${WORKING_SET:-1}" = 1 ]; then
  # The file pages are the binary's text touched since start. Ask the kernel to reclaim them
  # now, as it would under memory pressure (process_madvise MADV_PAGEOUT on the binary's
  # mappings), and read again after SETTLE seconds: what came back is the text the node uses
  # at rest, so the second reading is its working set.
  python3 - "$pid" <<'PY'
import ctypes, os, sys
pid = int(sys.argv[1]); exe = os.readlink(f"/proc/{pid}/exe")
libc = ctypes.CDLL(None, use_errno=True)
class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
SYS_PROCESS_MADVISE, MADV_PAGEOUT = 440, 21
pidfd = os.pidfd_open(pid)
for line in open(f"/proc/{pid}/maps"):
    fields = line.split()
    if len(fields) >= 6 and fields[5] == exe:
        start, end = (int(x, 16) for x in fields[0].split("-"))
        iov = Iovec(start, end - start)
        if libc.syscall(SYS_PROCESS_MADVISE, pidfd, ctypes.byref(iov), 1, MADV_PAGEOUT, 0) < 0:
            sys.exit(f"process_madvise: {os.strerror(ctypes.get_errno())}")
PY
  before=$(ticks)
  sleep "$settle"
  echo "after the binary's pages were released, $settle s at rest (the working set):"
  grep -E "VmRSS|RssAnon|RssFile" "/proc/$pid/status"
  echo "CPU over those $settle s: $(( ($(ticks) - before) * 100 / $(getconf CLK_TCK) )) centi-seconds"
fi
if [ "$mode" = text ]; then
  # Every text page mapped was run (no fault-around). A function that ran was entered, so the
  # page of its first byte is among them: the functions that start on one, each named once,
  # in the order of their addresses. The first line names the rustc that built the binary (its
  # `.comment`), whose hashes the names hold: host/build.rs uses the list with that rustc only.
  python3 - "$pid" "$out" <<'PY'
import os, re, struct, subprocess, sys
pid, out = int(sys.argv[1]), sys.argv[2]
exe = os.readlink(f"/proc/{pid}/exe")
mappings = [fields for fields in (line.split() for line in open(f"/proc/{pid}/maps"))
            if len(fields) >= 6 and fields[5] == exe]
bias = min(int(m[0].split("-")[0], 16) - int(m[2], 16) for m in mappings)
run_pages = set()
with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
    for m in mappings:
        if "x" not in m[1]:
            continue
        start, end = (int(x, 16) for x in m[0].split("-"))
        pagemap.seek(start // 4096 * 8)
        entries = pagemap.read((end - start) // 4096 * 8)
        run_pages.update((start - bias) // 4096 + index for index in range((end - start) // 4096)
                         if struct.unpack_from("<Q", entries, index * 8)[0] >> 63)
nm = subprocess.run(["nm", "--print-size", "--defined-only", exe],
                    capture_output=True, text=True, check=True).stdout
run = {}
for fields in map(str.split, nm.splitlines()):
    if len(fields) == 4 and fields[2] in "tTwW" and int(fields[0], 16) // 4096 in run_pages:
        run.setdefault(int(fields[0], 16), (int(fields[1], 16), fields[3]))
comment = subprocess.run(["readelf", "-p", ".comment", exe],
                         capture_output=True, text=True, check=True).stdout
rustc = re.search(r"rustc version (.+?)\s*$", comment, re.MULTILINE)
if not rustc:
    sys.exit(f"heap-profile: {exe} names no rustc in its .comment section")
with open(out, "w") as listing:
    listing.write(f"# rustc {rustc.group(1)}\n")
    listing.writelines(run[address][1] + "\n" for address in sorted(run))
size = sum(size for size, _ in run.values()) / 1048576
print(f"{len(run_pages)} text pages run ({len(run_pages) / 256:.1f} MiB); {len(run)} functions "
      f"({size:.1f} MiB) written to {out}")
PY
fi
kill -9 "$pid"
sleep 1

# The same node with no manifests removes what the first one left.
rm -f "$dir"/manifests/*.yaml
RUST_LOG=warn start_node
cleaner=$!
for _ in $(seq 1 120); do
  left=$(ctr -a "$socket" -n k8s.io containers ls -q 2>/dev/null | wc -l)
  [ "$left" -eq 0 ] && break
  sleep 1
done
kill "$cleaner"; wait "$cleaner" 2>/dev/null || true
[ "$mode" = heaptrack ] && echo "profile: $out.zst"
rm -rf "$dir"
