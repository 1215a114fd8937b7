// sample_source: see sample_source.hpp.
#include "io/import/sample_source.hpp"

#include <cstring>

#include "core/base/error.hpp"

namespace lockstep::io {

MemorySource::MemorySource(std::string name, DatasetSpec spec, std::vector<unsigned char> samples,
                           std::vector<int64_t> labels, std::vector<int64_t> groups, std::vector<int64_t> extras)
    : name_(std::move(name)),
      spec_(std::move(spec)),
      samples_(std::move(samples)),
      labels_(std::move(labels)),
      groups_(std::move(groups)),
      extras_(std::move(extras)) {
  LOCKSTEP_REQUIRE(samples_.size() == labels_.size() * spec_.sample_bytes(),
                   name_ + ": sample bytes do not match the label count");
  LOCKSTEP_REQUIRE(groups_.empty() || groups_.size() == labels_.size(), name_ + ": one group id per sample");
  LOCKSTEP_REQUIRE(extras_.size() == labels_.size() * static_cast<size_t>(spec_.record_width() - 1),
                   name_ + ": label records do not match the sample count");
}

void MemorySource::read(int64_t begin, int64_t n, void* out) {
  LOCKSTEP_REQUIRE(begin >= 0 && n >= 0 && begin + n <= count(), name_ + ": read past the end");
  const size_t sb = spec_.sample_bytes();
  std::memcpy(out, samples_.data() + static_cast<size_t>(begin) * sb, static_cast<size_t>(n) * sb);
}

}  // namespace lockstep::io
