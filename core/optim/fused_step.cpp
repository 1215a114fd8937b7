// fused_step: see fused_step.hpp.
#include "core/optim/fused_step.hpp"

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.hpp"

namespace lockstep {
namespace {

namespace optim = torch::optim;

// The kernels take lists of one device and one dtype: parameters are grouped by both.
using Key = std::pair<std::string, c10::ScalarType>;
Key key_of(const torch::Tensor& p) { return {p.device().str(), p.scalar_type()}; }

// T with P's layout: the kernels walk a parameter, its gradient and its state as one flat
// buffer, so all must share strides (a state loaded from a checkpoint is contiguous, a
// channels-last parameter is not). T itself when it already has them.
torch::Tensor like(const torch::Tensor& t, const torch::Tensor& p) {
  if (t.strides() == p.strides()) return t;
  torch::Tensor out = torch::empty_like(p, at::MemoryFormat::Preserve);
  out.copy_(t);
  return out;
}

// Parameters of GROUP that have a gradient (dense), in order.
std::vector<torch::Tensor> stepped(optim::OptimizerParamGroup& group) {
  std::vector<torch::Tensor> out;
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    LOCKSTEP_REQUIRE(!p.grad().is_sparse() && p.is_non_overlapping_and_dense(),
                     "fused optimizer step: sparse gradients or non-dense parameters are not supported");
    out.push_back(p);
  }
  return out;
}

void sgd_group(optim::Optimizer& opt, optim::OptimizerParamGroup& group, const torch::Tensor* found_inf,
               const torch::Tensor* lr) {
  const auto& o = static_cast<const optim::SGDOptions&>(group.options());
  LOCKSTEP_REQUIRE(found_inf == nullptr || o.dampening() == 0, "fused SGD with a found-inf flag needs dampening 0");
  auto& state = opt.state();
  // Lists per (device, dtype), split by whether the momentum buffer exists yet: a new
  // buffer starts as the gradient (is_first_step), as torch::optim's clone does.
  std::map<std::pair<Key, bool>, std::vector<torch::Tensor>> params, grads, bufs;
  for (auto& p : stepped(group)) {
    bool first = false;
    torch::Tensor buf;
    if (o.momentum() != 0) {
      auto it = state.find(p.unsafeGetTensorImpl());
      if (it == state.end()) {
        first = found_inf == nullptr;  // else a zero buffer, updated as any other (see the header)
        buf = first ? torch::empty_like(p.grad(), at::MemoryFormat::Preserve)
                    : torch::zeros_like(p.grad(), at::MemoryFormat::Preserve);
        auto s = std::make_unique<optim::SGDParamState>();
        s->momentum_buffer(buf);
        state[p.unsafeGetTensorImpl()] = std::move(s);
      } else {
        auto& s = static_cast<optim::SGDParamState&>(*it->second);
        buf = like(s.momentum_buffer(), p);
        s.momentum_buffer(buf);
      }
    }
    const auto k = std::make_pair(key_of(p), first);
    params[k].push_back(p);
    grads[k].push_back(like(p.grad(), p));
    if (buf.defined()) bufs[k].push_back(buf);
  }
  torch::NoGradGuard no_grad;
  const auto inf = found_inf ? std::optional<torch::Tensor>(*found_inf) : std::nullopt;
  for (auto& [k, ps] : params) {
    if (lr)
      at::_fused_sgd_(ps, grads[k], bufs[k], o.weight_decay(), o.momentum(), *lr, o.dampening(), o.nesterov(),
                      /*maximize=*/false, /*is_first_step=*/k.second, /*grad_scale=*/std::nullopt, inf);
    else
      at::_fused_sgd_(ps, grads[k], bufs[k], o.weight_decay(), o.momentum(), o.lr(), o.dampening(), o.nesterov(),
                      /*maximize=*/false, /*is_first_step=*/k.second, /*grad_scale=*/std::nullopt, inf);
  }
}

// Why one device step count cannot serve OPT's parameters: parameter INDEX (counting every
// parameter) WHAT, e.g. has a state but no gradient (its count would stay behind the
// others'), or gets its first gradient after the others' first step.
Error split_count(size_t index, const std::string& what) {
  return Error("fused optimizer step: parameter " + std::to_string(index) + " " + what +
               " (it had no gradient in some steps), but this step gives every parameter one Adam step count on "
               "the device: rerun with --train.fused-optimizer false (torch::optim counts per parameter) or, "
               "without --train.amp fp16, --train.cuda-graph off");
}

// Throws Error unless COUNT is a 0-dim float32 tensor on every parameter's device, and
// split_count unless every parameter of OPT with a gradient has a state and every one with a
// state a gradient — or none has a state yet (the first step creates them all).
void check_shared_count(optim::Optimizer& opt, const torch::Tensor& count) {
  const char* const not_a_count =
      "fused optimizer step: the device step count must be a 0-dim float32 tensor on the parameters' device (the "
      "CUDA kernels read it as a float)";
  LOCKSTEP_REQUIRE(count.dim() == 0 && count.scalar_type() == torch::kFloat, not_a_count);
  auto& state = opt.state();
  size_t index = 0, first_new = SIZE_MAX;
  for (auto& group : opt.param_groups())
    for (const auto& p : group.params()) {
      LOCKSTEP_REQUIRE(p.device() == count.device(), not_a_count);
      const bool has_state = state.count(p.unsafeGetTensorImpl()) > 0, has_grad = p.grad().defined();
      if (has_state && !has_grad) throw split_count(index, "has no gradient in this step while the others step");
      if (!has_state && has_grad && first_new == SIZE_MAX) first_new = index;
      ++index;
    }
  if (first_new != SIZE_MAX && !state.empty()) throw split_count(first_new, "takes its first step after the others'");
}

template <typename Options, typename State>
void adam_group(optim::Optimizer& opt, optim::OptimizerParamGroup& group, bool decoupled, const torch::Tensor* found_inf,
                const torch::Tensor* lr, const torch::Tensor* count) {
  const auto& o = static_cast<const Options&>(group.options());
  LOCKSTEP_REQUIRE(!o.amsgrad(), "fused optimizer step: amsgrad is not used by lockstep");
  auto& state = opt.state();
  std::map<Key, std::vector<torch::Tensor>> params, grads, avgs, sqs, steps;
  // The count each parameter's kernel reads (after this step's increment), as a float tensor
  // on its device: the caller's, or one made here per (device, count), shared by the
  // parameters at that count.
  std::map<std::pair<std::string, int64_t>, torch::Tensor> counts;
  std::vector<State*> stepped_states;
  const std::vector<torch::Tensor> ps = stepped(group);
  for (const auto& p : ps) {
    auto it = state.find(p.unsafeGetTensorImpl());
    if (it == state.end()) {  // as torch::optim initialises it
      auto fresh = std::make_unique<State>();
      fresh->step(0);
      fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
      fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
      it = state.emplace(p.unsafeGetTensorImpl(), std::move(fresh)).first;
    }
    auto& s = static_cast<State&>(*it->second);
    s.exp_avg(like(s.exp_avg(), p));
    s.exp_avg_sq(like(s.exp_avg_sq(), p));
    stepped_states.push_back(&s);
    const Key k = key_of(p);
    params[k].push_back(p);
    grads[k].push_back(like(p.grad(), p));
    avgs[k].push_back(s.exp_avg());
    sqs[k].push_back(s.exp_avg_sq());
    if (count) {
      steps[k].push_back(*count);
      continue;
    }
    torch::Tensor& c = counts[{k.first, s.step() + 1}];
    if (!c.defined())
      c = torch::full({}, static_cast<double>(s.step() + 1), torch::TensorOptions().dtype(torch::kFloat).device(p.device()));
    steps[k].push_back(c);
  }
  const auto [beta1, beta2] = o.betas();
  const auto inf = found_inf ? std::optional<torch::Tensor>(*found_inf) : std::nullopt;
  torch::NoGradGuard no_grad;
  for (auto& [k, ps] : params) {
    if (decoupled && lr)
      at::_fused_adamw_(ps, grads[k], avgs[k], sqs[k], /*max_exp_avg_sqs=*/{}, steps[k], *lr, beta1, beta2,
                        o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false,
                       /*grad_scale=*/std::nullopt, inf);
    else if (decoupled)
      at::_fused_adamw_(ps, grads[k], avgs[k], sqs[k], /*max_exp_avg_sqs=*/{}, steps[k], o.lr(), beta1, beta2,
                        o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false,
                       /*grad_scale=*/std::nullopt, inf);
    else if (lr)
      at::_fused_adam_(ps, grads[k], avgs[k], sqs[k], /*max_exp_avg_sqs=*/{}, steps[k], *lr, beta1, beta2,
                       o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false,
                       /*grad_scale=*/std::nullopt, inf);
    else
      at::_fused_adam_(ps, grads[k], avgs[k], sqs[k], /*max_exp_avg_sqs=*/{}, steps[k], o.lr(), beta1, beta2,
                       o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false,
                       /*grad_scale=*/std::nullopt, inf);
  }
  if (!count)
    for (State* s : stepped_states) s->step(s->step() + 1);
}

// FN(state, parameter, index) for every parameter of OPT that has a state (Adam/AdamW).
template <typename State, typename Opt, typename Fn>
void each_state(Opt& opt, Fn fn) {
  auto& state = opt.state();
  size_t index = 0;
  for (auto& group : opt.param_groups())
    for (const auto& p : group.params()) {
      if (auto it = state.find(p.unsafeGetTensorImpl()); it != state.end()) fn(static_cast<State&>(*it->second), p, index);
      ++index;
    }
}

template <typename State>
int64_t next_count(const optim::Optimizer& opt) {
  int64_t count = -1;
  each_state<const State>(opt, [&](const State& s, const torch::Tensor&, size_t index) {
    if (count >= 0 && s.step() != count)
      throw split_count(index, "is at Adam step " + std::to_string(s.step()) + ", the others at " + std::to_string(count));
    count = s.step();
  });
  return count < 0 ? 1 : count + 1;
}

}  // namespace

