// model: the networks lockstep trains. Sizes come from the dataset's metadata.
//
// "cnn" is the reference CNN: 2 x [conv3x3 (pad 1), BatchNorm, ReLU, max-pool 2],
// FC 128, ReLU, dropout, FC classes. Channels 32 and 64.
// More models (mlp, resnet, cnn1d, torchscript:PATH) are the trainer issue's (#5).
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <string>

#include "io/shard_format.hpp"

namespace lockstep {

class Net : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

// Throws UsageError naming NAME when it is not a known model or the data does not fit it.
std::shared_ptr<Net> make_model(const std::string& name, const io::DatasetSpec& spec, double dropout);

}  // namespace lockstep
