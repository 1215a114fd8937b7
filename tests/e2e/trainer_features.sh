#!/usr/bin/env bash
# End to end: the trainer's features on small data. Models (mlp, resnet, cnn1d,
# torchscript:PATH), --sync-bn, optimizers, LR scaling and schedules, class weights, label
# smoothing, AMP on CPU (bf16; fp16 with loss scaling), clipping, evaluation every N steps,
# NaN loss naming its step, TensorBoard files read back by the tensorboard package, the
# progress bar on a terminal and plain lines otherwise.
source "$(dirname "$0")/common.sh" "$@"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

make_slice data 1024 2  # 922 train samples (a stratified tenth is 'val'): 14 steps/epoch at 2 x 32
NOLR=(--data data --batch-size 32 --log-every 4)
BASE=("${NOLR[@]}" --lr 0.05)

# --- models -------------------------------------------------------------------------
expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir mlp --model mlp --max-steps 8
expect_output 'model mlp \([0-9]+ parameters'
expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir resnet --model resnet --width 16 --max-steps 4 --sync-bn
expect_output 'model resnet \([0-9]+ parameters, channels-last, sync-bn'
# Width 4: the 1x1 stride-2 shortcut convs have 4 and 8 input channels, which oneDNN's
# channels-last weight gradient corrupts memory on (core/model/memory_format.hpp): auto
# runs it NCHW and says so, an explicit channels-last is refused.
expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir resnet4 --model resnet --width 4 --max-steps 4 --sync-bn
expect_output 'note: model resnet runs contiguous \(NCHW\) on CPU, not channels-last: layer layer2_0.down_conv is a 1x1 convolution with stride 2x2 and 4 input channel'
expect_output 'model resnet \([0-9]+ parameters, sync-bn'
expect_rc 2 "$LOCKSTEP" train "${BASE[@]}" --run-dir resnet4cl --model resnet --width 4 --max-steps 4 --model.memory-format channels-last
expect_output '--model.memory-format channels-last on CPU: layer layer2_0.down_conv'
pass "mlp and resnet (with --sync-bn) train at 2 ranks; narrow resnets stay NCHW on CPU"
for job in fashion_mnist_long fashion_mnist_tta fashion_mnist_resnet; do  # the accuracy jobs as shipped, a few steps
  expect_rc 0 run_mpi 2 train --config "$ROOT/jobs/$job.ini" --data data --run.dir "job-$job" --batch-size 16 \
    --model.width 4 --max-steps 3 --log-every 1
  expect_output 'step 3/'
done
[ "$(json_rows job-fashion_mnist_resnet/metrics.jsonl test eval_hflip)" = True ] || fail "the ResNet job's test pass is not mirrored"
pass "jobs/fashion_mnist_{long,tta,resnet}.ini parse and train (a few steps, width 4; the ResNet job's test pass mirrored)"

# --- memory format: a conv net runs channels-last on CPU (auto); the same result either way
for mf in auto contiguous; do
  expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir "mf-$mf" --model cnn --width 4 --max-steps 8 --model.memory-format $mf
done
grep -q 'parameters, channels-last' mf-auto/train.log || fail "auto did not run the cnn channels-last"
! grep -q 'channels-last' mf-contiguous/train.log || fail "--model.memory-format contiguous ran channels-last"
"$PYTHON" - mf-auto/metrics.jsonl mf-contiguous/metrics.jsonl <<'PY' || fail "channels-last and contiguous runs diverge"
import json, sys
loss = [[r["train_loss"] for r in map(json.loads, open(p)) if r["kind"] == "train"] for p in sys.argv[1:]]
assert len(loss[0]) == len(loss[1]) > 0 and all(abs(a - b) < 1e-3 * max(1, abs(b)) for a, b in zip(*loss)), loss
PY
expect_rc 2 run_mpi 2 train "${BASE[@]}" --run-dir mf-mlp --model mlp --max-steps 2 --model.memory-format channels-last
expect_output 'model.memory-format channels-last is for conv nets over images or clips .*not model mlp'
expect_rc 2 run_mpi 2 train "${BASE[@]}" --run-dir mf-bad --max-steps 2 --model.memory-format nhwc
expect_output 'model.memory-format'
pass "--model.memory-format: auto runs the cnn channels-last with contiguous's losses; channels-last on an mlp and an unknown format: exit 2"

