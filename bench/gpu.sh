#!/usr/bin/env bash
# The GPU report (issue 32): one command on a GPU machine, in stages of under 9 minutes.
#   tests  gpu_tests and tests/gpu/gpu_e2e.sh (GPU == CPU, fp16, resume, no host sync)
#   quick  tests, then lockstep vs the PyTorch anchor (bench/gpu_anchor.py: eager NCHW,
#          channels_last, channels_last + whole-step CUDA graph, + torch.compile) on the
#          reference CNN at batch 64 and 256 (fp32) and ResNet-18 224x224 batch 256 in bf16
#   full   ResNet-18 batch 256 in fp32 and fp16 against every anchor mode, and lockstep's
#          levers one at a time off in bf16 (fused optimizer, channels-last, cuDNN benchmark,
#          the whole-step CUDA graph, the copy stream)
#   probe  bench/gpu_probe.py: BatchNorm + ReLU forward and backward on ResNet-18's bf16
#          channels-last shapes (ATen's kernels, cuDNN's, torch.compile's) and the pinned
#          host-to-device bandwidth; bench/bn_act_bench (bundled): lockstep's own kernels
#          (--model.fused-bn, --model.max-pool) vs ATen's on the same shapes, bf16 and fp32,
#          summed per step: data for the next lever, no lockstep run; bench/reader_bench
#          (bundled): the shard reader's GB/s on this node's cores, one rank and 4 or 8 ranks
#          (under four minutes)
#   video  the video users' models against the anchor (eager, channels_last, whole-step
#          graph, torch.compile), no tests: the behaviour job's c3d (17x32x32 gray clips,
#          width 16, batch 32, fp32: launch-bound, as the job runs) and r3d-18 (16x112x112
#          RGB clips, width 64, batch 32, bf16: the 3-d fused BatchNorm and max-pool's shapes),
#          each also with lockstep's own kernels; c3d also with the job's optimizer, Adam,
#          captured (--train.cuda-graph on: auto leaves Adam eager until this row measures
#          it) and eager, against PyTorch's fused Adam eager and in a graph (capturable)
#   anchors  the PyTorch anchor rows of quick alone (ResNet-18 bf16 in every mode, fp32 and fp16
#          channels_last, the reference CNN at batch 64 and 256), then bench/gpu_probe.py: python
#          only, no lockstep binary, so it runs the moment a GPU is lent, while gpu_build.sh still
#          builds the bundle here (a device that is lent for minutes still measures the anchors)
#   speech the speech users' LMU, no tests: jobs/speech_digits_lmu.ini's model and recipe (width
#          256, batch 16, Adam, clipping, cosine; ragged batches, so eager: one autograd node for the
#          recurrence, core/model/lmu_scan) on synthetic utterances (bench/gpu_speech_data.py,
#          imported by lockstep's audio path) against bench/ddp_speech.py --model lmu (docs/python's
#          reference cell, step by step as a PyTorch user writes it), fp32 and bf16; and the HAR
#          users' job (jobs/har_basicmotions.ini: cnn1d, batch 6, Adam) on synthetic sensor windows
#          (bench/gpu_series_data.py), its whole step captured with Adam (--train.cuda-graph on)
#          and eager, against the anchor's cnn1d (docs/python's) with fused Adam, eager and in
#          a graph (a launch-bound step: what the graph removes)
# quick also runs lockstep with --train.cuda-graph off (rows "-eager") beside the default,
# ResNet-18 with --train.copy-stream false (the batch copied on the compute stream), and
# lockstep's own kernels (rows "-own-kernels": --model.fused-bn on, BatchNorm + add + ReLU as
# one node, and --model.max-pool lockstep, 1-byte argmax; the CNN at batch 64 and ResNet-18;
# full has them for fp32 and fp16 too): the measurement that decides both autos (probe's
# bn_act_bench times each apart).
# Writes gpu-report.md (one dated table naming the GPU, for docs/gpu.md) and every log under
# GPU_REPORT_DIR (default: $OUT when set, else ./gpu-report). Without a GPU it says so and
# exits 0: CI runs the GPU tests' skip paths through ctest -L gpu instead.
#
# On a GPU machine with torch but no MPI/HDF5/Boost (docs/gpu.md): here, bash bench/gpu_build.sh
# (a build without video import, bundled into .gpu/ by ../shared/gpu/pack.sh); there, from the
# checkout root:  . .gpu/env.sh && bash bench/gpu.sh quick
# GPU_SKIP_TESTS=1 skips the tests in quick and full (a short device session: the tests in one
# call, the tables in the next).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STAGE=${1:-quick}
case $STAGE in tests | quick | full | probe | video | speech | anchors) ;;
  *) echo "usage: bash bench/gpu.sh [tests|quick|full|probe|video|speech|anchors]" >&2; exit 2 ;; esac
