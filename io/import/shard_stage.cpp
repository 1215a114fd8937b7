// shard_stage: see shard_stage.hpp.
#include "io/import/shard_stage.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/error.hpp"
#include "io/dataset/shard_writer.hpp"

namespace lockstep::io {

StagedShard::StagedShard(std::string path, size_t sample_bytes, int64_t record_width, std::vector<int64_t> position,
                         size_t window_bytes)
    : path_(std::move(path)),
      sample_bytes_(sample_bytes),
      record_width_(record_width),
      position_(std::move(position)),
      window_bytes_(std::max<size_t>(1, window_bytes)) {
  file_ = std::fopen(path_.c_str(), "w+be");
  if (!file_) throw Error("cannot create the staging file " + path_ + ": " + std::strerror(errno));
}

StagedShard::~StagedShard() { close_and_remove(); }

void StagedShard::close_and_remove() {
  if (!file_) return;
  std::fclose(file_);
  file_ = nullptr;
  ::unlink(path_.c_str());
}

void StagedShard::append(const void* samples, const int64_t* records, int64_t n) {
  LOCKSTEP_REQUIRE(file_ && appended_ + n <= static_cast<int64_t>(position_.size()),
                   path_ + ": more samples staged than the shard plans");
  // One record: the sample's bytes, then its label record.
  const size_t rb = static_cast<size_t>(record_width_) * sizeof(int64_t);
  for (int64_t i = 0; i < n; ++i) {
    if (std::fwrite(static_cast<const unsigned char*>(samples) + static_cast<size_t>(i) * sample_bytes_, 1,
                    sample_bytes_, file_) != sample_bytes_ ||
        std::fwrite(records + i * record_width_, 1, rb, file_) != rb)
      throw Error("cannot write the staging file " + path_ + ": " + std::strerror(errno));
  }
  appended_ += n;
}

void StagedShard::drain(ShardWriter& out) {
  const auto total = static_cast<int64_t>(position_.size());
  LOCKSTEP_REQUIRE(file_ && appended_ == total, path_ + ": " + std::to_string(appended_) + " of " +
                                                    std::to_string(total) + " samples staged before the reorder");
  if (std::fflush(file_) != 0) throw Error("cannot write the staging file " + path_ + ": " + std::strerror(errno));
  const size_t rb = static_cast<size_t>(record_width_) * sizeof(int64_t);
  const size_t stride = sample_bytes_ + rb;
  const int64_t window = std::max<int64_t>(1, static_cast<int64_t>(window_bytes_ / stride));
  const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>((16u << 20) / stride));  // staging read size
  std::vector<unsigned char> in(static_cast<size_t>(std::min(chunk, total)) * stride);
  for (int64_t lo = 0; lo < total; lo += window) {
    const int64_t n = std::min(window, total - lo);
    std::vector<unsigned char> samples(static_cast<size_t>(n) * sample_bytes_);
    std::vector<int64_t> records(static_cast<size_t>(n * record_width_));
    if (std::fseek(file_, 0, SEEK_SET) != 0)
      throw Error("cannot read the staging file " + path_ + ": " + std::strerror(errno));
    for (int64_t j0 = 0; j0 < total; j0 += chunk) {
      const int64_t k = std::min(chunk, total - j0);
      if (std::fread(in.data(), stride, static_cast<size_t>(k), file_) != static_cast<size_t>(k))
        throw Error("cannot read the staging file " + path_ + ": " +
                    (std::ferror(file_) ? std::strerror(errno) : "it is shorter than what was staged"));
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = position_[static_cast<size_t>(j0 + j)] - lo;
        if (at < 0 || at >= n) continue;
        const unsigned char* rec = in.data() + static_cast<size_t>(j) * stride;
        std::memcpy(samples.data() + static_cast<size_t>(at) * sample_bytes_, rec, sample_bytes_);
        std::memcpy(records.data() + at * record_width_, rec + sample_bytes_, rb);
      }
    }
    out.append(samples.data(), records.data(), n);
  }
  close_and_remove();
}

}  // namespace lockstep::io