"$PYTHON" - series.csv <<'PY'
import math, random, sys
random.seed(1)
with open(sys.argv[1], "w") as f:
    f.write("ax,ay,az,activity\n")
    for block in range(96):
        label = block % 3
        for t in range(32):
            v = [math.sin((label + 1) * t / 4.0 + k) + random.gauss(0, 0.3) for k in range(3)]
            f.write(",".join(f"{x:.4f}" for x in v) + f",{['walk','sit','run'][label]}\n")
PY
"$LOCKSTEP" shard --input csv:series.csv --window 32 --output series --shards 2 --val-fraction 0.25 >/dev/null
expect_rc 0 run_mpi 2 train --data series --data.val-split val --batch-size 8 --log-every 2 --lr 0.05 \
  --run-dir cnn1d --model cnn1d --width 8 --epochs 2 --class-weights auto
expect_output 'class weights \(auto\)'
expect_output '0 run'
expect_output 'per-class metrics'
pass "cnn1d trains on CSV windows; class-weight table and per-class metrics printed"

"$PYTHON" "$(dirname "$0")/make_script_model.py" model.pt 10
"$PYTHON" "$(dirname "$0")/make_script_model.py" bad.pt 7
expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir script --model "torchscript:$WORK/model.pt" --max-steps 12
expect_output "model torchscript:$WORK/model.pt \(15786 parameters"
losses=$(json_rows script/metrics.jsonl train train_loss | tr '\n' ' ')
python3 -c "import sys; v=[float(x) for x in sys.argv[1:]]; assert v[-1] < v[0], v" $losses ||
  fail "torchscript model did not learn: $losses"
expect_rc 2 run_mpi 1 train "${BASE[@]}" --run-dir bad --model "torchscript:$WORK/bad.pt"
expect_output 'forward returns shape \[2, 7\] .* expected \[2, 10\]'
pass "torchscript module trains (loss $losses); a mismatched one is a usage error"
# A hostile round on users' own models: a module's own requires_grad=False was trained anyway;
# its dotted names (conv.weight) were conv__weight to --model.freeze (a prefix matching nothing
# froze nothing, silently), to --init-from and in exports; its errors were tracebacks; a
# detached, fixed-batch or float64 model failed late, in LibTorch's words.
for v in frozen raises detached batch2 double; do "$PYTHON" "$(dirname "$0")/make_script_model.py" "$v.pt" 10 "$v"; done
expect_rc 0 run_mpi 1 train "${BASE[@]}" --run-dir frozen --model "torchscript:$WORK/frozen.pt" --max-steps 4
expect_rc 0 "$LOCKSTEP" export --checkpoint frozen/checkpoints/step-000000004.ckpt --model "torchscript:$WORK/frozen.pt" \
  --out frozen.safetensors
