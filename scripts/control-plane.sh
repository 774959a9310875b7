#!/usr/bin/env bash
# control-plane.sh - a real single-machine Kubernetes control plane for cluster mode.
#
#   scripts/control-plane.sh build              build etcd, the Kubernetes binaries and metrics-server
#                                               once per version; prints their bin directories
#                                               (and the kubelet's, once build-kubelet has made it)
#   scripts/control-plane.sh build-kubelet      build the upstream kubelet once per version (for the
#                                               side-by-side runs); prints its bin directory
#   scripts/control-plane.sh start DIR [NODE]   start etcd, kube-apiserver, controller-manager,
#                                               scheduler, kube-proxy and metrics-server with state
#                                               under DIR
#   scripts/control-plane.sh stop DIR           stop what `start DIR` started, by the PIDs it wrote
#   scripts/control-plane.sh status DIR         which components of DIR run (exit 0: all of them)
#   scripts/control-plane.sh node-kubeconfig DIR NODE
#                                               print the path of a kubeconfig for system:node:NODE
#
# Everything comes from the Go module proxy and is built with this machine's Go; binaries go to a
# cache outside the checkout keyed by version (WASMLET_CP_CACHE, default
# /var/cache/wasmlet/control-plane), so a second build is a few seconds.
#
# `start` (as root) links the binaries into DIR/bin, issues certificates with openssl into
# DIR/pki (kept across restarts), writes DIR/{admin,node,controller-manager,scheduler,kube-proxy,
# metrics-server}.kubeconfig, starts each component in its own session (log DIR/logs/NAME.log, PID
# DIR/pids/NAME.pid) and waits until the cluster is usable. metrics-server runs on the host as
# system:metrics-server and serves the metrics.k8s.io APIService (`kubectl top`) through a
# selector-less Service kube-system/metrics-server whose Endpoints name the node IP. NODE defaults to the lower-cased
# hostname; it names the node identity (system:node:NODE) and kube-proxy's node. Run again, it
# starts only what is not running. `stop` TERMs (then KILLs) exactly the PIDs of DIR/pids and
# runs `kube-proxy --cleanup`; certificates and etcd data stay, so `start DIR` resumes the same
# cluster and `rm -rf DIR` after `stop` starts afresh.
#
# Environment (defaults):
#   WASMLET_NODE_IP                       address of the interface holding the default route
#   WASMLET_SERVICE_CIDR=10.96.0.0/16     Service ClusterIP range
#   WASMLET_POD_SUBNET=10.88.99.0/24      kube-proxy's --cluster-cidr (setup-node.sh's bridge range)
#   WASMLET_CP_APISERVER_PORT=6443        kube-apiserver, on all addresses
#   WASMLET_CP_ETCD_PORT=2379             etcd client port, loopback
#   WASMLET_CP_ETCD_PEER_PORT=2380        etcd peer port, loopback
#   WASMLET_CP_CONTROLLER_MANAGER_PORT=10257, WASMLET_CP_SCHEDULER_PORT=10259    loopback, https
#   WASMLET_CP_PROXY_METRICS_PORT=10249, WASMLET_CP_PROXY_HEALTHZ_PORT=10256     loopback, http
#   WASMLET_CP_TIMEOUT=120                seconds each readiness wait may take
#   WASMLET_CP_STOP_GRACE=15              seconds between SIGTERM and SIGKILL
#   WASMLET_KUBE_VERSION=v1.35.4, WASMLET_ETCD_VERSION=v3.6.16, WASMLET_CP_CACHE
#   WASMLET_METRICS_SERVER_VERSION=v0.9.0
#   WASMLET_CP_METRICS_SERVER_PORT=4443   metrics-server, https on the node IP (the aggregator dials it)
# None of the ports is one of wasmlet's own (10248, 10250, 10255). Use the same environment for
# every start of one DIR.
set -euo pipefail

KUBE_VERSION="${WASMLET_KUBE_VERSION:-v1.35.4}"
ETCD_VERSION="${WASMLET_ETCD_VERSION:-v3.6.16}"
CACHE="${WASMLET_CP_CACHE:-/var/cache/wasmlet/control-plane}"
BIN_DIR="$CACHE/kubernetes-$KUBE_VERSION-etcd-$ETCD_VERSION/bin"
METRICS_SERVER_VERSION="${WASMLET_METRICS_SERVER_VERSION:-v0.9.0}"
MS_BIN_DIR="$CACHE/metrics-server-$METRICS_SERVER_VERSION/bin"
# The Kubernetes commands a control plane needs, built from k8s.io/kubernetes by `build`.
KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl)
# The kubelet is only for the side-by-side runs (conformance.sh --agent kubelet, the benchmark):
# `build-kubelet` builds it into a cache of its own, so a CI run does not pay for it.
KUBELET_BIN_DIR="$CACHE/kubelet-$KUBE_VERSION/bin"

