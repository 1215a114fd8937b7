#!/usr/bin/env bash
# Data-layer benchmark, one command (after .ci/setup has built lockstep):
#   bash bench/io.sh [WORKDIR] [SYNTH_SAMPLES]
# 1. shard times: Fashion-MNIST (idx) and a synthetic multi-GB HDF5 file (hdf5 import);
# 2. reader throughput vs a raw sequential read of the same files (reader_bench);
# 3. data wait per training step at 2 ranks, memory and stream mode.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
WORK=${1:-/tmp/lockstep-bench-io}
SYNTH_N=${2:-250000}   # 250k x 12 KiB = 2.9 GiB
LS=$BUILD/lockstep
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$WORK"
cd "$WORK"

secs() { local t0=$(date +%s.%N); "$@" >/dev/null; python3 -c "print(round($(date +%s.%N) - $t0, 2))"; }
div() { python3 -c "print(round($1 / $2))"; }
nproc_cap() { local n; n=$(nproc); echo $(( n < 4 ? n : 4 )); }  # --data.read-threads 0 picks min(4, cores)

echo "== shard times"
rm -rf fmnist
echo "fashion-mnist idx -> 4 shards/split: $(secs "$LS" shard --input idx:/usr/share/datasets/fashion-mnist --output fmnist --shards 4) s"
[ -f synth.h5 ] || "$BUILD/bench/make_synthetic_h5" synth.h5 "$SYNTH_N"
size_mib=$(( $(stat -c %s synth.h5) / 1048576 ))
rm -rf synth
t=$(secs "$LS" shard --input hdf5:synth.h5 --samples-dataset images --labels-dataset targets --output synth --shards 16)
echo "synthetic hdf5 ${size_mib} MiB -> 16 shards: $t s ($(div "$size_mib" "$t") MiB/s)"
rm -rf synth_gz
t=$(secs "$LS" shard --input hdf5:synth.h5 --samples-dataset images --labels-dataset targets --output synth_gz --shards 16 --compression 1)
echo "synthetic hdf5 ${size_mib} MiB -> 16 shards, deflate 1: $t s ($(div "$size_mib" "$t") MiB/s)"

echo; echo "== reader vs raw read: Fashion-MNIST train (uint8 1x28x28, 784 B/sample)"
"$BUILD/bench/reader_bench" fmnist --batch 64
echo; echo "== reader vs raw read: synthetic (uint8 3x64x64, 12 KiB/sample), 1 read thread and $(nproc_cap) (--data.read-threads)"
"$BUILD/bench/reader_bench" synth --batch 64 --threads 1
"$BUILD/bench/reader_bench" synth --batch 64 --threads "$(nproc_cap)"
if [ "$(id -u)" = 0 ]; then
  echo; echo "== the same from a cold page cache (what data larger than memory sees)"
  "$BUILD/bench/reader_bench" synth --batch 64 --cold 1
fi

echo; echo "== data wait per training step, 2 ranks, Fashion-MNIST, 300 steps"
for mode in memory stream; do
  rm -rf "run_$mode"
  mpirun -np 2 "$LS" train --data fmnist --batch-size 64 --max-steps 300 --log-every 100 --run-dir "run_$mode" \
    --data.mode "$mode" >/dev/null
  python3 - "run_$mode/metrics.jsonl" "$mode" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
end = [r for r in rows if r["kind"] == "end"][-1]
steps = end["step"]
print(f"{sys.argv[2]:>7}: data wait {1000 * end['data_wait_s'] / steps:.3f} ms/step over {steps} steps "
      f"({100 * end['data_wait_s'] / end['seconds']:.2f}% of run wall time), {end['samples_per_s']:.0f} samples/s")
PY
done
