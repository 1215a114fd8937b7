// augment: see augment.hpp. One gather per transformed axis over the whole batch (no
// per-sample loop of kernels), so it costs a few launches on a GPU.
#include "core/data/augment.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/base/error.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/loader/sample_order.hpp"

namespace lockstep {
namespace {

// Uniform in [-1, 1) from 53 bits of R.
double symmetric_unit(uint64_t r) { return static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0; }

// X gathered along DIM with per-sample indices IDX [N, L] (L: the output's size on DIM).
torch::Tensor gather_along(const torch::Tensor& x, int64_t dim, const torch::Tensor& idx) {
  std::vector<int64_t> view(static_cast<size_t>(x.dim()), 1);
  view[0] = idx.size(0);
  view[static_cast<size_t>(dim)] = idx.size(1);
  std::vector<int64_t> shape = x.sizes().vec();
  shape[static_cast<size_t>(dim)] = idx.size(1);
  return x.gather(dim, idx.view(view).expand(shape));
}

// Uniform in [0, 1) from 53 bits of R.
double unit(uint64_t r) { return static_cast<double>(r >> 11) * 0x1.0p-53; }

// One random-erasing rectangle [y0, y1) x [x0, x1) in an H x W image, drawn from STATE:
// empty unless a draw below P; then up to 10 tries for a rectangle that fits, as
// torchvision's RandomErasing does (area 2-40%, aspect ratio log-uniform in [0.3, 3.3]).
std::array<int64_t, 4> erase_box(uint64_t& state, double p, int64_t h, int64_t w) {
  if (unit(io::splitmix64(state)) >= p) return {0, 0, 0, 0};
  const double area = static_cast<double>(h * w);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (0.02 + 0.38 * unit(io::splitmix64(state)));
    const double ratio = std::exp(std::log(0.3) + (std::log(3.3) - std::log(0.3)) * unit(io::splitmix64(state)));
    const auto eh = static_cast<int64_t>(std::lround(std::sqrt(target * ratio)));
    const auto ew = static_cast<int64_t>(std::lround(std::sqrt(target / ratio)));
    if (eh < 1 || ew < 1 || eh > h || ew > w) continue;
    const uint64_t r = io::splitmix64(state);
    const auto y0 = static_cast<int64_t>(r % static_cast<uint64_t>(h - eh + 1));
    const auto x0 = static_cast<int64_t>((r >> 32) % static_cast<uint64_t>(w - ew + 1));
    return {y0, y0 + eh, x0, x0 + ew};
  }
  return {0, 0, 0, 0};
}

}  // namespace

void check_augment(const AugmentOptions& opt, const std::vector<int64_t>& shape, const std::string& data) {
  if (!opt.enabled()) return;
  const std::string has = data + " has samples of shape " + io::shape_text(shape);
  if (shape.size() != 3 && shape.size() != 4)
    throw UsageError("--data.random-crop, --data.hflip, --data.time-jitter, --data.brightness, --data.contrast and "
                     "--data.random-erase augment images [C,H,W] and clips [C,T,H,W]; " + has);
  if (opt.time_jitter > 0 && shape.size() != 4)
    throw UsageError("--data.time-jitter shifts video clips [C,T,H,W]; " + has);
  // A padding as wide as the image makes crops of padding alone (100000 allocated 2.5 TB).
  const int64_t h = shape[shape.size() - 2], w = shape.back();
  if (opt.crop_pad > std::min(h, w) / 2)
    throw UsageError("--data.random-crop " + std::to_string(opt.crop_pad) + " pads more than half of the " +
                     std::to_string(h) + "x" + std::to_string(w) + " image (" + data + "): at most " +
                     std::to_string(std::min(h, w) / 2));
  if (opt.time_jitter > 0 && opt.time_jitter >= shape[1])
    throw UsageError("--data.time-jitter " + std::to_string(opt.time_jitter) + " shifts a clip of " +
                     std::to_string(shape[1]) + " frames by all of them (" + data + "): at most " +
                     std::to_string(shape[1] - 1));
}

