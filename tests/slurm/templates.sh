#!/usr/bin/env bash
# The shipped Slurm templates, submitted with sbatch to the real cluster tests/slurm/cluster.sh
# runs on this machine (nodes n1, n2). One mode per CTest entry:
#   single     slurm/single_node.sbatch trains 2 ranks and writes its run dir
#   multi      slurm/multi_node.sbatch on 2 nodes, with srun --mpi=pmix and with LAUNCHER=mpirun
#   preempt    scancel -b --signal=USR1 mid-run (the templates' B:USR1@120), srun and mpirun:
#              checkpoint, exit 3, requeue, resume, full step count; a start-up failure in
#              a run dir holding an earlier stop's marker fails once, never requeued
#   sweep      slurm/scaling_sweep.sh 1 -> 2 ranks, then `lockstep report` table + SVG
#   gpus       GPUs as generic resources over dummy device files (cluster.sh): with srun and
#              with mpirun, each rank of single_node.sbatch gets its own GPU
#              (CUDA_VISIBLE_DEVICES) and its own core, as lockstep's start-up placement
#              lines show; more ranks per node than GPUs stops before the launch
#   params     slurm/sweep.sh: a hyper-parameter sweep as one job array (a grid and a list
#              line), `lockstep report` comparing its runs; submitted again, every run says
#              "nothing to do"
#   installed  `cmake --install` to a prefix, `module load lockstep`, and the installed
#              single_node.sbatch submitted from a directory that is not the checkout
# Usage: templates.sh MODE LOCKSTEP MPIEXEC WORKDIR REPO_ROOT. Jobs are awaited by polling
# scontrol (sbatch --wait sleeps up to 42 s). Exit 77 (skipped) when not root.
MODE=$1
ROOT=$5
set -- "$2" "$3" "$4"
[ "$(id -u)" = 0 ] || { echo "skipped: the Slurm tests run slurmd and need root"; exit 77; }
source "$(dirname "$0")/../e2e/common.sh" "$@"
source <(bash "$ROOT/tests/slurm/cluster.sh" env)
export LOCKSTEP_BIN=$LOCKSTEP JOB_CONFIG=jobs/smoke.ini

