#!/usr/bin/env bash
# build-sdk-plugins.sh - build every example of the Go, Python and JavaScript SDKs into a
# component, target/sdk-plugins/<go|python|js>/<name>.wasm, with `wasmlet plugin build` (the
# same command plugin authors run; it installs its pinned tools from the package registries
# into target/sdk-tools/). Cached: a component is rebuilt only when a hash of its inputs
# changed.
#
#   SDK_LANGS="go python js"   the languages to build (default: all three)
#   WASMLET_BIN                the wasmlet binary (default: target/release/wasmlet, built
#                              here when missing)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
OUT=$ROOT/target/sdk-plugins
LANGS=${SDK_LANGS:-go python js}
# The tools (and the Go componentizer's build, in target/sdk-tools/componentize-target) are
# shared with tests/plugin_cli.rs, which builds projects with the same command.
export WASMLET_PLUGIN_TOOLS=$ROOT/target/sdk-tools
WASMLET=${WASMLET_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/wasmlet}
if [ -z "${WASMLET_BIN:-}" ]; then
  cargo build --release --quiet -p wasmlet --bin wasmlet
fi
unset CARGO_TARGET_DIR
mkdir -p "$OUT"
log() { printf '%s\n' "$*" >&2; }

# hash_of FILE... : one hash of the files' contents and names (the build command's own
# source among them, for its pinned tool versions; not what only `plugin new` or the unit
# tests use, so a change to the project templates does not rebuild every example).
hash_of() {
  find "$@" crates/wasmlet-plugin-host/src/project -type f ! -name '*.wasm' ! -path '*/__pycache__/*' \
    ! -path '*/node_modules/*' ! -path 'crates/wasmlet-plugin-host/src/project/scaffold*' \
    ! -path 'crates/wasmlet-plugin-host/src/project/tests.rs' \
    -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}

# build LANG EXAMPLE_DIR INPUTS... : EXAMPLE_DIR -> $OUT/LANG/<name>.wasm unless fresh.
build() {
  local lang=$1 ex=${2%/}; shift 2
  local name; name=$(basename "$ex"); name=${name//_/-}
  local out=$OUT/$lang/$name.wasm h
  mkdir -p "$OUT/$lang"
  h=$(hash_of "$ex" "$@" wit)
  if [ -f "$out" ] && [ "$(cat "$out.inputs" 2>/dev/null)" = "$h" ]; then return; fi
  log "$lang: $name"
  "$WASMLET" plugin build "$ex" --out "$out" >&2
  printf '%s\n' "$h" > "$out.inputs"
}

for lang in $LANGS; do
  case $lang in
    go) for ex in plugins/sdk-go/examples/*/; do build go "$ex" plugins/sdk-go plugins/componentize/src; done ;;
    python) for ex in plugins/sdk-python/examples/*/; do build python "$ex" plugins/sdk-python/wasmlet_plugin; done ;;
    js) for ex in plugins/sdk-js/examples/*/; do build js "$ex" plugins/sdk-js/src plugins/sdk-js/build.mjs; done ;;
    *) log "unknown language $lang (go, python, js)"; exit 2 ;;
  esac
done
ls -l "$OUT"/*/*.wasm >&2
