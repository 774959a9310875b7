#!/usr/bin/env bash
# build-plugins.sh - build every plugin (plugins/) and the deliberately faulty test guests
# (tests/guests/) as wasm32-wasip2 components, into plugins/target/wasm32-wasip2/release/ and
# tests/guests/target/wasm32-wasip2/release/. Installs the rustup target if it is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo build --release --target wasm32-wasip2 --manifest-path plugins/Cargo.toml
cargo build --release --target wasm32-wasip2 --examples --manifest-path tests/guests/Cargo.toml
ls -l plugins/target/wasm32-wasip2/release/*.wasm tests/guests/target/wasm32-wasip2/release/examples/guest_*.wasm >&2