log() { printf 'control-plane: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=scripts/lib/kube-module.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/kube-module.sh"

# Builds etcd from its server module. The module's go.mod carries `replace` lines, so it cannot be
# `go install`ed; a wrapper module requires it and builds its root package (etcd's main).
build_etcd() {
  local work="$CACHE/src/etcd-$ETCD_VERSION"
  mkdir -p "$work"
  (
    cd "$work"
    [ -f go.mod ] || go mod init wasmlet.local/etcd-build >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    # A main package cannot be imported, so `go mod tidy` would drop it: -mod=mod resolves the
    # rest of its requirements at build time instead.
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$BIN_DIR.partial/etcd" go.etcd.io/etcd/server/v3
  )
}

# Builds the Kubernetes commands from the wrapper module (scripts/lib/kube-module.sh).
build_kubernetes() {
  local out=$1
  shift
  local commands=("$@")
  local work="$CACHE/src/kubernetes-$KUBE_VERSION"
  mkdir -p "$work"
  kube_write_gomod "$work" wasmlet.local/kubernetes-build scripts/control-plane.sh "$KUBE_VERSION"
  (
    cd "$work"
    # A blank import of each command keeps `go mod tidy` from dropping what the build needs.
    {
      echo "//go:build tools"
      echo
      echo "package tools"
      echo
      echo "import ("
      for cmd in "${KUBE_COMMANDS[@]}" kubelet; do echo "	_ \"k8s.io/kubernetes/cmd/$cmd\""; done
      echo ")"
    } >tools.go
    GOFLAGS=-mod=mod go mod tidy
    local pkgs=()
    for cmd in "${commands[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$cmd"); done
    local ldflags
    ldflags="$(kube_ldflags "$KUBE_VERSION")"
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/" "${pkgs[@]}"
  )
}

# Builds metrics-server: its module has no `replace` lines, so `go install` at a version works.
build_metrics_server() {
  local ldflags="-s -w -X sigs.k8s.io/metrics-server/pkg/version.gitVersion=$METRICS_SERVER_VERSION"
  mkdir -p "$CACHE/src"
  (
    cd "$CACHE/src"
    GOBIN="$MS_BIN_DIR.partial" CGO_ENABLED=0 go install -trimpath -ldflags "$ldflags" \
      "sigs.k8s.io/metrics-server/cmd/metrics-server@$METRICS_SERVER_VERSION"
  )
}

# Prints the directory holding metrics-server, building it first unless it is cached.
ensure_metrics_server() {
  if [ -x "$MS_BIN_DIR/metrics-server" ]; then
    log "cached: $MS_BIN_DIR"
  else
    rm -rf "$MS_BIN_DIR.partial"
    mkdir -p "$MS_BIN_DIR.partial"
    log "building metrics-server $METRICS_SERVER_VERSION"
    build_metrics_server
    rm -rf "$MS_BIN_DIR"
    mv "$MS_BIN_DIR.partial" "$MS_BIN_DIR"
    log "built into $MS_BIN_DIR"
  fi
  echo "$MS_BIN_DIR"
}

# Prints the directories holding the binaries `start` links into DIR/bin: the Kubernetes ones
# and metrics-server (a cache of its own, keyed by its version).
cmd_build() {
  command -v go >/dev/null || die "go not found: this machine kind provides Go"
  build_control_plane
  ensure_metrics_server
  if [ -x "$KUBELET_BIN_DIR/kubelet" ]; then echo "$KUBELET_BIN_DIR"; fi
}

# Prints the directory holding the kubelet, building it first unless it is cached. A control-plane
# cache of the layout that built the kubelet with the rest lends its copy.
cmd_build_kubelet() {
  command -v go >/dev/null || die "go not found: this machine kind provides Go"
  if [ -x "$KUBELET_BIN_DIR/kubelet" ]; then
    log "cached: $KUBELET_BIN_DIR"
  else
    rm -rf "$KUBELET_BIN_DIR.partial"
    mkdir -p "$KUBELET_BIN_DIR.partial"
    if [ -x "$BIN_DIR/kubelet" ]; then
      cp "$BIN_DIR/kubelet" "$KUBELET_BIN_DIR.partial/kubelet"
    else
      log "building the kubelet $KUBE_VERSION"
      build_kubernetes "$KUBELET_BIN_DIR.partial" kubelet
    fi
    rm -rf "$KUBELET_BIN_DIR"
    mv "$KUBELET_BIN_DIR.partial" "$KUBELET_BIN_DIR"
    log "built into $KUBELET_BIN_DIR"
  fi
  echo "$KUBELET_BIN_DIR"
}

build_control_plane() {
  if [ -x "$BIN_DIR/kube-apiserver" ] && [ -x "$BIN_DIR/etcd" ] && [ -x "$BIN_DIR/kubectl" ]; then
    log "cached: $BIN_DIR"
    echo "$BIN_DIR"
    return
  fi
  rm -rf "$BIN_DIR.partial"
  mkdir -p "$BIN_DIR.partial"
  log "building etcd $ETCD_VERSION"
  build_etcd
  log "building Kubernetes $KUBE_VERSION: ${KUBE_COMMANDS[*]}"
  build_kubernetes "$BIN_DIR.partial" "${KUBE_COMMANDS[@]}"
  rm -rf "$BIN_DIR"
  mv "$BIN_DIR.partial" "$BIN_DIR"
  log "built into $BIN_DIR"
  echo "$BIN_DIR"
}

# ------------------------------------------------------------------------------------- start/stop
# The components `start` runs, in start order; `stop` goes the other way. Each is a binary of
# DIR/bin, logs to DIR/logs/NAME.log and has its PID in DIR/pids/NAME.pid.
COMPONENTS=(etcd kube-apiserver kube-proxy kube-controller-manager kube-scheduler metrics-server)

