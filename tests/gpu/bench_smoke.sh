#!/usr/bin/env bash
# The GPU report's scripts, run on the CPU (CI) so the first GPU session does not find their
# bugs: bench/gpu_data.py makes data lockstep imports; bench/gpu_report.py reads a lockstep
# run's rows into a table row (wall-clock throughput from the rows' unix_time); the PyTorch
# anchor bench/gpu_anchor.py runs each mode with --device cpu (graph mode says it needs a GPU)
# and its JSON becomes a row; the speech stage's data, LMU run and anchor (bench/ddp_speech.py);
# bench/bn_act_bench runs its CPU path on a small batch. Nothing
# here is a measurement.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)  # before common.sh changes directory
source "$ROOT/tests/e2e/common.sh" "$@"

"$PYTHON" "$ROOT/bench/gpu_data.py" img.h5 512 1 28 28 10 >/dev/null
expect_rc 0 "$LOCKSTEP" shard --input hdf5:img.h5 --output data --shards 2 --name smoke --val-fraction 0
expect_rc 0 "$LOCKSTEP" train --data data --batch-size 16 --max-steps 40 --log-every 4 --epochs 100 \
  --data.val-split none --data.test-split none --run-dir run
row=$("$PYTHON" "$ROOT/bench/gpu_report.py" lockstep "lockstep cnn" run /dev/null 1e6 fp32 cpu)
echo "$row"
echo "$row" | grep -Eq '^\| lockstep cnn \| [0-9]+ \| [0-9]+ \| n/a \| n/a \| [0-9.]+% \|$' || fail "report row: $row"
pass "a lockstep run's rows become a report row"

"$PYTHON" "$ROOT/bench/gpu_data.py" rgb.h5 32 3 16 16 10 >/dev/null  # 16x16: ResNet-18 in bf16 is slow on a CPU
for spec in cnn:img.h5:fp32:eager cnn:img.h5:fp32:channels_last cnn:img.h5:fp32:graph resnet18:rgb.h5:bf16:eager; do
  IFS=: read -r model h5 dtype mode <<<"$spec"
  expect_rc 0 "$PYTHON" "$ROOT/bench/gpu_anchor.py" --h5 "$h5" --model "$model" --dtype "$dtype" --mode "$mode" \
    --batch 8 --steps 3 --warmup 1 --device cpu
  tail -1 "$WORK/out.txt" >"anchor-$model-$mode.json"
  "$PYTHON" - "anchor-$model-$mode.json" "$mode" <<'PY' || fail "anchor $spec: $(cat "$WORK/out.txt")"
import json, sys
r = json.loads(open(sys.argv[1]).read())
if sys.argv[2] == "graph":
    assert r["skipped"] == "CUDA graphs need a GPU", r
else:
    assert r["samples_per_s"] > 0 and r["flops_per_sample"] > 0 and r["t_end"] > r["t_start"], r
PY
  row=$("$PYTHON" "$ROOT/bench/gpu_report.py" pytorch "pytorch $model $mode" "anchor-$model-$mode.json" /dev/null "$dtype" cpu)
  echo "$row" | grep -Eq "^\| pytorch $model $mode \| ([0-9]+|skipped: CUDA graphs need a GPU) \|" || fail "report row: $row"
done
pass "the anchor runs every mode on the CPU; its JSON becomes report rows"
# Each table's ratios: lockstep's default row over every PyTorch row (the issue's targets).
{ echo "$row" | sed 's/^| pytorch resnet18 eager /| pytorch r18-eager /'
  "$PYTHON" "$ROOT/bench/gpu_report.py" lockstep "lockstep cnn" run /dev/null 1e6 fp32 cpu
  "$PYTHON" "$ROOT/bench/gpu_report.py" pytorch "pytorch cnn-eager" anchor-cnn-eager.json /dev/null fp32 cpu; } >rows.md
ratios=$("$PYTHON" "$ROOT/bench/gpu_report.py" ratios rows.md)
echo "$ratios"
echo "$ratios" | grep -Eq '^lockstep cnn over PyTorch: r18-eager [0-9.]+x, cnn-eager [0-9.]+x\.$' || fail "ratios: $ratios"
echo "$ratios" | grep -Eq '^Over the fastest PyTorch row \((r18|cnn)-eager\): cnn [0-9.]+x\.$' || fail "ratios: $ratios"
pass "each table's ratios of lockstep to PyTorch"

# gpu.sh video: clips from the same generator, imported and trained by lockstep as clips;
# the anchor's clip models (bench/ddp_video.py's) on the CPU in both layouts.
"$PYTHON" "$ROOT/bench/gpu_data.py" clip.h5 48 1 16 16 5 0 6 >/dev/null
expect_rc 0 "$LOCKSTEP" shard --input hdf5:clip.h5 --output clips --shards 2 --name clips --val-fraction 0
expect_rc 0 "$LOCKSTEP" train --data clips --model c3d --model.width 4 --batch-size 8 --max-steps 4 --log-every 2 \
  --epochs 100 --data.val-split none --data.test-split none --run-dir clip-run
