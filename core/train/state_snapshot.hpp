// state_snapshot: the model's and optimizer's state copied to host memory at a step boundary
// — queued in stream order, no host sync — and serialised later, on the checkpoint writer's
// thread, into the payload serialize_state() writes.
//
// A checkpoint used to serialise the live tensors on the training thread: one device-to-host
// copy and sync per tensor, then the archive's CRC and zip work, while the device idled
// (ResNet-18 on an H100: ~0.2 s of idle device per checkpoint, 2026-11-27; a model of
// billions of parameters: seconds, every rank waiting). Now the training thread only queues
// one copy per tensor into pinned host memory on the current stream — after the step that
// made the state, before the next one changes it — and builds the archive's tree around the
// copies (Module::save's layout; the optimizer's state and parameter groups as torch::optim
// writes them), with the tensors on the CPU. serialize() waits for the copies (an event) and
// writes the archive. On the CPU the copies are made at once.
// The payload equals serialize_state()'s byte for byte on the CPU; from a GPU it differs
// only in naming the CPU as its tensors' device (load_state maps them to the model's).
// Optimizers other than torch::optim's SGD, Adam and AdamW are serialised at once instead.
// The optimizer's host step counts must be current first: the checkpointer settles Adam's
// from the device, one read (step_counter.hpp).
#pragma once

#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <memory>
#include <string>

#include "core/model/registry.hpp"
#include "core/train/checkpoint_state.hpp"

namespace torch::optim {
class Optimizer;
}

namespace lockstep {

class StateSnapshot {
 public:
  // On the training thread, between steps.
  StateSnapshot(Net& model, torch::optim::Optimizer& opt, const ExtraState& extra);
  ~StateSnapshot();
  StateSnapshot(const StateSnapshot&) = delete;
  StateSnapshot& operator=(const StateSnapshot&) = delete;

  // The payload; any thread, once the training thread has returned from the constructor,
  // one call at a time (best.ckpt and the step checkpoint of one step share a snapshot).
  std::string serialize() const;

  struct Held;  // the host copies and, on a GPU, the event they are complete at (opaque)

 private:
  mutable torch::serialize::OutputArchive root_;  // save_to() is not const; serialize() runs it once
  std::string done_;  // the payload, when it was serialised at once
  std::unique_ptr<Held> held_;
};

}  // namespace lockstep