OUTDIR=${GPU_REPORT_DIR:-${OUT:-$ROOT/gpu-report}}
# Lockstep's own kernels, each auto until measured here (rows "-own-kernels").
OWN_KERNELS="--model.fused-bn on --model.max-pool lockstep"
WORK=${GPU_WORK:-/tmp/lockstep-gpu}
PY=${LOCKSTEP_PYTHON:-python3}
LOCKSTEP=$(command -v lockstep || echo "$ROOT/build/lockstep")
GPU_TESTS=$(command -v gpu_tests || echo "$ROOT/build/tests/gpu_tests")
MPIEXEC=$(command -v mpirun || echo mpirun)
say() { echo "[gpu.sh $(date +%H:%M:%S)] $*"; }
table() {  # table TITLE: the rows measured since the last table, and lockstep's ratios to PyTorch's
  { echo "### $1"; echo; "$PY" "$ROOT/bench/gpu_report.py" header; cat "$REPORT.rows"; echo
    "$PY" "$ROOT/bench/gpu_report.py" ratios "$REPORT.rows" || true; echo; } >>"$REPORT"
  rm -f "$REPORT.rows"
}
joined() { local IFS=';'; echo "$*" | sed 's/;/; /g'; }  # joined ITEMS...: "a; b"
# limit SECONDS CMD...: every command under its own limit, so that a hang costs one row, not
# the stage's call (TERM, then KILL 10 s later; a lockstep run checkpoints and exits on the
# TERM). Run in the background and waited for: a TERM to this script interrupts the wait and
# its trap runs at once. timeout runs in a process group of its own, so the caller's TERM to
# this script's group never reaches the command: on_term (or, inside a pipeline or a $(...),
# the subshell's own trap, set here: a subshell does not inherit on_term) stops its group. Its
# standard input stays the caller's (flops' here-document).
LIMITED=
limit() {
  local s=$1; shift
  if [ "$BASHPID" != "$$" ]; then trap 'stop_limited; exit 143' TERM; fi
  timeout -k 10 "$s" "$@" <&0 &
  LIMITED=$!
  wait "$LIMITED"
}
# stop_limited: TERM to the limited command's process group (timeout, the command and what it
# started, such as gpu_e2e.sh's lockstep runs), KILL to what is left of it 3 s later.
stop_limited() {
  [ -n "$LIMITED" ] || return 0
  kill -TERM -- "-$LIMITED" 2>/dev/null || kill -TERM "$LIMITED" 2>/dev/null || true
  local i
  for i in $(seq 30); do kill -0 -- "-$LIMITED" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$LIMITED" 2>/dev/null || true
  wait "$LIMITED" 2>/dev/null || true
}
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  say "skipped: no GPU (torch sees none here); nothing measured"
  exit 0
fi
mkdir -p "$OUTDIR" "$WORK"
REPORT=$OUTDIR/gpu-report.md
exec > >(tee -a "$OUTDIR/gpu.log") 2>&1
# Cut by the caller's time limit (timeout sends TERM to this script and its group, tee
# included): the running command is stopped and what the stage measured so far still goes
# into the report, a cut tests stage's Tests line too (nothing is printed: stdout's tee may be
# gone). TERM is ignored from here on: a second one must not cut the report's writing short.
TESTS_RUNNING=
tests_line=()
on_term() {
  trap '' TERM
  stop_limited
  if [ -n "$TESTS_RUNNING" ]; then
    local so_far
    so_far=$(grep -E '^(ok|FAIL)' "$OUTDIR/gpu_e2e.txt" 2>/dev/null | paste -sd ';' - | sed 's/;/; /g' || true)
    printf '%s\n' "Tests (cut at the stage's time limit): $(joined "${tests_line[@]:-none finished}")${so_far:+; gpu_e2e so far: $so_far}." "" >>"$REPORT"
  fi
  if [ -s "$REPORT.rows" ]; then
    table "Rows measured before the stage was cut at its time limit" 2>/dev/null || true
  else
    printf '%s\n' "Stage $STAGE cut at its time limit with no table row measured." "" >>"$REPORT"
  fi
  exit 124
}
trap on_term TERM
[ "$STAGE" = anchors ] || [ -x "$LOCKSTEP" ] || { say "error: no lockstep binary (PATH or build/lockstep)"; exit 1; }
GPU=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
[ -n "$GPU" ] || GPU=$("$PY" -c 'import torch; print(torch.cuda.get_device_name())')
if [ ! -f "$REPORT" ]; then
  {
    echo "## GPU report: $GPU, $(date -u +%Y-%m-%d)"
    echo
    echo "$("$LOCKSTEP" --version 2>/dev/null | head -1), $("$PY" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())'), driver $(timeout 30 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores."
    if [ -f "$ROOT/.gpu/pack.vars" ]; then
      echo "Bundle packed $(. "$ROOT/.gpu/pack.vars"; echo "$GPU_PACK_DATE ($GPU_PACK_BINARIES)") from $(cat "$ROOT/.gpu/commit" 2>/dev/null || echo 'an unrecorded commit')."
    fi
    echo "1 rank (NCCL backend). Throughput: wall clock between log rows (lockstep), CUDA events (PyTorch);"
    echo "steady state after warm-up."
    echo
  } >"$REPORT"