"$PYTHON" - frozen.pt frozen.safetensors <<'PY' || fail "a parameter frozen in Python was trained, or exported under another name"
import json, struct, sys, torch
m = torch.jit.load(sys.argv[1])
raw = open(sys.argv[2], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
def tensor(name):
    lo, hi = head[name]["data_offsets"]
    return torch.frombuffer(bytearray(raw[8 + n + lo:8 + n + hi]), dtype=torch.float32).reshape(head[name]["shape"])
assert {"conv.weight", "bn.running_mean", "fc.bias"} <= set(head), sorted(head)
assert torch.equal(tensor("conv.weight"), m.conv.weight) and torch.equal(tensor("conv.bias"), m.conv.bias)
assert not torch.equal(tensor("fc.weight"), m.fc.weight), "fc did not train"
PY
expect_rc 0 run_mpi 1 train "${BASE[@]}" --run-dir dotted --model "torchscript:$WORK/model.pt" --max-steps 2 \
  --model.freeze conv. --model.init-from frozen.safetensors
expect_output 'frozen: 2 parameter tensor\(s\) under conv\.'
expect_output 'unexpected +0'
expect_rc 2 "$LOCKSTEP" train "${BASE[@]}" --run-dir misspelt --model "torchscript:$WORK/model.pt" --model.freeze convv.
expect_output "--model.freeze convv.: no parameter's name starts with it \(the model's: conv.weight, conv.bias, bn.weight"
expect_rc 2 "$LOCKSTEP" train "${BASE[@]}" --run-dir raises --model "torchscript:$WORK/raises.pt"
expect_output 'raises.pt: forward failed: .*Error: my model refuses to train today \(on a batch of shape \[3, 1, 28, 28\] in train mode\)$'
! grep -q Traceback out.txt || fail "the model's error was a traceback"
expect_rc 2 "$LOCKSTEP" train "${BASE[@]}" --run-dir detached --model "torchscript:$WORK/detached.pt"
expect_output 'in train mode forward returns logits that do not depend on its parameters'
expect_rc 2 "$LOCKSTEP" train "${BASE[@]}" --run-dir batch2 --model "torchscript:$WORK/batch2.pt"
expect_output 'forward returns \[2, 10\] Float for a batch of 3, expected floating logits \[3, classes\] \(on a batch of shape \[3, 1, 28, 28\] in train mode\)'
expect_rc 2 "$LOCKSTEP" train "${BASE[@]}" --run-dir double --model "torchscript:$WORK/double.pt"
expect_output 'parameter conv.weight is Double; lockstep trains float32 parameters'
pass "your model as written: its frozen parameters stay, its dotted names freeze, load and export; its errors, a detached, fixed-batch or float64 model: one line, exit 2"

# --- optimisation ---------------------------------------------------------------------
for opt in "--optimizer adam --lr 0.001" "--optimizer adamw --lr 0.001 --train.weight-decay 0.01" \
           "--optimizer sgd --lr 0.05 --train.nesterov true --schedule step --train.step-epochs 0.25"; do
  # shellcheck disable=SC2086
  expect_rc 0 run_mpi 2 train "${NOLR[@]}" --run-dir "opt$RANDOM" --max-steps 8 $opt
  expect_output "optimizer $(echo "$opt" | awk '{print $2}')"
done
expect_output 'sgd \(nesterov\)'
expect_output 'x0.1 every 4 steps'
expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir scaled --max-steps 4 --lr-scaling linear --train.warmup-epochs 0.5
expect_output 'batch 32/rank x world 2 x accumulation 1 = effective batch 64'
expect_output 'lr 0.05 x linear scaling for world 2 = effective lr 0.1 \(constant, warmup 7 steps\)'
pass "adam, adamw, nesterov, step schedule, linear LR scaling with warmup epochs"
# A cosine resumed on another world size: a step of 1 rank takes half the samples of one of
# 2, so the checkpoint's step 14 (epoch 1 at 2 ranks) is step 28 of a 1-rank run. The
# schedule counts the 1-rank steps: from the resume on, the lr is the uninterrupted 1-rank
# run's, to its floor at the end (before, the horizon was 56 steps of a 42-step run).
COS=("${BASE[@]}" --train.schedule cosine --epochs 2 --log-every 1 --data.val-split none --data.test-split none)
expect_rc 0 "$LOCKSTEP" train "${COS[@]}" --run-dir cos-1
expect_rc 0 run_mpi 2 train "${COS[@]}" --run-dir cos-21 --max-steps 14
expect_rc 0 "$LOCKSTEP" train "${COS[@]}" --run-dir cos-21
expect_output "the learning-rate schedule counts this run's steps of 32 samples: the checkpoint's step 14 is its step 28 \(the run ends at step 42\)"
# The 2-rank run's cosine ended at its --max-steps 14; this one's ends at 42: the rate jumps back up.
expect_output "the checkpoint's last step \(step 14\) ran at learning rate 0.000626802; this run's schedule gives that step 0.0264018 .*so the rate jumps: step 15 runs at 0.025 and the schedule ends at step 42"
# A resume's lines come before the run's start and are in train.log too (they were not).
grep -q "resumed from cos-21/checkpoints/step-000000014.ckpt" cos-21/train.log && grep -q "rate jumps" cos-21/train.log ||
  fail "train.log lacks the resume's lines"
"$PYTHON" - cos-1/metrics.jsonl cos-21/metrics.jsonl <<'PY' || fail "a cosine resumed from 2 ranks to 1 left the 1-rank schedule"
import json, sys
def lrs(path):
    return {r["step"]: r["lr"] for r in map(json.loads, open(path)) if r["kind"] == "train"}
one, resumed = lrs(sys.argv[1]), lrs(sys.argv[2])
assert max(one) == 56 and max(resumed) == 42, (max(one), max(resumed))
for step in range(15, 43):
    assert resumed[step] == one[step + 14], (step, resumed[step], one[step + 14])
PY
pass "a cosine resumed on another world size continues the lr and ends at its floor with the run"
# --train.max-steps raised on a finished cosine: the decay restarts higher, which one line says.
expect_rc 0 "$LOCKSTEP" train "${COS[@]}" --run-dir cos-1 --epochs 3
expect_output "the checkpoint's last step \(step 56\) ran at learning rate .*; this run's schedule gives that step .* so the rate jumps: step 57 runs at .* and the schedule ends at step 84"
pass "a resume whose schedule moved says the learning rate jumps"

expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir clip --max-steps 8 --clip-norm 0.01 --label-smoothing 0.1
expect_output 'clip norm 0.01, label smoothing 0.1'
[ "$(json_rows clip/metrics.jsonl end clipped_steps)" = 8 ] || fail "clip-norm 0.01 should clip every step"
# The count is the run's, as the fp16 skip count is: a resume continues it (it restarted at 0).
expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir clip --max-steps 12 --clip-norm 0.01 --label-smoothing 0.1
[ "$(json_rows clip/metrics.jsonl end clipped_steps | tr '\n' ' ')" = "8 12 " ] || fail "clipped_steps after a resume: $(json_rows clip/metrics.jsonl end clipped_steps)"
! grep -q "rate jumps" "$WORK/out.txt" || fail "a constant rate resumed with more steps does not jump"
pass "gradient clipping counted in metrics; label smoothing accepted"

expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir bf16 --max-steps 8 --amp bf16
expect_output 'amp bf16'
expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir fp16 --max-steps 8 --amp fp16
expect_output 'loss-scale [0-9]+ skipped [0-9]+'
[ -n "$(json_rows fp16/metrics.jsonl end loss_scale)" ] || fail "fp16 metrics lack the loss scale"
"$PYTHON" - fp16/tb <<'PY' || fail "TensorBoard lacks the fp16 loss scale"
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
assert {"train/loss_scale", "train/skipped_steps"} <= set(acc.Tags()["scalars"]), acc.Tags()["scalars"]
PY
pass "AMP bf16 and fp16 (loss scale $(json_rows fp16/metrics.jsonl end loss_scale)) run through CPU autocast"

# --train.cuda-graph: on a GPU the step is captured over fixed buffers; on the CPU "on" runs
# the same fixed-buffer step uncaptured. Through the whole trainer it must equal the eager
# step bit for bit: every step's loss, dropout, momentum, weight decay, clipping, flips and
# crops, fp16's loss scaler included.
for amp in none fp16; do
  for g in off on; do
    expect_rc 0 "$LOCKSTEP" train "${BASE[@]}" --run-dir "graph-$amp-$g" --max-steps 12 --log-every 1 --amp $amp \
      --train.cuda-graph $g --train.weight-decay 0.001 --clip-norm 0.5 --data.hflip true --data.random-crop 2
  done
  expect_output 'the step runs over fixed buffers as a GPU captures it'
  [ "$(json_rows graph-$amp-off/metrics.jsonl train train_loss)" = "$(json_rows graph-$amp-on/metrics.jsonl train train_loss)" ] ||
    fail "the fixed-buffer step's losses differ from the eager step's ($amp)"
  [ "$(json_rows graph-$amp-off/metrics.jsonl end clipped_steps)" = "$(json_rows graph-$amp-on/metrics.jsonl end clipped_steps)" ] ||
    fail "clipped steps differ ($amp)"
done
# At 2 ranks the fixed-buffer step holds the gradient reduction too (every gradient its
# bucket slot): the same losses as the eager 2-rank step, bit for bit.
for g in off on; do
  expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir "graph-2-$g" --max-steps 8 --log-every 1 --train.cuda-graph $g \
    --train.weight-decay 0.001 --clip-norm 0.5 --data.hflip true
done
expect_output 'the step runs over fixed buffers as a GPU captures it'
[ "$(json_rows graph-2-off/metrics.jsonl train train_loss)" = "$(json_rows graph-2-on/metrics.jsonl train train_loss)" ] ||
  fail "the 2-rank fixed-buffer step's losses differ from the eager step's"
pass "--train.cuda-graph on (the fixed-buffer step, uncaptured on the CPU) equals the eager step bit for bit, fp32 and fp16, 1 and 2 ranks"

# Adam and AdamW over fixed buffers (the lr a device tensor written before each step, the step
# count the device's, advanced inside the step): the eager step's losses bit for bit, also
# across a resume (a checkpoint holds the count settled from the device); under fp16 too,
# where the loss scaler's skip stays on the device and a skipped step does not count.
ADAM=("${NOLR[@]}" --lr 0.002 --train.weight-decay 0.001 --clip-norm 0.5 --log-every 1)
# AdamW with the lr changing every step (the device lr must follow); the resumed Adam pair
# keeps it constant (a cosine's horizon is --max-steps, which the pair's first half changes).
SCHEDULE=(--train.warmup-steps 3 --train.schedule cosine)
for amp in none fp16; do
  expect_rc 0 "$LOCKSTEP" train "${ADAM[@]}" --train.optimizer adam --amp $amp --run-dir adam-$amp-off --max-steps 12 \
    --train.cuda-graph off
  expect_rc 0 "$LOCKSTEP" train "${ADAM[@]}" --train.optimizer adam --amp $amp --run-dir adam-$amp-on --max-steps 6 \
    --train.cuda-graph on
  expect_rc 0 "$LOCKSTEP" train "${ADAM[@]}" --train.optimizer adam --amp $amp --run-dir adam-$amp-on --max-steps 12 \
    --train.cuda-graph on
  expect_output "resumed from adam-$amp-on/checkpoints/step-000000006.ckpt at step 6"
  expect_output 'the step runs over fixed buffers as a GPU captures it'
  [ "$(json_rows adam-$amp-off/metrics.jsonl train train_loss)" = "$(json_rows adam-$amp-on/metrics.jsonl train train_loss)" ] ||
    fail "adam ($amp): the fixed-buffer step's losses (resumed at step 6) differ from the eager step's"
done
# fp16 starts at a loss scale of 65536, which these runs overflow: the first steps are skipped,
# before the checkpoint at step 6 (a resumed count that counted them would change the losses).
[ "$(json_rows adam-fp16-on/metrics.jsonl end skipped_steps | head -1)" -gt 0 ] ||
  fail "the fp16 adam run skipped no step before its checkpoint at step 6"
# StepRunner's eager fp16 Adam step, its count on the device, against torch::optim's step
# (--train.fused-optimizer false: found-inf read on the host, a count per parameter): within
# 1e-3 of max(loss, 0.1). Measured here: 5e-5 (fused vs per-parameter rounding); with a count
# that kept the skipped steps, 0.16.
expect_rc 0 "$LOCKSTEP" train "${ADAM[@]}" --train.optimizer adam --amp fp16 --run-dir adam-fp16-host --max-steps 12 \
  --train.fused-optimizer false
"$PYTHON" - adam-fp16-off/metrics.jsonl adam-fp16-host/metrics.jsonl <<'PY' || fail "fp16 adam: the device-counted step left torch::optim's"
import json, sys
rows = [[json.loads(l)["train_loss"] for l in open(p) if '"kind":"train"' in l] for p in sys.argv[1:3]]
assert len(rows[0]) == len(rows[1]) == 12, rows
worst = max(abs(a - b) / max(abs(b), 0.1) for a, b in zip(*rows))
assert worst < 1e-3, (worst, rows)
PY
for g in off on; do
  expect_rc 0 run_mpi 2 train "${ADAM[@]}" "${SCHEDULE[@]}" --train.optimizer adamw --run-dir "adamw-2-$g" --max-steps 8 \
    --train.cuda-graph $g
done
[ "$(json_rows adamw-2-off/metrics.jsonl train train_loss)" = "$(json_rows adamw-2-on/metrics.jsonl train train_loss)" ] ||
  fail "adamw at 2 ranks: the fixed-buffer step's losses differ from the eager step's"
pass "--train.cuda-graph on with adam (fp32 and fp16, resumed midway) and adamw (2 ranks, warmup + cosine) equals the eager step bit for bit"

# --model.fused-bn on: each BatchNorm and its ReLU as one node (on the CPU, the CUDA kernels'
# steps as loops): the start line says so; the losses follow the unfused run's within float
# rounding; the fixed-buffer step runs it bit for bit as the eager step does. lr 0.01: at
# 0.05 this run is chaotic enough that ATen alone on 1 vs 2 threads parts by 5% in 6 steps.
for f in off on; do
  expect_rc 0 "$LOCKSTEP" train "${NOLR[@]}" --lr 0.01 --run-dir "fbn-$f" --max-steps 12 --log-every 1 --model.fused-bn $f
done
expect_output 'fused BatchNorm\+ReLU: 2 of 2 BatchNorm\+ReLU layer\(s\) ran fused \(the first step\)'
expect_rc 0 "$LOCKSTEP" train "${NOLR[@]}" --lr 0.01 --run-dir fbn-graph --max-steps 12 --log-every 1 --model.fused-bn on \
  --train.cuda-graph on
"$PYTHON" - "$(json_rows fbn-off/metrics.jsonl train train_loss)" "$(json_rows fbn-on/metrics.jsonl train train_loss)" <<'PY' ||
import sys
off, on = ([float(v) for v in a.split()] for a in sys.argv[1:3])
assert len(off) == len(on) == 12, (off, on)
worst = max(abs(a - b) / (1 + abs(a)) for a, b in zip(off, on))
assert worst < 5e-3, f"fused vs unfused losses differ by {worst}: {off} {on}"
print(f"fused vs unfused: largest loss difference {worst:.2e} over 12 steps")
PY
  fail "--model.fused-bn on: the losses left the unfused run's"
[ "$(json_rows fbn-on/metrics.jsonl train train_loss)" = "$(json_rows fbn-graph/metrics.jsonl train train_loss)" ] ||
  fail "--model.fused-bn on: the fixed-buffer step's losses differ from the eager step's"
expect_rc 0 "$LOCKSTEP" train "${BASE[@]}" --run-dir fbn-nchw --max-steps 2 --model.fused-bn on --model.memory-format contiguous
expect_output "note: --model.fused-bn on: nothing fuses in model 'cnn': its activations are not channels-last"
pass "--model.fused-bn on trains as the unfused layers do (float rounding), eagerly and over fixed buffers; where nothing can fuse it says why"

# --model.max-pool lockstep: the reference CNN's two max-pools through lockstep's kernels (on
# the CPU their rules as loops): the first step says so; the losses are ATen's bit for bit
# (fbn-off above ran ATen's), eagerly and over fixed buffers; NCHW keeps ATen's with a note.
expect_rc 0 "$LOCKSTEP" train "${NOLR[@]}" --lr 0.01 --run-dir mp-on --max-steps 12 --log-every 1 --model.max-pool lockstep
expect_output "lockstep max-pool: 2 of 2 max-pool layer\(s\) ran lockstep's kernels \(the first step\)"
expect_output "lockstep's max-pool \(--model.max-pool lockstep\)"
expect_rc 0 "$LOCKSTEP" train "${NOLR[@]}" --lr 0.01 --run-dir mp-graph --max-steps 12 --log-every 1 --model.max-pool lockstep \
  --train.cuda-graph on
[ "$(json_rows fbn-off/metrics.jsonl train train_loss)" = "$(json_rows mp-on/metrics.jsonl train train_loss)" ] ||
  fail "--model.max-pool lockstep: the losses differ from ATen's max-pool's"
[ "$(json_rows mp-on/metrics.jsonl train train_loss)" = "$(json_rows mp-graph/metrics.jsonl train train_loss)" ] ||
  fail "--model.max-pool lockstep: the fixed-buffer step's losses differ from the eager step's"
expect_rc 0 "$LOCKSTEP" train "${BASE[@]}" --run-dir mp-nchw --max-steps 2 --model.max-pool lockstep --model.memory-format contiguous
expect_output "note: --model.max-pool lockstep: model 'cnn' keeps ATen's: its activations are not channels-last"
expect_rc 2 "$LOCKSTEP" train "${BASE[@]}" --run-dir mp-bad --max-steps 2 --model.max-pool fast
expect_output "model.max-pool"
pass "--model.max-pool lockstep trains as ATen's max-pool does, bit for bit, eagerly and over fixed buffers; NCHW says why not; a bad value is refused"

expect_rc 1 run_mpi 2 train "${NOLR[@]}" --run-dir nan --lr 1e20 --max-steps 16 --log-every 8
expect_output 'training loss is (nan|inf|-nan) at step 2 \(lr'
[ ! -e nan/checkpoints/step-000000016.ckpt ] || fail "a diverged run wrote a checkpoint"
pass "NaN loss stops the job naming the step: $(grep -Eo 'at step [0-9]+' out.txt | head -1)"
# fp16 skips the steps whose gradients overflow, so a run whose gradients are not finite even
# at the floor of 1 used to skip every step to the end and exit 0 with a checkpoint. Step 1
# (scale 4) is taken and diverges; steps 2 and 3 are skipped at 4 and 2, steps 4 on at the
# floor: at the epoch's end (step 14) 11 in a row, over the 10 that stop it, before the
# epoch's checkpoint.
expect_rc 1 run_mpi 2 train "${NOLR[@]}" --run-dir nan16 --lr 1e20 --amp fp16 --train.loss-scale 4 --log-every 8
expect_output "fp16: the last 11 steps \(4 to 14\) were all skipped \(gradients not finite\) at the loss scale's floor of 1"
[ ! -e nan16/checkpoints/step-000000014.ckpt ] || fail "a stalled fp16 run wrote its epoch's checkpoint"
# The same with --ckpt.every 5: no checkpoint of diverged weights (BatchNorm's statistics are
# NaN by step 5) — they were written before, and a resume trained on from them.
expect_rc 1 run_mpi 2 train "${NOLR[@]}" --run-dir nan16c --lr 1e20 --amp fp16 --train.loss-scale 4 --log-every 8 --ckpt.every 5
expect_output "step 5: buffer '[a-z0-9_.]+' holds a NaN or an infinity \(training diverged\), so no checkpoint is written and there is none yet"
[ -z "$(ls nan16c/checkpoints 2>/dev/null)" ] || fail "a diverged fp16 run wrote a checkpoint: $(ls nan16c/checkpoints)"
# An MLP's weights stay finite (huge): its checkpoints are kept, and so is the stall's streak,
# so the resume stops again (it counted afresh and finished the epoch as if it had trained).
MLP16=("${NOLR[@]}" --model mlp --run-dir nan16m --lr 1e20 --amp fp16 --train.loss-scale 4 --log-every 8 --ckpt.every 5)
expect_rc 1 run_mpi 2 train "${MLP16[@]}"
expect_output "the last 11 steps \(4 to 14\) were all skipped"
expect_rc 1 run_mpi 2 train "${MLP16[@]}"
expect_output "resumed from nan16m/checkpoints/step-000000010.ckpt"
expect_output "the last 11 steps \(4 to 14\) were all skipped"
pass "fp16 skipping every step at the floor of its loss scale stops the job naming the steps, resumed too; no checkpoint of NaN statistics"
# --train.loss-scale and --train.loss-scale-growth reach the scaler: 2, doubled after each of
# 4 finite steps.
expect_rc 0 "$LOCKSTEP" train "${BASE[@]}" --run-dir fp16-scale --amp fp16 --train.loss-scale 2 --train.loss-scale-growth 1 --max-steps 4
[ "$(json_rows fp16-scale/metrics.jsonl end loss_scale)/$(json_rows fp16-scale/metrics.jsonl end skipped_steps)" = 32.0/0 ] ||
  fail "--train.loss-scale 2 with growth 1 over 4 steps: scale/skipped $(json_rows fp16-scale/metrics.jsonl end loss_scale)/$(json_rows fp16-scale/metrics.jsonl end skipped_steps), want 32/0"
! grep -q "nothing trained" "$WORK/out.txt" || fail "a run that trained said nothing trained"
# A start scale far above what the gradients bear skips every step above the floor (no stall):
# the run ends with the warning that nothing trained (it said "finished" alone).
expect_rc 0 "$LOCKSTEP" train "${BASE[@]}" --run-dir fp16-huge --amp fp16 --train.loss-scale 1e38 --max-steps 6
expect_output "fp16: the loss scaler skipped every one of this run's 6 steps .*nothing trained"
pass "--train.loss-scale and --train.loss-scale-growth set fp16's scaler; a run that skipped every step says nothing trained"

# --- evaluation, logs -------------------------------------------------------------------
expect_rc 0 run_mpi 2 train "${BASE[@]}" --run-dir ev --epochs 1 --eval-every 4
[ "$(json_rows ev/metrics.jsonl eval step | tr '\n' ' ')" = "4 8 12 " ] || fail "eval rows: $(json_rows ev/metrics.jsonl eval step)"
[ -n "$(json_rows ev/metrics.jsonl epoch val_f1)" ] || fail "epoch row lacks val_f1"
"$PYTHON" - ev/tb "$(json_rows ev/metrics.jsonl train step | wc -l)" <<'PY' || fail "TensorBoard could not read the event files"
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
tags = acc.Tags()["scalars"]
for tag in ("train/loss", "train/lr", "val/acc", "val/macro_f1", "time/backward_s", "ranks/busy_ms_max",
            "ranks/exposed_comm_ms_median", "ranks/slowest_rank"):
    assert tag in tags, (tag, tags)
# The run's hyper-parameters, for TensorBoard's HParams dashboard, read by its own protos.
from tensorboard.plugins.hparams import plugin_data_pb2
content = acc.PluginTagToContent("hparams")
start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"]).session_start_info
hp = start.hparams
assert hp["train.lr"].number_value == 0.05 and hp["train.batch-size"].number_value == 32, hp
assert hp["model.name"].string_value == "cnn" and hp["data.hflip"].bool_value is False, hp
assert "debug.fault" not in hp and start.start_time_secs > 1.7e9, hp
end = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_end_info"]).session_end_info
assert end.status == 1, end  # STATUS_SUCCESS
loss = acc.Scalars("train/loss")
assert len(loss) == int(sys.argv[2]), (len(loss), sys.argv[2])
assert [e.step for e in loss] == sorted(e.step for e in loss)
assert len(acc.Scalars("val/acc")) == 4, acc.Scalars("val/acc")  # 3 mid-epoch + epoch end
print("tensorboard read", len(tags), "scalar tags,", len(loss), "train/loss points,", len(hp), "hparams")
PY
pass "evaluation every 4 steps; TensorBoard reads our event files: scalars, the per-rank spread, HParams"

grep -q 'ETA' out.txt && fail "progress bar printed without a terminal"
expect_output 'epoch 1/1 step 4/14 loss'
# A 1-rank job started without a launcher (as on a login node), on a pseudo-terminal.
TERM=dumb script -qfec "timeout 120 $LOCKSTEP train ${BASE[*]} --run-dir tty --epochs 3 --max-steps 48 --log-every 16" /dev/null > tty.txt 2>&1 ||
  { cat tty.txt; fail "training on a terminal failed"; }
grep -q 'ETA' tty.txt || { cat tty.txt; fail "no progress bar on a terminal"; }
grep -q $'\r' tty.txt || fail "the progress bar does not redraw in place"
grep -q 'step 16/28 loss' tty.txt && fail "plain step lines on a terminal (they belong to train.log)"
grep -q 'step 16/28 loss' tty/train.log || fail "train.log lacks the step lines"
expect_rc 0 run_mpi 1 train "${BASE[@]}" --run-dir tty --epochs 3 --max-steps 52 --train.progress bar
expect_output 'ETA'
pass "progress bar on a terminal (or --train.progress bar), plain step lines in train.log"
# --- doctor -------------------------------------------------------------------------------
expect_rc 0 run_mpi 2 doctor --data data --doctor.out doctor.json
expect_output ' rank  host +local  gpus'
expect_output 'doctor: MPI ok'
expect_output 'doctor: data data: read one batch from each of [0-9]+ shard'
expect_output 'all-reduce .* GB/s bus bandwidth'
expect_output 'doctor: all checks passed'
grep -q '"big_seconds"' doctor.json || fail "doctor.json lacks the all-reduce timing"
cp -r data bad && shard=$(ls bad/*.h5 | tail -1) && head -c 2000 "$shard" > t && mv t "$shard"
expect_rc 1 run_mpi 2 doctor --data bad
expect_output "doctor: .*$(basename "$shard")"
expect_output 'doctor: 1 problem\(s\)'
pass "doctor: checks pass on good data, a truncated shard is named by the rank that read it"
# A hostile finding: doctor passed what train then refused at its start. Now it checks the
# training plan (check_training_plan, the model for the samples, the batch per rank), once.
expect_rc 0 run_mpi 2 doctor --data data
expect_output "doctor: training plan: model cnn on fmnist-slice \(train split\), batch [0-9]+ x 2 rank\(s\): ok"
for bad in "--data.val-split nosuch" "--model lmu" "--batch-size 5000" "--model.init-from nosuch.ckpt" \
  "--train.class-weights 1,2,3" "--trace.steps 5-2"; do
  # shellcheck disable=SC2086
  expect_rc 1 run_mpi 2 doctor --data data $bad
  expect_output 'doctor: 1 problem\(s\)'
  # shellcheck disable=SC2086
  expect_rc nonzero run_mpi 1 train --data data $bad --run-dir "plan-$RANDOM" --max-steps 1
done
expect_rc 1 run_mpi 2 doctor --data data --data.val-split nosuch
expect_output "doctor: training plan: --data.val-split nosuch: data has no such split"
pass "doctor: what train would refuse at its start (a split, a model for the samples, a batch per rank) is a problem"
# Issue 31 (11): a bad NCCL_SOCKET_IFNAME aborted at ncclGetUniqueId before the network
# check that diagnoses it. Now: diagnosed first, then NCCL tried; its failure is one
# problem on every rank's behalf, no abort.
NCCL_SOCKET_IFNAME=nonsense0 expect_rc 1 run_mpi 2 doctor --data data
expect_output 'doctor: NCCL_SOCKET_IFNAME=nonsense0 matches no interface'
if grep -q 'NCCL unique ID' "$WORK/out.txt"; then  # a build with NCCL
  diag=$(grep -n 'matches no interface' "$WORK/out.txt" | head -1 | cut -d: -f1)
  nccl=$(grep -n 'could not create the NCCL unique ID' "$WORK/out.txt" | head -1 | cut -d: -f1)
  [ -n "$nccl" ] && [ "$diag" -lt "$nccl" ] || { cat "$WORK/out.txt"; fail "NCCL tried before the network diagnosis"; }
fi
# (A failing command ends its job with MPI_Abort by design; a crash is another thing.)
grep -Eq 'terminate called|signal 6|Aborted|core dumped' "$WORK/out.txt" && { cat "$WORK/out.txt"; fail "doctor crashed"; }
pass "doctor: a bad NCCL_SOCKET_IFNAME is diagnosed before NCCL is tried, without an abort"
echo "e2e trainer_features: all passed"
