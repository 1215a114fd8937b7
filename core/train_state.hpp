// train_state: what a checkpoint holds, and its conversion to and from checkpoint_store's
// (meta JSON, payload bytes).
//
// Payload: a torch archive with "model" (parameters and buffers) and "optimizer" (SGD
// momentum buffers). Meta: the position (global step, epoch, samples consumed in that
// epoch), world size, batch, seed, model, dataset shape and classes, versions, and the
// resolved config, readable by `lockstep inspect` without LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/model.hpp"

namespace torch::optim {
class Optimizer;
}

namespace lockstep {

struct TrainPosition {
  int64_t step = 0;                    // optimizer steps completed
  int64_t epoch = 0;                   // 0-based epoch the next step belongs to
  int64_t samples_done_in_epoch = 0;   // global samples of that epoch already consumed
};

struct CheckpointMeta {
  TrainPosition pos;
  int world_size = 1;
  int64_t batch_size = 0;
  uint64_t seed = 0;
  std::string model;
  std::string dataset;
  std::vector<int64_t> sample_shape;
  int64_t num_classes = 0;
  std::string lockstep_version, torch_version;
  std::string config_ini;
  double val_acc = -1.0;  // of the last evaluation before the checkpoint, -1 when none
};

std::string meta_to_json(const CheckpointMeta& m);
CheckpointMeta meta_from_json(const std::string& json, const std::string& path);

std::string serialize_state(Net& model, torch::optim::Optimizer& opt);
void load_state(const std::string& payload, Net& model, torch::optim::Optimizer* opt,
                const std::string& path);

std::string lockstep_version();
std::string torch_version();

}  // namespace lockstep