void fused_step(torch::optim::Optimizer& opt, OptimizerKind kind, const torch::Tensor* found_inf,
                const torch::Tensor* lr, const torch::Tensor* count) {
  LOCKSTEP_REQUIRE(found_inf == nullptr || kind == OptimizerKind::kSgd || count != nullptr,
                   "fused optimizer step: Adam/AdamW skip a step on the device only with their step count there");
  LOCKSTEP_REQUIRE(count == nullptr || kind != OptimizerKind::kSgd, "fused optimizer step: SGD counts no steps");
  if (count) check_shared_count(opt, *count);  // before any state changes
  for (auto& group : opt.param_groups()) {
    switch (kind) {
      case OptimizerKind::kSgd: sgd_group(opt, group, found_inf, lr); break;
      case OptimizerKind::kAdam:
        adam_group<optim::AdamOptions, optim::AdamParamState>(opt, group, /*decoupled=*/false, found_inf, lr, count);
        break;
      case OptimizerKind::kAdamW:
        adam_group<optim::AdamWOptions, optim::AdamWParamState>(opt, group, /*decoupled=*/true, found_inf, lr, count);
        break;
    }
  }
}

int64_t next_step_count(const torch::optim::Optimizer& opt, OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return 0;
    case OptimizerKind::kAdam: return next_count<optim::AdamParamState>(opt);
    case OptimizerKind::kAdamW: return next_count<optim::AdamWParamState>(opt);
  }
  return 0;
}

void set_step_count(torch::optim::Optimizer& opt, OptimizerKind kind, int64_t steps) {
  const auto set = [&](auto tag) {
    using State = decltype(tag);
    each_state<State>(opt, [steps](State& s, const torch::Tensor&, size_t) { s.step(steps); });
  };
  switch (kind) {
    case OptimizerKind::kSgd: return;
    case OptimizerKind::kAdam: return set(optim::AdamParamState{});
    case OptimizerKind::kAdamW: return set(optim::AdamWParamState{});
  }
}

}  // namespace lockstep
