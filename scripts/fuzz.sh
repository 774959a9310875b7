#!/usr/bin/env bash
# fuzz.sh - run every cargo-fuzz target of fuzz/ on the nightly toolchain for SECONDS each
# (default 300) and print one line per target: the seconds it ran, its corpus size (files),
# libFuzzer's final coverage (cov, ft) and whether it crashed, with the artifact's path.
# Exits 0 when no target crashed, 1 otherwise (2 on a usage or build error).
#
#   scripts/fuzz.sh [SECONDS]        build the targets, then run each for SECONDS
#   scripts/fuzz.sh --install-only   install cargo-fuzz (and nightly) if missing; test.sh uses it
#
# Each target keeps its corpus in fuzz/corpus/<target> (not in git; libFuzzer adds what finds
# new coverage there) and also reads the committed seeds in fuzz/seeds/<target>. A crashing
# input lands in fuzz/artifacts/<target>/, beside that target's log of the run (last-run.log).
#   WASMLET_FUZZ_JOBS=N          targets fuzzed at once (default 1; each is one process)
#   WASMLET_FUZZ_TARGETS="a b"   only these targets (default: all of `cargo fuzz list`)
#   WASMLET_FUZZ_BUILD_LOCK=F    take flock F around the build, so it never runs beside another
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf 'fuzz: %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 2
}

# Runs a build command, under WASMLET_FUZZ_BUILD_LOCK when it is set.
locked() {
  if [ -n "${WASMLET_FUZZ_BUILD_LOCK:-}" ]; then
    flock "$WASMLET_FUZZ_BUILD_LOCK" "$@"
  else
    "$@"
  fi
}

# cargo-fuzz and the nightly toolchain it builds with (sanitizers need -Z flags).
install_tools() {
  if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    log "installing the nightly toolchain"
    rustup toolchain install nightly --profile minimal >&2
  fi
  if ! cargo fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz"
    locked cargo install cargo-fuzz --locked >&2
  fi
}

case "${1:-}" in
  --install-only)
    install_tools
    exit 0
    ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
SECONDS_EACH=${1:-300}
[[ $SECONDS_EACH =~ ^[1-9][0-9]*$ ]] || die "SECONDS must be a positive number, not ${SECONDS_EACH@Q}"
JOBS=${WASMLET_FUZZ_JOBS:-1}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "WASMLET_FUZZ_JOBS must be a positive number, not ${JOBS@Q}"

install_tools
cd fuzz
if [ -n "${WASMLET_FUZZ_TARGETS:-}" ]; then
  read -r -a TARGETS <<<"$WASMLET_FUZZ_TARGETS"
else
  mapfile -t TARGETS < <(cargo +nightly fuzz list)
fi
[ "${#TARGETS[@]}" -gt 0 ] || die "no fuzz targets in fuzz/"
log "building ${#TARGETS[@]} targets (cargo +nightly fuzz build; the host targets build wasmtime)"
locked cargo +nightly fuzz build >&2 || die "cargo +nightly fuzz build failed"
TRIPLE=$(rustc +nightly -vV | sed -n 's/^host: //p')
BIN_DIR=target/$TRIPLE/release

# fuzz_one TARGET: runs it and writes "seconds corpus cov ft result" to its summary file.
fuzz_one() {
  local target=$1 corpus=corpus/$1 seeds=seeds/$1 artifacts=artifacts/$1
  local log_file=$artifacts/last-run.log start=$SECONDS rc=0 dirs cov ft files result artifact
  mkdir -p "$corpus" "$artifacts"
  dirs=("$corpus")
  [ -d "$seeds" ] && dirs+=("$seeds")
  log "$target: ${SECONDS_EACH}s (log: fuzz/$log_file)"
  "$BIN_DIR/$target" -max_total_time="$SECONDS_EACH" -timeout=60 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${dirs[@]}" >"$log_file" 2>&1 || rc=$?
  # libFuzzer's last status line: "#N  DONE   cov: C ft: F corp: ..." (or the last pulse).
  cov=$(grep -o ' cov: [0-9]*' "$log_file" | tail -n 1 | tr -dc 0-9) || true
  ft=$(grep -o ' ft: [0-9]*' "$log_file" | tail -n 1 | tr -dc 0-9) || true
  files=$(find "$corpus" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log_file" | tail -n 1) || true
    result="CRASHED (exit $rc) ${artifact:+fuzz/$artifact}"
  fi
  printf '%s %s %s %s %s\n' "$((SECONDS - start))" "$files" "${cov:--}" "${ft:--}" "$result" \
    >"$artifacts/summary"
}

for target in "${TARGETS[@]}"; do
  [ -x "$BIN_DIR/$target" ] || die "no binary $BIN_DIR/$target (is $target a target of fuzz/?)"
  rm -f "artifacts/$target/summary"
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  fuzz_one "$target" &
done
wait

printf '%-16s %8s %8s %8s %8s  %s\n' target seconds corpus cov ft result
crashed=0
for target in "${TARGETS[@]}"; do
  read -r seconds files cov ft result <"artifacts/$target/summary" ||
    { seconds=- files=- cov=- ft=- result="NO RESULT"; }
  printf '%-16s %8s %8s %8s %8s  %s\n' "$target" "$seconds" "$files" "$cov" "$ft" "$result"
  [ "$result" = ok ] || crashed=1
done
exit "$crashed"