# The Adam rows: lockstep's fixed-buffer step with Adam (uncaptured on the CPU), the anchor's Adam.
expect_rc 0 "$LOCKSTEP" train --data clips --model c3d --model.width 4 --batch-size 8 --max-steps 4 --log-every 2 \
  --epochs 100 --data.val-split none --data.test-split none --run-dir clip-adam --train.optimizer adam --lr 0.001 \
  --train.cuda-graph on
expect_output 'the step runs over fixed buffers as a GPU captures it'
anchor_runs() {  # anchor_runs H5 MODEL MODE BATCH [ARGS...]: two steps on the CPU, a throughput and FLOPs
  expect_rc 0 "$PYTHON" "$ROOT/bench/gpu_anchor.py" --h5 "$1" --model "$2" --dtype fp32 --mode "$3" --batch "$4" \
    --steps 2 --warmup 1 --device cpu "${@:5}"
  "$PYTHON" -c 'import json, sys; r = json.loads(sys.argv[1]); assert r["samples_per_s"] > 0 and r["flops_per_sample"] > 0, r' \
    "$(tail -1 "$WORK/out.txt")" || fail "anchor $*: $(cat "$WORK/out.txt")"
}
anchor_runs clip.h5 c3d eager 8 --width 4
anchor_runs clip.h5 r3d channels_last 8 --width 4 --depth 10
anchor_runs clip.h5 c3d channels_last 8 --width 4 --optimizer adam
pass "clips: the generator's clips train in lockstep (SGD, and Adam over fixed buffers); the anchor's c3d (SGD, Adam) and r3d run on the CPU"
# gpu.sh speech's HAR rows: synthetic sensor windows import as series; the HAR job's config
# trains on them over fixed buffers with Adam (the GPU's captured path, uncaptured here).
"$PYTHON" "$ROOT/bench/gpu_series_data.py" series.h5 96 6 100 4
expect_rc 0 "$LOCKSTEP" shard --input hdf5:series.h5 --output series --name series --val-fraction 0
expect_rc 0 "$LOCKSTEP" train --config "$ROOT/jobs/har_basicmotions.ini" --data series --model cnn1d --batch-size 6 \
  --max-steps 8 --log-every 2 --epochs 100 --data.val-split none --data.test-split none --run-dir har-run \
  --train.cuda-graph on
expect_output 'the step runs over fixed buffers as a GPU captures it'
row=$("$PYTHON" "$ROOT/bench/gpu_report.py" lockstep "lockstep har" har-run /dev/null 0 fp32 cpu)
echo "$row" | grep -Eq '^\| lockstep har \| [0-9]+ \| [0-9]+ \| n/a \| n/a \| [0-9.]+% \|$' || fail "HAR report row: $row"
anchor_runs series.h5 cnn1d channels_last 6 --width 8 --optimizer adam --lr 0.01
pass "HAR: synthetic sensor windows import and train the HAR job's cnn1d with Adam over fixed buffers (a report row); the anchor's cnn1d runs on the CPU"

# gpu.sh speech: synthetic utterances through lockstep's audio import; the LMU job's recipe
# trains on them (the job's config, its data overridden); the anchor (bench/ddp_speech.py --model
# lmu) on the CPU, its epochs a row, and once in bf16 autocast with its error rates.
"$PYTHON" "$ROOT/bench/gpu_speech_data.py" wav 48 >/dev/null
expect_rc 0 "$LOCKSTEP" shard --input audio:wav/train.tsv --output speech --name speech --val-fraction 0
expect_rc 0 "$LOCKSTEP" train --data speech --model lmu --model.width 16 --config "$ROOT/jobs/speech_digits_lmu.ini" \
  --batch-size 8 --max-steps 8 --log-every 2 --epochs 100 --data.val-split none --data.test-split none --run-dir speech-run
row=$("$PYTHON" "$ROOT/bench/gpu_report.py" lockstep "lockstep lmu" speech-run /dev/null 0 fp32 cpu)
echo "$row" | grep -Eq '^\| lockstep lmu \| [0-9]+ \| [0-9]+ \| n/a \| n/a \| [0-9.]+% \|$' || fail "report row: $row"
expect_rc 0 "$PYTHON" -m torch.distributed.run --standalone --nproc_per_node 1 "$ROOT/bench/ddp_speech.py" --data speech \
  --model lmu --width 16 --batch-size 8 --epochs 2 --eval-split none --device cpu
