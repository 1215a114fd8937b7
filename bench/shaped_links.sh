#!/usr/bin/env bash
# shaped_links: the ring all-reduce model of `lockstep report` against real, shaped links.
# Builds 4 hosts on this machine (network namespaces on a bridge, bench/netns/hosts.sh),
# shapes every host's link with tbf to each RATE, and launches ranks across the hosts with
# Open MPI's TCP transport (mpirun's rsh agent enters a namespace instead of ssh-ing,
# bench/netns/agent.sh). At each rate:
#   1. `lockstep doctor --doctor.out` at 3 ranks: the two timed all-reduces the model is
#      calibrated from (latency alpha, bandwidth beta), as a scaling sweep does at its
#      largest run;
#   2. allreduce_bench at 2, 3, 4 ranks (MPI_Allreduce, 64 KiB .. MAX): measured times;
#      and at 2 ranks again with 4 MiB TCP eager limits (docs/scaling.md, item 2);
#   3. a short training run (reference CNN, Fashion-MNIST) at 2, 3 and 4 ranks, plus one
#      1-rank run (no network): measured step times. The sweep ranks-1..3 (doctor.json at
#      3) goes through `lockstep report`, whose model.json holds the calibrated model
#      (alpha, beta, gradient bytes, buckets, exposed share, overhead): it predicts 4.
#   4. --dist.compress bf16 at 4 ranks: the all-reduce and the training step again.
# bench/shaped_links.py then prints model vs measured for every all-reduce and step, the
# error, and what bf16 gradients change. About 11 minutes; needs root, iproute2, tbf.
#   bash bench/shaped_links.sh [OUT_DIR]     env: RATES="100mbit 1gbit 10gbit" LOCKSTEP_BUILD
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
OUT=${1:-$ROOT/bench/results/shaped_links}
RATES=${RATES:-100mbit 1gbit 10gbit}
STEPS=${STEPS:-60}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$ROOT"
[ "$(id -u)" = 0 ] || { echo "shaped_links.sh: needs root (network namespaces, tc)" >&2; exit 1; }
[ -f data/fashion-mnist/manifest.json ] || "$BUILD/lockstep" shard --input idx:/usr/share/datasets/fashion-mnist \
  --output data/fashion-mnist --shards 4 --name fashion-mnist >/dev/null
mkdir -p "$OUT"
trap 'bash bench/netns/hosts.sh down' EXIT
bash bench/netns/hosts.sh up 4 none

mpirun_hosts() { bash bench/netns/mpirun.sh "$@"; }  # N CMD...: one rank per bench host

train_args=(train --data data/fashion-mnist --model cnn --batch-size 64 --threads 1 --max-steps "$STEPS"
            --log-every 10 --data.val-split none --data.test-split none --train.progress lines
            --train.tensorboard false --ckpt.keep-last 1 --run.resume none)

echo "1 rank (no network)"
rm -rf "$OUT/ranks-1"
"$BUILD/lockstep" "${train_args[@]}" --run.dir "$OUT/ranks-1" > "$OUT/ranks-1.log" 2>&1

for rate in $RATES; do
  d="$OUT/$rate"
  rm -rf "$d"
  mkdir -p "$d/sweep"
  bash bench/netns/hosts.sh shape 4 "$rate"
  case $rate in *mbit) mb=4; maxmb=4; iters=4 ;; *) mb=16; maxmb=16; iters=10 ;; esac
  echo "$rate: doctor (3 ranks)"
  mpirun_hosts 3 "$BUILD/lockstep" doctor --data data/fashion-mnist --doctor.allreduce-mb "$mb" \
    --doctor.out "$d/doctor-3.json" > "$d/doctor-3.log" 2>&1 || { tail -5 "$d/doctor-3.log"; exit 1; }
  for n in 2 3 4; do
    echo "$rate: all-reduce at $n ranks"
    mpirun_hosts "$n" "$BUILD/bench/allreduce_bench" --pairs 1 --min-kb 64 --max-mb "$maxmb" --iters "$iters" \
      > "$d/allreduce-$n.txt" 2>&1 || { tail -5 "$d/allreduce-$n.txt"; exit 1; }
  done
  # 2 ranks with eager TCP messages: the transport doing what the ring model assumes
  # (docs/scaling.md, item 2).
  echo "$rate: all-reduce at 2 ranks, eager TCP messages"
  OMPI_MCA_btl_tcp_eager_limit=4194304 OMPI_MCA_btl_tcp_rndv_eager_limit=4194304 \
    mpirun_hosts 2 "$BUILD/bench/allreduce_bench" --pairs 1 --min-kb 64 --max-mb "$maxmb" --iters "$iters" \
    > "$d/allreduce-2-eager.txt" 2>&1 || { tail -5 "$d/allreduce-2-eager.txt"; exit 1; }
  for n in 2 3 4; do
    echo "$rate: training at $n ranks"
    mpirun_hosts "$n" "$BUILD/lockstep" "${train_args[@]}" --run.dir "$d/ranks-$n" > "$d/ranks-$n.log" 2>&1 ||
      { tail -5 "$d/ranks-$n.log"; exit 1; }
  done
  # --dist.compress bf16 at 4 ranks: the all-reduce (lockstep column) and the step.
  echo "$rate: bf16 gradients at 4 ranks"
  mpirun_hosts 4 "$BUILD/bench/allreduce_bench" --pairs 1 --min-kb 64 --max-mb "$maxmb" --iters "$iters" --wire bf16 \
    > "$d/allreduce-4-bf16.txt" 2>&1 || { tail -5 "$d/allreduce-4-bf16.txt"; exit 1; }
  mpirun_hosts 4 "$BUILD/lockstep" "${train_args[@]}" --run.dir "$d/ranks-4-bf16" --dist.compress bf16 \
    > "$d/ranks-4-bf16.log" 2>&1 || { tail -5 "$d/ranks-4-bf16.log"; exit 1; }
  # The sweep `lockstep report` reads: calibrated at 3 ranks (its largest), predicting 4.
  ln -sfn "$OUT/ranks-1" "$d/sweep/ranks-1"
  for n in 2 3; do
    mkdir -p "$d/sweep/ranks-$n"
    cp "$d/ranks-$n/metrics.jsonl" "$d/sweep/ranks-$n/"
  done
  cp "$d/doctor-3.json" "$d/sweep/ranks-3/doctor.json"
  echo "mode=weak" > "$d/sweep/sweep.txt"
  "$BUILD/lockstep" report "$d/sweep" > "$d/report.log" 2>&1 || { tail -5 "$d/report.log"; exit 1; }
done
python3 bench/shaped_links.py "$OUT" $RATES | tee "$OUT/table.md"
