#!/usr/bin/env bash
# build-sdk-plugins.sh - build every example of the Go, Python and JavaScript SDKs into a
# component: target/sdk-plugins/<go|python|js>/<name>.wasm. Installs only from the package
# registries, into target/sdk-tools/ (componentize-py from PyPI into a venv, jco and
# componentize-js from npm, wasmlet-componentize from crates.io deps with cargo). Idempotent and
# cached: a component is rebuilt only when a hash of its inputs changed.
#
#   SDK_LANGS="go python js"   the languages to build (default: all three)
#
# Go:     go build GOOS=wasip1 GOARCH=wasm -buildmode=c-shared, then wasmlet-componentize (wit/
#         embedded, checked, WASI preview1 reactor adapter from crates.io).
# Python: componentize-py -d wit -w WORLD componentize app (sdk-python on the path).
# JS:     plugins/sdk-js/build.mjs (jco componentize, bundled, WASI features off).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
OUT=$ROOT/target/sdk-plugins
TOOLS=$ROOT/target/sdk-tools
LANGS=${SDK_LANGS:-go python js}
COMPONENTIZE_PY_VERSION=0.25.1
JCO_VERSION=1.35.0
COMPONENTIZE_JS_VERSION=0.23.0
mkdir -p "$OUT" "$TOOLS"
log() { printf '%s\n' "$*" >&2; }

# hash_of FILE... : one hash of the files' contents, their names and the tool versions.
hash_of() {
  { printf '%s\n' "$COMPONENTIZE_PY_VERSION $JCO_VERSION $COMPONENTIZE_JS_VERSION"; \
    find "$@" -type f ! -name '*.wasm' ! -path '*/__pycache__/*' ! -path '*/node_modules/*' -print0 \
      | sort -z | xargs -0 sha256sum; } | sha256sum | cut -d' ' -f1
}

# fresh OUT INPUTS... : true when OUT exists and was built from the same inputs.
fresh() {
  local out=$1; shift
  local h; h=$(hash_of "$@")
  [ -f "$out" ] && [ -f "$out.inputs" ] && [ "$(cat "$out.inputs")" = "$h" ]
}
stamp() { local out=$1; shift; hash_of "$@" > "$out.inputs"; }

build_go() {
  local target_dir=${CARGO_TARGET_DIR:-$ROOT/plugins/componentize/target}
  local componentize=$target_dir/release/wasmlet-componentize
  cargo build --release --quiet --manifest-path plugins/componentize/Cargo.toml --target-dir "$target_dir"
  mkdir -p "$OUT/go"
  local ex name world
  for ex in plugins/sdk-go/examples/*/; do
    name=$(basename "$ex")
    world=$(sed -n 's#.*wasmlet.dev/plugin/\(eviction\|probe\|gc\|hooks\)".*#\1#p' "$ex/main.go" | head -1)
    case $world in
      eviction) world=eviction-policy ;; probe) world=probe-handler ;;
      gc) world=gc-strategy ;; hooks) world=lifecycle-hooks ;;
      *) log "go: $ex imports no world package"; return 1 ;;
    esac
    if fresh "$OUT/go/$name.wasm" plugins/sdk-go wit plugins/componentize/src; then continue; fi
    log "go: $name ($world)"
    (cd plugins/sdk-go && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath \
      -ldflags='-s -w' -o "$OUT/go/$name.core.wasm" "./examples/$name")
    "$componentize" wit "$world" "$OUT/go/$name.core.wasm" "$OUT/go/$name.wasm"
    rm -f "$OUT/go/$name.core.wasm"
    stamp "$OUT/go/$name.wasm" plugins/sdk-go wit plugins/componentize/src
  done
}

build_python() {
  local venv=$TOOLS/venv
  if ! "$venv/bin/componentize-py" --version 2>/dev/null | grep -q "$COMPONENTIZE_PY_VERSION"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "componentize-py==$COMPONENTIZE_PY_VERSION"
  fi
  mkdir -p "$OUT/python"
  local ex dir name world
  for ex in plugins/sdk-python/examples/*/; do
    dir=$(basename "$ex"); name=${dir//_/-}
    world=$(sed -n 's/.*from wasmlet_plugin\.\(eviction\|probe\|gc\|hooks\) import.*/\1/p' "$ex/app.py" | head -1)
    case $world in
      eviction) world=eviction-policy ;; probe) world=probe-handler ;;
      gc) world=gc-strategy ;; hooks) world=lifecycle-hooks ;;
      *) log "python: $ex imports no world module"; return 1 ;;
    esac
    if fresh "$OUT/python/$name.wasm" plugins/sdk-python/wasmlet_plugin "$ex" wit; then continue; fi
    log "python: $name ($world)"
    "$venv/bin/componentize-py" -d wit -w "$world" componentize -p plugins/sdk-python -p "$ex" app \
      -o "$OUT/python/$name.wasm" >/dev/null
    stamp "$OUT/python/$name.wasm" plugins/sdk-python/wasmlet_plugin "$ex" wit
  done
}

build_js() {
  local js=$TOOLS/js
  if [ ! -f "$js/node_modules/@bytecodealliance/jco/package.json" ] \
    || ! grep -q "\"version\": \"$JCO_VERSION\"" "$js/node_modules/@bytecodealliance/jco/package.json"; then
    mkdir -p "$js"
    [ -f "$js/package.json" ] || printf '{"name":"wasmlet-sdk-tools","private":true}\n' > "$js/package.json"
    npm install --prefix "$js" --no-audit --no-fund --silent \
      "@bytecodealliance/jco@$JCO_VERSION" "@bytecodealliance/componentize-js@$COMPONENTIZE_JS_VERSION"
  fi
  mkdir -p "$OUT/js"
  local ex name world
  for ex in plugins/sdk-js/examples/*/; do
    name=$(basename "$ex")
    world=$(sed -n "s#.*from '../../src/\(eviction\|probe\|gc\|hooks\).js'.*#\1#p" "$ex/component.js" | head -1)
    case $world in
      eviction) world=eviction-policy ;; probe) world=probe-handler ;;
      gc) world=gc-strategy ;; hooks) world=lifecycle-hooks ;;
      *) log "js: $ex imports no world module"; return 1 ;;
    esac
    if fresh "$OUT/js/$name.wasm" plugins/sdk-js/src plugins/sdk-js/build.mjs "$ex" wit; then continue; fi
    log "js: $name ($world)"
    node plugins/sdk-js/build.mjs "$js" "$ex/component.js" "$world" "$OUT/js/$name.wasm" >/dev/null 2>&1 \
      || node plugins/sdk-js/build.mjs "$js" "$ex/component.js" "$world" "$OUT/js/$name.wasm"
    stamp "$OUT/js/$name.wasm" plugins/sdk-js/src plugins/sdk-js/build.mjs "$ex" wit
  done
}

for lang in $LANGS; do
  case $lang in
    go) build_go ;; python) build_python ;; js) build_js ;;
    *) log "unknown language $lang (go, python, js)"; exit 2 ;;
  esac
done
ls -l "$OUT"/*/*.wasm >&2