fi
echo "#### bench/gpu.sh $STAGE, $(date -u +%H:%M:%S) UTC${GPU_SKIP_TESTS:+ (GPU_SKIP_TESTS=1)}" >>"$REPORT"
echo >>"$REPORT"
# Rows an earlier call measured and never tabled (it was KILLed: no on_term): their own table.
if [ -s "$REPORT.rows" ]; then table "Rows of an earlier call, killed before its table"; fi
if [ -s "$REPORT.ops" ]; then
  { echo "### Operator profiles of an earlier call, killed before its section"; echo; cat "$REPORT.ops"; echo; } >>"$REPORT"
fi
rm -f "$REPORT.rows" "$REPORT.ops"
say "GPU: $GPU; report: $REPORT"
# Data helpers (synthetic, made here: the GPU machines have no datasets).
import_h5() {  # import_h5 NAME [ARGS...]: $WORK/NAME.h5 imported as the dataset $WORK/NAME
  "$LOCKSTEP" shard --input "hdf5:$WORK/$1.h5" --output "$WORK/$1" --name "$1" --val-fraction 0 "${@:2}" \
    >"$OUTDIR/shard-$1.txt" 2>&1 || { tail -3 "$OUTDIR/shard-$1.txt"; exit 1; }
}
make_h5() {  # make_h5 NAME N C H W CLASSES [FRAMES]: $WORK/NAME.h5, images or clips of FRAMES frames
  [ -f "$WORK/$1.h5.done" ] && return
  say "data: $1 ($2 samples $3x${7:+$7x}$4x$5)"
  "$PY" "$ROOT/bench/gpu_data.py" "$WORK/$1.h5" "$2" "$3" "$4" "$5" "$6" 0 "${7:-0}" >/dev/null ||
    { say "error: bench/gpu_data.py $1 failed"; exit 1; }
  touch "$WORK/$1.h5.done"
}
make_data() {  # make_data NAME N C H W CLASSES [FRAMES]: make_h5, imported as the dataset $WORK/NAME
  [ -f "$WORK/$1/manifest.json" ] && return
  make_h5 "$@"
  import_h5 "$1" --shards 8
}
gpu_probe() {  # bench/gpu_probe.py's lines into the report
  limit 150 "$PY" "$ROOT/bench/gpu_probe.py" 2>"$OUTDIR/probe.err" | tee "$OUTDIR/probe.jsonl" ||
    say "gpu_probe.py: exit $? (see probe.err)"
  { echo "### Probes (bench/gpu_probe.py)"; echo; sed 's/^/    /' "$OUTDIR/probe.jsonl"; echo; } >>"$REPORT"
}
if [ "$STAGE" = probe ]; then
  gpu_probe
  BN_BENCH=$(command -v bn_act_bench || echo "$ROOT/build/bench/bn_act_bench")
  if [ -x "$BN_BENCH" ]; then
    for dtype in bf16 fp32; do limit 90 "$BN_BENCH" --dtype $dtype || echo "bn_act_bench --dtype $dtype: exit $?"; done 2>&1 |
      tee "$OUTDIR/bn_act_bench.txt"
    { echo "### Fused BatchNorm+ReLU vs ATen (bench/bn_act_bench)"; echo; sed 's/^/    /' "$OUTDIR/bn_act_bench.txt"; echo; } >>"$REPORT"
  else
    say "bn_act_bench not found (bench/gpu_build.sh bundles it): the fused kernels not timed"
  fi
  # The shard reader on this node's cores, from the page cache (the issue's >= 3 GB/s per node):
  # one rank at 1, 4 (--data.read-threads' default) and every core's read threads; the node as
  # 4 ranks x 4 threads and 8 ranks x 2 (reader_bench --ranks), ImageNet-size samples (quick's
  # ResNet-18 set, 1.2 GB: made here unless this machine still has it).
  READER_BENCH=$(command -v reader_bench || echo "$ROOT/build/bench/reader_bench")
  if [ -x "$READER_BENCH" ]; then
    make_data img224 8192 3 224 224 100
    cores=$(nproc)
    for spec in "1 1" "4 1" "$cores 1" "4 4" "2 8"; do
      read -r threads ranks <<<"$spec"
      # The node rows leave out the one-rank rows the first three already have (--one-rank 0).
      limit 60 "$READER_BENCH" "$WORK/img224" --threads "$threads" --ranks "$ranks" \
        $([ "$ranks" -gt 1 ] && echo --one-rank 0) ||
        echo "reader_bench --threads $threads --ranks $ranks: exit $?"
    done 2>&1 | tee "$OUTDIR/reader_bench.txt"
    { echo "### The shard reader (bench/reader_bench, 3x224x224 uint8 samples, warm page cache, $cores cores)"; echo
      sed 's/^/    /' "$OUTDIR/reader_bench.txt"; echo; } >>"$REPORT"
  else
    say "reader_bench not found (bench/gpu_build.sh bundles it): the shard reader not timed"
  fi
  exit 0
