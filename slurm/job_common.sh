# job_common.sh: what every lockstep Slurm template does after its #SBATCH lines.
# Sourced by slurm/*.sbatch from the repository root; not a job script itself.
#
# 1. the run dir is named after the job (runs/NAME-JOBID), so a requeued job (same id)
#    finds its checkpoints and --run.resume auto continues where it stopped;
# 2. --cpus-per-task becomes --train.threads; on GPU nodes each rank takes the GPU of its
#    node-local rank (lockstep does this itself);
# 3. ranks start with srun --mpi=pmix (LAUNCHER=srun, the default) or with Open MPI's
#    mpirun inside the allocation (LAUNCHER=mpirun, for sites that prefer it);
# 4. lockstep exits 3 when a signal (#SBATCH --signal=B:USR1@120 before the time limit,
#    which the batch shell passes to the ranks, or a preemption's SIGTERM) made it
#    checkpoint and stop: the job requeues itself, at most
#    LOCKSTEP_MAX_REQUEUES times (default 20); any other exit code is the job's. srun may
#    report that outcome otherwise (the first rank to exit 3 makes --kill-on-bad-exit
#    signal the others): rank 0 writes RUN_DIR/resumable once the checkpoint is durable
#    (and removes it when a run starts), so that file, not only the code, means "requeue".
#
# Knobs (environment, all optional): LOCKSTEP_BIN (lockstep on PATH, else build/lockstep),
# JOB_CONFIG (jobs/fashion_mnist.ini, here or in $LOCKSTEP_SHARE/jobs), RUN_DIR, LAUNCHER
# (srun|mpirun), MPIRUN_ARGS (extra mpirun options), LOCKSTEP_MAX_REQUEUES,
# LOCKSTEP_DOCTOR=1 (run `lockstep doctor` first and keep its all-reduce timing in
# RUN_DIR/doctor.json: scaling sweeps do).

# The binary: LOCKSTEP_BIN, else an installed lockstep on PATH, else this checkout's build.
LOCKSTEP_BIN=${LOCKSTEP_BIN:-$(command -v lockstep || echo build/lockstep)}
# A job config given by name is found here first, then among the installed ones.
JOB_CONFIG=${JOB_CONFIG:-jobs/fashion_mnist.ini}
if [ ! -f "$JOB_CONFIG" ] && [ -n "${LOCKSTEP_SHARE:-}" ] && [ -f "$LOCKSTEP_SHARE/jobs/$(basename "$JOB_CONFIG")" ]; then
  JOB_CONFIG=$LOCKSTEP_SHARE/jobs/$(basename "$JOB_CONFIG")
fi
RUN_DIR=${RUN_DIR:-runs/${SLURM_JOB_NAME}-${SLURM_JOB_ID}}
LAUNCHER=${LAUNCHER:-srun}
if [ "$(id -u)" = 0 ]; then  # Open MPI refuses root unless told
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# launch_ranks CMD...: CMD on every rank of the allocation. The launcher runs in the
# background so that the batch shell can pass SIGUSR1 on: the templates ask Slurm for it
# 120 s before the time limit (#SBATCH --signal=B:USR1@120, and `scancel -b --signal=USR1`
# by hand), and Slurm gives it to the batch shell only. srun and mpirun both forward it to
# every rank. (Without B:, Slurm signals job steps only: ranks under srun got it, ranks
# that mpirun started on the batch node never did.)
launch_ranks() {
  local pid rc
  case "$LAUNCHER" in
    srun)
      # --kill-on-bad-exit: a rank that dies ends the step at once instead of leaving
      # the others to lockstep's collective watchdog (--dist.comm-timeout).
      srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task="${SLURM_CPUS_PER_TASK:-1}" "$@" & ;;
    mpirun)
      # On SIGTERM (the time limit, scancel) mpirun tears its ranks down in steps of
      # odls_base_sigkill_timeout T (1 s by default): SIGCONT, T, SIGTERM, T, SIGKILL.
      # On a preemption's SIGTERM the ranks start their stop checkpoint; mpirun's own
      # SIGTERM comes T later and, as a second signal, ends a rank whose checkpoint is
      # not yet durable. Unless set, T = 10 s (raise it for checkpoints that take longer,
      # within Slurm's KillWait/GraceTime). The cost: mpirun waits the same way whenever
      # a rank exits non-zero, 3 included: a requeue or a failure holds the nodes up to
      # 2T longer (tests/slurm preempt, stop to finish: 22 s under srun, 39 s under
      # mpirun at T = 10, 67 s at T = 25).
      # shellcheck disable=SC2086
      OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-10} \
      mpirun -np "$SLURM_NTASKS" --map-by "ppr:${SLURM_NTASKS_PER_NODE:-1}:node" ${MPIRUN_ARGS:-} "$@" & ;;
    *) echo "LAUNCHER must be srun or mpirun, not '$LAUNCHER'" >&2; return 2 ;;
  esac
  pid=$!
  trap 'echo "batch shell: SIGUSR1, passed to the ranks"; kill -USR1 "$pid" 2>/dev/null' USR1
  # wait returns early (> 128) when the trap ran: wait again until the launcher has ended.
  while :; do
    rc=0
    wait "$pid" || rc=$?
    kill -0 "$pid" 2>/dev/null || break
  done
  trap - USR1
  return "$rc"
}

# run_lockstep ARGS...: lockstep train under the launcher; requeues the job on exit 3.
run_lockstep() {
  echo "lockstep job ${SLURM_JOB_ID} (restart ${SLURM_RESTART_COUNT:-0}): ${SLURM_NTASKS} ranks on" \
       "${SLURM_JOB_NODELIST} via ${LAUNCHER}, config ${JOB_CONFIG}, run dir ${RUN_DIR}"
  local rc=0
  if [ "${LOCKSTEP_DOCTOR:-0}" = 1 ] && [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then
    mkdir -p "$RUN_DIR"
    launch_ranks "$LOCKSTEP_BIN" doctor --config "$JOB_CONFIG" --train.threads "${SLURM_CPUS_PER_TASK:-1}" \
      --doctor.out "$RUN_DIR/doctor.json" "$@" || return $?
  fi
  launch_ranks "$LOCKSTEP_BIN" train --config "$JOB_CONFIG" --train.threads "${SLURM_CPUS_PER_TASK:-1}" \
    --run.dir "$RUN_DIR" --run.resume auto "$@" || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 3 ] && [ -f "$RUN_DIR/resumable" ]; then
    echo "lockstep's launcher exited $rc, but rank 0 recorded a durable checkpoint ($(cat "$RUN_DIR/resumable")): resumable"
    rc=3
  fi
  if [ "$rc" = 3 ]; then
    if [ "${SLURM_RESTART_COUNT:-0}" -lt "${LOCKSTEP_MAX_REQUEUES:-20}" ]; then
      echo "lockstep stopped at a checkpoint (exit 3): requeueing job ${SLURM_JOB_ID}"
      scontrol requeue "$SLURM_JOB_ID"
    else
      echo "lockstep stopped at a checkpoint (exit 3), but the job was requeued ${SLURM_RESTART_COUNT} times" \
           "already (LOCKSTEP_MAX_REQUEUES): resubmit to continue from ${RUN_DIR}"
    fi
  fi
  return "$rc"
}
