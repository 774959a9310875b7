#!/usr/bin/env bash
# test.sh - the whole test suite, as CI runs it: set up the real containerd, check formatting
# and lints, then build once in release and run the unit and integration tests against it.
# Exits non-zero on any failure. Needs root (containerd, CNI, cgroups).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Each step's wall time, printed as a table when the script exits (whatever the outcome).
STEP_NAMES=()
STEP_SECONDS=()
CURRENT_STEP=""
STEP_START=$SECONDS
finish_step() {
  if [ -n "$CURRENT_STEP" ]; then
    STEP_NAMES+=("$CURRENT_STEP")
    STEP_SECONDS+=($((SECONDS - STEP_START)))
  fi
  CURRENT_STEP=""
}
step() {
  finish_step
  CURRENT_STEP="$*"
  STEP_START=$SECONDS
  printf '\n=== %s\n' "$*" >&2
}
# shellcheck disable=SC2317 # the EXIT trap
step_table() {
  local i
  finish_step
  printf '\n%-8s %s\n' seconds step >&2
  for i in "${!STEP_NAMES[@]}"; do
    printf '%-8s %s\n' "${STEP_SECONDS[$i]}" "${STEP_NAMES[$i]}" >&2
  done
  printf '%-8s %s\n' "$SECONDS" total >&2
}
CLUSTER_STARTED=""
CLUSTER_TEST_PID=""
# shellcheck disable=SC2317 # the EXIT trap
on_exit() {
  local rc=$?
  if [ -n "$CLUSTER_TEST_PID" ]; then
    pkill -TERM -P "$CLUSTER_TEST_PID" 2>/dev/null || true
    kill "$CLUSTER_TEST_PID" 2>/dev/null || true
    wait "$CLUSTER_TEST_PID" 2>/dev/null || true
  fi
  if [ -n "$CLUSTER_STARTED" ]; then
    scripts/control-plane.sh stop "$CLUSTER_STARTED" >/dev/null 2>&1 || true
  fi
  step_table
  exit "$rc"
}
trap on_exit EXIT

# Cargo's target directories live outside the clone, in one cache every checkout shares, so a
# clean clone at any path starts with its dependencies built (cargo keys each path crate's
# artefacts by its path, so two checkouts never overwrite each other's; registry crates, the
# bulk of the build, are shared). The SDK tools and components under target/ are cached by a
# hash of their inputs, so sharing them is safe too. A checkout that already has its own
# target/ keeps it. WASMLET_CARGO_CACHE= (empty) turns this off; the cache is emptied when it
# grows past WASMLET_CARGO_CACHE_MAX_GB (default 45).
CARGO_CACHE=${WASMLET_CARGO_CACHE-/var/cache/wasmlet/cargo-target}
if [ -n "$CARGO_CACHE" ] && [ -z "${CARGO_TARGET_DIR:-}" ]; then
  shared=$CARGO_CACHE/shared
  if [ -d "$shared" ] && [ "$(du -s --block-size=1G "$shared" | cut -f1)" -gt "${WASMLET_CARGO_CACHE_MAX_GB:-45}" ]; then
    printf 'cargo cache %s is over %s GB: emptied\n' "$shared" "${WASMLET_CARGO_CACHE_MAX_GB:-45}" >&2
    rm -rf "${shared:?}"
  fi
  for tree in target plugins/target tests/guests/target fuzz/target; do
    if [ ! -e "$tree" ] && [ ! -L "$tree" ]; then
      mkdir -p "$shared/$tree"
      ln -s "$shared/$tree" "$tree"
    fi
  done
  # The per-checkout keys of earlier versions of this script.
  find "$CARGO_CACHE" -mindepth 1 -maxdepth 1 -type d ! -name shared -exec rm -rf {} +
fi