fi

# --- 1. the GPU tests (not in video or speech; GPU_SKIP_TESTS=1 leaves them to a call of their own)
if [ "$STAGE" != video ] && [ "$STAGE" != speech ] && [ "$STAGE" != anchors ] && [ -z "${GPU_SKIP_TESTS:-}" ]; then
TESTS_RUNNING=1
if [ -x "$GPU_TESTS" ]; then
  limit "${GPU_TESTS_LIMIT:-240}" "$GPU_TESTS" >"$OUTDIR/gpu_tests.txt" 2>&1 && rc=0 || rc=$?
  grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' "$OUTDIR/gpu_tests.txt" || true
  n_ok=$(grep -cE '^\[ +OK +\]' "$OUTDIR/gpu_tests.txt" || true)
  n_skipped=$(grep -cE '^\[ +SKIPPED +\]' "$OUTDIR/gpu_tests.txt" || true)
  if [ "$rc" != 0 ]; then tests_line+=("gpu_tests FAILED (exit $rc)")
  elif [ "$n_ok" = 0 ] && [ "$n_skipped" != 0 ]; then tests_line+=("gpu_tests: all $n_skipped SKIPPED (no GPU visible to them?)")
  else tests_line+=("gpu_tests passed ($n_ok, $n_skipped skipped)"); fi
else
  tests_line+=("gpu_tests not found (bench/gpu_build.sh bundles it)")
fi
limit "${GPU_E2E_LIMIT:-360}" bash "$ROOT/tests/gpu/gpu_e2e.sh" "$LOCKSTEP" "$MPIEXEC" "$WORK/e2e" >"$OUTDIR/gpu_e2e.txt" 2>&1 &&
  rc=0 || rc=$?
case $rc in
  0) tests_line+=("gpu_e2e passed") ;;
  77) tests_line+=("gpu_e2e SKIPPED: $(tail -1 "$OUTDIR/gpu_e2e.txt")") ;;
  *) tests_line+=("gpu_e2e FAILED: $(grep -m1 '^FAIL' "$OUTDIR/gpu_e2e.txt" || tail -1 "$OUTDIR/gpu_e2e.txt")") ;;
esac
TESTS_RUNNING=
grep -E '^(ok|FAIL|NOTE|GPU vs CPU|fp16:)' "$OUTDIR/gpu_e2e.txt" || true
say "tests: $(joined "${tests_line[@]}")"
printf '%s\n' "Tests: $(joined "${tests_line[@]}")." "" >>"$REPORT"
[ "$STAGE" = tests ] && exit 0
fi