# state JOBID: the job's state word (PENDING, RUNNING, COMPLETED, ...).
state() { scontrol show job -o "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
# wait_job JOBID [SECONDS]: polls until the job ends; fails on timeout or a non-zero exit.
wait_job() {
  local id=$1 limit=${2:-180} st
  for _ in $(seq 1 $((limit * 4))); do
    st=$(state "$id")
    case "$st" in
      COMPLETED) return 0 ;;
      FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE)
        cat "$WORK"/*.out 2>/dev/null | tail -30; fail "job $id ended $st ($(scontrol show job -o "$id" | grep -o 'ExitCode=[0-9:]*'))" ;;
    esac
    sleep 0.25
  done
  scancel "$id"; fail "job $id still $st after ${limit}s"
}
submit() { (cd "$ROOT" && sbatch --parsable "$@"); }
# wait_array JOBID [SECONDS]: polls until every element of a job array has ended; fails
# unless each COMPLETED with exit 0.
wait_array() {
  local id=$1 limit=${2:-240}
  for _ in $(seq 1 $((limit * 4))); do
    [ -z "$(squeue -h -j "$id" 2>/dev/null)" ] && break
    sleep 0.25
  done
  [ -z "$(squeue -h -j "$id" 2>/dev/null)" ] || { scancel "$id"; fail "job array $id still running after ${limit}s"; }
  scontrol show job -o "$id" | grep -v 'JobState=COMPLETED .*ExitCode=0:0' | grep -q . &&
    { scontrol show job -o "$id" | grep -o 'ArrayTaskId=[0-9]* JobState=[A-Z]*\|ExitCode=[0-9:]*'; cat "$WORK"/*.out | tail -30;
      fail "an element of job array $id did not complete"; }
  return 0
}

make_slice data 2048 2
DATA=(--data.path "$WORK/data")

# submit_running LAUNCHER OUT RUN: single_node.sbatch with a run long enough that a signal
# always lands mid-run, however loaded the machine is; echoes its id once it is at step 20.
submit_running() {
  local launcher=$1 out=$2 run=$3 id
  id=$(LAUNCHER=$launcher MPIRUN_ARGS="--bind-to none" RUN_DIR=$run submit -o "$out" slurm/single_node.sbatch \
       "${DATA[@]}" --train.epochs 12 --train.max-steps 300 --train.log-every 10)
  for _ in $(seq 1 240); do grep -Eq '"step": ?20,' "$run/metrics.jsonl" 2>/dev/null && break; sleep 0.25; done
  grep -Eq '"step": ?20,' "$run/metrics.jsonl" || { cat "$out" >&2; fail "$launcher: the job never reached step 20"; }
  echo "$id"
}

case "$MODE" in
single)
  SECONDS=0
  id=$(RUN_DIR=$WORK/single submit -o "$WORK/single.out" slurm/single_node.sbatch "${DATA[@]}" --train.max-steps 20)
  wait_job "$id"
  grep -q "2 rank(s) on 1 host(s)" single.out || { cat single.out; fail "not 2 ranks on one node"; }
  [ "$(json_rows single/metrics.jsonl end step)" = 20 ] || fail "no end row at step 20"
  [ -f single/config.ini ] && [ -f single/checkpoints/step-000000020.ckpt ] && [ -d single/tb ] || fail "run dir incomplete"
  grep -q -- "--run.dir $WORK/single" single/command.txt || fail "command.txt lacks the template's run dir"
  pass "single_node.sbatch: 2 ranks, run dir written (${SECONDS} s from submit to end)"
  ;;
multi)
  for launcher in srun mpirun; do
    SECONDS=0
    id=$(LAUNCHER=$launcher MPIRUN_ARGS="--bind-to none" RUN_DIR=$WORK/multi-$launcher \
         submit -o "$WORK/multi-$launcher.out" --ntasks-per-node=1 slurm/multi_node.sbatch "${DATA[@]}" --train.max-steps 20)
    wait_job "$id"
    grep -q "2 rank(s) on 2 host(s)" "multi-$launcher.out" || { cat "multi-$launcher.out"; fail "$launcher: not 2 ranks on 2 hosts"; }
    [ "$(json_rows "multi-$launcher/metrics.jsonl" end step)" = 20 ] || fail "$launcher: no end row at step 20"
    pass "multi_node.sbatch with $launcher: 2 ranks on nodes n1,n2 (${SECONDS} s)"
  done
  ;;
preempt)
  # The signal the templates ask for before the time limit (--signal=B:USR1@120) goes to
  # the batch shell, which must pass it to the ranks: with srun, and with mpirun, whose
  # ranks on the batch node Slurm never signals itself.
  for launcher in srun mpirun; do
    SECONDS=0
    out=$WORK/pre-$launcher.out run=$WORK/pre-$launcher
    id=$(submit_running "$launcher" "$out" "$run") || exit 1
    scancel --batch --signal=USR1 "$id"
    for _ in $(seq 1 240); do
      scontrol show job -o "$id" | grep -q 'Restarts=1' && break; sleep 0.25
    done
    scontrol show job -o "$id" | grep -q 'Restarts=1' || { cat "$out"; fail "$launcher: the job did not requeue after the signal"; }
    # Slurm holds a requeued job for ~2 minutes (BeginTime); a test need not wait that long,
    # only until the first run's step daemons are gone (a relaunch before that fails).
    for _ in $(seq 1 120); do pgrep -f "slurmstepd: \[$id\." >/dev/null || break; sleep 0.25; done
    # slurmd revokes the old run's credential with a one-second timestamp: a new one made in
    # the same second is refused ("Job credential revoked"; seen 1 in 4 runs under load).
    sleep 2
    scontrol update JobId="$id" StartTime=now
    wait_job "$id"
    grep -q 'batch shell: SIGUSR1, passed to the ranks' "$out" || { cat "$out"; fail "$launcher: the batch shell did not pass the signal on"; }
    grep -q 'signal 10 received: checkpointing at step' "$out" || { cat "$out"; fail "$launcher: no checkpoint-on-signal line"; }
    grep -q 'requeueing job' "$out" || fail "$launcher: the template did not requeue"
    grep -Eq 'resumed from .*step-0000000[0-9]+\.ckpt at step' "$out" || fail "$launcher: the requeued job did not resume"
    [ "$(json_rows "$run/metrics.jsonl" end step)" = 300 ] || fail "$launcher: did not finish at step 300"
    pass "preemption with $launcher: $(grep -o 'checkpointing at step [0-9]*' "$out"), requeued, resumed, finished at step 300 (${SECONDS} s)"
  done
  # A hostile finding (helper-47): the marker an earlier stop left turned a start-up failure
  # (here a dataset moved away) into "resumable", and the job requeued itself 20 times.
  echo "step 20" >"$WORK/pre-srun/resumable"
  out=$WORK/stale.out
  id=$(RUN_DIR=$WORK/pre-srun submit -o "$out" slurm/single_node.sbatch --data.path "$WORK/moved" --train.epochs 13)
  for _ in $(seq 1 240); do [ -z "$(squeue -h -j "$id" 2>/dev/null)" ] && break; sleep 0.25; done
  scontrol show job -o "$id" | grep -q 'JobState=FAILED .*Restarts=0\|Restarts=0 .*JobState=FAILED' ||
    { scontrol show job -o "$id"; cat "$out"; fail "a start-up failure with an old resumable marker did not just fail"; }
  ! grep -q 'requeueing job' "$out" || { cat "$out"; fail "a start-up failure was requeued on an old marker"; }
  grep -q "dataset directory $WORK/moved does not exist" "$out" || { cat "$out"; fail "no error naming the moved dataset"; }
  pass "a start-up failure in a run dir with an earlier stop's marker fails once, no requeue"
  # SIGTERM to the batch shell (scancel, preemption): the shell died at once (143) and left the
  # launcher running (a hostile finding). Now the ranks are asked to stop (as USR1: srun
  # SIGKILLs its tasks on a TERM), checkpoint and exit 3, and the job is not requeued.
  for launcher in srun mpirun; do
    out=$WORK/term-$launcher.out run=$WORK/term-$launcher
    id=$(submit_running "$launcher" "$out" "$run") || exit 1
    scancel --batch --signal=TERM "$id"
    for _ in $(seq 1 240); do [ -z "$(squeue -h -j "$id" 2>/dev/null)" ] && break; sleep 0.25; done
    grep -q 'batch shell: SIGTERM, the ranks asked to stop' "$out" || { cat "$out"; fail "$launcher: no TERM line"; }
    grep -q 'signal 10 received: checkpointing at step' "$out" || { cat "$out"; fail "$launcher: the ranks did not checkpoint"; }
    grep -q 'on SIGTERM (exit 3): not requeued' "$out" || { cat "$out"; fail "$launcher: requeued or no exit 3 on SIGTERM"; }
    scontrol show job -o "$id" | grep -q 'Restarts=0' || fail "$launcher: a SIGTERM'd job was requeued"
    pass "SIGTERM to the batch shell with $launcher: the ranks checkpointed, exit 3, not requeued"
  done
  ;;
installed)
  [ -f /etc/profile.d/lmod.sh ] || { echo "skipped: Debian's lmod is not installed"; exit 77; }
  SECONDS=0
  cmake --install "$(dirname "$LOCKSTEP")" --prefix "$WORK/prefix" >install.log 2>&1 || { cat install.log; fail "cmake --install"; }
  mkdir -p elsewhere
  # Only the module says where lockstep is: no LOCKSTEP_BIN, a job config by name.
  id=$(cd elsewhere && unset LOCKSTEP_BIN && set +u && source /etc/profile.d/lmod.sh &&
       module use "$WORK/prefix/modulefiles" && module load lockstep &&
       JOB_CONFIG=smoke.ini RUN_DIR=$WORK/inst sbatch --parsable -o "$WORK/inst.out" \
         "$LOCKSTEP_SHARE/slurm/single_node.sbatch" "${DATA[@]}" --train.max-steps 20)
  wait_job "$id"
  grep -q "config $WORK/prefix/share/lockstep/jobs/smoke.ini" inst.out || { cat inst.out; fail "not the installed job config"; }
  grep -q "2 rank(s) on 1 host(s)" inst.out || { cat inst.out; fail "not 2 ranks"; }
  [ "$(json_rows inst/metrics.jsonl end step)" = 20 ] || fail "no end row at step 20"
  pass "installed template from $WORK/elsewhere with the module loaded (${SECONDS} s)"
  ;;
sweep)
  SECONDS=0
  # The options the sweep sets itself, given after --, are refused before anything is submitted.
  expect_rc 2 bash -c "cd '$ROOT' && slurm/scaling_sweep.sh --ranks '1 2' '$WORK/bad' -- --train.max-steps 4 --run.dir one"
  expect_output 'scaling_sweep.sh: --run.dir after --: the sweep gives each job its run directory'
  expect_rc 2 bash -c "cd '$ROOT' && slurm/scaling_sweep.sh --mode strong --ranks '1 2' '$WORK/bad' -- --batch-size=4"
  expect_output 'scaling_sweep.sh: --batch-size after -- in strong mode'
  ids=$(cd "$ROOT" && slurm/scaling_sweep.sh --ranks "1 2" --ranks-per-node 1 "$WORK/sweep" -- "${DATA[@]}" \
        --train.max-steps 40 --train.log-every 10)
  for id in $ids; do wait_job "$id"; done
  expect_rc 0 "$LOCKSTEP" report "$WORK/sweep"
  expect_output '^\| 2 \| 2 \| 64 \| [0-9]+ \| [0-9.]+x \| [0-9.]+% \|'
  expect_output 'ring all-reduce model calibrated at 2 ranks'
  expect_output '^\| efficiency \| 100% \|'
  grep -q '<svg' sweep/scaling.svg && grep -q 'ring model' sweep/scaling.svg || fail "no plot"
  [ -f sweep/ranks-2/doctor.json ] || fail "the sweep's runs lack the doctor's all-reduce timing"
  pass "sweep 1 -> 2 ranks and its report (${SECONDS} s)"
  sed -n '3,6p' out.txt
  ;;
gpus)
  for launcher in srun mpirun; do
    SECONDS=0
    out=$WORK/gpu-$launcher.out
    id=$(LAUNCHER=$launcher RUN_DIR=$WORK/gpu-$launcher submit -o "$out" --gpus-per-node=2 slurm/single_node.sbatch \
         "${DATA[@]}" --train.max-steps 4 --dist.backend mpi)
    wait_job "$id"
    for r in 0 1; do
      grep -Eq "rank $r on n[12]: CPU \(CUDA_VISIBLE_DEVICES=$r\), CPUs $r( |$)" "$out" ||
        { grep -A3 'placement:' "$out"; fail "$launcher: rank $r is not alone on GPU $r and core $r"; }
    done
    pass "$launcher: each rank its own GPU and core ($(grep -o 'rank 1 on n[12]: .*' "$out" | head -1); ${SECONDS} s)"
  done
  # More ranks per node than GPUs: one line before anything is launched, the job fails.
  id=$(RUN_DIR=$WORK/gpu-short submit -o "$WORK/gpu-short.out" --gpus-per-node=1 slurm/single_node.sbatch "${DATA[@]}" \
       --train.max-steps 4)
  for _ in $(seq 1 240); do case "$(state "$id")" in COMPLETED|FAILED) break ;; esac; sleep 0.25; done
  [ "$(state "$id")" = FAILED ] || { cat gpu-short.out; fail "2 ranks on 1 GPU did not fail"; }
  grep -q 'job_common.sh: 2 ranks per node but 1 GPU(s) per node: NCCL needs one GPU per rank' gpu-short.out ||
    { cat gpu-short.out; fail "no line saying why"; }
  pass "2 ranks per node on 1 GPU: stopped before the launch, saying why"
  ;;
params)
  SECONDS=0
  printf '# a grid of one key, then a line of its own\nlr=0.02,0.05\nmodel=mlp lr=0.05\n' >grid.txt
  sweep() {
    (cd "$ROOT" && slurm/sweep.sh --sbatch "-o $WORK/params-%a.out --ntasks-per-node=1" "$WORK/grid.txt" \
      "$WORK/params" -- "${DATA[@]}" --train.max-steps 16 --train.log-every 4) 2>sweep.err | tail -1
  }
  id=$(sweep)
  [ -n "$id" ] || { cat sweep.err; fail "slurm/sweep.sh submitted nothing"; }
  wait_array "$id"
  for run in lr=0.02 lr=0.05 model=mlp,lr=0.05; do
    [ "$(json_rows "params/$run/metrics.jsonl" end step)" = 16 ] || fail "run $run: no end row at step 16"
  done
  [ -f params/sweep.overrides ] || fail "the sweep file was not kept beside its runs"
  expect_rc 0 "$LOCKSTEP" report params
  expect_output '^\| lr=0.02 \| model.name=cnn train.lr=0.02 \| val_f1 [0-9.]+ \(step [0-9]+\) \| acc [0-9.]+ f1 [0-9.]+ \| .* \| completed at step 16 \|$'
  expect_output '^\| model=mlp,lr=0.05 \| model.name=mlp train.lr=0.05 \|'
  [ -f params/report.html ] && grep -q '<polyline' params/curves.svg || fail "no report page or curves"
  sed -n '1,5p' out.txt
  # The same sweep again (a resubmission after some runs hit the limit): all are done.
  id=$(sweep)
  wait_array "$id"
  [ "$(cat params-*.out | grep -c 'nothing to do: the run is complete at step 16')" = 3 ] ||
    { cat params-*.out | tail -20; fail "the resubmitted sweep did not find its runs complete"; }
  pass "slurm/sweep.sh: 3 runs as one job array, compared by lockstep report; resubmitted, nothing to do (${SECONDS} s)"
  ;;
*) fail "unknown mode $MODE" ;;
esac
echo "slurm $MODE: all passed"
