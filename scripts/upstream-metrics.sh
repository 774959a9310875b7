#!/usr/bin/env bash
# upstream-metrics.sh - the metric families the upstream kubelet registers, from its own registry.
#
#   scripts/upstream-metrics.sh         print one JSON object a line on stdout:
#                                       {"endpoint": "/metrics", "name": "kubelet_running_pods",
#                                        "type": "gauge", "help": "[ALPHA] ...", "labels": [],
#                                        "buckets": []}
#                                       (full exposed name, type counter|gauge|histogram|summary,
#                                       label names sorted, histogram upper bounds without +Inf)
#
# tools/upstream-metrics/main.go registers what the kubelet registers (see its header for which
# endpoint lists what) and walks the registries. It is built against k8s.io/kubernetes at the
# control plane's version (WASMLET_KUBE_VERSION, default v1.35.4) with a wrapper module generated
# by scripts/lib/kube-module.sh, as for scripts/control-plane.sh: `replace` lines pin every staging
# module k8s.io/X to its published v0.X.Y. The binary is cached outside the checkout
# (WASMLET_UPSTREAM_METRICS_CACHE, default /var/cache/wasmlet/upstream-metrics) by version and by
# the program's hash, so only the first run builds (a minute or two with a warm Go cache); later
# runs take well under a second. Logs go to stderr. Needs Go (this machine kind provides it).
set -euo pipefail

KUBE_VERSION="${WASMLET_KUBE_VERSION:-v1.35.4}"
CACHE="${WASMLET_UPSTREAM_METRICS_CACHE:-/var/cache/wasmlet/upstream-metrics}"
# The control plane's wrapper module: its go.sum seeds ours, so the build asks no checksum server.
CP_WORK="${WASMLET_CP_CACHE:-/var/cache/wasmlet/control-plane}/src/kubernetes-$KUBE_VERSION"
SOURCE_DIR="$(cd "$(dirname "$0")/.." && pwd)/tools/upstream-metrics"
SOURCE="$SOURCE_DIR/main.go"
OUT_DIR="$CACHE/kubernetes-$KUBE_VERSION"
BIN="$OUT_DIR/upstream-metrics"

log() { printf 'upstream-metrics: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=scripts/lib/kube-module.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/kube-module.sh"

# Writes the wrapper module into $1 (scripts/lib/kube-module.sh) with main.go beside it.
write_module() {
  local work=$1
  kube_write_gomod "$work" wasmlet.local/upstream-metrics scripts/upstream-metrics.sh "$KUBE_VERSION"
  rm -f "$work"/*.go
  cp "$SOURCE_DIR"/*.go "$work/"
  if [ -f "$CP_WORK/go.sum" ] && [ ! -f "$work/go.sum" ]; then cp "$CP_WORK/go.sum" "$work/go.sum"; fi
}

build() {
  local work="$CACHE/src/kubernetes-$KUBE_VERSION"
  mkdir -p "$work" "$OUT_DIR"
  write_module "$work"
  # The registry hides metrics deprecated long enough before its version: the version must be the
  # release's, as the kubelet binary of control-plane.sh is stamped.
  local ldflags
  ldflags="$(kube_ldflags "$KUBE_VERSION")"
  (
    cd "$work"
    GOFLAGS=-mod=mod go mod tidy >&2
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$BIN.partial" . >&2
  )
  mv "$BIN.partial" "$BIN"
  source_hash >"$BIN.source-sha256"
}

# One hash over the program's Go files, so a change to any of them rebuilds it.
source_hash() {
  (cd "$SOURCE_DIR" && sha256sum ./*.go) | sha256sum | cut -d' ' -f1
}

main() {
  [ -f "$SOURCE" ] || die "$SOURCE not found"
  local want
  want="$(source_hash)"
  if [ -x "$BIN" ] && [ "$(cat "$BIN.source-sha256" 2>/dev/null)" = "$want" ]; then
    log "cached: $BIN"
  else
    command -v go >/dev/null || die "go not found: this machine kind provides Go"
    log "building $BIN against k8s.io/kubernetes $KUBE_VERSION"
    build
    log "built $BIN"
  fi
  "$BIN"
}

main "$@"
