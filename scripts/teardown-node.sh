#!/usr/bin/env bash
# teardown-node.sh - undo scripts/setup-node.sh: stop our containerd, every pod and shim it
# started, unmount their filesystems, delete the CNI bridge, the pod cgroups and the CNI cache
# entries of our network, and remove $WASMLET_NODE_DIR.
#
# Safe to repeat, and works when containerd is already gone (kill -9, crash). Processes are only
# stopped when they can be identified as ours, one PID at a time:
#   containerd   argv is `containerd --config $WASMLET_NODE_DIR/config.toml`
#   shims        argv contains `-address $WASMLET_NODE_DIR/containerd.sock`
#   containers   known to runc under $WASMLET_NODE_DIR/runc, or (if runc lost track of them)
#                their "/" is an overlay of, or bind mount from, one of our snapshots
# Pods are not stopped through CRI first, so no CNI DEL runs; the IPAM state lives in the node
# dir and the veths disappear with the pod network namespaces, so nothing is lost by that.
#
# Environment (defaults): WASMLET_NODE_DIR=/var/lib/wasmlet-node, WASMLET_BRIDGE=wasmlet0,
#   WASMLET_CGROUP_ROOTS="kubepods k8s.io"  top-level cgroups whose empty subtrees are removed
# Exit status 1 if something of ours is still running or mounted afterwards.
set -uo pipefail

NODE_DIR=$(readlink -m "${WASMLET_NODE_DIR:-/var/lib/wasmlet-node}")
BRIDGE=${WASMLET_BRIDGE:-wasmlet0}
CGROUP_ROOTS=${WASMLET_CGROUP_ROOTS:-kubepods k8s.io}
SOCK=$NODE_DIR/containerd.sock
CONFIG=$NODE_DIR/config.toml
PIDFILE=$NODE_DIR/containerd.pid
CNI_NETWORK=wasmlet
SHIM_SOCKET_DIR=/run/containerd/s       # fixed in containerd 1.6
DEFAULT_RUNC_ROOT=/run/containerd/runc  # runc root of containers created without CRI (ctr run)

T0=$(date +%s%N)
log() { echo "[teardown-node +$(( ($(date +%s%N) - T0) / 1000000 ))ms] $*" >&2; }
[ "$(id -u)" = 0 ] || { echo "teardown-node.sh: must run as root" >&2; exit 1; }
case $NODE_DIR in /|/var|/var/lib|/tmp|/run) echo "refusing WASMLET_NODE_DIR=$NODE_DIR" >&2; exit 1 ;; esac

exec 9>"$NODE_DIR.lock"
flock -w 300 9 || { echo "teardown-node.sh: timed out waiting for $NODE_DIR.lock" >&2; exit 1; }

# alive = exists and is not a zombie (PID 1 of some sandboxes reaps orphans late)
is_alive() {
  local state  # field 3 of /proc/PID/stat, after the "(comm)" that may contain spaces
  state=$(sed -n 's/.*) \(.\).*/\1/p' "/proc/${1:-none}/stat" 2>/dev/null)
  [ -n "$state" ] && [ "$state" != Z ]
}
argv_of() { { tr '\0' ' ' < "/proc/$1/cmdline"; } 2>/dev/null; }
is_our_containerd() {
  case "$(argv_of "$1")" in
    "containerd --config $CONFIG "|*"/containerd --config $CONFIG ") is_alive "$1" ;;
    *) return 1 ;;
  esac
}
is_our_shim() {
  case "$(argv_of "$1")" in *containerd-shim*" -address $SOCK "*) is_alive "$1" ;; *) return 1 ;; esac
}
SELF_MNT_NS=$(readlink /proc/self/ns/mnt)
is_our_container_process() {
  # In its own mount namespace a container's root (/proc/PID/root) reads "/", so look at what
  # is mounted on "/" there: an overlay whose lower/upper dirs, or a bind mount whose source,
  # lies below the node dir (the overlayfs or native snapshotter of our containerd).
  [ "$(readlink "/proc/$1/ns/mnt" 2>/dev/null)" != "$SELF_MNT_NS" ] || return 1
  awk -v dir="$NODE_DIR/" '$5 == "/" && (index($4, dir) == 1 || index($0, "dir=" dir) > 0) {found = 1}
    END {exit !found}' "/proc/$1/mountinfo" 2>/dev/null && is_alive "$1"
}
all_pids() { local d; for d in /proc/[0-9]*; do echo "${d#/proc/}"; done; }
wait_gone() {  # wait up to $2 tenths of a second for all PIDs in $1
  local p i
  for i in $(seq "$2"); do
    for p in $1; do is_alive "$p" && { sleep 0.1; continue 2; }; done
    return 0
  done
  return 1
}
shim_socket() { printf '%s' "$SOCK/$1/$2" | sha256sum | cut -d' ' -f1; }  # name = sha256(address/ns/id)

