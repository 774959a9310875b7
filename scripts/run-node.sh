#!/usr/bin/env bash
# run-node.sh - the README's first command: set up the local containerd (scripts/setup-node.sh),
# build wasmlet, and run it on the example node config and static pods in the foreground.
#   WASMLET_CONFIG=examples/node/config.yaml   node config to run with
#   WASMLET_ROOT_DIR=/var/lib/wasmlet          --root-dir
# Extra arguments go to `wasmlet run` (e.g. --hostname-override demo).
# Ctrl-C stops wasmlet; the pods keep running, as with the kubelet. scripts/teardown-node.sh
# removes them and the runtime.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONFIG=${WASMLET_CONFIG:-examples/node/config.yaml}
ROOT_DIR=${WASMLET_ROOT_DIR:-/var/lib/wasmlet}

scripts/setup-node.sh >/dev/null
command -v cargo >/dev/null || { echo "run-node: cargo not found (install Rust with rustup)" >&2; exit 1; }
scripts/build-plugins.sh
cargo build --release --bin wasmlet
echo "run-node: wasmlet on $CONFIG; try: curl -s localhost:10255/pods | python3 -m json.tool" >&2
exec target/release/wasmlet run --config "$CONFIG" --root-dir "$ROOT_DIR" "$@"
