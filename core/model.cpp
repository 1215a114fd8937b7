// model: see model.hpp.
#include "core/model.hpp"

#include <torch/nn/functional.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include "core/error.hpp"

namespace lockstep {
namespace {

namespace F = torch::nn::functional;

class ReferenceCnn final : public Net {
 public:
  ReferenceCnn(int64_t channels, int64_t height, int64_t width, int64_t classes, double dropout)
      : conv1_(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, 32, 3).padding(1).bias(false)))),
        bn1_(register_module("bn1", torch::nn::BatchNorm2d(32))),
        conv2_(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1).bias(false)))),
        bn2_(register_module("bn2", torch::nn::BatchNorm2d(64))),
        fc1_(register_module("fc1", torch::nn::Linear(64 * (height / 4) * (width / 4), 128))),
        drop_(register_module("drop", torch::nn::Dropout(dropout))),
        fc2_(register_module("fc2", torch::nn::Linear(128, classes))) {}

  torch::Tensor forward(torch::Tensor x) override {
    x = F::max_pool2d(torch::relu(bn1_(conv1_(x))), F::MaxPool2dFuncOptions(2));
    x = F::max_pool2d(torch::relu(bn2_(conv2_(x))), F::MaxPool2dFuncOptions(2));
    x = torch::relu(fc1_(x.flatten(1)));
    return fc2_(drop_(x));
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  torch::nn::Linear fc1_;
  torch::nn::Dropout drop_;
  torch::nn::Linear fc2_;
};

}  // namespace

std::shared_ptr<Net> make_model(const std::string& name, const io::DatasetSpec& spec, double dropout) {
  if (name == "cnn") {
    if (spec.sample_shape.size() != 3 || spec.sample_shape[1] < 4 || spec.sample_shape[2] < 4)
      throw UsageError("model 'cnn' needs image samples [C,H,W] with H,W >= 4; dataset '" + spec.name +
                       "' has another shape");
    return std::make_shared<ReferenceCnn>(spec.sample_shape[0], spec.sample_shape[1],
                                          spec.sample_shape[2], spec.num_classes, dropout);
  }
  throw UsageError("unknown model '" + name + "' (built in: cnn)");
}

}  // namespace lockstep