grep "^{\"impl\"" "$WORK/out.txt" | tail -1 >ddp-speech.out
expect_rc 0 "$PYTHON" -m torch.distributed.run --standalone --nproc_per_node 1 "$ROOT/bench/ddp_speech.py" --data speech \
  --model lmu --width 16 --batch-size 8 --epochs 1 --eval-split train --device cpu --dtype bf16
grep -q '"test_cer": [0-9.]' "$WORK/out.txt" || fail "ddp_speech.py bf16 with an evaluation: $(tail -3 "$WORK/out.txt")"
expect_rc 0 "$PYTHON" "$ROOT/bench/gpu_report.py" epochs ddp-speech.out
tail -1 "$WORK/out.txt" >anchor-lmu.json
row=$("$PYTHON" "$ROOT/bench/gpu_report.py" pytorch "pytorch lmu" anchor-lmu.json /dev/null fp32 cpu)
echo "$row" | grep -Eq '^\| pytorch lmu \| [0-9]+ \| \| n/a \| n/a \| \|$' || fail "report row: $row"
pass "speech: synthetic utterances import and train the LMU; the reference-cell anchor's epochs become a row"
# LOCKSTEP_BN_BENCH: the bench's path, set by CTest where it is built (-DLOCKSTEP_BUILD_BENCH=ON).
if [ -n "${LOCKSTEP_BN_BENCH:-}" ]; then
  expect_rc 0 "$LOCKSTEP_BN_BENCH" --device cpu --batch 2 --reps 1 --dtype fp32
  expect_output 'ResNet-18 step, 17 BatchNorm\+ReLU layers: aten [0-9.]+ ms, fused [0-9.]+ ms'
  pass "bench/bn_act_bench runs its CPU path"
else
  echo "bench/bn_act_bench not configured (-DLOCKSTEP_BUILD_BENCH=OFF): not run"
fi
# gpu.sh probe's shard reader rows: reader_bench's node mode (--ranks: one process per rank),
# and a rank that cannot open its shard ends the run with its line, without a hang.
if [ -n "${LOCKSTEP_READER_BENCH:-}" ]; then
  expect_rc 0 timeout 120 "$LOCKSTEP_READER_BENCH" data --threads 2 --ranks 2 --reps 1 --batch 16
  expect_output 'node of 2 ranks, stream: epoch +[0-9]+'
  expect_output '"node_ranks": 2, "node_mib_s": [0-9.]+'
  expect_rc 0 timeout 120 "$LOCKSTEP_READER_BENCH" data --threads 1 --ranks 2 --reps 1 --batch 16 --one-rank 0
  expect_output 'node of 2 ranks, stream: epoch +[0-9]+'
  ! grep -q 'memory mode\|stream_mib_s' "$WORK/out.txt" || fail "--one-rank 0 measured the one-rank rows"
  expect_rc 2 "$LOCKSTEP_READER_BENCH" data --one-rank 0
  expect_output '--one-rank 0 needs --ranks > 1'
  # Bad values are one line and exit 2 (they aborted, or ran with a misread number, or timed
  # nothing and printed a rate: a hostile finding).
  expect_rc 2 "$LOCKSTEP_READER_BENCH" data --ranks abc
  expect_output '^reader_bench: --ranks abc: not an integer from 1 to 1024$'
  expect_rc 2 "$LOCKSTEP_READER_BENCH" data --threads 1e3
  expect_rc 2 "$LOCKSTEP_READER_BENCH" data --batch
  expect_output '^reader_bench: --batch needs a value$'
  expect_rc 2 "$LOCKSTEP_READER_BENCH" data --batch 512 --ranks 2
  expect_output "^reader_bench: --batch 512 is more than each of --ranks 2 ranks' [0-9]+ samples of train$"
  rm -rf data-cut && cp -r data data-cut && truncate -s 4096 data-cut/train-00001-of-00002.h5
  expect_rc 1 timeout 120 "$LOCKSTEP_READER_BENCH" data-cut --ranks 2 --reps 1 --batch 16
  expect_output 'rank 1 of 2: data-cut/train-00001-of-00002.h5: cannot open as HDF5'
  expect_output 'reader_bench: --ranks 2: a rank failed'
  pass "bench/reader_bench reads a node's ranks in parallel processes; a failing rank ends it with its line"
else
  echo "bench/reader_bench not configured (-DLOCKSTEP_BUILD_BENCH=OFF): not run"
fi
GPU_REPORT_DIR=$WORK/report bash "$ROOT/bench/gpu.sh" tests | grep -q "skipped: no GPU" || fail "bench/gpu.sh without a GPU should say so"
pass "bench/gpu.sh without a GPU says so and exits 0"
echo "gpu bench smoke: all passed"