# --- 2. data ------------------------------------------------------------------------------------
# FLOPs per sample of each architecture, counted once by PyTorch (the anchor's first line).
flops() {  # flops MODEL H5 [WIDTH [DEPTH]]
  limit 120 "$PY" - "$1" "$WORK/$2.h5" "${3:-0}" "${4:-18}" <<'PY'
import sys, torch, h5py, numpy as np
sys.path.insert(0, "bench")
from gpu_anchor import make_model, flops_per_sample
with h5py.File(sys.argv[2]) as f:
    x = torch.from_numpy(np.asarray(f["samples"][:8])).float().cuda()
    y = torch.from_numpy(f["labels"][:8].astype(np.int64)).cuda()
    classes = int(np.asarray(f["labels"][:]).max()) + 1
m = make_model(sys.argv[1], list(x.shape[1:]), classes, int(sys.argv[3]), int(sys.argv[4])).cuda()
print(flops_per_sample(m, x, y))
PY
}
make_speech() {  # make_speech NAME N: synthetic utterances through lockstep's audio import
  [ -f "$WORK/$1/manifest.json" ] && return
  say "data: $1 ($2 synthetic utterances)"
  "$PY" "$ROOT/bench/gpu_speech_data.py" "$WORK/$1-wav" "$2" >/dev/null
  "$LOCKSTEP" shard --input "audio:$WORK/$1-wav/train.tsv" --output "$WORK/$1" --name "$1" --val-fraction 0 \
    >"$OUTDIR/shard-$1.txt" 2>&1 || { tail -3 "$OUTDIR/shard-$1.txt"; exit 1; }
}
make_series() {  # make_series NAME N C L CLASSES: synthetic sensor windows, imported
  [ -f "$WORK/$1/manifest.json" ] && return
  say "data: $1 ($2 synthetic windows of $3 x $4)"
  "$PY" "$ROOT/bench/gpu_series_data.py" "$WORK/$1.h5" "$2" "$3" "$4" "$5" >/dev/null
  import_h5 "$1"
}
cd "$ROOT"
if [ "$STAGE" = speech ]; then
  make_speech speech 2048
  make_series har 4096 6 100 4
elif [ "$STAGE" = anchors ]; then
  make_h5 img28 65536 1 28 28 10
  make_h5 img224 8192 3 224 224 100
  FLOPS_CNN=$(flops cnn img28 || echo 0)
  FLOPS_R18=$(flops resnet18 img224 || echo 0)
elif [ "$STAGE" = video ]; then
  make_data clip32 8192 1 32 32 5 17
  make_data clip112 1024 3 112 112 50 16
  FLOPS_C3D=$(flops c3d clip32 16 || echo 0)  # 0: no MFU column, the rows still run
  FLOPS_R3D=$(flops r3d clip112 64 18 || echo 0)
else
  # 65536 samples: 256 steps per epoch at batch 256, so few measured windows hold an epoch's
  # end (gpu_report.py leaves those out: the anchor has none).
  make_data img28 65536 1 28 28 10
  make_data img224 8192 3 224 224 100
  FLOPS_CNN=$(flops cnn img28 || echo 0)
  FLOPS_R18=$(flops resnet18 img224 || echo 0)
fi

# --- 3. runs ------------------------------------------------------------------------------------
util_start() { nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -lms 200 >"$1" 2>/dev/null & UTIL_PID=$!; }
util_stop() { kill "$UTIL_PID" 2>/dev/null || true; wait "$UTIL_PID" 2>/dev/null || true; }

lockstep_run() {  # lockstep_run NAME DATA MODEL FLOPS DTYPE BATCH STEPS [ARGS...]
  local name=$1 data=$2 model=$3 fl=$4 dtype=$5 batch=$6 steps=$7; shift 7
  local run=$WORK/runs/$name amp=none
  [ "$dtype" != fp32 ] && amp=$dtype
  rm -rf "$run"
  util_start "$WORK/util-$name.csv"
  limit 180 "$LOCKSTEP" train --data "$WORK/$data" --model "$model" --batch-size "$batch" --amp "$amp" --backend nccl \
    --max-steps "$steps" --log-every $((steps / 10)) --epochs 100000 --data.val-split none --data.test-split none \
    --run-dir "$run" --threads 4 "$@" >"$OUTDIR/run-$name.txt" 2>&1 || say "$name: exit $? (see run-$name.txt)"
  util_stop
  "$PY" "$ROOT/bench/gpu_report.py" lockstep "lockstep $name" "$run" "$WORK/util-$name.csv" "$fl" "$dtype" "$GPU" |
    tee -a "$REPORT.rows" || true
}