# Tasks (namespace/id) this containerd has created, for the shim socket and runc state cleanup.
tasks=""
for t in "$NODE_DIR"/state/io.containerd.runtime.v2.task/*/*/; do
  [ -d "$t" ] || continue
  t=${t%/}; tasks="$tasks ${t#"$NODE_DIR"/state/io.containerd.runtime.v2.task/}"
done

# 1. containerd (pidfile, if it still names our containerd, plus anything started with our config)
cpids=""
[ -f "$PIDFILE" ] && is_our_containerd "$(cat "$PIDFILE")" && cpids=$(cat "$PIDFILE")
for p in $(all_pids); do is_our_containerd "$p" && cpids="$cpids $p"; done
cpids=$(echo $cpids | tr ' ' '\n' | sort -un | tr '\n' ' ')
for p in $cpids; do kill -TERM "$p" 2>/dev/null; done
if [ -n "${cpids// /}" ]; then
  wait_gone "$cpids" 100 || { log "containerd did not exit on SIGTERM, sending SIGKILL"; kill -KILL $cpids 2>/dev/null; wait_gone "$cpids" 50; }
  log "stopped containerd (pid $(echo $cpids))"
fi

# 2. containers: runc kills the processes and removes the container cgroups
# The runc shim appends the namespace to the configured root: CRI's containers are in
# $NODE_DIR/runc/k8s.io/<id>/state.json. Find every root, whatever the namespace.
ndel=0
for root in $(find "$NODE_DIR/runc" -mindepth 3 -maxdepth 5 -name state.json -printf '%h\n' 2>/dev/null \
              | xargs -r -n1 dirname | sort -u); do
  for id in $(runc --root "$root" list -q 2>/dev/null); do
    runc --root "$root" delete -f "$id" >/dev/null 2>&1 && ndel=$((ndel + 1))
  done
done
for t in $tasks; do  # containers of our containerd that live under the default runc root (ctr run)
  ns=${t%%/*}; id=${t#*/}
  if [ -d "$DEFAULT_RUNC_ROOT/$ns/$id" ]; then
    runc --root "$DEFAULT_RUNC_ROOT/$ns" delete -f "$id" >/dev/null 2>&1 && ndel=$((ndel + 1))
    rmdir "$DEFAULT_RUNC_ROOT/$ns" "$DEFAULT_RUNC_ROOT" 2>/dev/null
  fi
done
[ "$ndel" = 0 ] || log "deleted $ndel container(s) with runc delete -f"

# 3. shims of our containerd, and their sockets
spids=""
for p in $(all_pids); do
  is_our_shim "$p" || continue
  argv=$(argv_of "$p")
  ns=$(sed -n 's/.* -namespace \([^ ]*\) .*/\1/p' <<< "$argv"); id=$(sed -n 's/.* -id \([^ ]*\) .*/\1/p' <<< "$argv")
  [ -n "$ns" ] && [ -n "$id" ] && tasks="$tasks $ns/$id"
  kill -KILL "$p" 2>/dev/null && spids="$spids $p"
done
[ -z "$spids" ] || { wait_gone "$spids" 50; log "killed shim(s):$spids"; }
for t in $tasks; do
  rm -f "$SHIM_SOCKET_DIR/$(shim_socket "${t%%/*}" "${t#*/}")"
