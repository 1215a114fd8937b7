// batch_feed: see batch_feed.hpp.
#include "core/data/batch_feed.hpp"

#include <torch/torch.h>

#include <cstring>

#include "core/base/error.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lockstep {

torch::ScalarType stored_scalar_type(io::DType t) {
  switch (t) {
    case io::DType::kUInt8:
      return torch::kUInt8;
    case io::DType::kInt16:
      return torch::kInt16;
    case io::DType::kFloat16:
      return torch::kHalf;
    case io::DType::kFloat32:
      return torch::kFloat;
  }
  return torch::kUInt8;
}

namespace {

// The block's layout: the samples, then the labels at the next multiple of 8 bytes.
size_t labels_offset(size_t sample_bytes) { return (sample_bytes + 7) / 8 * 8; }

}  // namespace

struct BatchFeed::Staged {
  std::unique_ptr<StagingRing> host;   // pinned packing slots
  std::vector<torch::Tensor> landing;  // kSlots device blocks (uint8), grown to the largest batch
  size_t next = 0;                     // the landing block the next feed() uses
#ifdef LOCKSTEP_HAVE_CUDA
  std::unique_ptr<c10::cuda::CUDAStream> copy;  // CUDA only
  std::vector<at::cuda::CUDAEvent> copied, consumed;
  at::cuda::CUDAEvent allocated;
#endif
};

BatchFeed::BatchFeed(const io::DatasetSpec& spec, torch::Device device, bool stage,
                     bool copy_stream)
    : spec_(spec), device_(device) {
  if (!stage) return;
  staged_ = std::make_unique<Staged>();
  staged_->host = make_staging_ring(kSlots + 1, device);
  staged_->landing.resize(kSlots);
#ifdef LOCKSTEP_HAVE_CUDA
  if (device.is_cuda() && copy_stream) {
    // The high-priority pool: never the run's stream (from the low-priority pool), and the
    // copy goes first when both streams have work ready.
    staged_->copy = std::make_unique<c10::cuda::CUDAStream>(
        c10::cuda::getStreamFromPool(/*isHighPriority=*/true, device.index()));
    staged_->copied.resize(kSlots);
    staged_->consumed.resize(kSlots);
  }
#endif
}

BatchFeed::~BatchFeed() {
#ifdef LOCKSTEP_HAVE_CUDA
  if (staged_ && staged_->copy) {
    try {
      staged_->copy->synchronize();
    } catch (...) {  // a destructor: the run reports (or has reported) the device's error
    }
  }
#endif
}

int64_t BatchFeed::host_waits() const { return staged_ ? staged_->host->waits() : 0; }

FedBatch BatchFeed::feed(const void* raw, int64_t n, const int64_t* records, Fence* raw_fence) {
  LOCKSTEP_REQUIRE(!held_, "batch feed: feed() twice without done()");
  LOCKSTEP_REQUIRE(!raw_fence || staged_, "batch feed: a fenced batch needs a staged feed (nothing copies it here)");
  std::vector<int64_t> dims{n};
  dims.insert(dims.end(), spec_.sample_shape.begin(), spec_.sample_shape.end());
  const torch::ScalarType type = stored_scalar_type(spec_.dtype);
  FedBatch out;
  if (!staged_) {  // the CPU: a view of the loader's buffer, and the labels
    out.samples = torch::from_blob(const_cast<void*>(raw), dims, type);
    out.labels = torch::empty({n}, torch::kLong);
    io::record_classes(spec_, records, n, out.labels.data_ptr<int64_t>());
    held_ = true;
    return out;
  }
  Staged& s = *staged_;
  const size_t sample_bytes = static_cast<size_t>(n) * spec_.sample_bytes();
  const size_t offset = labels_offset(sample_bytes),
               bytes = offset + static_cast<size_t>(n) * sizeof(int64_t);
  // The host block: the samples (unless RAW is copied from directly), then each record's
  // class column.
  const bool direct = raw_fence != nullptr;
  const size_t packed_from = direct ? offset : 0;
  auto* host = static_cast<unsigned char*>(s.host->acquire(bytes - packed_from));
  bool released = false;  // the pinned slot goes back to the ring whatever happens below
  torch::Tensor dest;
  try {
    if (!direct) std::memcpy(host, raw, sample_bytes);
    io::record_classes(spec_, records, n, reinterpret_cast<int64_t*>(host + offset - packed_from));
    const torch::Tensor packed = torch::from_blob(host, {static_cast<int64_t>(bytes - packed_from)}, torch::kUInt8);
    torch::Tensor& block = s.landing[s.next];
    const bool grow = !block.defined() || static_cast<size_t>(block.numel()) < bytes;
    if (grow)
      block = torch::empty({static_cast<int64_t>(bytes)},
                           torch::TensorOptions().dtype(torch::kUInt8).device(device_));
    dest = block.narrow(0, 0, static_cast<int64_t>(bytes));
    // The copies, in order on the current stream (the copy stream below): RAW's samples when
    // direct (then RAW's fence), then the packed block.
    auto copy = [&] {
      const bool async = device_.is_cuda();
      if (direct) {
        const torch::Tensor samples = torch::from_blob(const_cast<void*>(raw), {static_cast<int64_t>(sample_bytes)}, torch::kUInt8);
        dest.narrow(0, 0, static_cast<int64_t>(sample_bytes)).copy_(samples, async);
        raw_fence->record();
      }
      dest.narrow(0, static_cast<int64_t>(packed_from), packed.numel()).copy_(packed, async);
      released = true;
      s.host->release();  // the pinned slot's fence
    };
#ifdef LOCKSTEP_HAVE_CUDA
    if (s.copy) {
      const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device_.index());
      if (grow) {  // memory from the caching allocator: free once the compute stream gets here
        s.allocated.record(compute);
        s.allocated.block(*s.copy);
      }
      {
        const c10::cuda::CUDAStreamGuard on_copy(*s.copy);
        s.consumed[s.next].block(*s.copy);  // the batch that used this block has been read
        copy();
        s.copied[s.next].record(*s.copy);
      }
      s.copied[s.next].block(compute);
    } else
#endif
    {
      copy();  // in order on the current stream
    }
  } catch (...) {
    if (!released) s.host->release();
    throw;
  }
  direct_ += direct ? 1 : 0;
  out.samples = dest.narrow(0, 0, static_cast<int64_t>(sample_bytes)).view(type).view(dims);
  out.labels =
      dest.narrow(0, static_cast<int64_t>(offset), n * static_cast<int64_t>(sizeof(int64_t)))
          .view(torch::kLong);
  held_ = true;
  return out;
}

void BatchFeed::done() {
  LOCKSTEP_REQUIRE(held_, "batch feed: done() without feed()");
  held_ = false;
  if (!staged_) return;
#ifdef LOCKSTEP_HAVE_CUDA
  if (staged_->copy)
    staged_->consumed[staged_->next].record(c10::cuda::getCurrentCUDAStream(device_.index()));
#endif
  staged_->next = (staged_->next + 1) % kSlots;
}

}  // namespace lockstep
