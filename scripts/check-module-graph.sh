#!/usr/bin/env bash
# check-module-graph.sh - every crate of the cargo workspace (the members of the root
# Cargo.toml): its top-level modules import no cycle, the rules below hold, and no non-test
# module is over MAX_LINES lines. Edges are the `crate::<module>` paths each top-level module's
# code names (a module is `foo.rs` with everything under `foo/`); tsort (coreutils) finds the
# cycles. Prints the edges with -v. Exits non-zero on any violation.
#
# Rules:
#   wasmlet: the pod sources (`source`, and the API's `cluster/pod_source.rs`) never name the
#     runtime (cri, kuberuntime, pod_worker, runtime_status): a source only says which pods
#     should exist.
#   wasmlet-plugin-host: wasmtime is named only by the modules that run components (bindings,
#     engine, instance, limiter, registry, state, wasi); the rest speaks the host's terms.
set -euo pipefail
# A failure of the script itself is never silent.
trap 'echo "check-module-graph.sh: stopped by a failing command at line $LINENO" >&2' ERR
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MAX_LINES=${WASMLET_MAX_MODULE_LINES:-500}
verbose=${1:-}

# name<TAB>src directory of each workspace member's library.
members() {
  python3 - <<'EOF'
import tomllib
with open("Cargo.toml", "rb") as f:
    root = tomllib.load(f)
for member in root["workspace"]["members"]:
    with open(f"{member}/Cargo.toml", "rb") as f:
        name = tomllib.load(f)["package"]["name"]
    print(f"{name}\t{member}/src")
EOF
}

# The edges "from to" between the top-level modules of the crate in the current directory.
edges() {
  local file module target
  for file in *.rs; do
    module="${file%.rs}"
    { [ "$module" = lib ] || [ "$module" = main ]; } && continue
    files=("$file")
    [ -d "$module" ] && mapfile -t -O 1 files < <(find "$module" -name '*.rs')
    # Comments (doc links among them) are not dependencies.
    # (`|| true`: a module that names no other module, `yaml.rs` say, has no edges.)
    cat "${files[@]}" | { grep -v '^\s*//' || true; } | { grep -oE 'crate::[a-z_]+' || true; } |
      sed 's/crate:://' | sort -u |
      while read -r target; do
        # An `if`, not `&&`: a last name that is no module must not fail the loop.
        if [ "$target" != "$module" ] && [ -f "$target.rs" ]; then echo "$module $target"; fi
      done
  done
}

# Lines of `files` (not comments) that name `pattern`, prefixed with the file.
naming() {
  local pattern=$1
  shift
  grep -nE "$pattern" "$@" /dev/null | grep -vE '^[^:]+:[0-9]+:\s*//' || true
}

crates="$(members)"
status=0
modules=0
edge_count=0
while IFS=$'\t' read -r crate src; do
  graph="$(cd "$src" && edges)"
  [ "$verbose" = -v ] && printf '%s\n' "$graph" | sed "s/^/$crate: /"
  if ! printf '%s\n' "$graph" | tsort >/dev/null 2>/tmp/module-graph.$$; then
    echo "$crate: module graph has a cycle:" >&2
    cat /tmp/module-graph.$$ >&2
    status=1
  fi
  rm -f /tmp/module-graph.$$
  modules=$((modules + $(ls "$src"/*.rs | wc -l)))
  edge_count=$((edge_count + $(printf '%s\n' "$graph" | grep -c . || true)))
  case "$crate" in
  wasmlet)
    runtime='crate::(cri|kuberuntime|pod_worker|runtime_status)\b'
    mapfile -t source_files < <(cd "$src" && { echo source.rs; find source -name '*.rs'; echo cluster/pod_source.rs; })
    found="$(cd "$src" && naming "$runtime" "${source_files[@]}")"
    if [ -n "$found" ]; then
      printf '%s\n' "$found" >&2
      echo "$crate: a pod source names the runtime (above)" >&2
      status=1
    fi
    ;;
  wasmlet-plugin-host)
    mapfile -t outside < <(cd "$src" && find . -name '*.rs' | sed 's|^\./||' |
      grep -vE '^(lib|bindings|engine|instance|limiter|registry|state|wasi)(\.rs|/)')
    found="$(cd "$src" && naming '\bwasmtime(_wasi)?::' "${outside[@]}")"
    if [ -n "$found" ]; then
      printf '%s\n' "$found" >&2
      echo "$crate: a module outside those that run components names wasmtime (above)" >&2
      status=1
    fi
    ;;
  esac
done <<<"$crates"

# Module sizes: every non-test file of every member (tests.rs and tests/ are test modules).
sizes="$(printf '%s\n' "$crates" | cut -f2 | xargs -I{} find {} -name '*.rs' ! -name tests.rs ! -path '*/tests/*' |
  xargs wc -l | grep -v ' total$' | sort -rn)"
echo "largest modules:" >&2
printf '%s\n' "$sizes" | head -5 | sed 's/^/  /' >&2
over="$(printf '%s\n' "$sizes" | awk -v max="$MAX_LINES" '$1 > max')"
if [ -n "$over" ]; then
  printf '%s\n' "$over" | sed 's/^/  /' >&2
  echo "modules over $MAX_LINES lines (above): split them (foo.rs beside foo/)" >&2
  status=1
fi
echo "rules: no cycle in any crate; wasmlet: source/ and cluster/pod_source.rs never name" \
  "cri|kuberuntime|pod_worker|runtime_status; wasmlet-plugin-host: only" \
  "bindings|engine|instance|limiter|registry|state|wasi name wasmtime; no module over $MAX_LINES lines" >&2
echo "$edge_count edges between $modules modules of $(printf '%s\n' "$crates" | wc -l) crates checked" >&2
exit $status
