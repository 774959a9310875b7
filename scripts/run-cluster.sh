#!/usr/bin/env bash
# run-cluster.sh - wasmlet as the node of a real one-machine Kubernetes cluster.
#
#   scripts/run-cluster.sh           set up, start, schedule a Deployment, then run wasmlet in the
#                                    foreground until Ctrl-C (the control plane keeps running)
#   scripts/run-cluster.sh --check   the same, but exit 0 as soon as the pod runs, stopping
#                                    wasmlet and the control plane if this run started it
#
# Steps: scripts/setup-node.sh (containerd, CNI, images), scripts/build-plugins.sh,
# `cargo build --release --bin wasmlet`, `scripts/control-plane.sh start DIR NODE`, then wasmlet
# with DIR/node.kubeconfig (and DIR/pki/ca.crt as the secure port's client CA), waits for Node
# NODE to be Ready, creates Deployment `web` (busybox httpd on :8080; kept if it exists) and
# waits for its pod to run on NODE. Run as root.
#
# Environment (defaults):
#   WASMLET_CLUSTER_DIR=/var/lib/wasmlet-cluster   control-plane state (control-plane.sh start DIR)
#   WASMLET_NODE_NAME=<lower-cased hostname>       the Node's name
#   WASMLET_ROOT_DIR=$WASMLET_CLUSTER_DIR/wasmlet   wasmlet's --root-dir
#   WASMLET_CONFIG=examples/node/config.yaml       wasmlet's --config
#   WASMLET_CLUSTER_TIMEOUT=180                    seconds for the Node to be Ready, then the pod
# and those of scripts/setup-node.sh and scripts/control-plane.sh. wasmlet logs to
# DIR/logs/wasmlet.log; its PID is in DIR/pids/wasmlet.pid, so `control-plane.sh stop DIR` also
# ends a wasmlet this script left behind.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CHECK=0
case "${1:-}" in
  --check) CHECK=1 ;;
  "") ;;
  *)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac
DIR=$(readlink -m "${WASMLET_CLUSTER_DIR:-/var/lib/wasmlet-cluster}")
NODE=${WASMLET_NODE_NAME:-$(tr '[:upper:]' '[:lower:]' </proc/sys/kernel/hostname)}
ROOT_DIR=$(readlink -m "${WASMLET_ROOT_DIR:-$DIR/wasmlet}")
CONFIG=${WASMLET_CONFIG:-examples/node/config.yaml}
TIMEOUT=${WASMLET_CLUSTER_TIMEOUT:-180}
LOG=$DIR/logs/wasmlet.log
PIDFILE=$DIR/pids/wasmlet.pid

