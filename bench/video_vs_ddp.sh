#!/usr/bin/env bash
# The video path's throughput: lockstep (jobs/video_behaviour.ini: 3D CNN on 17-frame
# clips, Adam, cosine, class weights) against the PyTorch DDP script with the same recipe
# (bench/ddp_video.py), both at NP ranks, EPOCHS epochs each, interleaved PAIRS times.
# The DDP side's options are read from the ini ([model] name/width/depth/dropout, [train]
# batch-size/optimizer/lr/lr-scaling/schedule/warm-up/class-weights/...), lockstep's
# defaults standing in for keys the ini leaves out; keys ddp_video.py cannot mirror are
# named on stderr (an optimizer or schedule it lacks is refused). The DDP script does not
# augment, so lockstep runs with augmentation off here: both sides do the same work.
# Compared: training samples/s of epochs 2..EPOCHS (validation excluded, the first epoch
# left out as warm-up), median over the pairs. Also printed: each side's validation
# macro-F1 after EPOCHS epochs and test macro-F1 (lockstep: best.ckpt by validation;
# DDP: the weights of its best validation epoch) - a sanity check that both train the
# same thing, not a target.
#   bash bench/video_vs_ddp.sh [PAIRS] [EPOCHS] [NP]      (default 2 3 2)
# Needs the data: bash jobs/data/video_behaviour.sh (or VIDEO_BENCH_DATA=DIR; VIDEO_BENCH_INI=FILE
# for another recipe).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
VENV=${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}
PAIRS=${1:-2} EPOCHS=${2:-3} NP=${3:-2}
WORK=${VIDEO_BENCH_WORK:-/tmp/lockstep-video-bench}
DATA=${VIDEO_BENCH_DATA:-$ROOT/data/video-behaviour}
INI=${VIDEO_BENCH_INI:-$ROOT/jobs/video_behaviour.ini}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd "$ROOT"
[ -f "$DATA/manifest.json" ] || { echo "no $DATA: run bash jobs/data/video_behaviour.sh first" >&2; exit 2; }
[ -f "$INI" ] || { echo "no $INI" >&2; exit 2; }
# The ini's recipe as ddp_video.py options, one per line (a refusal ends the script here).
ARGS_TEXT=$(python3 - "$INI" <<'PY'
import configparser, sys
ini = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
ini.read(sys.argv[1])
get = lambda sec, key, default: ini.get(sec, key, fallback=default).strip()
# (section, key, ddp_video.py option, lockstep's default when the ini has no such key)
mapped = [("model", "name", "--model", "cnn"), ("model", "width", "--width", "0"),
          ("model", "depth", "--depth", "18"), ("model", "dropout", "--dropout", "0.25"),
          ("train", "batch-size", "--batch-size", "64"), ("train", "optimizer", "--optimizer", "sgd"),
          ("train", "lr", "--lr", "0.05"), ("train", "lr-scaling", "--lr-scaling", "none"),
          ("train", "beta1", "--beta1", "0.9"), ("train", "beta2", "--beta2", "0.999"),
          ("train", "weight-decay", "--weight-decay", "0"), ("train", "schedule", "--schedule", "constant"),
          ("train", "warmup-epochs", "--warmup-epochs", "0"), ("train", "warmup-steps", "--warmup-steps", "0"),
          ("train", "min-lr-fraction", "--min-lr-fraction", "0"), ("train", "clip-norm", "--clip-norm", "0"),
          ("train", "class-weights", "--class-weights", "none"),
          ("train", "label-smoothing", "--label-smoothing", "0"), ("train", "seed", "--seed", "42"),
          ("train", "threads", "--threads", "1")]
harmless = {("data", "path"), ("data", "prefetch"), ("data", "mode"), ("data", "memory-budget-mb"),
            ("data", "block-samples"), ("data", "shuffle-blocks"), ("train", "epochs"), ("train", "log-every"),
            # augmentation: turned off on the lockstep side (NO_AUGMENT below), like for like
            ("data", "random-crop"), ("data", "hflip"), ("data", "time-jitter"), ("data", "brightness"),
            ("data", "contrast"),
            ("train", "progress"), ("train", "tensorboard"), ("train", "momentum"), ("train", "nesterov")}
accepted = {"--model": {"c3d", "r3d"}, "--optimizer": {"adam", "adamw"}, "--schedule": {"cosine", "constant"}}
out = []
for sec, key, opt, default in mapped:
    value = get(sec, key, default)
    if opt in accepted and value not in accepted[opt]:
        sys.exit(f"video_vs_ddp.sh: {sec}.{key} = {value}: bench/ddp_video.py has {' | '.join(sorted(accepted[opt]))}")
    out += [opt, value]
known = {(s, k) for s, k, _, _ in mapped} | harmless
for sec in ("data", "model", "train"):
    for key in (ini[sec] if ini.has_section(sec) else {}):
        if (sec, key) not in known:
            print(f"video_vs_ddp.sh: {sec}.{key} = {ini[sec][key]} is not mirrored by bench/ddp_video.py",
                  file=sys.stderr)
print("\n".join(out))
PY
)
mapfile -t DDP_ARGS <<<"$ARGS_TEXT"
echo "DDP side: ${DDP_ARGS[*]}" >&2
# The DDP script does not augment: lockstep does not either here, so both sides do the same work.
NO_AUGMENT=(--data.random-crop 0 --data.hflip false --data.time-jitter 0 --data.brightness 0 --data.contrast 0)
mkdir -p "$WORK"
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
for p in $(seq 1 "$PAIRS"); do
  rm -rf "$WORK/run"
  mpirun -np "$NP" "$BUILD/lockstep" train --config "$INI" --data "$DATA" --epochs "$EPOCHS" \
    "${NO_AUGMENT[@]}" --run-dir "$WORK/run" --resume none >"$WORK/lockstep-$p.log" 2>&1
  python3 - "$WORK/run/metrics.jsonl" "$NP" >>"$RESULTS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
