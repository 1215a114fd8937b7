#!/usr/bin/env bash
# Builds what the GPU report runs (lockstep, gpu_tests, bn_act_bench, reader_bench) in build-gpu/, without video import
# (-DLOCKSTEP_WITH_VIDEO=OFF: FFmpeg's codec libraries would make the bundle ~180 MiB, over the
# 60 MiB pack.sh carries), and bundles them into .gpu/ with ../shared/gpu/pack.sh (docs/gpu.md).
#   bash bench/gpu_build.sh          from the checkout root, after .ci/setup
#   bash bench/gpu_build.sh --check  only checks the bundle: right before a device call (seconds)
# The bundle records the commit it was built from (.gpu/commit); --check refuses a bundle
# built from another commit or a tree with changes, or one that lacks a binary gpu.sh runs
# (a stale bundle would measure old code with the one GPU session's minutes).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}
PACK=${GPU_PACK:-$ROOT/../shared/gpu/pack.sh}
[ -f "$PACK" ] || { echo "gpu_build.sh: $PACK not found (GPU_PACK=path/to/pack.sh)" >&2; exit 1; }
cd "$ROOT"
BINARIES="lockstep gpu_tests bn_act_bench reader_bench"
check() {
  local head want got
  head=$(git rev-parse HEAD)
  want="$head$( [ -z "$(git status --porcelain --untracked-files=no)" ] || echo ' with changes')"
  got=$(cat .gpu/commit 2>/dev/null || echo "no .gpu/commit")
  [ "$got" = "$want" ] || { echo "gpu_build.sh: the bundle was built from $got, the tree is $want: rebuild it" >&2; return 1; }
  case $want in *"with changes") echo "gpu_build.sh: the tree has uncommitted changes: commit, then rebuild" >&2; return 1 ;; esac
  for b in $BINARIES; do
    [ -x ".gpu/bin/$b" ] || { echo "gpu_build.sh: .gpu/bin/$b is missing: rebuild" >&2; return 1; }
  done
  echo "gpu_build.sh: .gpu/ is HEAD ${head:0:10} with $BINARIES ($(du -sm .gpu | cut -f1) MiB): carry [\".gpu\"]"
}
if [ "${1:-}" = --check ]; then check; exit; fi
if [ ! -f build-gpu/CMakeCache.txt ]; then
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_WITH_VIDEO=OFF -DLOCKSTEP_BUILD_BENCH=ON \
    -DCMAKE_PREFIX_PATH="$("$VENV/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
    -DLOCKSTEP_PYTHON="$VENV/bin/python" >build-gpu.configure.log 2>&1 || { cat build-gpu.configure.log; exit 1; }
fi
grep -q "NCCL backend ON" build-gpu.configure.log 2>/dev/null ||
  cmake -S . -B build-gpu 2>&1 | grep -q "NCCL backend ON" || { echo "gpu_build.sh: this machine's build has no NCCL backend" >&2; exit 1; }
grep -q "LOCKSTEP_BUILD_BENCH:BOOL=ON" build-gpu/CMakeCache.txt || cmake -S . -B build-gpu -DLOCKSTEP_BUILD_BENCH=ON >/dev/null
commit="$(git rev-parse HEAD)$( [ -z "$(git status --porcelain --untracked-files=no)" ] || echo ' with changes')"
cmake --build build-gpu -j"$(nproc)" --target lockstep gpu_tests bn_act_bench reader_bench
GPU_PACK_STRIP=1 bash "$PACK" build-gpu/lockstep build-gpu/tests/gpu_tests build-gpu/bench/bn_act_bench build-gpu/bench/reader_bench
echo "$commit" >.gpu/commit  # what the binaries were built from (sampled before the build)
check
