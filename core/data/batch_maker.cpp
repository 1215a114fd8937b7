// batch_maker: see batch_maker.hpp.
#include "core/data/batch_maker.hpp"

#include <torch/torch.h>

#include <cstring>

#include "core/base/error.hpp"

namespace lockstep {
namespace {

torch::ScalarType torch_type(io::DType t) {
  switch (t) {
    case io::DType::kUInt8: return torch::kUInt8;
    case io::DType::kInt16: return torch::kInt16;
    case io::DType::kFloat16: return torch::kHalf;
    case io::DType::kFloat32: return torch::kFloat;
  }
  return torch::kUInt8;
}

}  // namespace

BatchMaker::BatchMaker(const io::DatasetSpec& spec, torch::Device device) : spec_(spec), device_(device) {
  const int64_t channels = spec.sample_shape.empty() ? 1 : spec.sample_shape[0];
  LOCKSTEP_REQUIRE(static_cast<int64_t>(spec.mean.size()) == channels &&
                       static_cast<int64_t>(spec.std.size()) == channels,
                   "dataset '" + spec.name + "' has no per-channel mean/std for its " +
                       std::to_string(channels) + " channels");
  std::vector<int64_t> shape(spec.sample_shape.size() + 1, 1);
  shape[1] = channels;
  std::vector<float> mean(spec.mean.begin(), spec.mean.end()), inv(channels);
  for (int64_t c = 0; c < channels; ++c) inv[c] = static_cast<float>(1.0 / spec.std[c]);
  mean_ = torch::tensor(mean).view(shape).to(device);
  inv_std_ = torch::tensor(inv).view(shape).to(device);
}

torch::Tensor BatchMaker::inputs(const void* raw, int64_t n) const {
  std::vector<int64_t> dims{n};
  dims.insert(dims.end(), spec_.sample_shape.begin(), spec_.sample_shape.end());
  // from_blob does not own RAW: .to() copies before RAW's buffer is reused.
  torch::Tensor x = torch::from_blob(const_cast<void*>(raw), dims, torch_type(spec_.dtype));
  if (device_.is_cuda()) {
    const int64_t bytes = n * static_cast<int64_t>(spec_.sample_bytes());
    if (!staging_.defined() || staging_.numel() < bytes)
      staging_ = torch::empty({bytes}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
    std::memcpy(staging_.data_ptr(), raw, static_cast<size_t>(bytes));
    x = torch::from_blob(staging_.data_ptr(), dims, torch_type(spec_.dtype));
  }
  x = x.to(device_, torch::kFloat, /*non_blocking=*/false, /*copy=*/true);
  return x.sub_(mean_).mul_(inv_std_);
}

torch::Tensor BatchMaker::labels(const int64_t* labels, int64_t n) const {
  return torch::from_blob(const_cast<int64_t*>(labels), {n}, torch::kLong).to(device_, false, true);
}

}  // namespace lockstep