torch::Tensor augment_batch(const torch::Tensor& x, const AugmentOptions& opt, uint64_t seed, const Uploader& upload) {
  if (!opt.enabled()) return x;
  LOCKSTEP_REQUIRE(x.dim() == 4 || x.dim() == 5, "augmentation needs [N, C, H, W] or [N, C, T, H, W] batches, got " +
                                                     std::to_string(x.dim()) + "-d");
  LOCKSTEP_REQUIRE(opt.time_jitter == 0 || x.dim() == 5, "--data.time-jitter needs [N, C, T, H, W] clips");
  torch::NoGradGuard no_grad;
  const int64_t n = x.size(0), h = x.size(-2), w = x.size(-1), p = opt.crop_pad;
  const bool clip = x.dim() == 5;
  const int64_t t = clip ? x.size(2) : 1;
  // The draws, on the host: row/column offsets (with the flip folded into the columns),
  // the temporal shift, and the photometric factors.
  std::vector<int64_t> rows(static_cast<size_t>(n * h)), cols(static_cast<size_t>(n * w)), times(static_cast<size_t>(n * t));
  std::vector<float> shift(static_cast<size_t>(n), 0.0f), scale(static_cast<size_t>(n), 1.0f);
  std::vector<int64_t> boxes(static_cast<size_t>(4 * n), 0);  // erased [y0, y1, x0, x1) per sample
  const bool extra = opt.time_jitter > 0 || opt.brightness > 0 || opt.contrast > 0;
  uint64_t state = seed;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = io::splitmix64(state);
    const int64_t dy = p > 0 ? static_cast<int64_t>(r % static_cast<uint64_t>(2 * p + 1)) : p;
    const int64_t dx = p > 0 ? static_cast<int64_t>((r >> 16) % static_cast<uint64_t>(2 * p + 1)) : p;
    const bool flip = opt.hflip && ((r >> 40) & 1);
    for (int64_t k = 0; k < h; ++k) rows[static_cast<size_t>(i * h + k)] = dy + k;
    for (int64_t k = 0; k < w; ++k) cols[static_cast<size_t>(i * w + k)] = dx + (flip ? w - 1 - k : k);
    int64_t j = 0;
    if (extra) {
      const uint64_t r1 = io::splitmix64(state), r2 = io::splitmix64(state), r3 = io::splitmix64(state);
      if (opt.time_jitter > 0) j = static_cast<int64_t>(r1 % static_cast<uint64_t>(2 * opt.time_jitter + 1)) - opt.time_jitter;
      shift[static_cast<size_t>(i)] = static_cast<float>(opt.brightness * symmetric_unit(r2));
      scale[static_cast<size_t>(i)] = static_cast<float>(1.0 + opt.contrast * symmetric_unit(r3));
    }
    for (int64_t k = 0; k < t; ++k) times[static_cast<size_t>(i * t + k)] = std::clamp<int64_t>(k + j, 0, t - 1);
    if (opt.erase > 0) {
      const auto box = erase_box(state, opt.erase, h, w);
      std::copy(box.begin(), box.end(), boxes.begin() + 4 * i);
    }
  }
  const auto to_x = [&](const torch::Tensor& host) { return upload ? upload(host) : host.to(x.device()); };
  const auto on = [&](std::vector<int64_t>& v, int64_t len) { return to_x(torch::from_blob(v.data(), {n, len}, torch::kLong)); };
  torch::Tensor y = x;
  if (p > 0 || opt.hflip) {
    const int64_t d = x.dim();
    if (p > 0) y = torch::nn::functional::pad(y, torch::nn::functional::PadFuncOptions({p, p, p, p}));
    if (p > 0) y = gather_along(y, d - 2, on(rows, h));
    y = gather_along(y, d - 1, on(cols, w));
  }
  if (opt.time_jitter > 0) y = gather_along(y, 2, on(times, t));
  if (opt.brightness > 0 || opt.contrast > 0) {
    std::vector<int64_t> view(static_cast<size_t>(x.dim()), 1);
    view[0] = n;
    const torch::Tensor c = to_x(torch::from_blob(scale.data(), {n}, torch::kFloat)).to(x.scalar_type()).view(view);
    const torch::Tensor b = to_x(torch::from_blob(shift.data(), {n}, torch::kFloat)).to(x.scalar_type()).view(view);
    std::vector<int64_t> dims;
    for (int64_t k = 1; k < x.dim(); ++k) dims.push_back(k);
    const torch::Tensor mean = y.mean(dims, /*keepdim=*/true);
    y = (y - mean) * c + mean + b;
  }
  if (opt.erase > 0) {
    // Inside the box: rows in [y0, y1) and columns in [x0, x1), broadcast over C (and T).
    const torch::Tensor box = on(boxes, 4);
    const auto opts = torch::TensorOptions().dtype(torch::kLong).device(x.device());
    const torch::Tensor r = torch::arange(h, opts).unsqueeze(0), c = torch::arange(w, opts).unsqueeze(0);
    const torch::Tensor in_rows = r.ge(box.slice(1, 0, 1)) & r.lt(box.slice(1, 1, 2));   // [N, H]
    const torch::Tensor in_cols = c.ge(box.slice(1, 2, 3)) & c.lt(box.slice(1, 3, 4));   // [N, W]
    std::vector<int64_t> view(static_cast<size_t>(x.dim()), 1);
    view[0] = n;
    view[static_cast<size_t>(x.dim() - 2)] = h;
    view[static_cast<size_t>(x.dim() - 1)] = w;
    y = y.masked_fill((in_rows.unsqueeze(2) & in_cols.unsqueeze(1)).view(view), 0.0);
  }
  return y.contiguous();
}

}  // namespace lockstep
