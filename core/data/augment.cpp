// augment: see augment.hpp.
#include "core/data/augment.hpp"

#include <torch/torch.h>

#include "core/base/error.hpp"
#include "io/loader/sample_order.hpp"

namespace lockstep {

torch::Tensor augment_images(const torch::Tensor& x, const AugmentOptions& opt, uint64_t seed) {
  if (!opt.enabled()) return x;
  LOCKSTEP_REQUIRE(x.dim() == 4, "image augmentation needs [N, C, H, W] samples, got " + std::to_string(x.dim()) +
                                     "-d (turn off --data.random-crop / --data.hflip)");
  torch::NoGradGuard no_grad;
  const int64_t n = x.size(0), h = x.size(2), w = x.size(3), p = opt.crop_pad;
  torch::Tensor padded = p > 0 ? torch::nn::functional::pad(x, torch::nn::functional::PadFuncOptions({p, p, p, p}))
                               : x;
  torch::Tensor out = torch::empty_like(x);
  uint64_t state = seed;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = io::splitmix64(state);
    const int64_t dy = p > 0 ? static_cast<int64_t>(r % static_cast<uint64_t>(2 * p + 1)) : 0;
    const int64_t dx = p > 0 ? static_cast<int64_t>((r >> 16) % static_cast<uint64_t>(2 * p + 1)) : 0;
    torch::Tensor crop = padded[i].narrow(1, dy, h).narrow(2, dx, w);
    if (opt.hflip && ((r >> 40) & 1)) crop = crop.flip({2});
    out[i].copy_(crop);
  }
  return out;
}

}  // namespace lockstep
