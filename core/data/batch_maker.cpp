// batch_maker: see batch_maker.hpp.
#include "core/data/batch_maker.hpp"

#include <torch/torch.h>

#include <functional>

#include "core/base/error.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lockstep {
namespace {

// Two rings: sample batches (each slot grows to the largest batch: a few slots), and the
// small uploads (labels, lengths, targets, augmentation draws: up to ~8 a micro-batch), so
// a slot comes round again only after several steps, by when its copy has long run.
constexpr size_t kBatchSlots = 4, kSmallSlots = 64;
constexpr size_t kSmallBytes = size_t{1} << 20;

#ifdef LOCKSTEP_HAVE_CUDA
class CudaFence final : public Fence {
 public:
  explicit CudaFence(c10::DeviceIndex device) : device_(device) {}
  void record() override { event_.record(c10::cuda::getCurrentCUDAStream(device_)); }
  bool done() const override { return event_.query(); }
  void wait() override { event_.synchronize(); }

 private:
  c10::DeviceIndex device_;
  at::cuda::CUDAEvent event_{cudaEventDisableTiming};
};
#endif

// The CPU's stand-in (tests): a copy out of plain memory is complete when it returns.
class DoneFence final : public Fence {
 public:
  void record() override {}
  bool done() const override { return true; }
  void wait() override {}
};

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

BatchMaker::BatchMaker(const io::DatasetSpec& spec, torch::Device device, bool stage) : spec_(spec), device_(device) {
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
  // The CPU (tests): plain memory, copies complete on return. A GPU: pinned memory, CUDA events.
  std::function<std::shared_ptr<void>(size_t)> alloc = [](size_t bytes) {
    return std::shared_ptr<void>(::operator new(bytes), [](void* p) { ::operator delete(p); });
  };
  std::function<std::unique_ptr<Fence>()> fence = [] { return std::make_unique<DoneFence>(); };
  if (device.is_cuda()) {
#ifdef LOCKSTEP_HAVE_CUDA
    alloc = [](size_t bytes) {
      auto t = std::make_shared<torch::Tensor>(torch::empty(
          {static_cast<int64_t>(bytes)}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true)));
      return std::shared_ptr<void>(t, t->data_ptr());
    };
    fence = [index = device.index()] { return std::make_unique<CudaFence>(index); };
#else
    LOCKSTEP_REQUIRE(false, "this build has no CUDA support for device " + device.str());
#endif
  }
  batches_ = std::make_unique<StagingRing>(kBatchSlots, alloc, fence);
  small_ = std::make_unique<StagingRing>(kSmallSlots, alloc, fence);
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
  torch::Tensor x = torch::from_blob(const_cast<void*>(raw), dims, torch_type(spec_.dtype));
  torch::Tensor len;
  if (spec_.ragged) {
    LOCKSTEP_REQUIRE(records != nullptr, "ragged samples need their lengths");
    len = lengths(records, n);
    x = x.narrow(-1, 0, n > 0 ? len.max().item<int64_t>() : 0);  // len is on the CPU: no device read
  }
  // The stored dtype to the device, converted there; on the CPU converted from RAW at once.
  x = batches_ ? upload(x).to(torch::kFloat) : x.to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true);
  x.sub_(mean_).mul_(inv_std_);
  if (!spec_.ragged) return x;
  const int64_t longest = x.size(-1);
  // [N, 1.., T] mask of valid steps: padding is 0 after normalisation, not -mean/std.
  std::vector<int64_t> mask_shape(static_cast<size_t>(x.dim()), 1);
  mask_shape[0] = n;
  mask_shape.back() = longest;
  const torch::Tensor steps = torch::arange(longest, torch::TensorOptions().dtype(torch::kLong).device(device_));
  const torch::Tensor len_dev = upload(len);
  const torch::Tensor valid = steps.unsqueeze(0).lt(len_dev.unsqueeze(1)).view(mask_shape);
  return x.mul_(valid.to(torch::kFloat));
}

torch::Tensor BatchMaker::labels(const int64_t* records, int64_t n) const {
  const int64_t w = spec_.record_width();
  torch::Tensor y = torch::empty({n}, torch::kLong);  // each record's first column
  int64_t* out = y.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) out[i] = records[i * w];
  return upload(y);
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
  const torch::Tensor flat_t = torch::tensor(flat, torch::kLong);
  out.targets = upload(flat_t);
  out.target_lengths = torch::tensor(lens, torch::kLong);
  out.lengths = lengths(records, n);
  return out;
}

}  // namespace lockstep
