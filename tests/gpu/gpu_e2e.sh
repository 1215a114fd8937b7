#!/usr/bin/env bash
# End to end on one GPU (ctest -L gpu; bench/gpu.sh runs it from the GPU bundle): a 1-rank
# job on the GPU (NCCL backend, the whole step a CUDA graph by default) against the same job on
# the CPU (MPI backend), the graph against the eager step, fp16 with the loss scaler, resume on
# the GPU, cuDNN benchmark on, no host sync inside a steady step, the GPU gauges and MFU in
# the log rows, the fused BatchNorm+ReLU kernels (--model.fused-bn on) against the unfused step,
# lockstep's max-pool (--model.max-pool lockstep) against ATen's, and Adam captured against Adam
# eager (fp32 and fp16).
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
# so the float32 losses differ only by summation order, which grows as training goes. The
# synthetic set is learnt fast (the loss falls from ~1.9 to ~0.002 in 20 steps), and the
# relative difference of a loss near zero is all rounding (measured on an H100, 2026-11-27:
# 3e-5 while the loss is above 0.5, 8e-3 at 0.002): within 1e-3 of max(loss, 0.1).
# The GPU run is the whole-step CUDA graph (auto); 1b compares it with the eager step.
judge() {  # judge A B TITLE: train losses of two runs within 1e-3 of max(|loss|, 0.1)
  "$PYTHON" - "$1/metrics.jsonl" "$2/metrics.jsonl" "$3" <<'PY'
import json, sys
rows = [[json.loads(l)["train_loss"] for l in open(p) if '"kind":"train"' in l] for p in sys.argv[1:3]]
assert len(rows[0]) == len(rows[1]) == 4, rows
worst = max(abs(a - b) / max(abs(b), 0.1) for a, b in zip(*rows))
print(f"{sys.argv[3]}: train losses over 20 steps, worst difference {worst:.2e} of max(loss, 0.1): {rows}")
assert worst < 1e-3, rows
PY
}
expect_rc 0 env NVIDIA_TF32_OVERRIDE=0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --max-steps 20 --run-dir gpu
expect_output 'backend nccl, device cuda'
expect_output '\(cudnn benchmark\)'
expect_output 'whole-step CUDA graph captured after 3 eager steps'
# The gauges and MFU are observability, not the step: a VM whose NVML reports no power, or a
# GPU missing from the peak table, is a NOTE here, and the checks after it still run.
if grep -q 'MFU in log rows: ' "$WORK/out.txt" &&
  grep -Eq '; GPU busy [0-9]+%, [0-9.]+ GiB, [0-9]+ W, MFU [0-9.]+%' "$WORK/out.txt" &&
  "$PYTHON" - gpu/metrics.jsonl <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"kind":"train"' in l]
assert rows and all(len(r["gpu_util_pct"]) == 1 and r["gpu_mem_gib"][0] > 0 and 0 < r["mfu_pct"] < 100 for r in rows), rows[-1]
PY
then
  pass "GPU gauges (NVML) and MFU in the log rows"
else
  echo "NOTE: GPU gauges or MFU incomplete in the log rows: $(grep -Eo '(; GPU busy|MFU)[^;]*' "$WORK/out.txt" | tail -2 | tr '\n' ' ')"
fi
expect_rc 0 "$LOCKSTEP" train "${COMMON[@]}" --backend mpi --max-steps 20 --run-dir cpu
judge gpu cpu "GPU vs CPU" || fail "GPU and CPU losses differ beyond 1e-3 of max(loss, 0.1)"
pass "20 steps on the GPU (a CUDA graph) equal the CPU's (TF32 off)"

# 1b. The captured step == the eager step on the GPU.
expect_rc 0 env NVIDIA_TF32_OVERRIDE=0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --max-steps 20 --run-dir eager \
  --train.cuda-graph off
judge gpu eager "CUDA graph vs eager" || fail "the CUDA graph's losses differ from the eager step's"
pass "the whole-step CUDA graph equals the eager step"

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

# 5. --model.fused-bn on (core/model/bn_act_kernels.cu): the CUDA graph with the fused kernels
# == the unfused eager step within 1e-3 of max(loss, 0.1) (TF32 off), and no host sync inside
# a steady step in bf16.
expect_rc 0 env NVIDIA_TF32_OVERRIDE=0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --max-steps 20 --run-dir fused \
  --model.fused-bn on
