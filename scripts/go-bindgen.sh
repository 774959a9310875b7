#!/usr/bin/env bash
# Generates the Go SDK's component-model bindings (plugins/sdk-go/internal/wit) from wit/ with
# plugins/go-bindgen; `--check` writes nothing and fails when the committed files differ from
# what wit/ makes. Run it after any change to wit/.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release --manifest-path plugins/go-bindgen/Cargo.toml --target-dir target/go-bindgen
target/go-bindgen/release/wasmlet-go-bindgen "$@" wit plugins/sdk-go/internal/wit wasmlet.dev/plugin/internal/wit \
  eviction-policy pressure-eviction-policy gc-strategy probe-handler lifecycle-hooks
