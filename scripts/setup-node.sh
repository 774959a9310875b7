#!/usr/bin/env bash
# setup-node.sh - bring up the container runtime that wasmlet talks to: a private containerd
# (Debian bookworm's 1.6) with its CRI plugin, runc, a CNI bridge and locally built images.
#
# Unattended and idempotent; run as root. Every run converges the node to the desired state:
# missing packages are installed, the images are rebuilt and re-imported only when they changed,
# and containerd is (re)started only when it is not running or its config changed. Running pods
# survive a containerd restart (their shims keep running).
#
# Logs go to stderr. The last line on stdout is for the caller:
#   CONTAINER_RUNTIME_ENDPOINT=unix://$WASMLET_NODE_DIR/containerd.sock
# so `eval "$(scripts/setup-node.sh)"` works. Undo everything with scripts/teardown-node.sh.
#
# Environment (defaults):
#   WASMLET_NODE_DIR=/var/lib/wasmlet-node   all state: containerd root/state, runc root, config,
#                                            socket, logs, images, CNI config and IPAM
#   WASMLET_POD_SUBNET=10.88.99.0/24         pod IP range of the bridge (gateway = first address)
#   WASMLET_BRIDGE=wasmlet0                  name of the CNI bridge
#   WASMLET_SNAPSHOTTER=auto                 overlayfs if an overlay mount works in the node dir,
#                                            else native
#   WASMLET_EXTRA_IMAGE_FILES=""             space-separated [IMAGE=]SRC[:DEST] specs, passed to
#                                            build-images.py --extra (builds wasmlet-test:local)
#   WASMLET_CONTAINERD_LOG_LEVEL=info
#   WASMLET_IMAGEFS_SIZE=""                  if set (e.g. 512M), containerd's root (the image
#                                            filesystem) is a tmpfs of that size, so image GC
#                                            thresholds can be reached by tests
#   WASMLET_SANDBOX_IMAGE=registry.k8s.io/pause:local
#                                            containerd's sandbox_image (scripts/conformance.sh
#                                            sets the release's pause, which it imports itself)
set -euo pipefail

NODE_DIR=$(readlink -m "${WASMLET_NODE_DIR:-/var/lib/wasmlet-node}")
POD_SUBNET=${WASMLET_POD_SUBNET:-10.88.99.0/24}
BRIDGE=${WASMLET_BRIDGE:-wasmlet0}
SNAPSHOTTER=${WASMLET_SNAPSHOTTER:-auto}
EXTRA_IMAGE_FILES=${WASMLET_EXTRA_IMAGE_FILES:-}
LOG_LEVEL=${WASMLET_CONTAINERD_LOG_LEVEL:-info}
IMAGEFS_SIZE=${WASMLET_IMAGEFS_SIZE:-}

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOCK=$NODE_DIR/containerd.sock
CONFIG=$NODE_DIR/config.toml
PIDFILE=$NODE_DIR/containerd.pid
LOGFILE=$NODE_DIR/log/containerd.log
IMAGE_TAR=$NODE_DIR/images/images.oci.tar
IMPORT_STAMP=$NODE_DIR/images/imported
CNI_NETWORK=wasmlet
PAUSE_IMAGE=${WASMLET_SANDBOX_IMAGE:-registry.k8s.io/pause:local}
PACKAGES="containerd runc containernetworking-plugins busybox-static iptables"

T0=$(date +%s%N)
elapsed() { echo "$(( ($(date +%s%N) - T0) / 1000000 ))ms"; }
log() { echo "[setup-node +$(elapsed)] $*" >&2; }
die() { echo "[setup-node] ERROR: $*" >&2; exit 1; }
ctr_() { ctr --address "$SOCK" --connect-timeout 2s --namespace k8s.io "$@"; }

[ "$(id -u)" = 0 ] || die "must run as root"
case $POD_SUBNET in
  [0-9]*.[0-9]*.[0-9]*.[0-9]*/[0-9]*) ;;
  *) die "WASMLET_POD_SUBNET=$POD_SUBNET is not an IPv4 CIDR" ;;
esac
[ ${#BRIDGE} -le 15 ] || die "WASMLET_BRIDGE=$BRIDGE is longer than 15 characters"

# --------------------------------------------------------------------- helpers: our containerd
# A process is ours if its argv is exactly `containerd --config $CONFIG`. Zombies count as dead:
# PID 1 on some sandboxes reaps orphans only after a delay.
is_alive() {
  local state  # field 3 of /proc/PID/stat, after the "(comm)" that may contain spaces
  state=$(sed -n 's/.*) \(.\).*/\1/p' "/proc/${1:-none}/stat" 2>/dev/null)
  [ -n "$state" ] && [ "$state" != Z ]
}
our_containerd_pids() {
  local d argv
  for d in /proc/[0-9]*; do
    argv=$( { tr '\0' ' ' < "$d/cmdline"; } 2>/dev/null) || continue
    case "$argv" in
      "containerd --config $CONFIG "|*"/containerd --config $CONFIG ") is_alive "${d#/proc/}" && echo "${d#/proc/}" ;;
    esac
  done
  return 0
}
stop_pid() {  # TERM, up to 10 s grace, then KILL
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 100); do is_alive "$pid" || return 0; sleep 0.1; done
  log "containerd pid $pid ignored SIGTERM for 10s, sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for i in $(seq 50); do is_alive "$pid" || return 0; sleep 0.1; done
}

