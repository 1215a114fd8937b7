# job_common.sh: what every lockstep Slurm template does after its #SBATCH lines.
# Sourced by slurm/*.sbatch from the repository root; not a job script itself.
#
# 1. the run dir is named after the job (runs/NAME-JOBID), so a requeued job (same id)
#    finds its checkpoints and --run.resume auto continues where it stopped;
# 2. --cpus-per-task becomes --train.threads. Placement (README "GPU placement"): under srun
#    each rank is bound to its --cpus-per-task cores (--cpu-bind=cores) and, when the job
#    has GPUs, given one GPU of its own, one closest to those cores (--gpus-per-task=1
#    --gpu-bind=single:1: CUDA_VISIBLE_DEVICES names it; plain "closest" hands each task
#    every GPU that is equally close); under mpirun ranks are mapped
#    --map-by ppr:R:node:PE=C --bind-to core (R ranks per node, C cores each) and take the
#    GPU of their node-local rank. LOCKSTEP_GPU_BIND=none leaves GPUs to the site's
#    defaults; a job with more ranks per node than GPUs stops before the launch, saying so.
#    lockstep prints each rank's host, GPU (bus id, NUMA node) and CPUs at start, and
#    `lockstep doctor` flags a rank whose CPUs are on another NUMA node than its GPU;
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
# gpus_per_node: the GPUs this job has on each node (0 without), from what Slurm exports.
gpus_per_node() {
  local g=${SLURM_GPUS_ON_NODE:-}
  if [ -z "$g" ] && [ -n "${SLURM_JOB_GPUS:-}" ]; then g=$(tr ',' '\n' <<<"$SLURM_JOB_GPUS" | grep -c .); fi
  echo "${g:-0}"
}

# binds_gpus: whether the launch gives each rank a GPU of its own (the job has GPUs and
# LOCKSTEP_GPU_BIND is not none).
binds_gpus() { [ "$(gpus_per_node)" -gt 0 ] && [ "${LOCKSTEP_GPU_BIND:-single:1}" != none ]; }

# srun_placement: srun's binding options (one GPU per rank, the closest to its cores).
srun_placement() {
  local gpus ranks=${SLURM_NTASKS_PER_NODE:-${SLURM_TASKS_PER_NODE%%[(,]*}}
  echo "--cpu-bind=cores"
  binds_gpus || return 0
  gpus=$(gpus_per_node)
  if [ "${ranks:-1}" -gt "$gpus" ]; then
    echo "job_common.sh: ${ranks} ranks per node but ${gpus} GPU(s) per node: NCCL needs one GPU per rank (set" \
         "--ntasks-per-node=${gpus}; LOCKSTEP_GPU_BIND=none with --dist.backend mpi trains on the CPUs instead)" >&2
    return 2
  fi
  echo "--gpus-per-task=1 --gpu-bind=${LOCKSTEP_GPU_BIND:-single:1}"
}

launch_ranks() {
  local pid rc placement
  case "$LAUNCHER" in
    srun)
      placement=$(srun_placement) || return 2
      # --kill-on-bad-exit: a rank that dies ends the step at once instead of leaving
      # the others to lockstep's collective watchdog (--dist.comm-timeout).
      # shellcheck disable=SC2086
      srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task="${SLURM_CPUS_PER_TASK:-1}" $placement "$@" & ;;
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
      # Each rank on its own --cpus-per-task cores, unless MPIRUN_ARGS binds otherwise, and
      # with GPUs, on its own GPU (slurm/bind_gpu.sh).
      placement="--map-by ppr:${SLURM_NTASKS_PER_NODE:-1}:node:PE=${SLURM_CPUS_PER_TASK:-1} --bind-to core"
      case " ${MPIRUN_ARGS:-} " in *" --bind-to "*|*" --map-by "*) placement="--map-by ppr:${SLURM_NTASKS_PER_NODE:-1}:node" ;; esac
      local bind=()
      if binds_gpus; then bind=("${LOCKSTEP_SHARE:-.}/slurm/bind_gpu.sh"); fi
      OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-10} \
      mpirun -np "$SLURM_NTASKS" $placement ${MPIRUN_ARGS:-} "${bind[@]}" "$@" & ;;
    *) echo "LAUNCHER must be srun or mpirun, not '$LAUNCHER'" >&2; return 2 ;;
  esac
  pid=$!
  # (|| true: under set -e a failed kill in a trap, the launcher already gone, ended the shell.)
  trap 'echo "batch shell: SIGUSR1, passed to the ranks"; LOCKSTEP_GOT_USR1=1; kill -USR1 "$pid" 2>/dev/null || true' USR1
  # SIGTERM (scancel, preemption, a node's shutdown): the batch shell died at once (exit 143)
  # and left the launcher running on (a hostile finding). The ranks are asked to stop as for
  # USR1 — passed on as USR1, since srun answers a SIGTERM by SIGKILLing its tasks and mpirun
  # by killing the job after its grace — and the shell waits for them. A TERM after a USR1 is
  # the time limit that USR1 announced: requeued as usual; one without (LOCKSTEP_TERMINATED)
  # is scancel or preemption: not requeued by run_lockstep.
  trap 'echo "batch shell: SIGTERM, the ranks asked to stop (USR1)"; [ "${LOCKSTEP_GOT_USR1:-0}" = 1 ] || LOCKSTEP_TERMINATED=1; kill -USR1 "$pid" 2>/dev/null || true' TERM
  # wait returns early (> 128) when a trap ran: wait again until the launcher has ended.
  while :; do
    rc=0
    wait "$pid" || rc=$?
    kill -0 "$pid" 2>/dev/null || break
  done
  trap - USR1 TERM
  return "$rc"
}

