#!/usr/bin/env bash
# sync-sdk-wit.sh - copy the contract (wit/*.wit) into each SDK package that ships it, so a
# plugin project outside a wasmlet checkout builds against the contract its SDK was written
# for: plugins/sdk-go/wit (the Go module), plugins/sdk-js/wit (the npm package) and
# plugins/sdk-python/wasmlet_plugin/wit (package data of the wheel). Run it after changing
# wit/; with --check it changes nothing and exits non-zero, naming the copy, when one has
# drifted (the plugin host's unit tests check the same).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
COPIES=(plugins/sdk-go/wit plugins/sdk-js/wit plugins/sdk-python/wasmlet_plugin/wit)
check=${1:-}
status=0
for copy in "${COPIES[@]}"; do
  if [ "$check" = --check ]; then
    # Only the .wit files: wit/README.md and wit/history/ stay in the checkout.
    if ! diff -r -x README.md -x history wit "$copy" >&2; then
      printf '%s differs from wit/: run scripts/sync-sdk-wit.sh\n' "$copy" >&2
      status=1
    fi
  else
    rm -rf "$copy"
    mkdir -p "$copy"
    cp wit/*.wit "$copy/"
  fi
done
exit "$status"
