// step_parts: everything one training step works on — a model of the cnn family, SGD with
// momentum (or Adam/AdamW), a reducer over this run's ranks (passing through at one rank, as the trainer's
// does, unless told otherwise; over MPI unless given another communicator), the loss scaler and the objective — built the same way on the CPU (MPI tests) and
// on a GPU (GPU tests), for the fixed-buffer step (core/train/static_step.hpp).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "core/dist/grad_reducer.hpp"
#include "core/dist/mpi_communicator.hpp"
#include "core/model/registry.hpp"
#include "core/optim/loss.hpp"
#include "core/optim/loss_scaler.hpp"
#include "core/optim/optimizer.hpp"
#include "core/optim/step_counter.hpp"
#include "core/train/objective.hpp"
#include "core/train/static_step.hpp"
#include "image_spec.hpp"
#include "mpi_test_env.hpp"

namespace lockstep::testing {

struct StepOptions {
  torch::Device device = torch::kCPU;
  Amp amp = Amp::kNone;
  int64_t side = 12, classes = 5;  // square gray images
  double dropout = 0.0, label_smoothing = 0.0, lr = 0.05, weight_decay = 0.0, bucket_mb = 25.0, clip_norm = 0.0;
  uint64_t seed = 5;  // the initial weights
  Communicator* comm = nullptr;  // the reducer's (null: this rank's MpiCommunicator)
  bool pass_through = true;      // the reducer passes gradients through at one rank, as the trainer's
  OptimizerKind optimizer = OptimizerKind::kSgd;  // momentum 0.9 for SGD; betas and eps the defaults
};

struct StepParts {
  std::shared_ptr<Net> model;
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::Optimizer> opt;
  std::unique_ptr<StepCounter> counter;
  MpiCommunicator comm{mpi()};
  std::unique_ptr<GradReducer> reducer;
  LossScaler scaler;
  Loss loss;
  Objective objective;
  StepOptions o;
  explicit StepParts(const StepOptions& opt_)
      : scaler(opt_.amp == Amp::kFp16, opt_.device),
        loss({}, 1.0, opt_.label_smoothing, opt_.device),
        objective(image_spec("step-parts", opt_.side, opt_.classes), loss),
        o(opt_) {
    torch::manual_seed(o.seed);
    model = make_model(ModelOptions{"cnn", o.dropout}, image_spec("step-parts", o.side, o.classes));
    model->to(o.device);
    params = model->parameters();
    opt = make_optimizer(params, OptimizerOptions{o.optimizer, o.lr, 0.9, false, o.weight_decay});
    counter = std::make_unique<StepCounter>(*opt);
    reducer = std::make_unique<GradReducer>(params, o.comm ? *o.comm : comm, o.bucket_mb, true, WireType::kF32,
                                            o.pass_through);
  }
  StaticStepParts parts() {
    return {*model, *opt, *reducer, scaler, *counter, objective, params, o.amp, o.clip_norm, o.device};
  }
};

}  // namespace lockstep::testing