anchor_run() {  # anchor_run NAME H5 MODEL DTYPE BATCH MODE STEPS [ARGS...]
  local name=$1 h5=$2 model=$3 dtype=$4 batch=$5 mode=$6 steps=$7
  shift 7
  util_start "$WORK/util-$name.csv"
  limit 240 "$PY" "$ROOT/bench/gpu_anchor.py" --h5 "$WORK/$h5.h5" --model "$model" --dtype "$dtype" --batch "$batch" \
    --mode "$mode" --steps "$steps" "$@" >"$OUTDIR/anchor-$name.json" 2>"$OUTDIR/anchor-$name.err" ||
    say "$name: exit $? (see anchor-$name.err)"
  util_stop
  "$PY" "$ROOT/bench/gpu_report.py" pytorch "pytorch $name" "$OUTDIR/anchor-$name.json" "$WORK/util-$name.csv" "$dtype" "$GPU" |
    tee -a "$REPORT.rows" || true
}

# --trace.steps with --trace.ops: LibTorch's operator profile of a few steady steps (kernels,
# launches, host syncs, device busy share); the summary goes into the report, the Chrome
# traces (gzipped) beside it.
profile_run() {  # profile_run NAME DATA MODEL DTYPE BATCH STEPS RANGE [ARGS...]
  local name=$1 data=$2 model=$3 dtype=$4 batch=$5 steps=$6 range=$7 run=$WORK/runs/prof-$1 amp=none
  shift 7
  [ "$dtype" != fp32 ] && amp=$dtype
  rm -rf "$run"
  limit 180 "$LOCKSTEP" train --data "$WORK/$data" --model "$model" --batch-size "$batch" --amp "$amp" --backend nccl \
    --max-steps "$steps" --log-every $((steps / 4)) --epochs 100000 --data.val-split none --data.test-split none \
    --run-dir "$run" --threads 4 --trace.steps "$range" "$@" >"$OUTDIR/prof-$name.txt" 2>&1 || say "prof-$name: exit $?"
  if [ -f "$run/trace/ops-rank-0.txt" ]; then
    cp "$run/trace/ops-rank-0.txt" "$OUTDIR/ops-$name.txt"
    gzip -c "$run/trace/ops-rank-0.json" >"$OUTDIR/ops-$name.json.gz" 2>/dev/null || true
    { echo "- $name (steps $range): $(sed -n 2p "$run/trace/ops-rank-0.txt")"; } >>"$REPORT.ops"
  else
    echo "- $name: no operator profile (see prof-$name.txt)" >>"$REPORT.ops"
  fi
}

# bench/ddp_speech.py on the GPU (one rank, NCCL): samples/s of epochs 2.. as the anchor's JSON.
speech_anchor_run() {  # speech_anchor_run NAME DTYPE EPOCHS [ARGS...]
  local name=$1 dtype=$2 epochs=$3
  shift 3
  util_start "$WORK/util-$name.csv"
  limit 240 "$PY" -m torch.distributed.run --standalone --nproc_per_node 1 "$ROOT/bench/ddp_speech.py" --data "$WORK/speech" \
    --device cuda --dtype "$dtype" --epochs "$epochs" --eval-split none --threads 4 "$@" \
    >"$OUTDIR/anchor-$name.out" 2>"$OUTDIR/anchor-$name.err" || say "$name: exit $? (see anchor-$name.err)"
  util_stop
  "$PY" "$ROOT/bench/gpu_report.py" epochs "$OUTDIR/anchor-$name.out" >"$OUTDIR/anchor-$name.json" || true
  "$PY" "$ROOT/bench/gpu_report.py" pytorch "pytorch $name" "$OUTDIR/anchor-$name.json" "$WORK/util-$name.csv" "$dtype" "$GPU" |
    tee -a "$REPORT.rows" || true
}