# run_lockstep ARGS...: lockstep train under the launcher; requeues the job on exit 3.
run_lockstep() {
  echo "lockstep job ${SLURM_JOB_ID} (restart ${SLURM_RESTART_COUNT:-0}): ${SLURM_NTASKS} ranks on" \
       "${SLURM_JOB_NODELIST} via ${LAUNCHER}, config ${JOB_CONFIG}, run dir ${RUN_DIR}"
  local rc=0
  if [ "${LOCKSTEP_DOCTOR:-0}" = 1 ] && [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then
    mkdir -p "$RUN_DIR"
    # The job's run directory and resume mode: doctor checked the config's own run dir, and
    # a checkpoint of another run left there failed every job of a scaling sweep.
    launch_ranks "$LOCKSTEP_BIN" doctor --config "$JOB_CONFIG" --train.threads "${SLURM_CPUS_PER_TASK:-1}" \
      --run.dir "$RUN_DIR" --run.resume auto \
      --doctor.out "$RUN_DIR/doctor.json" --force "$@" || return $?  # the job's own file: a resubmission replaces it
  fi
  # The marker below must be this launch's: one an earlier job left turned a start-up failure
  # (a moved dataset, no GPU) into "resumable", and the job requeued itself again and again.
  rm -f "$RUN_DIR/resumable"
  LOCKSTEP_TERMINATED=0 LOCKSTEP_GOT_USR1=0
  launch_ranks "$LOCKSTEP_BIN" train --config "$JOB_CONFIG" --train.threads "${SLURM_CPUS_PER_TASK:-1}" \
    --run.dir "$RUN_DIR" --run.resume auto "$@" || rc=$?
  # A failed job whose run directory holds a durable checkpoint is requeued (a node lost, a
  # launcher that killed the ranks after rank 0's exit 3), but never one that exited 2: a usage
  # error (an option, a moved dataset, a refused checkpoint) that no requeue mends. The marker
  # an earlier job left made such a requeued job requeue itself LOCKSTEP_MAX_REQUEUES times.
  # (A launcher reports what it reports: srun --kill-on-bad-exit may say 137 for a job one of
  # whose ranks exited 2; LOCKSTEP_MAX_REQUEUES still bounds that.)
  if [ "$rc" != 0 ] && [ "$rc" != 2 ] && [ "$rc" != 3 ] && [ -f "$RUN_DIR/resumable" ]; then
    echo "lockstep's launcher exited $rc, but rank 0 recorded a durable checkpoint ($(cat "$RUN_DIR/resumable")): resumable"
    rc=3
  fi
  if [ "$rc" = 3 ] && [ "$LOCKSTEP_TERMINATED" = 1 ]; then
    echo "lockstep stopped at a checkpoint on SIGTERM (exit 3): not requeued (scancel ends the job; Slurm requeues" \
         "a preempted job itself under PreemptMode=REQUEUE); resubmit to continue from ${RUN_DIR}"
  elif [ "$rc" = 3 ]; then
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