# Serialize concurrent runs (e.g. several test binaries calling this at once).
mkdir -p "$(dirname "$NODE_DIR")"
exec 9>"$NODE_DIR.lock"
flock -w 300 9 || die "timed out waiting for the lock $NODE_DIR.lock"

# --------------------------------------------------------------------- 1. packages
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
command -v python3 >/dev/null || missing="$missing python3"
if [ -n "$missing" ]; then
  log "installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends $missing >&2
fi
# On a systemd host the containerd package also starts the *system* containerd
# (/run/containerd/containerd.sock). Ours is independent of it and never touches it.

mkdir -p "$NODE_DIR"/{root,state,runc,log,images,net.d,cni-ipam,opt}

# --------------------------------------------------------------------- 1b. small image filesystem
if [ -n "$IMAGEFS_SIZE" ]; then
  if mountpoint -q "$NODE_DIR/root"; then
    mount -o remount,size="$IMAGEFS_SIZE" "$NODE_DIR/root" || die "cannot resize $NODE_DIR/root to $IMAGEFS_SIZE"
  else
    # containerd must not run on the directory being mounted over.
    for pid in $(our_containerd_pids); do log "mounting the image filesystem: stopping containerd pid $pid"; stop_pid "$pid"; done
    mount -t tmpfs -o size="$IMAGEFS_SIZE",mode=0711 tmpfs "$NODE_DIR/root" || die "cannot mount a $IMAGEFS_SIZE tmpfs on $NODE_DIR/root"
    rm -f "$IMPORT_STAMP"
    log "image filesystem: tmpfs of $IMAGEFS_SIZE on $NODE_DIR/root"
  fi
fi

# --------------------------------------------------------------------- 2. snapshotter
if [ "$SNAPSHOTTER" = auto ]; then
  probe=$NODE_DIR/.overlay-probe
  rm -rf "$probe" && mkdir -p "$probe"/{lower,upper,work,merged}
  if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" \
       "$probe/merged" 2>/dev/null; then
    umount "$probe/merged"
    SNAPSHOTTER=overlayfs
  else
    SNAPSHOTTER=native   # e.g. the node dir is itself on overlayfs (inside docker)
  fi
  rm -rf "$probe"
fi
case $SNAPSHOTTER in overlayfs|native) ;; *) die "unsupported WASMLET_SNAPSHOTTER=$SNAPSHOTTER" ;; esac

# --------------------------------------------------------------------- 3. containerd config
cat > "$CONFIG.new" <<EOF
# Written by wasmlet scripts/setup-node.sh; changes are overwritten on the next run.
version = 2
root = "$NODE_DIR/root"
state = "$NODE_DIR/state"
oom_score = 0

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[debug]
  level = "$LOG_LEVEL"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$NODE_DIR/opt"

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$PAUSE_IMAGE"
    # exec/attach/port-forward streaming: loopback only, on a random free port
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    disable_apparmor = true
    enable_selinux = false
    # Clamp the oom_score_adj that pods ask for (the sandbox asks for -998) to containerd's own.
    # Lowering it needs CAP_SYS_RESOURCE; without that capability (Firecracker VMs, some CI
    # sandboxes) runc init fails with "can't get final child's PID from pipe: EOF".
    restrict_oom_score_adj = true
    # keep pod network namespaces below our state dir instead of /var/run/netns
    netns_mounts_under_state_dir = true
    max_container_log_line_size = 16384

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "$SNAPSHOTTER"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          BinaryName = "$(command -v runc)"
          Root = "$NODE_DIR/runc"
          SystemdCgroup = false

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$NODE_DIR/net.d"
      max_conf_num = 1
EOF

