#!/usr/bin/env bash
# bench-cluster.sh - wasmlet as a cluster node under load, against the real control plane:
# time for N API pods (default 110) to be Running, wasmlet's RSS and CPU at rest with them, the
# API server's request rate at rest with wasmlet against without it, and the API requests of one
# pod lifecycle (create -> Running -> delete -> gone). Run as root after scripts/setup-node.sh
# and `cargo build --release --bin wasmlet`; it starts the control plane in DIR if needed.
#   WASMLET_BENCH_DIR=/var/lib/wasmlet-bench-cluster   control plane DIR
#   BENCH_PODS=110  BENCH_IDLE_S=60  BENCH_LIFECYCLES=10
# Requests are counted from kube-apiserver's apiserver_request_total; the control plane's own
# rate (measured first, without wasmlet) is subtracted.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DIR=${WASMLET_BENCH_DIR:-/var/lib/wasmlet-bench-cluster}
PODS=${BENCH_PODS:-110}
IDLE=${BENCH_IDLE_S:-60}
LIFECYCLES=${BENCH_LIFECYCLES:-10}
NODE=bench-node
WORK=$(mktemp -d)
WASMLET_PID=
cleanup() {
  # The pods go while wasmlet still runs, so it stops them and unmounts their volumes.
  if [ -n "$WASMLET_PID" ]; then
    kc delete namespace bench --wait=true --timeout=180s >/dev/null 2>&1 || true
    kill "$WASMLET_PID" 2>/dev/null && wait "$WASMLET_PID" 2>/dev/null
  fi
  rm -rf "$WORK" 2>/dev/null || log "left $WORK (volumes still mounted)"
}
trap cleanup EXIT
kc() { "$DIR/bin/kubectl" --kubeconfig "$DIR/admin.kubeconfig" "$@"; }
log() { printf 'bench-cluster: %s\n' "$*" >&2; }

scripts/control-plane.sh start "$DIR" >/dev/null
# Total requests by a class: all, writes (POST/PUT/PATCH/DELETE), or one resource.
requests() {
  kc get --raw /metrics | awk -v class="$1" '
    /^apiserver_request_total\{/ {
      verb = $0; sub(/.*verb="/, "", verb); sub(/".*/, "", verb)
      res = $0; sub(/.*resource="/, "", res); sub(/".*/, "", res)
      sub_ = ""; if ($0 ~ /subresource="/) { sub_ = $0; sub(/.*subresource="/, "", sub_); sub(/".*/, "", sub_) }
      write = (verb ~ /^(POST|PUT|PATCH|DELETE|CREATE|UPDATE|APPLY)$/)
      if (class == "all" || (class == "writes" && write) || class == res || class == res "/" sub_) n += $NF
    }
    END { printf "%d\n", n }'
}
rate() { # class seconds -> requests/s over that window
  local a b
  a=$(requests "$1"); sleep "$2"; b=$(requests "$1")
  python3 -c "print(round(($b - $a) / $2, 3))"
}

log "control plane alone: request rate over ${IDLE}s"
BASE_ALL=$(rate all "$IDLE")
BASE_WRITES=$(rate writes "$IDLE")

KC=$(scripts/control-plane.sh node-kubeconfig "$DIR" "$NODE")
kc delete node "$NODE" --wait=true >/dev/null 2>&1 || true
mkdir -p "$WORK/manifests"
cat >"$WORK/config.yaml" <<CONF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix:///var/lib/wasmlet-node/containerd.sock
podLogsDir: $WORK/logs
readOnlyPort: 0
healthzPort: 0
CONF
target/release/wasmlet run --config "$WORK/config.yaml" --root-dir "$WORK/root" \
  --hostname-override "$NODE" --kubeconfig "$KC" >"$WORK/wasmlet.log" 2>&1 &
WASMLET_PID=$!
kc wait --for=condition=Ready "node/$NODE" --timeout=60s >/dev/null
kc delete namespace bench --wait=true >/dev/null 2>&1 || true
kc create namespace bench >/dev/null
until kc -n bench get serviceaccount default >/dev/null 2>&1; do sleep 0.5; done
until kc -n bench get configmap kube-root-ca.crt >/dev/null 2>&1; do sleep 0.5; done

log "$LIFECYCLES pod lifecycles (create -> Running -> delete -> gone)"
# kubectl's own requests (-v=6 logs one line per request) are counted and taken off.
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: life, namespace: bench}\nspec:\n  nodeName: %s\n  terminationGracePeriodSeconds: 1\n  containers: [{name: c, image: docker.io/library/busybox:local, imagePullPolicy: IfNotPresent, command: [sleep, "86400"]}]\n' "$NODE" >"$WORK/life.yaml"
: >"$WORK/kubectl.log"
kv() { kc -v=6 "$@" 2>>"$WORK/kubectl.log"; }
before=$(requests all); l0=$(date +%s.%N)
for i in $(seq 1 "$LIFECYCLES"); do
  { kv create -f "$WORK/life.yaml" >/dev/null &&
    kv -n bench wait --for=jsonpath='{.status.phase}'=Running pod/life --timeout=60s >/dev/null &&
    kv -n bench delete pod life --wait=true >/dev/null; } ||
    { log "lifecycle $i failed:"; tail -5 "$WORK/kubectl.log" >&2; exit 1; }
done
after=$(requests all); l1=$(date +%s.%N)
KUBECTL=$(grep -c '"Response" verb=' "$WORK/kubectl.log" || true)
PER_LIFECYCLE=$(python3 -c "print(round((($after - $before) - $KUBECTL - $BASE_ALL * ($l1 - $l0)) / $LIFECYCLES, 1))")
log "lifecycle: $PER_LIFECYCLE requests (kubectl's $KUBECTL taken off)"

log "$PODS pods bound to $NODE (default service-account token volume)"
for i in $(seq 1 "$PODS"); do
  printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d, namespace: bench}\nspec:\n  nodeName: %s\n  terminationGracePeriodSeconds: 1\n  containers: [{name: c, image: docker.io/library/busybox:local, imagePullPolicy: IfNotPresent, command: [sleep, "86400"]}]\n' "$i" "$NODE"
