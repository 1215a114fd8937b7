// run_stream: the CUDA stream a training run issues its work on, for the run's lifetime.
//
// A CUDA graph cannot be captured on the legacy default stream, and a run that mixed
// streams between its steps, evaluations and checkpoints would need events between them.
// So the whole run — steps, evaluations, checkpoint copies, the gradient all-reduces'
// ordering (nccl_communicator takes the current stream at each call) — goes to one stream
// from the device's pool, set as current here:
//   1. the constructor waits for the device (what the session did on the default stream:
//      weights moved and broadcast, normalisation constants uploaded), then sets the stream;
//   2. the destructor waits for the stream and restores the previous current stream.
// Nothing on the CPU.
#pragma once

#include <torch/types.h>

#include <memory>

namespace lockstep {

class RunStream {
 public:
  explicit RunStream(torch::Device device);
  ~RunStream();
  RunStream(const RunStream&) = delete;
  RunStream& operator=(const RunStream&) = delete;

 private:
  struct Guard;
  std::unique_ptr<Guard> guard_;
};

}  // namespace lockstep
