// tensor_sync: see tensor_sync.hpp.
#include "core/dist/tensor_sync.hpp"

#include <ATen/ATen.h>

namespace lockstep {

void broadcast_tensors(const std::vector<at::Tensor>& tensors, Communicator& comm) {
  at::NoGradGuard no_grad;  // parameters are autograd leaves: overwrite them outside autograd
  size_t total = 0;
  for (const auto& t : tensors) total += static_cast<size_t>(t.numel());
  if (total == 0) return;
  at::Tensor flat = at::empty({static_cast<int64_t>(total)}, tensors[0].options().dtype(at::kFloat));
  int64_t off = 0;
  for (const auto& t : tensors) {
    flat.narrow(0, off, t.numel()).copy_(t.reshape({-1}));
    off += t.numel();
  }
  comm.broadcast(flat.data_ptr<float>(), total, 0);
  off = 0;
  for (const auto& t : tensors) {
    // Integer buffers (BatchNorm's num_batches_tracked) round-trip exactly through float
    // below 2^24, far beyond any step count that matters here.
    at::Tensor dst = t;
    dst.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
    off += t.numel();
  }
}

void average_tensors(const std::vector<at::Tensor>& tensors, Communicator& comm) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> floats;
  for (const auto& t : tensors)
    if (t.is_floating_point()) floats.push_back(t);
  if (floats.empty()) return;
  at::Tensor flat = at::cat([&] {
    std::vector<at::Tensor> parts;
    for (const auto& t : floats) parts.push_back(t.reshape({-1}).to(at::kFloat));
    return parts;
  }());
  comm.allreduce_sum(flat.data_ptr<float>(), static_cast<size_t>(flat.numel()));
  flat.div_(comm.size());
  int64_t off = 0;
  for (auto t : floats) {
    t.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
    off += t.numel();
  }
}

}  // namespace lockstep