if [ "$STAGE" = speech ]; then
  # The job's own recipe (width 256, dropout 0.1, Adam, clipping, cosine after a warm-up epoch),
  # its data and step counts overridden by lockstep_run's options.
  LMU_RECIPE=(--config jobs/speech_digits_lmu.ini)
  for dtype in fp32 bf16; do
    say "speech: lmu + CTC (width 256), batch 16, $dtype"
    lockstep_run "lmu-$dtype" speech lmu 0 "$dtype" 16 200 "${LMU_RECIPE[@]}"
    speech_anchor_run "lmu-$dtype-reference-cell" "$dtype" 3 --model lmu --width 256 --lr 0.004
    table "Speech LMU + CTC (synthetic utterances, 80-240 frames of 40 log-mel bands), width 256, batch 16, $dtype (PyTorch: the reference cell, step by step; under bf16 autocast its memory runs in bf16, lockstep's in float32)"
  done
  say "HAR: the job's cnn1d (6 x 100 windows, width 32), batch 6, Adam, fp32"
  HAR_RECIPE=(--config jobs/har_basicmotions.ini)
  lockstep_run har-b6-adam-graph har cnn1d 0 fp32 6 3000 "${HAR_RECIPE[@]}" --train.cuda-graph on
  lockstep_run har-b6-adam-eager har cnn1d 0 fp32 6 3000 "${HAR_RECIPE[@]}" --train.cuda-graph off
  for mode in eager graph; do
    anchor_run "har-b6-adam-$mode" har cnn1d fp32 6 "$mode" 2000 --width 32 --optimizer adam --lr 0.01
  done
  table "HAR cnn1d (synthetic 6 x 100 sensor windows, 4 classes; jobs/har_basicmotions.ini's model and Adam), batch 6, fp32 (lockstep: whole-step CUDA graph and eager; PyTorch: docs/python's Cnn1d, fused Adam, eager and in a graph)"
elif [ "$STAGE" = video ]; then
  say "video: the behaviour job's c3d (17x32x32 gray clips, width 16), batch 32, fp32"
  lockstep_run c3d-b32 clip32 c3d "$FLOPS_C3D" fp32 32 400 --model.width 16
  lockstep_run c3d-b32-eager clip32 c3d "$FLOPS_C3D" fp32 32 400 --model.width 16 --train.cuda-graph off
  lockstep_run c3d-b32-own-kernels clip32 c3d "$FLOPS_C3D" fp32 32 400 --model.width 16 $OWN_KERNELS
  for mode in eager channels_last graph compile; do anchor_run "c3d-b32-$mode" clip32 c3d fp32 32 "$mode" 300 --width 16; done
  table "C3D (17x32x32x1 clips, 5 classes, width 16: jobs/video_behaviour.ini's model), batch 32, fp32"
  say "video: c3d with Adam (the job's optimizer), batch 32, fp32"
  ADAM=(--train.optimizer adam --lr 0.001)
  lockstep_run c3d-b32-adam-graph clip32 c3d "$FLOPS_C3D" fp32 32 400 --model.width 16 "${ADAM[@]}" --train.cuda-graph on
  lockstep_run c3d-b32-adam-eager clip32 c3d "$FLOPS_C3D" fp32 32 400 --model.width 16 "${ADAM[@]}" --train.cuda-graph off
  for mode in channels_last graph; do
    anchor_run "c3d-b32-adam-$mode" clip32 c3d fp32 32 "$mode" 300 --width 16 --optimizer adam --lr 0.001
  done
  table "C3D, batch 32, fp32, Adam lr 0.001 (lockstep: whole-step CUDA graph writing Adam's lr and step count to the device each step, and eager; PyTorch's graph bakes its constant lr in, the job's class weights and lr scaling left out on both sides)"
  say "video: r3d-18 (16x112x112 RGB clips, width 64), batch 32, bf16"
  lockstep_run r3d-bf16 clip112 r3d "$FLOPS_R3D" bf16 32 120 --model.width 64 --model.depth 18
  lockstep_run r3d-bf16-own-kernels clip112 r3d "$FLOPS_R3D" bf16 32 120 --model.width 64 --model.depth 18 $OWN_KERNELS
  for mode in eager channels_last graph compile; do
    anchor_run "r3d-bf16-$mode" clip112 r3d bf16 32 "$mode" 60 --width 64 --depth 18
  done
  table "R3D-18 (16x112x112x3 clips, 50 classes, width 64), batch 32, bf16"
elif [ "$STAGE" = anchors ]; then
  # quick's PyTorch rows (same names, steps and data), for quick's lockstep rows of a later call.
  say "anchors: ResNet-18 224x224, batch 256"
  for mode in eager channels_last graph compile; do anchor_run "r18-bf16-$mode" img224 resnet18 bf16 256 "$mode" 60; done
  table "PyTorch anchors: ResNet-18 (224x224x3, 100 classes), batch 256, bf16 (no lockstep row: gpu.sh anchors)"
  for dtype in fp32 fp16; do
    for mode in channels_last compile; do anchor_run "r18-$dtype-$mode" img224 resnet18 "$dtype" 256 "$mode" 60; done
  done
  table "PyTorch anchors: ResNet-18, batch 256, fp32 and fp16"
  for b in 64 256; do
    steps=$([ "$b" = 64 ] && echo 2000 || echo 400)
    for mode in eager channels_last graph; do anchor_run "cnn-b$b-$mode" img28 cnn fp32 "$b" "$mode" "$steps"; done
  done
  table "PyTorch anchors: reference CNN (28x28x1), batch 64 and 256, fp32"
  say "probes (bench/gpu_probe.py)"
  gpu_probe
