#!/usr/bin/env bash
# check-module-graph.sh - the host crate's module graph has no cycle, and the "never" rule of
# docs/architecture.md holds: pod sources (`source`, and the API's `cluster/pod_source.rs`) never
# reach the runtime. Edges are the `crate::<module>` paths each top-level module's code names;
# tsort (coreutils) finds the cycles. Prints the edges with -v. Exits non-zero on a violation.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../host/src"
edges() {
  for file in *.rs; do
    module="${file%.rs}"
    [ "$module" = lib ] || [ "$module" = main ] && continue
    files=("$file")
    [ -d "$module" ] && mapfile -t -O 1 files < <(find "$module" -name '*.rs')
    # Comments (doc links among them) are not dependencies.
    cat "${files[@]}" | grep -v '^\s*//' | grep -oE 'crate::[a-z_]+' | sed 's/crate:://' | sort -u |
      while read -r target; do
        # An `if`, not `&&`: a last name that is no module must not fail the loop.
        if [ "$target" != "$module" ] && [ -f "$target.rs" ]; then echo "$module $target"; fi
      done
  done
}
graph="$(edges)"
[ "${1:-}" = -v ] && printf '%s\n' "$graph"
status=0
if ! printf '%s\n' "$graph" | tsort >/dev/null 2>/tmp/module-graph.$$; then
  echo "module graph has a cycle:" >&2
  cat /tmp/module-graph.$$ >&2
  status=1
fi
rm -f /tmp/module-graph.$$
RUNTIME='cri|kuberuntime|pod_worker|runtime_status'
if printf '%s\n' "$graph" | grep -E "^source ($RUNTIME)\$"; then
  echo "the pod source reaches the runtime (above)" >&2
  status=1
fi
# The API pod source lives in `cluster` beside writers that may name more; the rule holds for
# its own files.
if grep -v '^\s*//' cluster/pod_source.rs | grep -nE "crate::($RUNTIME)\b"; then
  echo "the API pod source (cluster/pod_source.rs) reaches the runtime (above)" >&2
  status=1
fi
echo "rules: no cycle; source and cluster/pod_source.rs never name $RUNTIME" >&2
echo "$(printf '%s\n' "$graph" | wc -l) edges between $(ls *.rs | wc -l) modules checked" >&2
exit $status
