#!/usr/bin/env bash
# End to end on one GPU (ctest -L gpu; bench/gpu.sh runs it from the GPU bundle): a 1-rank
# job on the GPU (NCCL backend) against the same job on the CPU (MPI backend), fp16 with the
# loss scaler, resume on the GPU, cuDNN benchmark on, and no host sync inside a steady step.
# Skipped (77, "skipped: no GPU") where torch sees no GPU or the build has no NCCL backend.
#   gpu_e2e.sh LOCKSTEP MPIEXEC WORKDIR          data from bench/gpu_data.py (h5py, numpy)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)  # before common.sh changes directory
source "$ROOT/tests/e2e/common.sh" "$@"
"$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  { echo "skipped: no GPU"; exit 77; }

"$PYTHON" "$ROOT/bench/gpu_data.py" small.h5 2048 1 28 28 10 >/dev/null
"$LOCKSTEP" shard --input hdf5:small.h5 --output data --shards 2 --name gpu-small >/dev/null
COMMON=(--data data --batch-size 64 --lr 0.05 --epochs 3 --log-every 5 --model.dropout 0 --seed 7)

# 1. GPU == CPU over 20 steps: TF32 off (NVIDIA_TF32_OVERRIDE=0 reaches cuBLAS and cuDNN),
# so the float32 losses differ only by summation order.
expect_rc 0 env NVIDIA_TF32_OVERRIDE=0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --max-steps 20 --run-dir gpu
expect_output 'backend nccl, device cuda'
expect_output '\(cudnn benchmark\)'
expect_rc 0 "$LOCKSTEP" train "${COMMON[@]}" --backend mpi --max-steps 20 --run-dir cpu
"$PYTHON" - gpu/metrics.jsonl cpu/metrics.jsonl <<'PY' || fail "GPU and CPU losses differ beyond 1e-3 relative"
import json, sys
rows = [[json.loads(l)["train_loss"] for l in open(p) if '"kind":"train"' in l] for p in sys.argv[1:]]
assert len(rows[0]) == len(rows[1]) == 4, rows
worst = max(abs(a - b) / abs(b) for a, b in zip(*rows))
print(f"GPU vs CPU train losses over 20 steps: worst relative difference {worst:.2e}")
assert worst < 1e-3, rows
PY
pass "20 steps on the GPU equal the CPU's (TF32 off)"

# 2. fp16: the loss scaler runs on the GPU; the scale is reported, losses stay finite.
expect_rc 0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --amp fp16 --max-steps 20 --run-dir fp16
"$PYTHON" - fp16/metrics.jsonl <<'PY' || fail "fp16 rows"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"kind":"train"' in l]
assert rows and all(math.isfinite(r["train_loss"]) and r["loss_scale"] > 0 for r in rows), rows
print(f"fp16: scale {rows[-1]['loss_scale']}, {rows[-1].get('skipped_steps', 0)} step(s) skipped")
PY
pass "fp16 with the loss scaler"

# 3. Resume on the GPU continues at the saved step.
expect_rc 0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --max-steps 30 --run-dir gpu
expect_output 'resumed from gpu/checkpoints/step-000000020.ckpt at step 20'
[ "$(json_rows gpu/metrics.jsonl end step | tail -1)" = 30 ] || fail "the resumed GPU run did not end at 30"
pass "resume on the GPU"

# 4. No host sync inside a steady step: from step 6 on, c10's sync debug mode is an error
# inside the step (--debug.sync-check), in float32 and bf16.
for amp in none bf16; do
  expect_rc 0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --amp $amp --max-steps 15 --debug.sync-check 6 \
    --run-dir sync-$amp
done
pass "no host sync inside a steady step (fp32, bf16)"
echo "e2e gpu: all passed"
