# Shared by the end-to-end tests: arguments, a small slice of Fashion-MNIST, assertions.
# Usage in a test: source common.sh "$@"  (LOCKSTEP MPIEXEC WORKDIR)
set -euo pipefail
LOCKSTEP=$1
MPIEXEC=$2
WORK=$3
FMNIST=${LOCKSTEP_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
PYTHON=${LOCKSTEP_PYTHON:-python3}  # the torch wheel's Python (tests/CMakeLists.txt)
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# run_mpi NP ARGS...: runs lockstep under the launcher with a hang guard (124 = hung).
run_mpi() {
  local np=$1; shift
  timeout 300 "$MPIEXEC" -n "$np" "$LOCKSTEP" "$@"
}

# expect_rc WANT CMD...: runs CMD, captures output in $WORK/out.txt, checks the exit code.
expect_rc() {
  local want=$1; shift
  set +e
  "$@" >"$WORK/out.txt" 2>&1
  local rc=$?
  set -e
  [ "$rc" = 124 ] && { cat "$WORK/out.txt"; fail "hung (killed by timeout): $*"; }
  if [ "$want" = nonzero ]; then
    [ "$rc" != 0 ] || { cat "$WORK/out.txt"; fail "expected a non-zero exit: $*"; }
  elif [ "$rc" != "$want" ]; then
    cat "$WORK/out.txt"; fail "exit code $rc, expected $want: $*"
  fi
}

expect_output() {  # expect_output REGEX: the last command's output matches
  grep -Eq -- "$1" "$WORK/out.txt" || { cat "$WORK/out.txt"; fail "output lacks /$1/"; }
}

make_slice() {  # make_slice DIR LIMIT SHARDS
  [ -d "$FMNIST" ] || fail "Fashion-MNIST not found at $FMNIST (apt-get install dataset-fashion-mnist)"
  "$LOCKSTEP" shard --input "idx:$FMNIST" --output "$1" --limit "$2" --shards "$3" --name fmnist-slice >/dev/null
}

# json_rows FILE KIND FIELD: that field of every row of that kind, one per line.
json_rows() {
  python3 - "$@" <<'PY'
import json, sys
path, kind, field = sys.argv[1:4]
for line in open(path):
    row = json.loads(line)
    if row.get("kind") == kind:
        print(row[field])
PY
}
