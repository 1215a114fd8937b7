// batch_maker: see batch_maker.hpp.
#include "core/data/batch_maker.hpp"

#include <torch/torch.h>

#include <algorithm>

#include "core/base/error.hpp"
#include "core/data/batch_feed.hpp"

namespace lockstep {
namespace {

// Two rings: sample batches (each slot grows to the largest batch: a few slots), and the
// small uploads (labels, lengths, targets, augmentation draws: up to ~8 a micro-batch), so
// a slot comes round again only after several steps, by when its copy has long run.
constexpr size_t kBatchSlots = 4, kSmallSlots = 64;
constexpr size_t kSmallBytes = size_t{1} << 20;

}  // namespace

BatchMaker::BatchMaker(const io::DatasetSpec& spec, torch::Device device, bool stage, bool channels_last)
    : spec_(spec), device_(device), channels_last_(channels_last) {
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
  if (!stage) return;
  batches_ = make_staging_ring(kBatchSlots, device);
  small_ = make_staging_ring(kSmallSlots, device);
}

torch::Tensor BatchMaker::upload(const torch::Tensor& host) const {
  if (!batches_ || host.numel() == 0) return host.to(device_);
  const size_t bytes = static_cast<size_t>(host.numel()) * host.element_size();
  StagingRing& ring = bytes < kSmallBytes ? *small_ : *batches_;
  void* slot = ring.acquire(bytes);
  torch::Tensor staged = torch::from_blob(slot, host.sizes(), host.options());
  staged.copy_(host);  // host to pinned, on the host
  // copy=true: on the CPU (tests) too, the result must not alias the slot.
  torch::Tensor out = staged.to(device_, /*non_blocking=*/true, /*copy=*/true);
  ring.release();  // the slot's fence: recorded after the copy was queued
  return out;
}

torch::Tensor BatchMaker::inputs(const void* raw, int64_t n, const int64_t* records) const {
  std::vector<int64_t> dims{n};
  dims.insert(dims.end(), spec_.sample_shape.begin(), spec_.sample_shape.end());
  // from_blob does not own RAW: the copy below (to the staging ring, or the CPU's
  // conversion) is made before RAW's buffer is reused.
  torch::Tensor x = torch::from_blob(const_cast<void*>(raw), dims, stored_scalar_type(spec_.dtype));
  if (spec_.ragged) {
    LOCKSTEP_REQUIRE(records != nullptr, "ragged samples need their lengths");
    x = x.narrow(-1, 0, longest(records, n));  // fewer bytes to upload
  }
  // The stored dtype to the device, converted there; on the CPU converted from RAW at once.
  return normalise(batches_ ? upload(x) : x, records);
}

int64_t BatchMaker::longest(const int64_t* records, int64_t n) const {
  int64_t most = 0;
  for (int64_t i = 0; i < n; ++i) most = std::max(most, io::record_length(spec_, records + i * spec_.record_width()));
  return most;
}

torch::Tensor BatchMaker::normalise(const torch::Tensor& samples, const int64_t* records) const {
  const int64_t n = samples.size(0);
  torch::Tensor x = samples;
  if (spec_.ragged) {
    LOCKSTEP_REQUIRE(records != nullptr, "ragged samples need their lengths");
    x = x.narrow(-1, 0, longest(records, n));  // the lengths are on the host: no device read
  }
  // Converted into the model's layout in the same pass (a conv net running channels-last
  // would otherwise copy the batch once more); the values do not depend on the layout.
  auto format = torch::MemoryFormat::Contiguous;
  if (channels_last_ && x.dim() == 4) format = torch::MemoryFormat::ChannelsLast;
  if (channels_last_ && x.dim() == 5) format = torch::MemoryFormat::ChannelsLast3d;
  torch::Tensor out = torch::empty(x.sizes(), x.options().dtype(torch::kFloat).memory_format(format));
  out.copy_(x);
  out.sub_(mean_).mul_(inv_std_);
  if (!spec_.ragged) return out;
  const int64_t steps_max = out.size(-1);
  // [N, 1.., T] mask of valid steps: padding is 0 after normalisation, not -mean/std.
  std::vector<int64_t> mask_shape(static_cast<size_t>(out.dim()), 1);
  mask_shape[0] = n;
  mask_shape.back() = steps_max;
  const torch::Tensor steps = torch::arange(steps_max, torch::TensorOptions().dtype(torch::kLong).device(device_));
  const torch::Tensor len_dev = upload(lengths(records, n));
  const torch::Tensor valid = steps.unsqueeze(0).lt(len_dev.unsqueeze(1)).view(mask_shape);
  return out.mul_(valid.to(torch::kFloat));
}

torch::Tensor BatchMaker::labels(const int64_t* records, int64_t n) const {
  torch::Tensor y = torch::empty({n}, torch::kLong);
  io::record_classes(spec_, records, n, y.data_ptr<int64_t>());
  return upload(y);
}

torch::Tensor BatchMaker::lengths(const int64_t* records, int64_t n) const {
  std::vector<int64_t> len(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) len[static_cast<size_t>(i)] = io::record_length(spec_, records + i * spec_.record_width());
  return torch::tensor(len, torch::kLong);
}

SequenceTargets BatchMaker::targets(const int64_t* records, int64_t n) const {
  LOCKSTEP_REQUIRE(spec_.sequence_targets(), "dataset '" + spec_.name + "' has no sequence targets");
  std::vector<int64_t> flat, lens(static_cast<size_t>(n)), needed(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* r = records + i * spec_.record_width();
    const int64_t k = io::target_length(spec_, r);
    const int64_t* t = io::record_targets(spec_, r);
    flat.insert(flat.end(), t, t + k);
    lens[static_cast<size_t>(i)] = k;
    needed[static_cast<size_t>(i)] = io::ctc_frames_needed(t, k);
  }
  SequenceTargets out;
  const torch::Tensor flat_t = torch::tensor(flat, torch::kLong);
  out.targets = upload(flat_t);
  out.target_lengths = torch::tensor(lens, torch::kLong);
  out.needed = torch::tensor(needed, torch::kLong);
  out.lengths = lengths(records, n);
  return out;
}

}  // namespace lockstep
