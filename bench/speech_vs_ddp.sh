#!/usr/bin/env bash
# The sequence path's throughput: lockstep (jobs/speech_digits.ini: gru + CTC, length
# bucketing) against the PyTorch DDP script with the same recipe and a bucketing sampler
# (bench/ddp_speech.py), both at NP ranks, EPOCHS epochs each, interleaved PAIRS times.
# Compared: training samples/s of epochs 2..EPOCHS (validation excluded, the first epoch
# left out as warm-up), median over the pairs. Also printed: each side's test CER after
# EPOCHS epochs (a sanity check that both train the same thing, not a target).
# MODEL lmu: jobs/speech_digits_lmu.ini against the same script with docs/python's reference
# LMU (the cell step by step, as a PyTorch user writes it).
#   bash bench/speech_vs_ddp.sh [PAIRS] [EPOCHS] [NP] [MODEL]   (default 2 3 2 gru)
# Needs the data: bash jobs/data/speech_digits.sh. About 3 minutes a pair on 2 cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
VENV=${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}
PAIRS=${1:-2} EPOCHS=${2:-3} NP=${3:-2} MODEL=${4:-gru}
case $MODEL in
  gru) CONFIG=jobs/speech_digits.ini DDP_ARGS=(--model gru --width 160 --lr 0.002) ;;
  lmu) CONFIG=jobs/speech_digits_lmu.ini DDP_ARGS=(--model lmu --width 256 --lr 0.004) ;;
  *) echo "speech_vs_ddp.sh: MODEL is gru or lmu, not '$MODEL'" >&2; exit 2 ;;
esac
WORK=${SPEECH_BENCH_WORK:-/tmp/lockstep-speech-bench}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd "$ROOT"
DATA=$ROOT/data/speech-digits
[ -f "$DATA/manifest.json" ] || { echo "no $DATA: run bash jobs/data/speech_digits.sh first" >&2; exit 2; }
mkdir -p "$WORK"
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
for p in $(seq 1 "$PAIRS"); do
  rm -rf "$WORK/run"
  mpirun -np "$NP" "$BUILD/lockstep" train --config "$CONFIG" --data "$DATA" --epochs "$EPOCHS" \
    --run-dir "$WORK/run" --resume none >"$WORK/lockstep-$p.log" 2>&1
  python3 - "$WORK/run/metrics.jsonl" "$NP" >>"$RESULTS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
sps = [r["samples_per_s"] for r in rows if r["kind"] == "epoch"]
end = [r for r in rows if r["kind"] == "end"][-1]
print(json.dumps({"impl": "lockstep", "world": int(sys.argv[2]), "samples_per_s": sps,
                  "test_cer": end.get("test_cer"), "test_wer": end.get("test_wer")}))
PY
  "$VENV/bin/torchrun" --nproc_per_node "$NP" bench/ddp_speech.py --data "$DATA" --epochs "$EPOCHS" "${DDP_ARGS[@]}" \
    2>"$WORK/ddp-$p.err" | tail -1 >>"$RESULTS"
  tail -2 "$RESULTS"
done
python3 - "$RESULTS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def steady(r):  # epochs 2.. (the first is warm-up)
    s = r["samples_per_s"][1:] or r["samples_per_s"]
    return statistics.median(s)
ls = [steady(r) for r in rows if r["impl"] == "lockstep"]
dd = [steady(r) for r in rows if r["impl"] == "ddp"]
print(f"lockstep  samples/s {statistics.median(ls):8.1f}  (runs: {', '.join(f'{v:.1f}' for v in ls)})")
print(f"DDP       samples/s {statistics.median(dd):8.1f}  (runs: {', '.join(f'{v:.1f}' for v in dd)})")
print(f"ratio lockstep/DDP  {statistics.median(ls) / statistics.median(dd):.2f}x")
for r in rows:
    print(f"  {r['impl']:8s} test CER {r['test_cer']:.4f} WER {r['test_wer']:.4f}")
PY