# The grpc probe tests need a gRPC health server in the test image (busybox has none): built
# here, statically linked against glibc, and added to wasmlet-test:local by setup-node.sh.
step "test image server: grpc_health_server (static)"
# Static linking needs glibc's static archive (libc6-dev; gcc prints the bare name when absent).
if [ "$(cc -print-file-name=libc.a)" = "libc.a" ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libc6-dev >&2
fi
cargo rustc --release -p wasmlet --example grpc_health_server -- -C target-feature=+crt-static -C strip=symbols
cargo rustc --release -p wasmlet --example api_client -- -C target-feature=+crt-static -C strip=symbols
# Kept apart from target/release/examples, which `cargo test` rebuilds without crt-static; the
# path is absolute because tests re-run setup-node.sh from other working directories.
mkdir -p target/test-image
cp target/release/examples/grpc_health_server target/test-image/grpc_health_server
cp target/release/examples/api_client target/test-image/api_client
export WASMLET_EXTRA_IMAGE_FILES="$PWD/target/test-image/grpc_health_server $PWD/target/test-image/api_client${WASMLET_EXTRA_IMAGE_FILES:+ $WASMLET_EXTRA_IMAGE_FILES}"

# promtool (Debian's prometheus package) lints every metrics endpoint in tests/integration.
if ! command -v promtool >/dev/null; then
  step "promtool (Debian's prometheus package)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2
fi

# docker-registry (Debian's package of the CNCF distribution server): tests/plugins and
# tests/plugin_cli.rs run it on loopback to push, pull and sign oci:// plugins. Its own
# service, if the package starts one, is not used: the tests start their own on free ports.
if [ ! -x /usr/bin/docker-registry ]; then
  step "docker-registry (Debian's docker-registry package)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry >&2
fi

step "node setup (containerd, runc, CNI, local images)"
scripts/setup-node.sh >/dev/null
step "image GC node setup (a second containerd on a small tmpfs image filesystem)"
scripts/setup-gc-node.sh >/dev/null

step "control plane: etcd and Kubernetes from the Go module proxy (cached by version)"
scripts/control-plane.sh build >/dev/null

step "proto check against containerd's embedded descriptors"
python3 scripts/check-proto.py

step "plugins: wasm32-wasip2 components (plugins/, tests/guests/)"
scripts/build-plugins.sh
step "plugins: the Go, Python and JavaScript SDK examples (target/sdk-plugins)"
scripts/build-sdk-plugins.sh

step "plugins: native unit tests of the SDK and the policies"
cargo test --release --manifest-path plugins/Cargo.toml
step "plugins: native tests of the Go, Python and JavaScript SDKs"
(cd plugins/sdk-go && go test ./...)
python3 -m unittest discover -s plugins/sdk-python/tests
node --test plugins/sdk-js/test/

step "Go SDK bindings: generated from wit/ by plugins/go-bindgen, which is tested and linted"
scripts/go-bindgen.sh --check
cargo fmt --manifest-path plugins/go-bindgen/Cargo.toml -- --check
cargo clippy --release --all-targets --manifest-path plugins/go-bindgen/Cargo.toml --target-dir target/go-bindgen -- -D warnings
cargo test --release --manifest-path plugins/go-bindgen/Cargo.toml --target-dir target/go-bindgen

step "cargo fmt"
cargo fmt --all -- --check
cargo fmt --all --manifest-path plugins/Cargo.toml -- --check

step "module graph: no cycle, sources never reach the runtime"
scripts/check-module-graph.sh

step "cargo clippy"
cargo clippy --release --all-targets -- -D warnings

step "fuzz: the fuzz targets still compile (cargo +nightly fuzz check)"
# Type-checks every target of fuzz/ (outside the workspace, so clippy above does not see it);
# scripts/fuzz.sh runs them.
scripts/fuzz.sh --install-only
(cd fuzz && cargo +nightly fuzz check)

step "conformance: e2e.test, ginkgo and the e2e images (cached by version)"
scripts/conformance.sh build >/dev/null
scripts/conformance.sh images >/dev/null

step "conformance: upstream e2e smoke selection against a wasmlet node"
# Every test tests/conformance/smoke.txt lists must pass (upstream's own e2e.test, one wasmlet
# node on its own control plane, which the run stops again before the cluster tests start one).
scripts/conformance.sh run --agent wasmlet --nodes 1 --expect tests/conformance/smoke.txt \
  --report "${WASMLET_CONFORMANCE_REPORT:-target/conformance-smoke}"

step "control plane: start (for tests/cluster)"
# The cluster tests join this control plane, each as its own node identity; it is stopped
# when this script exits, whatever the outcome.
export WASMLET_TEST_CLUSTER_DIR=${WASMLET_TEST_CLUSTER_DIR:-/var/lib/wasmlet-test-cluster}
CLUSTER_STARTED=$WASMLET_TEST_CLUSTER_DIR
scripts/control-plane.sh start "$WASMLET_TEST_CLUSTER_DIR" >/dev/null

step "cosign: built from its Go module (cached by version), for tests/cosign_interop.rs"
# The real cosign signs what wasmlet verifies and verifies what wasmlet signs; the tests find it
# through WASMLET_COSIGN (and fail under CI=true without it).
WASMLET_COSIGN="$(scripts/cosign.sh | tail -1)"
export WASMLET_COSIGN

step "cargo test (unit + integration, real containerd, real control plane)"
# The disk's fill level, for reading a failure: test nodes ignore it (crates/wasmlet-test-support/src/harness/node.rs).
df -h / /var/lib/containerd >&2 || true
# Built once, then run as two concurrent groups: the cluster binary, whose longest test waits
# out most of a projected token's 10-minute minimum life (~8 min, mostly idle), beside every
# other binary of the workspace, so its wait overlaps theirs instead of adding to it.
# --no-fail-fast: one run reports every failing test binary, and still exits non-zero.
# Built per group as run below: the host's tests turn on wasmlet-test-support's `node` feature,
# which the other crates' tests leave off.
cargo test --release --workspace --exclude wasmlet --no-run
cargo test --release -p wasmlet --lib --bins --examples --tests --no-run
CLUSTER_TEST_LOG=target/cluster-tests.log
cargo test --release -p wasmlet --test cluster --no-fail-fast >"$CLUSTER_TEST_LOG" 2>&1 &
CLUSTER_TEST_PID=$!
# Every test target of the host crate except the cluster one and the disruption one (run alone
# at the end), read from its manifest so a new [[test]] is never left out.
mapfile -t HOST_TESTS < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for package in json.load(sys.stdin)["packages"]:
    if package["name"] == "wasmlet":
        for target in package["targets"]:
            if "test" in target["kind"] and target["name"] not in ("cluster", "disruption"):
                print("--test=" + target["name"])')
rc=0
cargo test --release --workspace --exclude wasmlet --no-fail-fast || rc=1
cargo test --release -p wasmlet --lib --bins --examples "${HOST_TESTS[@]}" --no-fail-fast || rc=1
cargo test --release -p wasmlet --doc --no-fail-fast || rc=1
wait "$CLUSTER_TEST_PID" || rc=1
CLUSTER_TEST_PID=""
printf '\n=== the cluster tests (run beside the others; %s)\n' "$CLUSTER_TEST_LOG" >&2
cat "$CLUSTER_TEST_LOG" >&2
# Last and alone: these tests kill and restart the shared containerd under every node on it.
cargo test --release -p wasmlet --test disruption --no-fail-fast || rc=1
exit "$rc"