expect_output 'fused BatchNorm\+ReLU: 2 of 2 BatchNorm\+ReLU layer\(s\) ran fused \(the first step\)'
judge fused eager "fused BatchNorm+ReLU vs unfused" || fail "the fused BatchNorm's losses differ from the unfused step's"
expect_rc 0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --amp bf16 --max-steps 15 --debug.sync-check 6 \
  --run-dir sync-fused --model.fused-bn on
pass "--model.fused-bn on: the fused kernels train as the unfused step does, with no host sync"

# 6. --model.max-pool lockstep (core/model/max_pool_kernels.cu): the CUDA graph with lockstep's
# max-pool == the eager step with ATen's within 1e-3 of max(loss, 0.1) (TF32 off; the pool
# itself is bit for bit ATen's: gpu_tests), and with the fused BatchNorm no host sync in bf16.
expect_rc 0 env NVIDIA_TF32_OVERRIDE=0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --max-steps 20 --run-dir own-pool \
  --model.max-pool lockstep
expect_output "lockstep max-pool: 2 of 2 max-pool layer\(s\) ran lockstep's kernels \(the first step\)"
judge own-pool eager "lockstep's max-pool vs ATen's" || fail "lockstep's max-pool: the losses differ from ATen's eager step's"
expect_rc 0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --amp bf16 --max-steps 15 --debug.sync-check 6 \
  --run-dir sync-own --model.fused-bn on --model.max-pool lockstep
pass "--model.max-pool lockstep: trains as ATen's max-pool does, with no host sync"

# 7. Adam in the whole-step CUDA graph (--train.cuda-graph on; auto leaves it eager until the
# GPU report has measured it): its lr and step count read on the device each replay == the
# eager Adam step within 1e-3 of max(loss, 0.1) (TF32 off), and no host sync inside a steady
# step in bf16.
ADAM=(--train.optimizer adam --lr 0.001)
expect_rc 0 env NVIDIA_TF32_OVERRIDE=0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --max-steps 20 --run-dir adam-graph \
  "${ADAM[@]}" --train.cuda-graph on
expect_output 'whole-step CUDA graph captured after 3 eager steps'
expect_rc 0 env NVIDIA_TF32_OVERRIDE=0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --max-steps 20 --run-dir adam-eager \
  "${ADAM[@]}" --train.cuda-graph off
judge adam-graph adam-eager "Adam: CUDA graph vs eager" || fail "Adam: the CUDA graph's losses differ from the eager step's"
# Resumed across a capture: the host step counts the checkpoint holds are the replays'.
for steps in 10 20; do
  expect_rc 0 env NVIDIA_TF32_OVERRIDE=0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --max-steps $steps \
    --run-dir adam-resumed "${ADAM[@]}" --train.cuda-graph on
done
expect_output 'resumed from'
judge adam-resumed adam-eager "Adam: CUDA graph resumed at step 10 vs eager" || fail "Adam: the resumed CUDA graph's losses differ"
expect_rc 0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --amp bf16 --max-steps 15 --debug.sync-check 6 \
  --run-dir sync-adam "${ADAM[@]}" --train.cuda-graph on
# fp16: the loss scaler's skip and Adam's step count stay on the device (core/optim/step_counter),
# so the graph holds them too: == the eager fp16 Adam step, and no host sync while replaying.
for g in on off; do
  expect_rc 0 env NVIDIA_TF32_OVERRIDE=0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --amp fp16 --max-steps 20 \
    --run-dir "adam-fp16-$g" "${ADAM[@]}" --train.cuda-graph $g
done
grep -q 'whole-step CUDA graph captured after 3 eager steps' adam-fp16-on/train.log || fail "fp16 Adam was not captured"
judge adam-fp16-on adam-fp16-off "Adam fp16: CUDA graph vs eager" || fail "Adam fp16: the CUDA graph's losses differ from the eager step's"
expect_rc 0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --amp fp16 --max-steps 15 --debug.sync-check 6 \
  --run-dir sync-adam-fp16 "${ADAM[@]}" --train.cuda-graph on
pass "Adam in the whole-step CUDA graph (fp32, bf16, fp16) trains as the eager Adam step does, with no host sync"

# 8. (last: a failure here hides no other section) The eager fp16 Adam step, what auto runs for
# Adam: the loss scaler's found-inf and Adam's step count stay on the device, so no host sync
# inside a steady step either (before 2026-11-28 found-inf was read every step).
expect_rc 0 "$LOCKSTEP" train "${COMMON[@]}" --backend nccl --amp fp16 --max-steps 15 --debug.sync-check 6 \
  --run-dir sync-adam-fp16-eager "${ADAM[@]}" --train.cuda-graph off
pass "the eager fp16 Adam step makes no host sync"
echo "e2e gpu: all passed"
