#!/usr/bin/env bash
# Two hosts on one machine (bench/netns: network namespaces on a bridge, links shaped to
# 100 Mbit/s with tbf, mpirun through the namespace-entering rsh agent): a 2-rank training
# run across them over TCP only, with bf16 gradients, sees two hosts and finishes; the
# shaped link is really the bottleneck (the step's exposed communication dominates).
# Skipped (77) when not root or network namespaces are not allowed.
set -euo pipefail
LOCKSTEP=$1
MPIEXEC=$2
WORK=$3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FMNIST=${LOCKSTEP_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
PYTHON=${LOCKSTEP_PYTHON:-python3}
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "skipped: needs root"; exit 77; }
ip netns add lsprobe$$ 2>/dev/null && ip netns del lsprobe$$ || { echo "skipped: no network namespaces"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
trap 'bash "$ROOT/bench/netns/hosts.sh" down' EXIT
bash "$ROOT/bench/netns/hosts.sh" up 2 100mbit
[ "$(ip netns exec lsh0 tc qdisc show dev eth0 | grep -c 'tbf.*rate 100Mbit')" = 1 ] || fail "eth0 of host 0 is not shaped"
"$LOCKSTEP" shard --input "idx:$FMNIST" --output fm --limit 2000 --shards 2 --name fm >/dev/null
set +e
MPIEXEC=$MPIEXEC LIMIT_S=300 bash "$ROOT/bench/netns/mpirun.sh" 2 "$LOCKSTEP" train --data fm --model cnn --batch-size 32 --max-steps 20 --log-every 5 \
  --dist.compress bf16 --run-dir run --data.test-split none >out.txt 2>&1
rc=$?
set -e
[ "$rc" = 0 ] || { cat out.txt; fail "the 2-host run failed (rc $rc)"; }
grep -Eq "2 rank\(s\) on 2 host\(s\)" out.txt || { cat out.txt; fail "the ranks did not see two hosts"; }
grep -Eq "reduced during backward in bfloat16" out.txt || { cat out.txt; fail "bf16 gradients not in use"; }
"$PYTHON" - run/metrics.jsonl <<'PY' || fail "metrics of the 2-host run"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
train = [r for r in rows if r["kind"] == "train"][1:]
assert train, "no train rows after the first"
# 0.84 MB of bf16 gradients over 100 Mbit/s is ~70 ms a step: the link, not compute, dominates
assert all(r["exposed_comm_ms_max"] > 20 for r in train), [r["exposed_comm_ms_max"] for r in train]
assert all(r["slowest_host"] in ("lshost0", "lshost1") for r in train), [r["slowest_host"] for r in train]
PY
echo "ok: two namespaced hosts over a shaped 100 Mbit/s link: 2-rank bf16 training across them"