elif [ "$STAGE" = quick ]; then
  # The issue's first target first (a stage cut at its limit keeps what ran: on_term).
  say "ResNet-18 224x224, batch 256, bf16"
  lockstep_run r18-bf16 img224 resnet "$FLOPS_R18" bf16 256 120
  for mode in eager channels_last graph compile; do anchor_run "r18-bf16-$mode" img224 resnet18 bf16 256 "$mode" 60; done
  lockstep_run r18-bf16-eager img224 resnet "$FLOPS_R18" bf16 256 120 --train.cuda-graph off
  lockstep_run r18-bf16-own-kernels img224 resnet "$FLOPS_R18" bf16 256 120 $OWN_KERNELS
  lockstep_run r18-bf16-no-copy-stream img224 resnet "$FLOPS_R18" bf16 256 120 --train.copy-stream false
  table "ResNet-18 (224x224x3, 100 classes), batch 256, bf16"
  # Batch 64 is launch-bound (~0.4 ms a step in a graph): 2000 steps make a second or more to
  # time, and enough 200 ms utilisation samples; batch 256 takes 400.
  for b in 64 256; do
    steps=$([ "$b" = 64 ] && echo 2000 || echo 400)
    say "reference CNN, batch $b, fp32"
    lockstep_run "cnn-b$b" img28 cnn "$FLOPS_CNN" fp32 "$b" "$steps"
    for mode in eager channels_last graph; do anchor_run "cnn-b$b-$mode" img28 cnn fp32 "$b" "$mode" "$steps"; done
    lockstep_run "cnn-b$b-eager" img28 cnn "$FLOPS_CNN" fp32 "$b" "$steps" --train.cuda-graph off
    if [ "$b" = 64 ]; then lockstep_run "cnn-b$b-own-kernels" img28 cnn "$FLOPS_CNN" fp32 "$b" "$steps" $OWN_KERNELS; fi
    table "Reference CNN (28x28x1), batch $b, fp32 (lockstep: whole-step CUDA graph, and -eager without)"
  done
  say "operator profiles of lockstep's steady steps"
  profile_run cnn-b64 img28 cnn fp32 64 80 61-70
  profile_run r18-bf16 img224 resnet bf16 256 40 31-35
  { echo "### Operator profiles (lockstep --trace.steps, --trace.ops)"; echo; cat "$REPORT.ops"; echo; } >>"$REPORT"
  rm -f "$REPORT.ops"
else
  for dtype in fp32 fp16; do
    say "ResNet-18 224x224, batch 256, $dtype"
    lockstep_run "r18-$dtype" img224 resnet "$FLOPS_R18" "$dtype" 256 120
    lockstep_run "r18-$dtype-own-kernels" img224 resnet "$FLOPS_R18" "$dtype" 256 120 $OWN_KERNELS
    for mode in eager channels_last graph compile; do anchor_run "r18-$dtype-$mode" img224 resnet18 "$dtype" 256 "$mode" 60; done
    table "ResNet-18 (224x224x3, 100 classes), batch 256, $dtype"
  done
  say "ResNet-18 bf16: lockstep's levers one at a time off"
  lockstep_run r18-bf16 img224 resnet "$FLOPS_R18" bf16 256 120
  lockstep_run r18-bf16-no-fused img224 resnet "$FLOPS_R18" bf16 256 120 --train.fused-optimizer false
  lockstep_run r18-bf16-nchw img224 resnet "$FLOPS_R18" bf16 256 120 --model.memory-format contiguous
  lockstep_run r18-bf16-no-cudnn-bench img224 resnet "$FLOPS_R18" bf16 256 120 --train.cudnn-benchmark false
  lockstep_run r18-bf16-no-graph img224 resnet "$FLOPS_R18" bf16 256 120 --train.cuda-graph off
  lockstep_run r18-bf16-no-copy-stream img224 resnet "$FLOPS_R18" bf16 256 120 --train.copy-stream false
  table "ResNet-18 bf16 batch 256: each lever off"
fi
say "done: $REPORT"
cat "$REPORT"
