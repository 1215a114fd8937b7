// mlp: a multi-layer perceptron for any sample shape, flattened (registry.hpp).
#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/registry.hpp"
#include "core/model/sync_bn.hpp"

namespace lockstep {
namespace {

namespace F = torch::nn::functional;
namespace nn = torch::nn;

class Mlp final : public Net {
 public:
  Mlp(int64_t features, int64_t classes, int64_t w, double dropout)
      : fc1_(register_module("fc1", nn::Linear(features, w))),
        fc2_(register_module("fc2", nn::Linear(w, w))),
        drop_(register_module("drop", nn::Dropout(dropout))),
        out_(register_module("out", nn::Linear(w, classes))) {}

  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(fc1_(x.flatten(1)));
    x = torch::relu(fc2_(x));
    return out_(drop_(x));
  }

 private:
  nn::Linear fc1_, fc2_;
  nn::Dropout drop_;
  nn::Linear out_;
};

}  // namespace

std::shared_ptr<Net> make_mlp(const ModelOptions& opt, const io::DatasetSpec& spec) {
  return std::make_shared<Mlp>(spec.sample_elems(), spec.num_classes, opt.width > 0 ? opt.width : 256, opt.dropout);
}

}  // namespace lockstep