sps = [r["samples_per_s"] for r in rows if r["kind"] == "epoch"]
end = [r for r in rows if r["kind"] == "end"][-1]
print(json.dumps({"impl": "lockstep", "world": int(sys.argv[2]), "samples_per_s": sps,
                  "val_f1": end.get("val_f1"), "test_f1": end.get("test_f1")}))
PY
  OMP_NUM_THREADS=1 "$VENV/bin/torchrun" --standalone --nproc_per_node "$NP" bench/ddp_video.py --data "$DATA" \
    --epochs "$EPOCHS" "${DDP_ARGS[@]}" 2>"$WORK/ddp-$p.err" | tee "$WORK/ddp-$p.log" | tail -1 >>"$RESULTS"
  tail -2 "$RESULTS"
done
python3 - "$RESULTS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def steady(r):  # epochs 2.. (the first is warm-up)
    s = r["samples_per_s"][1:] or r["samples_per_s"]
    return statistics.median(s)
def f(v):
    return "    -" if v is None else f"{v:.4f}"
ls = [steady(r) for r in rows if r["impl"] == "lockstep"]
dd = [steady(r) for r in rows if r["impl"] == "ddp"]
print(f"lockstep  samples/s {statistics.median(ls):8.1f}  (runs: {', '.join(f'{v:.1f}' for v in ls)})")
print(f"DDP       samples/s {statistics.median(dd):8.1f}  (runs: {', '.join(f'{v:.1f}' for v in dd)})")
print(f"ratio lockstep/DDP  {statistics.median(ls) / statistics.median(dd):.2f}x")
for r in rows:
    print(f"  {r['impl']:8s} val macro-F1 {f(r.get('val_f1'))}  test macro-F1 {f(r.get('test_f1'))}")
PY
