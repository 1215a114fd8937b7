#!/usr/bin/env bash
# The chaos test (tests/chaos/chaos.sh) with more faults (default 50), after .ci/setup:
#   bash bench/chaos.sh [FAULTS]        CHAOS_SEED=S to replay a sequence
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1
exec bash "$ROOT/tests/chaos/chaos.sh" "${LOCKSTEP_BUILD:-$ROOT/build}/lockstep" "$(command -v mpiexec)" \
  /tmp/lockstep-chaos "${1:-50}"
