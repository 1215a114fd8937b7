#!/usr/bin/env bash
# libFuzzer targets for every parser of outside data (tests/fuzz), built with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer, each run SECONDS (default 20) from its
# seed corpus (tests/fuzz/seeds: real files). A crash, a sanitizer report or an exception
# that is not lockstep::Error fails the run; libFuzzer saves the input as crash-* in the
# work directory, to become a regression seed (and a unit test).
#   bash .ci/fuzz.sh [SECONDS] [WORK_DIR]        bench/fuzz.sh runs the same longer.
#   bash .ci/fuzz.sh build [WORK_DIR]            builds the targets only (.ci/run, beside CTest)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECS=${1:-20}
[ "$SECS" = build ] || [[ "$SECS" =~ ^[1-9][0-9]*$ ]] || { echo "usage: fuzz.sh [SECONDS|build] [WORK_DIR]" >&2; exit 2; }
WORK=${2:-$ROOT/build-fuzz}
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (apt-get install clang libclang-rt-14-dev)"; exit 1; }
mkdir -p "$WORK"
JOBS=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # nproc alone answers OMP_NUM_THREADS
if [ ! -f "$WORK/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$WORK" -DLOCKSTEP_FUZZ_ONLY=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$WORK/configure.log" 2>&1 ||
    { cat "$WORK/configure.log"; exit 1; }
fi
cmake --build "$WORK" -j"$JOBS" >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; exit 1; }
[ "$SECS" = build ] && { echo "fuzz: targets built in $WORK"; exit 0; }
# One target per core at a time (each libFuzzer process is single-threaded: every target
# still gets SECS of a core of its own); the results are printed in target order.
fuzz_one() {  # fuzz_one SEEDS_DIR: runs one target, writes its summary to fuzz_TARGET.result
  local seeds=$1 target corpus log
  target=$(basename "$seeds")
  corpus=$WORK/corpus/$target
  mkdir -p "$corpus" "$WORK/crashes"
  log=$WORK/fuzz_$target.log
  if (cd "$WORK/crashes" && "$WORK/tests/fuzz/fuzz_$target" -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 "$corpus" "$seeds" >"$log" 2>&1); then
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || true)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    echo "fuzz $target: ${runs:-?} runs in ${SECS} s, $cov, no crash" > "$WORK/fuzz_$target.result"
  else
    { echo "fuzz $target: FAILED"; grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -5 || true; } \
      > "$WORK/fuzz_$target.result"
  fi
}
rm -f "$WORK"/fuzz_*.result
for seeds in "$ROOT"/tests/fuzz/seeds/*/; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  fuzz_one "$seeds" &
done
wait
status=0
for seeds in "$ROOT"/tests/fuzz/seeds/*/; do
  result=$WORK/fuzz_$(basename "$seeds").result
  cat "$result" 2>/dev/null || echo "fuzz $(basename "$seeds"): FAILED (no result)"
  grep -q "no crash" "$result" 2>/dev/null || status=1
done
exit $status
