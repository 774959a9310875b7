#!/usr/bin/env bash
# setup-gc-node.sh - a second, independent containerd for the image GC tests: its image
# filesystem is a small tmpfs, so a test can push usage over the GC thresholds, and removing
# images there never touches the images other tests use on the main node.
#
# Same contract as setup-node.sh (whose environment variables it passes on); the last line on
# stdout is CONTAINER_RUNTIME_ENDPOINT=unix:///var/lib/wasmlet-gc-node/containerd.sock.
# Undo with: WASMLET_NODE_DIR=/var/lib/wasmlet-gc-node WASMLET_BRIDGE=wasmlet1 scripts/teardown-node.sh
set -euo pipefail
export WASMLET_NODE_DIR=/var/lib/wasmlet-gc-node
export WASMLET_POD_SUBNET=10.88.98.0/24
export WASMLET_BRIDGE=wasmlet1
export WASMLET_IMAGEFS_SIZE=${WASMLET_IMAGEFS_SIZE:-512M}
exec "$(dirname "${BASH_SOURCE[0]}")/setup-node.sh" "$@"