ETCD_PORT="${WASMLET_CP_ETCD_PORT:-2379}"
ETCD_PEER_PORT="${WASMLET_CP_ETCD_PEER_PORT:-2380}"
APISERVER_PORT="${WASMLET_CP_APISERVER_PORT:-6443}"
CONTROLLER_MANAGER_PORT="${WASMLET_CP_CONTROLLER_MANAGER_PORT:-10257}"
SCHEDULER_PORT="${WASMLET_CP_SCHEDULER_PORT:-10259}"
METRICS_SERVER_PORT="${WASMLET_CP_METRICS_SERVER_PORT:-4443}"
PROXY_METRICS_PORT="${WASMLET_CP_PROXY_METRICS_PORT:-10249}"
PROXY_HEALTHZ_PORT="${WASMLET_CP_PROXY_HEALTHZ_PORT:-10256}"
SERVICE_CIDR="${WASMLET_SERVICE_CIDR:-10.96.0.0/16}"
POD_SUBNET="${WASMLET_POD_SUBNET:-10.88.99.0/24}"
TIMEOUT="${WASMLET_CP_TIMEOUT:-120}"
STOP_GRACE="${WASMLET_CP_STOP_GRACE:-15}"
SA_ISSUER="https://kubernetes.default.svc.cluster.local"

# Set by the sub-commands: the state directory (absolute, as it appears in every process's argv).
DIR=""

# ------------------------------------------------------------------------------ helpers: processes
# A process is a component of DIR if it is alive (zombies are not: PID 1 of a sandbox may reap
# late), runs the binary the component is named after and names a file of DIR in its argv. This
# keeps `stop` from killing whatever reused a stale PID.
is_ours() {
  local pid=$1 name=$2 state exe
  case "$pid" in '' | *[!0-9]*) return 1 ;; esac
  state=$(sed -n 's/.*) \(.\).*/\1/p' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  exe=${exe% (deleted)}
  [ "${exe##*/}" = "$name" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$DIR/"
}

# The PID of a running component of DIR, or nothing.
running_pid() {
  local name=$1 pid
  pid=$(cat "$DIR/pids/$name.pid" 2>/dev/null) || return 1
  is_ours "$pid" "$name" && echo "$pid"
}

# PIDs of the live kube-proxy processes on this host, whoever started them.
other_kube_proxies() {
  local d exe state
  for d in /proc/[0-9]*; do
    exe=$(readlink "$d/exe" 2>/dev/null) || continue
    exe=${exe% (deleted)}
    [ "${exe##*/}" = kube-proxy ] || continue
    state=$(sed -n 's/.*) \(.\).*/\1/p' "$d/stat" 2>/dev/null)
    [ -n "$state" ] && [ "$state" != Z ] && printf '%s ' "${d#/proc/}"
  done
  return 0
}

# Starts DIR/bin/NAME ARGS... in its own session (so a Ctrl-C in the caller's terminal does not
# reach it), appending to its log. The wrapper shell writes its own PID, then execs the binary,
# so the PID file holds the component even if setsid had to fork.
launch() {
  local name=$1
  shift
  local pidfile="$DIR/pids/$name.pid" logfile="$DIR/logs/$name.log"
  printf '==== %s control-plane.sh: starting %s\n' "$(date -Is)" "$name" >>"$logfile"
  rm -f "$pidfile" "$pidfile.new"
  # fd 9 is DIR's lock: the component must not keep holding it.
  # shellcheck disable=SC2016 # $$ and $1 belong to the wrapper shell
  setsid bash -c 'echo $$ >"$1.new" && mv "$1.new" "$1" && shift && exec "$@"' launch \
    "$pidfile" "$DIR/bin/$name" "$@" >>"$logfile" 2>&1 </dev/null 9>&- &
  local _
  for _ in $(seq 50); do
    [ -s "$pidfile" ] && break
    sleep 0.1
  done
  [ -s "$pidfile" ] || fail "$name" "did not start"
  log "started $name (pid $(cat "$pidfile"), log $logfile)"
}

# Stops the component whose PID is in DIR/pids/NAME.pid: TERM, STOP_GRACE seconds, then KILL.
stop_component() {
  local name=$1 pid _
  local pidfile="$DIR/pids/$name.pid"
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if ! is_ours "$pid" "$name"; then
    log "$name: not running (stale pid file, pid ${pid:-none})"
    rm -f "$pidfile"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq $((STOP_GRACE * 10))); do
    is_ours "$pid" "$name" || break
    sleep 0.1
  done
  if is_ours "$pid" "$name"; then
    log "$name (pid $pid) ignored SIGTERM for ${STOP_GRACE}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      is_ours "$pid" "$name" || break
      sleep 0.1
    done
  fi
  is_ours "$pid" "$name" && die "$name (pid $pid) survived SIGKILL"
  rm -f "$pidfile"
  log "stopped $name (pid $pid)"
}

# Reports a component that died or never became ready, with the end of its log, and exits.
fail() {
  local name=$1 why=$2 logfile="$DIR/logs/$1.log"
  log "ERROR: $name $why"
  if [ -s "$logfile" ]; then
    log "last lines of $logfile (this start):"
    tac "$logfile" | sed '/^==== /q' | tac | tail -n 30 | sed 's/^/    /' >&2
  fi
  log "what is running stays up; stop it with: $0 stop $DIR"
  exit 1
}

