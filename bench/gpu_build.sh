#!/usr/bin/env bash
# Builds what the GPU report runs (lockstep, gpu_tests, bn_act_bench, reader_bench) in build-gpu/, without video import
# (-DLOCKSTEP_WITH_VIDEO=OFF: FFmpeg's codec libraries would make the bundle ~180 MiB, over the
# 60 MiB pack.sh carries), and bundles them into .gpu/ with ../shared/gpu/pack.sh (docs/gpu.md).
#   bash bench/gpu_build.sh          from the checkout root, after .ci/setup
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}
PACK=${GPU_PACK:-$ROOT/../shared/gpu/pack.sh}
[ -f "$PACK" ] || { echo "gpu_build.sh: $PACK not found (GPU_PACK=path/to/pack.sh)" >&2; exit 1; }
cd "$ROOT"
if [ ! -f build-gpu/CMakeCache.txt ]; then
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_WITH_VIDEO=OFF -DLOCKSTEP_BUILD_BENCH=ON \
    -DCMAKE_PREFIX_PATH="$("$VENV/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
    -DLOCKSTEP_PYTHON="$VENV/bin/python" >build-gpu.configure.log 2>&1 || { cat build-gpu.configure.log; exit 1; }
fi
grep -q "NCCL backend ON" build-gpu.configure.log 2>/dev/null ||
  cmake -S . -B build-gpu 2>&1 | grep -q "NCCL backend ON" || { echo "gpu_build.sh: this machine's build has no NCCL backend" >&2; exit 1; }
grep -q "LOCKSTEP_BUILD_BENCH:BOOL=ON" build-gpu/CMakeCache.txt || cmake -S . -B build-gpu -DLOCKSTEP_BUILD_BENCH=ON >/dev/null
cmake --build build-gpu -j"$(nproc)" --target lockstep gpu_tests bn_act_bench reader_bench
GPU_PACK_STRIP=1 bash "$PACK" build-gpu/lockstep build-gpu/tests/gpu_tests build-gpu/bench/bn_act_bench build-gpu/bench/reader_bench
