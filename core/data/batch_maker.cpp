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

torch::Tensor BatchMaker::inputs(const void* raw, int64_t n, const int64_t* records) const {
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
  if (!spec_.ragged) {
    x = x.to(device_, torch::kFloat, /*non_blocking=*/false, /*copy=*/true);
    return x.sub_(mean_).mul_(inv_std_);
  }
  LOCKSTEP_REQUIRE(records != nullptr, "ragged samples need their lengths");
  const torch::Tensor len = lengths(records, n);
  const int64_t longest = n > 0 ? len.max().item<int64_t>() : 0;
  x = x.narrow(-1, 0, longest).to(device_, torch::kFloat, false, /*copy=*/true);
  x.sub_(mean_).mul_(inv_std_);
  // [N, 1.., T] mask of valid steps: padding is 0 after normalisation, not -mean/std.
  std::vector<int64_t> mask_shape(static_cast<size_t>(x.dim()), 1);
  mask_shape[0] = n;
  mask_shape.back() = longest;
  const torch::Tensor steps = torch::arange(longest, torch::TensorOptions().dtype(torch::kLong).device(device_));
  const torch::Tensor valid = steps.unsqueeze(0).lt(len.to(device_).unsqueeze(1)).view(mask_shape);
  return x.mul_(valid.to(torch::kFloat));
}

torch::Tensor BatchMaker::labels(const int64_t* records, int64_t n) const {
  const int64_t w = spec_.record_width();
  if (w == 1) return torch::from_blob(const_cast<int64_t*>(records), {n}, torch::kLong).to(device_, false, true);
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = records[i * w];
  return torch::tensor(y, torch::kLong).to(device_);
}

torch::Tensor BatchMaker::lengths(const int64_t* records, int64_t n) const {
  std::vector<int64_t> len(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) len[static_cast<size_t>(i)] = io::record_length(spec_, records + i * spec_.record_width());
  return torch::tensor(len, torch::kLong);
}

SequenceTargets BatchMaker::targets(const int64_t* records, int64_t n) const {
  LOCKSTEP_REQUIRE(spec_.sequence_targets(), "dataset '" + spec_.name + "' has no sequence targets");
  std::vector<int64_t> flat, lens(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* r = records + i * spec_.record_width();
    const int64_t k = io::target_length(spec_, r);
    const int64_t* t = io::record_targets(spec_, r);
    flat.insert(flat.end(), t, t + k);
    lens[static_cast<size_t>(i)] = k;
  }
  SequenceTargets out;
  out.targets = torch::tensor(flat, torch::kLong).to(device_);
  out.target_lengths = torch::tensor(lens, torch::kLong);
  out.lengths = lengths(records, n);
  return out;
}

}  // namespace lockstep
