#!/usr/bin/env bash
# Sanitizer builds, each its own build directory, built only as far as the tests need:
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer on the unit, MPI (1 and 2 ranks) and
#         end-to-end tests that exercise the training loop, with LeakSanitizer on the unit
#         and MPI tests and one short normal life (e2e_life);
#   tsan: ThreadSanitizer on the threaded parts — communication thread, reducer hooks,
#         watchdog, flight recorder, prefetch loader, background checkpoint writer, console
#         writer, video decode threads — through their unit tests (thread_tests, selected in
#         tests/CMakeLists.txt), the MPI tests and 2-rank training runs with a stop signal
#         and with a dead rank.
# Both are unity builds (cmake/unity.cmake: 8 sources per translation unit, each load of the
# precompiled torch header and each template instantiation shared by 8): with an empty
# compiler cache, ASan's targets below 1255 s -> 344 s and TSan's 1091 s -> 255 s (fresh
# clones, the 2-core CI VM; 2026-11-26 and -27; TSan's both at -j1, see JOBS). Their batch
# files name sources relative to the source tree, so a clone at another path hits the
# compiler cache (CMake's own unity files name absolute paths: 100 misses, 299 s for a warm
# ASan build; 2026-11-27).
# tests/unity_names.py keeps file-local names from colliding in a batch.
# Suppressions (tests/sanitizers/*.supp) name third-party libraries only.
#   bash .ci/sanitize.sh [asan|tsan|all] [build|test]   after .ci/setup (same venv and packages);
#                                           without a phase: build, then test
# .ci/run builds both while the CTest suite runs (at idle priority) and tests them after it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WHICH=${1:-all}
PHASE=${2:-both}
usage() { echo "usage: sanitize.sh [asan|tsan|all] [build|test]" >&2; exit 2; }
case "$WHICH" in asan|tsan|all) ;; *) usage ;; esac
case "$PHASE" in build|test|both) ;; *) usage ;; esac
# The cores to compile on. GNU nproc answers OMP_NUM_THREADS when it is set, and the TSan
# stage sets it to 1 below: its build ran one compiler at a time (-j1) until 2026-11-30.
JOBS=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
VENV=${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}
PREFIX=$("$VENV/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
SUPP=$ROOT/tests/sanitizers
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI's memory hooks patch malloc, which the sanitizers own; its plugins stay loaded
# so that reports through them have names.
export OMPI_MCA_memory=^patcher OMPI_MCA_mca_base_component_disable_dlclose=1

build() {  # build NAME SANITIZERS TARGET...: configures (not in the test phase), then builds
  local dir=$ROOT/build-$1
  if [ "$PHASE" != test ]; then
    # Configured every time (a second configure is quick), so an older build directory turns
    # into this unity build too (and off CMake's own, which an older one used).
    cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE=-O1 \
      -DCMAKE_C_FLAGS_SANITIZE=-O1 -DCMAKE_PREFIX_PATH="$PREFIX" \
      -DLOCKSTEP_SANITIZE="$2" -DLOCKSTEP_BUILD_BENCH=OFF -DLOCKSTEP_PYTHON="$VENV/bin/python" \
      -DCMAKE_UNITY_BUILD=OFF -DLOCKSTEP_UNITY=ON -DLOCKSTEP_CUDA_ARCHITECTURES=90-real >"$dir.log" 2>&1 ||
      { cat "$dir.log"; exit 1; }
  elif [ ! -f "$dir/CMakeCache.txt" ]; then
    echo "sanitize: build-$1 is not configured (bash .ci/sanitize.sh $1 build)"; exit 1
  fi
  # In the test phase too: nothing to do when the build phase finished, and never a test of
  # binaries older than the sources.
  SECONDS=0
  cmake --build "$dir" -j"$JOBS" --target "${@:3}" >>"$dir.log" 2>&1 || { tail -40 "$dir.log"; exit 1; }
  echo "sanitize: build-$1 ($2) built in $SECONDS s"
}

run_tests() {  # run_tests NAME REGEX
  [ "$PHASE" = build ] && return
  local dir=$ROOT/build-$1
  SECONDS=0
  ctest --test-dir "$dir" -R "$2" --output-on-failure || { echo "sanitize: $1 tests FAILED"; exit 1; }
  echo "sanitize: $1 tests passed in $SECONDS s"
}

if [ "$WHICH" = asan ] || [ "$WHICH" = all ]; then
  asan_common=abort_on_error=1:halt_on_error=1:detect_stack_use_after_return=0
  export LSAN_OPTIONS=suppressions=$SUPP/lsan.supp:print_suppressions=0
  export UBSAN_OPTIONS=suppressions=$SUPP/ubsan.supp:print_stacktrace=1:halt_on_error=1
  build asan address,undefined lockstep unit_tests mpi_tests
  # Leaks, over a whole normal life (import, init, train, checkpoint, resume, evaluate,
  # exit: e2e_life, six processes): fast_unwind_on_malloc=0 gives whole allocation stacks
  # through the uninstrumented libraries (without frame pointers the fast unwinder stops
  # inside them and a leak in MPI_Init cannot be told from one in lockstep).
  export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:$asan_common
  run_tests asan '^(unit_tests|mpi_tests_np1|mpi_tests_np2|e2e_life)$'
  # (e2e_train_resume took 319 s here with its 14 process starts; e2e_life runs the same
  # life — train, checkpoint, a truncated checkpoint skipped, resume on another world size,
  # evaluate — in 6, 86 s: fresh-clone CI, 2026-11-26.)
  # Memory errors and UB on the error, signal and fault paths: many short processes, most
  # ending in an abort or a kill where no leak check runs. The slow unwinder costs ~12 s per
  # process start (LibTorch's static initialisers), so these run with the fast one and
  # without leak checks: 512 s -> 135 s (fresh-clone CI, 2026-11-24).
  export ASAN_OPTIONS=detect_leaks=0:fast_unwind_on_malloc=1:$asan_common
  run_tests asan '^(e2e_no_hang|e2e_signals|e2e_run_safety|e2e_data_safety)$'
  unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
fi
if [ "$WHICH" = tsan ] || [ "$WHICH" = all ]; then
  export TSAN_OPTIONS="suppressions=$SUPP/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
  # LibTorch's OpenMP workers synchronise in libgomp, which TSan cannot see; one intra-op
  # thread keeps every report about lockstep's own threads.
  export OMP_NUM_THREADS=1
  build tsan thread lockstep thread_tests mpi_tests
  run_tests tsan '^(thread_tests|mpi_tests_np1|mpi_tests_np2|e2e_signals|e2e_no_hang)$'
fi