done
# only if empty: a system containerd uses them too (fifo/ holds the stdio FIFOs of `ctr run`)
rmdir "$SHIM_SOCKET_DIR" /run/containerd/fifo /run/containerd 2>/dev/null

# 4. container processes runc no longer knew about (e.g. its state dir was removed by hand)
kpids=""
for p in $(all_pids); do
  is_our_container_process "$p" && kill -KILL "$p" 2>/dev/null && kpids="$kpids $p"
done
[ -z "$kpids" ] || { wait_gone "$kpids" 50; log "killed leftover container process(es):$kpids"; }

# 5. mounts below the node dir: container rootfs overlays, sandbox /dev/shm, netns bind mounts
mounts_below() { awk -v dir="$NODE_DIR" '$5 == dir || index($5, dir "/") == 1 {print $5}' /proc/self/mountinfo; }
n=0
for _ in 1 2 3; do
  mps=$(mounts_below | sort -r)
  [ -n "$mps" ] || break
  for m in $mps; do
    m=$(printf '%b' "${m//\\/\\0}")  # mountinfo escapes space, tab, newline and backslash as \ooo
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
    n=$((n + 1))
  done
done
[ "$n" = 0 ] || log "unmounted $n mount(s) below $NODE_DIR"

# 6. network: the bridge (pod veths went away with the pod network namespaces)
if ip link show "$BRIDGE" >/dev/null 2>&1; then
  ip link del "$BRIDGE" && log "deleted bridge $BRIDGE"
fi
# libcni caches each ADD result in /var/lib/cni/results/<network>-<container id>-<ifname>;
# containerd's built-in loopback uses the network name cni-loopback.
nres=0
for f in /var/lib/cni/results/"$CNI_NETWORK"-*; do
  [ -e "$f" ] || continue
  id=${f#/var/lib/cni/results/"$CNI_NETWORK"-}; id=${id%-*}
  rm -f "$f" "/var/lib/cni/results/cni-loopback-$id-lo" && nres=$((nres + 1))
done
[ "$nres" = 0 ] || log "removed $nres CNI result cache entr(y/ies) of network $CNI_NETWORK"
rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null

# 7. cgroups: with the cgroupfs driver runc removes container cgroups but not their parents
#    (pod and QoS cgroups are the kubelet's). Remove empty directories only, deepest first.
for _ in 1 2 3; do
  left=0
  for top in $CGROUP_ROOTS; do
    for base in /sys/fs/cgroup /sys/fs/cgroup/*; do
      [ -d "$base/$top" ] || continue
      find "$base/$top" -depth -type d -exec rmdir {} \; 2>/dev/null
      [ -d "$base/$top" ] && left=1
    done
  done
  [ "$left" = 0 ] && break
  sleep 0.3   # processes killed a moment ago may still be leaving their cgroups
done
[ "$left" = 0 ] || log "WARNING: cgroups still in use: $(for top in $CGROUP_ROOTS; do ls -d /sys/fs/cgroup/*/"$top" 2>/dev/null; done | tr '\n' ' ')"

# 8. files
if [ -d "$NODE_DIR" ]; then
  if [ -z "$(mounts_below)" ]; then
    rm -rf "$NODE_DIR" && log "removed $NODE_DIR"
  else
    log "WARNING: not removing $NODE_DIR, mounts remain below it"
  fi
fi

# 9. verify
problems=""
for p in $(all_pids); do
  if is_our_containerd "$p" || is_our_shim "$p" || is_our_container_process "$p"; then
    problems="$problems pid $p ($(argv_of "$p" | cut -c1-80));"
  fi
done
[ -z "$(mounts_below)" ] || problems="$problems mounts: $(mounts_below | tr '\n' ' ');"
ip link show "$BRIDGE" >/dev/null 2>&1 && problems="$problems bridge $BRIDGE still exists;"
[ -e "$NODE_DIR" ] && problems="$problems $NODE_DIR still exists;"
rm -f "$NODE_DIR.lock"
if [ -n "$problems" ]; then
  log "FAILED, left over:$problems"
  exit 1
fi
log "done: nothing of the node is left"