# CNI: containerd watches conf_dir and reloads by itself, so this never needs a restart.
# The loopback interface is set up by containerd without a plugin entry.
cat > "$NODE_DIR/net.d/.10-$CNI_NETWORK.conflist.new" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$NODE_DIR/cni-ipam",
        "ranges": [[{"subnet": "$POD_SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
EOF
if cmp -s "$NODE_DIR/net.d/.10-$CNI_NETWORK.conflist.new" "$NODE_DIR/net.d/10-$CNI_NETWORK.conflist"; then
  rm -f "$NODE_DIR/net.d/.10-$CNI_NETWORK.conflist.new"
else
  mv "$NODE_DIR/net.d/.10-$CNI_NETWORK.conflist.new" "$NODE_DIR/net.d/10-$CNI_NETWORK.conflist"
  log "wrote CNI config $NODE_DIR/net.d/10-$CNI_NETWORK.conflist (bridge $BRIDGE, $POD_SUBNET)"
fi

# --------------------------------------------------------------------- 4. containerd
pids=$(our_containerd_pids)
reason=""
if [ -z "$pids" ]; then
  reason="not running"
elif [ "$(echo "$pids" | wc -l)" -gt 1 ]; then
  reason="several instances running ($(echo $pids))"
elif ! cmp -s "$CONFIG.new" "$CONFIG"; then
  reason="config changed"
elif [ "$(readlink "/proc/$pids/exe" 2>/dev/null)" != "$(readlink -f "$(command -v containerd)")" ]; then
  reason="containerd binary was upgraded"
fi

if [ -z "$reason" ]; then
  rm -f "$CONFIG.new"
  echo "$pids" > "$PIDFILE"
  log "containerd pid $pids already running with this config"
else
  for pid in $pids; do
    log "$reason: stopping containerd pid $pid (running pods keep running)"
    stop_pid "$pid"
  done
  mv "$CONFIG.new" "$CONFIG"
  log "starting containerd ($reason), snapshotter $SNAPSHOTTER, log $LOGFILE"
  t_start=$(date +%s%N)
  # own session, detached from our stdio, so it outlives this script and its caller's terminal
  # (fd 9 is the setup lock: containerd must not inherit it, or it would hold the lock forever)
  setsid nohup containerd --config "$CONFIG" >> "$LOGFILE" 2>&1 < /dev/null 9>&- &
  pid=$!
  up=""
  for _ in $(seq 300); do   # up to ~30 s
    if ctr_ version >/dev/null 2>&1; then up=1; break; fi
    # $! is containerd itself unless setsid had to fork; then look it up by its argv
    is_alive "$pid" || pid=$(our_containerd_pids | head -n 1)
    [ -n "$pid" ] || break
    sleep 0.1
  done
  if [ -z "$up" ]; then
    tail -n 25 "$LOGFILE" >&2
    die "containerd did not start serving $SOCK; see $LOGFILE"
  fi
  pid=$(our_containerd_pids | head -n 1)
  echo "$pid" > "$PIDFILE"
  log "containerd pid $pid serving $SOCK after $(( ($(date +%s%N) - t_start) / 1000000 ))ms"
fi
pid=$(cat "$PIDFILE")

# The CRI plugin must report ok (it reports an error e.g. when the snapshotter cannot load).
cri_ok=""
for _ in $(seq 50); do
  if ctr_ plugins ls 2>/dev/null | grep -Eq '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$'; then
    cri_ok=1; break
  fi
  sleep 0.1
done
if [ -z "$cri_ok" ]; then
  ctr_ plugins ls 2>&1 | grep -E 'cri|snapshotter' >&2 || true
  die "containerd's CRI plugin is not ok; see $LOGFILE"
fi

# --------------------------------------------------------------------- 5. images
extra_args=()
for spec in $EXTRA_IMAGE_FILES; do extra_args+=(--extra "$spec"); done
python3 "$SCRIPT_DIR/build-images.py" "$IMAGE_TAR" ${extra_args[@]+"${extra_args[@]}"} > "$IMAGE_TAR.digests.new" \
  || die "building the images failed"
mv "$IMAGE_TAR.digests.new" "$IMAGE_TAR.digests"
# What we want listed: "REF DIGEST" per image, plus the snapshotter the layers are unpacked into.
want_stamp="snapshotter=$SNAPSHOTTER $(sort "$IMAGE_TAR.digests" | tr '\n' ' ')"
images_present() {
  local listing ref digest
  listing=$(ctr_ images ls 2>/dev/null | awk 'NR > 1 {print $1, $3}') || return 1
  while read -r ref digest; do
    grep -qxF "$ref $digest" <<< "$listing" || return 1
  done < "$IMAGE_TAR.digests"
}
if [ "$(cat "$IMPORT_STAMP" 2>/dev/null)" = "$want_stamp" ] && images_present; then
  log "images already imported: $(awk '{print $1}' "$IMAGE_TAR.digests" | tr '\n' ' ')"
else
  rm -f "$IMPORT_STAMP"
  # A containerd that just started can drop the first import; retry until every image is listed.
  imported=""
  for attempt in 1 2 3 4 5 6; do
    out=$(ctr_ images import --snapshotter "$SNAPSHOTTER" "$IMAGE_TAR" 2>&1) || true
    if images_present; then imported=1; break; fi
    log "import attempt $attempt incomplete, retrying"
    sleep 1
  done
  if [ -z "$imported" ]; then
    echo "$out" >&2
    die "images missing after import; listed: $(ctr_ images ls -q 2>&1 | tr '\n' ' ')"
  fi
  echo "$want_stamp" > "$IMPORT_STAMP"
  log "imported ($SNAPSHOTTER): $(awk '{print $1}' "$IMAGE_TAR.digests" | tr '\n' ' ')"
fi

log "ready: containerd pid $pid, socket $SOCK, pods on $BRIDGE $POD_SUBNET"
echo "CONTAINER_RUNTIME_ENDPOINT=unix://$SOCK"