log() { printf 'run-cluster: %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}
kc() { "$DIR/bin/kubectl" --kubeconfig "$DIR/admin.kubeconfig" --request-timeout=10s "$@"; }

# Alive and not a zombie: our own child stays a zombie until we `wait` for it.
is_alive() {
  local state
  state=$(sed -n 's/.*) \(.\).*/\1/p' "/proc/${1:-none}/stat" 2>/dev/null)
  [ -n "$state" ] && [ "$state" != Z ]
}

[ "$(id -u)" = 0 ] || die "must run as root (containerd, kube-proxy)"
command -v cargo >/dev/null || die "cargo not found (install Rust with rustup)"

# A wasmlet left running for this DIR (e.g. this script was killed) would fight the new one.
# (cargo build replaces the binary: its exe link may end in " (deleted)".)
if old=$(cat "$PIDFILE" 2>/dev/null) && is_alive "$old" &&
  old_exe=$(readlink "/proc/$old/exe") && old_exe=${old_exe% (deleted)} &&
  [ "${old_exe##*/}" = wasmlet ]; then
  die "wasmlet (pid $old) already runs for $DIR; stop it first: kill $old"
fi

scripts/setup-node.sh >/dev/null
scripts/build-plugins.sh
cargo build --release --bin wasmlet

WASMLET_PID=""
TAIL_PID=""
STARTED_CP=0
scripts/control-plane.sh status "$DIR" >/dev/null 2>&1 || STARTED_CP=1

# shellcheck disable=SC2317 # called from the EXIT trap
stop_wasmlet() {
  if [ -n "$TAIL_PID" ]; then
    kill "$TAIL_PID" 2>/dev/null || true
    TAIL_PID=""
  fi
  [ -n "$WASMLET_PID" ] || return 0
  if is_alive "$WASMLET_PID"; then
    log "stopping wasmlet (pid $WASMLET_PID)"
    kill -TERM "$WASMLET_PID" 2>/dev/null || true
    for _ in $(seq 150); do
      is_alive "$WASMLET_PID" || break
      sleep 0.1
    done
    if is_alive "$WASMLET_PID"; then
      log "wasmlet ignored SIGTERM for 15s, sending SIGKILL"
      kill -KILL "$WASMLET_PID" 2>/dev/null || true
    fi
  fi
  wait "$WASMLET_PID" 2>/dev/null || true
  rm -f "$PIDFILE"
  WASMLET_PID=""
}

# shellcheck disable=SC2317 # the EXIT trap
on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  stop_wasmlet
  if [ "$CHECK" = 1 ] && [ "$STARTED_CP" = 1 ]; then
    scripts/control-plane.sh stop "$DIR" || rc=1
  elif [ -x "$DIR/bin/kubectl" ]; then
    log "the control plane keeps running ($DIR/bin/kubectl --kubeconfig $DIR/admin.kubeconfig get pods -o wide);"
    log "stop it with: scripts/control-plane.sh stop $DIR   (the pods keep running in containerd; scripts/teardown-node.sh removes them)"
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Explains a failed wait: what the cluster sees and what wasmlet said in this run.
fail() {
  log "ERROR: $*"
  kc get nodes -o wide >&2 || true
  kc get pods -o wide >&2 || true
  if [ -s "$LOG" ]; then
    log "last lines of $LOG (this run):"
    tac "$LOG" | sed '/^==== /q' | tac | tail -n 40 | sed 's/^/    /' >&2
  fi
  exit 1
}

scripts/control-plane.sh start "$DIR" "$NODE" >/dev/null

mkdir -p "$ROOT_DIR" "$DIR/logs" "$DIR/pids"
printf '==== %s run-cluster.sh: starting wasmlet for node %s\n' "$(date -Is)" "$NODE" >>"$LOG"
# The cluster CA signs the API server's kubelet client certificate: with it the secure port
# (10250) serves `kubectl logs` through the API server.
target/release/wasmlet run --config "$CONFIG" --root-dir "$ROOT_DIR" \
  --kubeconfig "$DIR/node.kubeconfig" --hostname-override "$NODE" \
  --client-ca-file "$DIR/pki/ca.crt" >>"$LOG" 2>&1 </dev/null &
WASMLET_PID=$!
echo "$WASMLET_PID" >"$PIDFILE"
log "wasmlet pid $WASMLET_PID, node $NODE, root $ROOT_DIR, log $LOG"

# kubectl wait fails at once while the Node does not exist yet: retry in short rounds, watching
# that wasmlet is still there.
t0=$SECONDS
until kc wait --for=condition=Ready "node/$NODE" --timeout=5s >/dev/null 2>&1; do
  is_alive "$WASMLET_PID" || fail "wasmlet exited before Node $NODE was Ready"
  [ $((SECONDS - t0)) -lt "$TIMEOUT" ] || fail "Node $NODE not Ready after ${TIMEOUT}s"
  sleep 1
done
log "Node $NODE is Ready ($((SECONDS - t0))s)"

if kc get deployment web >/dev/null 2>&1; then
  log "Deployment web exists; keeping it"
else
  kc create deployment web --image=docker.io/library/busybox:local -- httpd -f -p 8080 >&2
fi

t0=$SECONDS
# The example static pod carries app=web too: only a pod the ReplicaSet owns counts.
until kc get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].kind} {.spec.nodeName} {.status.phase}{"\n"}{end}' 2>/dev/null |
  grep -qx "ReplicaSet $NODE Running"; do
  is_alive "$WASMLET_PID" || fail "wasmlet exited before the pod of Deployment web was Running"
  [ $((SECONDS - t0)) -lt "$TIMEOUT" ] || fail "no pod of Deployment web Running on $NODE after ${TIMEOUT}s"
  sleep 1
done
log "a pod of Deployment web is Running on $NODE ($((SECONDS - t0))s):"
kc get pods -l app=web -o wide >&2

cat >&2 <<EOF

The cluster (control plane in $DIR, node $NODE = this wasmlet):
  export KUBECONFIG=$DIR/admin.kubeconfig
  $DIR/bin/kubectl get nodes,pods -A -o wide
  $DIR/bin/kubectl scale deployment web --replicas=3
  $DIR/bin/kubectl delete deployment web

EOF

if [ "$CHECK" = 1 ]; then
  log "--check: done"
  exit 0
fi

log "wasmlet runs in the foreground (log $LOG); Ctrl-C stops it"
tail -n 0 -F --pid="$WASMLET_PID" "$LOG" &
TAIL_PID=$!
rc=0
wait "$WASMLET_PID" || rc=$?
WASMLET_PID=""
rm -f "$PIDFILE"
log "wasmlet exited with status $rc"
exit "$rc"
