// state_snapshot: see state_snapshot.hpp.
#include "core/train/state_snapshot.hpp"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/serialize.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include <sstream>

#include "core/train/host_copies.hpp"

namespace lockstep {

// The copies, held by the snapshot as the live tensors are by the model: the archive's
// pickler records a tensor held elsewhere as it records T (a memo entry), so the bytes match.
struct StateSnapshot::Held {
  HostCopies copies;
  // The model's and optimizer's archives, alive while the root is written, as they are in
  // serialize_state (the pickler's memo again).
  torch::serialize::OutputArchive model, opt;
};

namespace {

using torch::serialize::OutputArchive;

using Held = StateSnapshot::Held;

// Module::save's tree (torch/nn/module.cpp), each tensor replaced by its host copy.
void write_module(OutputArchive& ar, const torch::nn::Module& m, Held* held) {
  for (const auto& p : m.named_parameters(/*recurse=*/false)) ar.write(p.key(), held->copies.add(p.value()));
  for (const auto& b : m.named_buffers(/*recurse=*/false))
    ar.write(b.key(), held->copies.add(b.value()), /*is_buffer=*/true);
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
    s.exp_avg(held->copies.add(s.exp_avg()));
    s.exp_avg_sq(held->copies.add(s.exp_avg_sq()));
    s.max_exp_avg_sq(held->copies.add(s.max_exp_avg_sq()));
  };
  if (dynamic_cast<torch::optim::SGD*>(&opt)) {
    write_optimizer<torch::optim::SGDParamState, torch::optim::SGDOptions>(
        ar, opt, [held](torch::optim::SGDParamState& s) { s.momentum_buffer(held->copies.add(s.momentum_buffer())); });
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
    held_->copies.keep(extra.rng);  // the caller's ExtraState holds it in serialize_state
    root_.write("rng", extra.rng, /*is_buffer=*/true);
  }
  if (!extra.amp_scaler.empty())
    root_.write("amp_scaler", torch::tensor(extra.amp_scaler, torch::kDouble), /*is_buffer=*/true);
  held_->copies.seal();
}

StateSnapshot::~StateSnapshot() = default;

std::string StateSnapshot::serialize() const {
  if (!held_) return done_;
  held_->copies.wait();
  std::ostringstream out;
  root_.save_to(out);
  return out.str();
}

}  // namespace lockstep
