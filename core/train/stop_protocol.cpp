// stop_protocol: see stop_protocol.hpp.
#include "core/train/stop_protocol.hpp"

#include "core/base/error.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/stop_signal.hpp"
#include "core/train/recorder.hpp"

namespace lockstep {

int exit_resumable(const MpiRuntime& mpi, Recorder& rec, int64_t step) {
  rec.wait_checkpoints();  // rank 0: the checkpoint is on disk (or this throws)
  rec.mark_resumable(step);
  mpi.barrier();  // no rank exits before rank 0's checkpoint is durable
  stop_signal::mark_durable();
  return kExitResumable;
}

}  // namespace lockstep
