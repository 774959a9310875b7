#!/usr/bin/env bash
# cosign.sh - sigstore's cosign, built from its Go module, for the signature interop tests.
#
#   scripts/cosign.sh        builds cosign if it is not cached yet (logs on stderr) and prints
#                            the binary's path as its last line on stdout
#
# The binary is built with `go install github.com/sigstore/cosign/<major>/cmd/cosign@VERSION`
# (the module's own go.mod and go.sum, so the build is the release's dependency tree) and cached
# outside the checkout by version: ${WASMLET_COSIGN_CACHE:-/var/cache/wasmlet/cosign}/VERSION/cosign.
# WASMLET_COSIGN_VERSION picks the version (default v2.6.5; a v3.x.y builds from the /v3 module).
# A cold build takes several minutes on two cores; later runs print the cached path at once.
# Needs Go (this machine kind provides it) and the Go module proxy.
set -euo pipefail

VERSION="${WASMLET_COSIGN_VERSION:-v2.6.5}"
CACHE="${WASMLET_COSIGN_CACHE:-/var/cache/wasmlet/cosign}"
OUT_DIR="$CACHE/$VERSION"
BIN="$OUT_DIR/cosign"

log() { printf 'cosign.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# The module path's major version suffix follows the version's major (v2 -> /v2, v3 -> /v3).
module_for() {
  local major="${1%%.*}"
  case "$major" in
    v2 | v3) echo "github.com/sigstore/cosign/$major" ;;
    *) die "unsupported cosign version $1 (expected v2.x.y or v3.x.y)" ;;
  esac
}

build() {
  local module gobin
  module="$(module_for "$VERSION")"
  mkdir -p "$OUT_DIR"
  gobin="$(mktemp -d "$OUT_DIR/gobin.XXXXXX")"
  log "building $module/cmd/cosign@$VERSION into $BIN (takes minutes when the Go cache is cold)"
  # go install pkg@version ignores any enclosing module; the version stamp is the one cosign's
  # own release build sets, so `cosign version` reports what was built.
  (
    cd "$gobin"
    CGO_ENABLED=0 GOBIN="$gobin" GOFLAGS=-trimpath go install \
      -ldflags "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$VERSION" \
      "$module/cmd/cosign@$VERSION" >&2
  )
  [ -x "$gobin/cosign" ] || die "go install did not produce $gobin/cosign"
  mv "$gobin/cosign" "$BIN.partial"
  rm -rf "$gobin"
  mv "$BIN.partial" "$BIN"
}

main() {
  if [ -x "$BIN" ]; then
    log "cached: $BIN"
  else
    command -v go >/dev/null || die "go not found: this machine kind provides Go"
    local start=$SECONDS
    build
    log "built $BIN in $((SECONDS - start))s"
  fi
  echo "$BIN"
}

main "$@"
