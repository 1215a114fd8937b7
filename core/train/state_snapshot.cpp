// state_snapshot: see state_snapshot.hpp.
#include "core/train/state_snapshot.hpp"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/serialize.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include <sstream>

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lockstep {

// The copies, held by the snapshot as the live tensors are by the model: the archive's
// pickler records a tensor held elsewhere as it records T (a memo entry), so the bytes match.
struct StateSnapshot::Held {
  std::vector<torch::Tensor> copies;
  // The model's and optimizer's archives, alive while the root is written, as they are in
  // serialize_state (the pickler's memo again).
  torch::serialize::OutputArchive model, opt;
  bool queued = false;      // a copy was queued on a GPU stream
  c10::DeviceIndex device = 0;  // that stream's device
#ifdef LOCKSTEP_HAVE_CUDA
  at::cuda::CUDAEvent done{cudaEventDisableTiming};
#endif
};

namespace {

using torch::serialize::OutputArchive;

using Held = StateSnapshot::Held;

// T's copy in host memory: pinned and queued on the current stream from a GPU, made at once
// on the CPU. Same strides and requires_grad flag, so the archive records what T's would.
torch::Tensor host_copy(const torch::Tensor& t, Held* held) {
  if (!t.defined()) return t;
  torch::NoGradGuard no_grad;
  torch::Tensor c;
  if (t.is_cuda()) {
    try {
      c = torch::empty_like(t, t.options().device(torch::kCPU).pinned_memory(true));
    } catch (const c10::Error&) {  // no page-locked memory left (memlock limits): a blocking copy
      c = torch::Tensor();
    }
    if (c.defined()) {
      c.copy_(t, /*non_blocking=*/true);
      held->queued = true;
      held->device = t.device().index();
    } else {
      c = t.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
    }
  } else {
    c = t.clone();
  }
  if (t.requires_grad()) c.set_requires_grad(true);
  held->copies.push_back(c);
  return c;
}

// Module::save's tree (torch/nn/module.cpp), each tensor replaced by its host copy.
void write_module(OutputArchive& ar, const torch::nn::Module& m, Held* held) {
  for (const auto& p : m.named_parameters(/*recurse=*/false)) ar.write(p.key(), host_copy(p.value(), held));
  for (const auto& b : m.named_buffers(/*recurse=*/false))
    ar.write(b.key(), host_copy(b.value(), held), /*is_buffer=*/true);
  for (const auto& child : m.named_children()) {
    if (!child.value()->is_serializable()) continue;
    OutputArchive sub(ar.compilation_unit());
    write_module(sub, *child.value(), held);
    ar.write(child.key(), sub);
  }
}

// torch::optim::serialize<State, Options>'s layout (torch/optim/serialize.h), the states'
// tensors replaced by host copies (COPY_TENSORS on a copy of each state).
template <typename State, typename Options, typename CopyTensors>
void write_optimizer(OutputArchive& ar, const torch::optim::Optimizer& opt, CopyTensors copy_tensors) {
  ar.write("pytorch_version", c10::IValue("1.5.0"));
  OutputArchive states(ar.compilation_unit());
  for (const auto& item : opt.state()) {  // the live map's order, as torch::optim writes it
    State s = static_cast<const State&>(*item.second);
    copy_tensors(s);
    OutputArchive one(states.compilation_unit());
    s.serialize(one);
    states.write(std::to_string(reinterpret_cast<size_t>(item.first)), one);
  }
  ar.write("state", states);
  OutputArchive groups(ar.compilation_unit());
  torch::optim::detail::serialize<Options>(groups, opt.param_groups());
  ar.write("param_groups", groups);
}

// torch::optim's SGD, Adam and AdamW: the optimizers whose state layout this file writes.
bool known_optimizer(torch::optim::Optimizer& opt) {
  return dynamic_cast<torch::optim::SGD*>(&opt) || dynamic_cast<torch::optim::Adam*>(&opt) ||
         dynamic_cast<torch::optim::AdamW*>(&opt);
}

// False for an optimizer this file does not know (the caller serialises it at once).
bool write_known_optimizer(OutputArchive& ar, torch::optim::Optimizer& opt, Held* held) {
  const auto adam_like = [held](auto& s) {
    s.exp_avg(host_copy(s.exp_avg(), held));
    s.exp_avg_sq(host_copy(s.exp_avg_sq(), held));
    s.max_exp_avg_sq(host_copy(s.max_exp_avg_sq(), held));
  };
  if (dynamic_cast<torch::optim::SGD*>(&opt)) {
    write_optimizer<torch::optim::SGDParamState, torch::optim::SGDOptions>(
        ar, opt, [held](torch::optim::SGDParamState& s) { s.momentum_buffer(host_copy(s.momentum_buffer(), held)); });
    return true;
  }
  if (dynamic_cast<torch::optim::AdamW*>(&opt)) {
    write_optimizer<torch::optim::AdamWParamState, torch::optim::AdamWOptions>(ar, opt, adam_like);
    return true;
  }
  if (dynamic_cast<torch::optim::Adam*>(&opt)) {
    write_optimizer<torch::optim::AdamParamState, torch::optim::AdamOptions>(ar, opt, adam_like);
    return true;
  }
  return false;
}

}  // namespace

StateSnapshot::StateSnapshot(Net& model, torch::optim::Optimizer& opt, const ExtraState& extra)
    : held_(std::make_unique<Held>()) {
  // Archives made as serialize_state makes them (each its own compilation unit: the names
  // of the archive's classes are numbered per unit), so that the bytes are the same.
  OutputArchive& model_ar = held_->model;
  OutputArchive& opt_ar = held_->opt;
  if (!known_optimizer(opt)) {
    held_.reset();
    done_ = serialize_state(model, opt, extra);
    return;
  }
  write_module(model_ar, model, held_.get());
  write_known_optimizer(opt_ar, opt, held_.get());
  // serialize_state's order: model, optimizer, then the extras.
  root_.write("model", model_ar);
  root_.write("optimizer", opt_ar);
  if (extra.rng.defined()) {
    held_->copies.push_back(extra.rng);  // the caller's ExtraState holds it in serialize_state
    root_.write("rng", extra.rng, /*is_buffer=*/true);
  }
  if (!extra.amp_scaler.empty())
    root_.write("amp_scaler", torch::tensor(extra.amp_scaler, torch::kDouble), /*is_buffer=*/true);
#ifdef LOCKSTEP_HAVE_CUDA
  if (held_->queued) held_->done.record(c10::cuda::getCurrentCUDAStream(held_->device));
#endif
}

StateSnapshot::~StateSnapshot() = default;

std::string StateSnapshot::serialize() const {
  if (!held_) return done_;
#ifdef LOCKSTEP_HAVE_CUDA
  if (held_->queued) {
    const c10::cuda::CUDAGuard on(held_->device);  // the writer's thread: no context on device 0
    held_->done.synchronize();
  }
#endif
  std::ostringstream out;
  root_.save_to(out);
  return out.str();
}

}  // namespace lockstep