# Runs CHECK... until it succeeds, for at most TIMEOUT seconds, while component NAME is alive.
wait_for() {
  local name=$1 what=$2
  shift 2
  local t0=$SECONDS
  until "$@" >/dev/null 2>&1; do
    running_pid "$name" >/dev/null || fail "$name" "exited while waiting for $what"
    [ $((SECONDS - t0)) -lt "$TIMEOUT" ] || fail "$name" "not ready after ${TIMEOUT}s: $what"
    sleep 0.5
  done
  log "ready: $what ($((SECONDS - t0))s)"
}

# A plain HTTP GET on loopback without curl: prints the body, fails unless the status is 200.
http_get() {
  local resp
  # shellcheck disable=SC2016 # expanded by the inner shell
  resp=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/$1/$2" &&
    printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$3" "$1" >&3 && cat <&3' _ "$1" "$2" "$3") || return 1
  case "${resp%%$'\r'*}" in "HTTP/1."?" 200"*) ;; *) return 1 ;; esac
  printf '%s\n' "${resp#*$'\r\n\r\n'}"
}

# The same over TLS, for the self-signed serving certs of the controller-manager and scheduler.
https_get() {
  local resp
  resp=$(printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$3" "$1" |
    timeout 5 openssl s_client -quiet -connect "$1:$2" 2>/dev/null) || return 1
  case "${resp%%$'\r'*}" in "HTTP/1."?" 200"*) ;; *) return 1 ;; esac
  printf '%s\n' "${resp#*$'\r\n\r\n'}"
}

# Fails if something listens on PORT: a component would die on it, or, worse, a foreign etcd or
# apiserver would answer our readiness checks.
check_port_free() {
  local name=$1 port=$2 var=$3 holder
  command -v ss >/dev/null || return 0
  holder=$(ss -Htlnp "sport = :$port" 2>/dev/null) || return 0
  [ -z "$holder" ] || die "$name: port $port is in use (set $var to another port): $holder"
}

admin_kubectl() {
  "$DIR/bin/kubectl" --kubeconfig "$DIR/admin.kubeconfig" --request-timeout=5s "$@"
}

etcd_healthy() { http_get 127.0.0.1 "$ETCD_PORT" /health | grep -q '"health":"true"'; }
# At least one full iptables sync, from kube-proxy's own metrics (its /livez is 200 before).
proxy_synced() {
  http_get 127.0.0.1 "$PROXY_METRICS_PORT" /metrics |
    awk '/^kubeproxy_sync_proxy_rules_duration_seconds_count/ && $NF > 0 {ok = 1} END {exit !ok}'
}

