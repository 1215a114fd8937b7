#!/usr/bin/env bash
# Installing like HPC software (issue 19): `cmake --install` into a temporary prefix, then,
# in a clean environment (env -i: only PATH and HOME, a login shell, Debian's Lmod), load
# the module and use the installed lockstep — --version, shard, a 2-rank job on the
# installed smoke config — from a directory that is not the checkout.
# Usage: installed.sh BUILD_DIR MPIEXEC WORKDIR
set -euo pipefail
BUILD=$1
WORK=$3
FMNIST=${LOCKSTEP_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
rm -rf "$WORK" && mkdir -p "$WORK/elsewhere"
[ -f /etc/profile.d/lmod.sh ] || { echo "skipped: Debian's lmod is not installed"; exit 77; }

cmake --install "$BUILD" --prefix "$WORK/prefix" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "cmake --install"; }
for f in bin/lockstep share/lockstep/jobs/smoke.ini share/lockstep/slurm/single_node.sbatch \
         share/lockstep/slurm/job_common.sh share/doc/lockstep/README.md share/doc/lockstep/checkpoints.md; do
  [ -e "$WORK/prefix/$f" ] || fail "not installed: $f"
done
module_file=$(ls "$WORK"/prefix/modulefiles/lockstep/*.lua 2>/dev/null | head -1)
[ -n "$module_file" ] || fail "no modulefile under $WORK/prefix/modulefiles/lockstep"
pass "cmake --install: bin, share/lockstep/{jobs,slurm}, docs, $(basename "$module_file")"

# The clean environment: what a user on a login node has before `module load`.
clean() {
  env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_rmaps_base_oversubscribe=1 FMNIST="$FMNIST" bash -lc "cd '$WORK/elsewhere' && $1"
}
clean "module use '$WORK/prefix/modulefiles' && module load lockstep && lockstep --version" >"$WORK/version.txt" 2>&1 ||
  { cat "$WORK/version.txt"; fail "module load lockstep && lockstep --version"; }
for component in lockstep LibTorch CUDA NCCL MPI HDF5; do
  grep -Eq "^$component +[^ ]" "$WORK/version.txt" || { cat "$WORK/version.txt"; fail "--version lacks $component"; }
done
grep -q 'Open MPI' "$WORK/version.txt" || fail "--version does not name the MPI library"
pass "module load lockstep in env -i: $(grep '^lockstep' "$WORK/version.txt" | tr -s ' ')"

clean "module use '$WORK/prefix/modulefiles' && module load lockstep &&
       lockstep shard --input idx:\$FMNIST --output data --limit 1024 --shards 2 >/dev/null &&
       timeout 300 mpirun -np 2 lockstep train --config \$LOCKSTEP_SHARE/jobs/smoke.ini --data data --run-dir run" \
  >"$WORK/train.txt" 2>&1 || { cat "$WORK/train.txt"; fail "2-rank training with the installed lockstep"; }
grep -q 'finished at step' "$WORK/train.txt" || { cat "$WORK/train.txt"; fail "no finished line"; }
grep -q '"kind":"start".*"versions"' "$WORK/elsewhere/run/metrics.jsonl" || fail "metrics lack the start row with versions"
grep -q 'versions: lockstep' "$WORK/elsewhere/run/train.log" || fail "train.log lacks the versions line"
pass "mpirun -np 2 lockstep train --config \$LOCKSTEP_SHARE/jobs/smoke.ini, from $WORK/elsewhere"
echo "install: all passed"