done >"$WORK/pods.yaml"
t0=$(date +%s.%N)
kc apply -f "$WORK/pods.yaml" >/dev/null
until [ "$(kc -n bench get pods --field-selector status.phase=Running -o name | wc -l)" -ge "$PODS" ]; do sleep 0.5; done
t1=$(date +%s.%N)
ALL_RUNNING=$(python3 -c "print(round($t1 - $t0, 1))")
log "all $PODS Running after ${ALL_RUNNING}s"

sleep 20
cpu0=$(awk '{print $14 + $15}' "/proc/$WASMLET_PID/stat")
log "at rest with $PODS pods: request rate over ${IDLE}s"
kc get --raw /metrics | grep '^apiserver_request_total{' >"$WORK/metrics.0"
NODE_ALL=$(rate all "$IDLE")
NODE_WRITES=$(rate writes "$IDLE")
kc get --raw /metrics | grep '^apiserver_request_total{' >"$WORK/metrics.1"
log "writes at rest by verb/resource/subresource (both windows, all clients):"
awk 'function label(l, name,  m) { if (!match(l, "[{,]" name "=\"[^\"]*\"")) return ""; m = substr(l, RSTART + length(name) + 3, RLENGTH - length(name) - 4); return m }
  function key(l) { return label(l, "verb") " " label(l, "resource") "/" label(l, "subresource") }
  FNR==NR { a[key($0)] += $NF; next } { b[key($0)] += $NF }
  END { for (k in b) if (k ~ /^(POST|PUT|PATCH|DELETE)/ && b[k] - a[k] > 0) print "  " k ": " b[k] - a[k] }' "$WORK/metrics.0" "$WORK/metrics.1" >&2
cpu1=$(awk '{print $14 + $15}' "/proc/$WASMLET_PID/stat")
RSS=$(awk '/VmRSS/ {print $2}' "/proc/$WASMLET_PID/status")
CPU_IDLE=$(python3 -c "print(round(($cpu1 - $cpu0) / $(getconf CLK_TCK) / ($IDLE * 2) * 100, 2))")
log "at rest: rss=${RSS}KiB cpu=${CPU_IDLE}% all=$NODE_ALL/s writes=$NODE_WRITES/s (control plane alone: $BASE_ALL/s, $BASE_WRITES/s)"


cat <<OUT
pods=$PODS all_running_s=$ALL_RUNNING
wasmlet_rss_mib=$(python3 -c "print(round($RSS / 1024, 1))") wasmlet_cpu_idle_percent_of_2_cores=$CPU_IDLE
apiserver_rate_without_wasmlet all=$BASE_ALL/s writes=$BASE_WRITES/s
apiserver_rate_with_wasmlet_idle all=$NODE_ALL/s writes=$NODE_WRITES/s
wasmlet_idle_rate all=$(python3 -c "print(round($NODE_ALL - $BASE_ALL, 3))")/s writes=$(python3 -c "print(round($NODE_WRITES - $BASE_WRITES, 3))")/s
requests_per_pod_lifecycle=$PER_LIFECYCLE (all clients but kubectl, $KUBECTL kubectl requests taken off, minus the control plane's own rate)
OUT