# ----------------------------------------------------------------------- helpers: addresses
# The address of the interface holding the default route, unless WASMLET_NODE_IP says otherwise.
detect_node_ip() {
  if [ -n "${WASMLET_NODE_IP:-}" ]; then
    echo "$WASMLET_NODE_IP"
    return
  fi
  local dev
  dev=$(ip -4 route show default 2>/dev/null |
    awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
  [ -n "$dev" ] || return 1
  ip -4 -o addr show dev "$dev" scope global | awk '{split($4, a, "/"); print a[1]; exit}'
}

# The first usable address of an IPv4 CIDR: the apiserver's ClusterIP of Service `kubernetes`.
first_ip() {
  local cidr=$1 a b c d
  IFS=./ read -r a b c d _ <<<"$cidr"
  local bits=${cidr#*/}
  local n=$(((a << 24) | (b << 16) | (c << 8) | d))
  local mask=$(((0xffffffff << (32 - bits)) & 0xffffffff))
  n=$(((n & mask) + 1))
  echo "$((n >> 24 & 255)).$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"
}

is_ipv4_cidr() { [[ $1 =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$ ]]; }
is_ipv4() { [[ $1 =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]]; }

# ---------------------------------------------------------------------- helpers: certificates
# openssl only. All certificates are signed by DIR's CA and valid for ten years. A certificate is
# reused while its key exists, the CA still verifies it, it is valid for another day and its
# spec (subject, usage, SANs, kept beside it in NAME.spec) is unchanged, so a restart keeps
# every identity and a new node name or node IP reissues only what names them.
PKI=""

openssl_cnf() {
  printf '[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n'
}

# ensure_ca NAME CN: a self-signed CA in PKI/NAME.{crt,key}.
ensure_ca() {
  local name=$1 cn=$2
  if [ -s "$PKI/$name.key" ] && [ -s "$PKI/$name.crt" ] &&
    openssl x509 -in "$PKI/$name.crt" -noout -checkend 86400 >/dev/null 2>&1; then
    return
  fi
  log "generating the CA $name ($cn) in $PKI"
  openssl genrsa -out "$PKI/$name.key" 2048 2>/dev/null
  chmod 600 "$PKI/$name.key"
  {
    openssl_cnf
    printf 'CN = %s\n[v3_ca]\n' "$cn"
    printf 'basicConstraints = critical, CA:TRUE\n'
    printf 'keyUsage = critical, digitalSignature, keyEncipherment, keyCertSign\n'
    printf 'subjectKeyIdentifier = hash\n'
  } >"$PKI/$name.cnf"
  openssl req -x509 -new -key "$PKI/$name.key" -config "$PKI/$name.cnf" -extensions v3_ca \
    -sha256 -days 3650 -out "$PKI/$name.crt"
  rm -f "$PKI/$name.cnf"
}

# ensure_cert NAME SUBJECT USAGE [SAN [CA]]: USAGE is serverAuth or clientAuth; SUBJECT as for
# `openssl req -subj` (/O=group/CN=user); CA defaults to the cluster CA `ca`.
ensure_cert() {
  local name=$1 subject=$2 usage=$3 san=${4:-} ca=${5:-ca}
  local key="$PKI/$name.key" crt="$PKI/$name.crt" spec="subject=$2 usage=$3 san=${4:-} ca=${5:-ca}"
  if [ -s "$key" ] && [ -s "$crt" ] && [ "$(cat "$PKI/$name.spec" 2>/dev/null)" = "$spec" ] &&
    openssl verify -CAfile "$PKI/$ca.crt" "$crt" >/dev/null 2>&1 &&
    openssl x509 -in "$crt" -noout -checkend 86400 >/dev/null 2>&1; then
    return
  fi
  log "issuing $name: $subject${san:+ ($san)}"
  openssl genrsa -out "$key" 2048 2>/dev/null
  chmod 600 "$key"
  openssl_cnf >"$PKI/$name.cnf"
  {
    printf '[v3]\nbasicConstraints = critical, CA:FALSE\n'
    printf 'keyUsage = critical, digitalSignature, keyEncipherment\n'
    printf 'extendedKeyUsage = %s\n' "$usage"
    printf 'subjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n'
    [ -z "$san" ] || printf 'subjectAltName = %s\n' "$san"
  } >"$PKI/$name.ext"
  openssl req -new -key "$key" -subj "$subject" -config "$PKI/$name.cnf" -out "$PKI/$name.csr"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -sha256 -days 3650 \
    -extfile "$PKI/$name.ext" -extensions v3 -out "$crt" 2>/dev/null
  rm -f "$PKI/$name.cnf" "$PKI/$name.ext" "$PKI/$name.csr"
  echo "$spec" >"$PKI/$name.spec"
}

ensure_sa_keys() {
  [ -s "$PKI/sa.key" ] && [ -s "$PKI/sa.pub" ] && return
  log "generating the service-account signing key pair"
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  chmod 600 "$PKI/sa.key"
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
}

# write_kubeconfig FILE CERT_NAME USER: embedded CA and client cert, server on loopback.
write_kubeconfig() {
  local file=$1 cert=$2 user=$3
  local b64="base64 -w0" mask
  mask=$(umask)
  umask 077
  cat >"$file.new" <<KUBECONFIG
# Written by wasmlet scripts/control-plane.sh start; rewritten on every start.
apiVersion: v1
kind: Config
clusters:
- name: wasmlet
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $($b64 "$PKI/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $($b64 "$PKI/$cert.crt")
    client-key-data: $($b64 "$PKI/$cert.key")
contexts:
- name: $user@wasmlet
  context:
    cluster: wasmlet
    user: $user
current-context: $user@wasmlet
KUBECONFIG
  umask "$mask"
  mv "$file.new" "$file"
}

# ------------------------------------------------------------------------------- sub-commands
set_dir() {
  [ -n "${1:-}" ] || die "usage: $0 ${FUNCNAME[1]#cmd_} DIR"
  DIR=$(readlink -m "$1")
  PKI="$DIR/pki"
}

# Serializes start and stop of one DIR.
lock_dir() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock -w 300 9 || die "timed out waiting for the lock $DIR/.lock"
}

require_root() {
  [ "$(id -u)" = 0 ] || die "$1 must run as root (kube-proxy programs iptables)"
}

# kube-proxy's iptables mode shells out to iptables and conntrack.
ensure_packages() {
  local p missing=()
  for p in iptables conntrack; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  log "installing ${missing[*]} for kube-proxy"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}" >&2
}

# Service traffic between two pods on the one CNI bridge is switched, not routed, so the
# replies reach iptables (and kube-proxy's DNAT is undone) only with br_netfilter. Best effort:
# a sandbox may not allow loading modules.
enable_bridge_netfilter() {
  [ "$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null)" = 1 ] && return
  modprobe br_netfilter 2>/dev/null || true
  if ! sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null; then
    log "warning: cannot enable net.bridge.bridge-nf-call-iptables; pod-to-Service traffic to a pod on the same bridge will not work"
  fi
}

cmd_status() {
  set_dir "${1:-}"
  local name pid all=0
  for name in "${COMPONENTS[@]}"; do
    if pid=$(running_pid "$name"); then
      printf '%-24s running (pid %s)\n' "$name" "$pid"
    else
      printf '%-24s stopped\n' "$name"
      all=1
    fi
  done
  return $all
}

cmd_start() {
  set_dir "${1:-}"
  require_root start
  local node=${2:-$(tr '[:upper:]' '[:lower:]' </proc/sys/kernel/hostname)}
  [[ $node =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] ||
    die "node name '$node' is not a lower-case DNS name; pass one: $0 start DIR NODE_NAME"
  is_ipv4_cidr "$SERVICE_CIDR" || die "WASMLET_SERVICE_CIDR=$SERVICE_CIDR is not an IPv4 CIDR"
  is_ipv4_cidr "$POD_SUBNET" || die "WASMLET_POD_SUBNET=$POD_SUBNET is not an IPv4 CIDR"
  local node_ip
  node_ip=$(detect_node_ip) || true
  is_ipv4 "$node_ip" ||
    die "cannot find the node IP (no IPv4 default route?); set WASMLET_NODE_IP to this machine's address"

  lock_dir
  mkdir -p "$DIR"/{bin,logs,pids}
  mkdir -p "$PKI" "$DIR/etcd"
  chmod 700 "$PKI" "$DIR/etcd"
  local bin_dirs bin_dir f
  bin_dirs=$(cmd_build)
  while IFS= read -r bin_dir; do
    for f in "$bin_dir"/*; do ln -sfn "$f" "$DIR/bin/${f##*/}"; done
  done <<<"$bin_dirs"

  # Idempotence: what runs stays; a cluster of another node is not silently renamed.
  local name pid running=() previous_node
  for name in "${COMPONENTS[@]}"; do
    pid=$(running_pid "$name") && running+=("$name (pid $pid)")
  done
  previous_node=$(cat "$DIR/node-name" 2>/dev/null || true)
  if [ ${#running[@]} -gt 0 ] && [ -n "$previous_node" ] && [ "$previous_node" != "$node" ]; then
    die "$DIR runs the control plane of node $previous_node; stop it first: $0 stop $DIR"
  fi
  if [ ${#running[@]} -eq ${#COMPONENTS[@]} ]; then
    log "already running in $DIR for node $node: ${running[*]}"
    print_kubeconfigs
    return 0
  fi

  ensure_packages
  enable_bridge_netfilter

  # Identities.
  local service_ip
  service_ip=$(first_ip "$SERVICE_CIDR")
  ensure_ca ca wasmlet-ca
  # The aggregation layer's own CA, as kubeadm has it: the apiserver trusts X-Remote-User
  # headers only from front-proxy-client, and no cluster client cert can pose as it. Without
  # it the controller-manager and scheduler log a missing requestheader CA bundle forever.
  ensure_ca front-proxy-ca wasmlet-front-proxy-ca
  ensure_sa_keys
  ensure_cert apiserver "/CN=kube-apiserver" serverAuth \
    "IP:127.0.0.1,IP:$node_ip,IP:$service_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  ensure_cert admin "/O=system:masters/CN=admin" clientAuth
  ensure_cert node "/O=system:nodes/CN=system:node:$node" clientAuth
  ensure_cert controller-manager "/CN=system:kube-controller-manager" clientAuth
  ensure_cert scheduler "/CN=system:kube-scheduler" clientAuth
  ensure_cert kube-proxy "/CN=system:kube-proxy" clientAuth
  ensure_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
  ensure_cert front-proxy-client "/CN=front-proxy-client" clientAuth "" front-proxy-ca
  ensure_cert metrics-server "/CN=system:metrics-server" clientAuth
  # The aggregator checks the name of the Service it dials through (aggregator routing).
  ensure_cert metrics-server-serving "/CN=metrics-server" serverAuth \
    "IP:$node_ip,DNS:metrics-server.kube-system.svc"
  write_kubeconfig "$DIR/admin.kubeconfig" admin admin
  write_kubeconfig "$DIR/node.kubeconfig" node "system:node:$node"
  write_kubeconfig "$DIR/controller-manager.kubeconfig" controller-manager system:kube-controller-manager
  write_kubeconfig "$DIR/scheduler.kubeconfig" scheduler system:kube-scheduler
  write_kubeconfig "$DIR/kube-proxy.kubeconfig" kube-proxy system:kube-proxy
  write_kubeconfig "$DIR/metrics-server.kubeconfig" metrics-server system:metrics-server
  echo "$node" >"$DIR/node-name"

  # etcd, on loopback only.
  if ! running_pid etcd >/dev/null; then
    check_port_free etcd "$ETCD_PORT" WASMLET_CP_ETCD_PORT
    check_port_free etcd "$ETCD_PEER_PORT" WASMLET_CP_ETCD_PEER_PORT
    launch etcd --name wasmlet --data-dir "$DIR/etcd" \
      --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
      --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
      --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
      --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
      --initial-cluster "wasmlet=http://127.0.0.1:$ETCD_PEER_PORT" \
      --unsafe-no-fsync
  fi
  wait_for etcd "etcd health on 127.0.0.1:$ETCD_PORT" etcd_healthy

  if ! running_pid kube-apiserver >/dev/null; then
    check_port_free kube-apiserver "$APISERVER_PORT" WASMLET_CP_APISERVER_PORT
    launch kube-apiserver \
      --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
      --bind-address 0.0.0.0 --secure-port "$APISERVER_PORT" --advertise-address "$node_ip" \
      --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
      --client-ca-file "$PKI/ca.crt" \
      --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
      --service-account-issuer "$SA_ISSUER" --api-audiences "$SA_ISSUER" \
      --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
      --service-cluster-ip-range "$SERVICE_CIDR" \
      --allow-privileged=true \
      --kubelet-preferred-address-types=InternalIP,Hostname \
      --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
      --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
      --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" \
      --requestheader-allowed-names front-proxy-client \
      --requestheader-username-headers X-Remote-User \
      --requestheader-group-headers X-Remote-Group \
      --requestheader-extra-headers-prefix X-Remote-Extra- \
      --proxy-client-cert-file "$PKI/front-proxy-client.crt" \
      --proxy-client-key-file "$PKI/front-proxy-client.key" \
      --enable-aggregator-routing=true
  fi
  wait_for kube-apiserver "kube-apiserver /readyz on :$APISERVER_PORT" admin_kubectl get --raw /readyz

  # kube-proxy first: it waits up to 30s for its Node to register before its first sync, and
  # that wait overlaps the controller-manager's start.
  if ! running_pid kube-proxy >/dev/null; then
    check_port_free kube-proxy "$PROXY_METRICS_PORT" WASMLET_CP_PROXY_METRICS_PORT
    check_port_free kube-proxy "$PROXY_HEALTHZ_PORT" WASMLET_CP_PROXY_HEALTHZ_PORT
    # The conntrack flags at 0 leave the host's conntrack sysctls as they are.
    launch kube-proxy --kubeconfig "$DIR/kube-proxy.kubeconfig" \
      --hostname-override "$node" --bind-address "$node_ip" \
      --proxy-mode iptables --cluster-cidr "$POD_SUBNET" \
      --metrics-bind-address "127.0.0.1:$PROXY_METRICS_PORT" \
      --healthz-bind-address "127.0.0.1:$PROXY_HEALTHZ_PORT" \
      --conntrack-max-per-core 0 --conntrack-tcp-timeout-established 0 \
      --conntrack-tcp-timeout-close-wait 0
  fi
  if ! running_pid kube-controller-manager >/dev/null; then
    check_port_free kube-controller-manager "$CONTROLLER_MANAGER_PORT" WASMLET_CP_CONTROLLER_MANAGER_PORT
    launch kube-controller-manager \
      --kubeconfig "$DIR/controller-manager.kubeconfig" \
      --authentication-kubeconfig "$DIR/controller-manager.kubeconfig" \
      --authorization-kubeconfig "$DIR/controller-manager.kubeconfig" \
      --bind-address 127.0.0.1 --secure-port "$CONTROLLER_MANAGER_PORT" \
      --leader-elect=false --controllers='*' \
      --use-service-account-credentials=true \
      --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
      --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
      --service-cluster-ip-range "$SERVICE_CIDR"
  fi
  if ! running_pid kube-scheduler >/dev/null; then
    check_port_free kube-scheduler "$SCHEDULER_PORT" WASMLET_CP_SCHEDULER_PORT
    launch kube-scheduler \
      --kubeconfig "$DIR/scheduler.kubeconfig" \
      --authentication-kubeconfig "$DIR/scheduler.kubeconfig" \
      --authorization-kubeconfig "$DIR/scheduler.kubeconfig" \
      --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" \
      --leader-elect=false
  fi

  wait_for kube-apiserver "namespace kube-node-lease" admin_kubectl get namespace kube-node-lease
  wait_for kube-controller-manager "kube-controller-manager /healthz on 127.0.0.1:$CONTROLLER_MANAGER_PORT" \
    https_get 127.0.0.1 "$CONTROLLER_MANAGER_PORT" /healthz
  wait_for kube-controller-manager "ServiceAccount default/default" \
    admin_kubectl -n default get serviceaccount default
  wait_for kube-scheduler "kube-scheduler /healthz on 127.0.0.1:$SCHEDULER_PORT" \
    https_get 127.0.0.1 "$SCHEDULER_PORT" /healthz
  wait_for kube-proxy "kube-proxy's first iptables sync" proxy_synced

  start_metrics_server "$node_ip"

  log "control plane of node $node running in $DIR (apiserver https://$node_ip:$APISERVER_PORT)"
  print_kubeconfigs
}

# metrics-server as its manifests set it up (RBAC, the APIService), but on the host: its identity
# is the client cert system:metrics-server rather than a ServiceAccount, and the Service that the
# APIService names has no selector; its Endpoints (mirrored to an EndpointSlice by the
# controller-manager) point at the node IP, which kube-apiserver dials directly
# (--enable-aggregator-routing). It scrapes each node's kubelet port from the Node's status; the
# kubelets serve self-signed certificates, hence --kubelet-insecure-tls.
start_metrics_server() {
  local node_ip=$1
  # First its RBAC: metrics-server exits at once if it cannot read the requestheader CA.
  # kubectl's warnings (Endpoints are deprecated) and errors go to metrics-server's log.
  metrics_server_objects "$node_ip" |
    admin_kubectl apply -f - >/dev/null 2>>"$DIR/logs/metrics-server.log" ||
    fail metrics-server "could not register its RBAC, Service, Endpoints and APIService"
  wait_for kube-apiserver "RBAC of system:metrics-server" admin_kubectl auth can-i get \
    configmaps/extension-apiserver-authentication -n kube-system --as system:metrics-server
  if ! running_pid metrics-server >/dev/null; then
    check_port_free metrics-server "$METRICS_SERVER_PORT" WASMLET_CP_METRICS_SERVER_PORT
    launch metrics-server \
      --kubeconfig "$DIR/metrics-server.kubeconfig" \
      --authentication-kubeconfig "$DIR/metrics-server.kubeconfig" \
      --authorization-kubeconfig "$DIR/metrics-server.kubeconfig" \
      --bind-address "$node_ip" --secure-port "$METRICS_SERVER_PORT" \
      --tls-cert-file "$PKI/metrics-server-serving.crt" \
      --tls-private-key-file "$PKI/metrics-server-serving.key" \
      --kubelet-insecure-tls \
      --kubelet-preferred-address-types=InternalIP \
      --kubelet-use-node-status-port \
      --metric-resolution=15s
  fi
  wait_for metrics-server "APIService v1beta1.metrics.k8s.io Available" metrics_api_available
}

metrics_api_available() {
  [ "$(admin_kubectl get apiservice v1beta1.metrics.k8s.io \
    -o jsonpath='{.status.conditions[?(@.type=="Available")].status}')" = True ]
}

# The objects of metrics-server's manifests that it needs off-cluster, as YAML.
metrics_server_objects() {
  local node_ip=$1
  cat <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:aggregated-metrics-reader
  labels:
    k8s-app: metrics-server
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-view: "true"
rules:
- apiGroups: [metrics.k8s.io]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:metrics-server
  labels: {k8s-app: metrics-server}
rules:
- apiGroups: [""]
  resources: [nodes/metrics]
  verbs: [get]
- apiGroups: [""]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:metrics-server
  labels: {k8s-app: metrics-server}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:metrics-server}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:metrics-server}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: metrics-server:system:auth-delegator
  labels: {k8s-app: metrics-server}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:metrics-server}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: metrics-server-auth-reader
  namespace: kube-system
  labels: {k8s-app: metrics-server}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:metrics-server}
---
apiVersion: v1
kind: Service
metadata:
  name: metrics-server
  namespace: kube-system
  labels: {k8s-app: metrics-server}
spec:
  ports:
  - {name: https, port: 443, protocol: TCP, targetPort: $METRICS_SERVER_PORT}
---
apiVersion: v1
kind: Endpoints
metadata:
  name: metrics-server
  namespace: kube-system
  labels: {k8s-app: metrics-server}
subsets:
- addresses: [{ip: "$node_ip"}]
  ports: [{name: https, port: $METRICS_SERVER_PORT, protocol: TCP}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
  labels: {k8s-app: metrics-server}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {name: metrics-server, namespace: kube-system, port: 443}
  caBundle: $(base64 -w0 "$PKI/ca.crt")
YAML
}

# The last lines on stdout are for the caller: `eval "$(scripts/control-plane.sh start DIR)"`.
print_kubeconfigs() {
  log "kubectl: $DIR/bin/kubectl --kubeconfig $DIR/admin.kubeconfig get nodes"
  log "wasmlet: wasmlet run ... --kubeconfig $DIR/node.kubeconfig --hostname-override $(cat "$DIR/node-name" 2>/dev/null)"
  printf 'KUBECONFIG=%q\n' "$DIR/admin.kubeconfig"
  printf 'WASMLET_KUBECONFIG=%q\n' "$DIR/node.kubeconfig"
}

# Another node identity for the running cluster of DIR (tests join several wasmlets to one
# control plane): issues pki/nodes/NODE.{crt,key} (CN=system:node:NODE, O=system:nodes) if
# needed, writes DIR/nodes/NODE.kubeconfig and prints its path.
cmd_node_kubeconfig() {
  set_dir "${1:-}"
  local node=${2:-}
  [[ $node =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] ||
    die "usage: $0 node-kubeconfig DIR NODE_NAME (a lower-case DNS name)"
  [ -s "$PKI/ca.key" ] || die "no cluster CA in $PKI: run \`$0 start $DIR\` first"
  lock_dir
  mkdir -p "$PKI/nodes" "$DIR/nodes"
  ensure_cert "nodes/$node" "/O=system:nodes/CN=system:node:$node" clientAuth
  write_kubeconfig "$DIR/nodes/$node.kubeconfig" "nodes/$node" "system:node:$node"
  echo "$DIR/nodes/$node.kubeconfig"
}

cmd_stop() {
  set_dir "${1:-}"
  require_root stop
  [ -d "$DIR/pids" ] || {
    log "nothing to stop in $DIR"
    return 0
  }
  lock_dir
  # wasmlet first (scripts/run-cluster.sh records it here too), then the reverse start order,
  # then any other PID file a caller left.
  local name f order=(wasmlet metrics-server kube-scheduler kube-controller-manager kube-proxy kube-apiserver etcd)
  local had_proxy=0
  [ -f "$DIR/pids/kube-proxy.pid" ] && had_proxy=1
  for name in "${order[@]}"; do stop_component "$name"; done
  for f in "$DIR"/pids/*.pid; do
    [ -e "$f" ] || continue
    name=${f##*/}
    stop_component "${name%.pid}"
  done
  # kube-proxy's rules are host-wide, not DIR's: clean up only after a kube-proxy of DIR, and
  # not under the feet of another one (a second cluster on this host).
  if [ "$had_proxy" = 1 ] && [ -x "$DIR/bin/kube-proxy" ]; then
    local other
    other=$(other_kube_proxies)
    if [ -n "$other" ]; then
      log "not running kube-proxy --cleanup: the kube-proxy of pid $other programs this host's rules"
    elif "$DIR/bin/kube-proxy" --cleanup >>"$DIR/logs/kube-proxy-cleanup.log" 2>&1 </dev/null 9>&-; then
      log "removed kube-proxy's iptables rules (kube-proxy --cleanup)"
    else
      log "warning: kube-proxy --cleanup reported errors; see $DIR/logs/kube-proxy-cleanup.log"
    fi
  fi
  log "stopped; certificates, kubeconfigs and etcd data stay in $DIR: \`$0 start $DIR\` resumes this cluster, \`rm -rf $DIR\` starts afresh"
}

case "${1:-}" in
  build) cmd_build ;;
  build-kubelet) cmd_build_kubelet ;;
  start) cmd_start "${2:-}" "${3:-}" ;;
  stop) cmd_stop "${2:-}" ;;
  status) cmd_status "${2:-}" ;;
  node-kubeconfig) cmd_node_kubeconfig "${2:-}" "${3:-}" ;;
  *) die "usage: $0 build | build-kubelet | start DIR [NODE_NAME] | stop DIR | status DIR | node-kubeconfig DIR NODE_NAME" ;;
esac
