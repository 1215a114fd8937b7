// sample_source: see sample_source.hpp.
#include "io/import/sample_source.hpp"

#include <cstring>

#include "core/base/error.hpp"

namespace lockstep::io {
namespace {

class ReshapedSource final : public SampleSource {
 public:
  ReshapedSource(std::unique_ptr<SampleSource> inner, const std::vector<int64_t>& shape)
      : inner_(std::move(inner)), spec_(inner_->spec()) {
    const auto text = [](const std::vector<int64_t>& s) {
      std::string t;
      for (const int64_t d : s) t += (t.empty() ? "" : ",") + std::to_string(d);
      return "[" + t + "]";
    };
    if (spec_.ragged)
      throw UsageError("--sample-shape: " + inner_->name() + " holds sequences of varying length; they are not reshaped");
    int64_t n = 1;
    for (const int64_t d : shape) n *= d;
    if (shape.empty() || n != spec_.sample_elems())
      throw UsageError("--sample-shape " + text(shape) + " has " + std::to_string(n) + " elements; the samples of " +
                       inner_->name() + " are " + text(spec_.sample_shape) + " (" +
                       std::to_string(spec_.sample_elems()) + ")");
    spec_.sample_shape = shape;
  }
  const DatasetSpec& spec() const override { return spec_; }
  int64_t count() const override { return inner_->count(); }
  const std::vector<int64_t>& labels() const override { return inner_->labels(); }
  const std::vector<int64_t>& groups() const override { return inner_->groups(); }
  const std::vector<int64_t>& extras() const override { return inner_->extras(); }
  void read(int64_t begin, int64_t n, void* out) override { inner_->read(begin, n, out); }
  std::string name() const override { return inner_->name(); }
  int64_t skipped() const override { return inner_->skipped(); }

 private:
  std::unique_ptr<SampleSource> inner_;
  DatasetSpec spec_;
};

// Each sample [d0, ..., C] read as [C, d0, ...]: a plain transpose of its S x C elements.
class ChannelsFirstSource final : public SampleSource {
 public:
  explicit ChannelsFirstSource(std::unique_ptr<SampleSource> inner) : inner_(std::move(inner)), spec_(inner_->spec()) {
    if (spec_.ragged || spec_.sample_shape.size() < 2)
      throw UsageError("--layout channels-last: the samples of " + inner_->name() +
                       " have no channel axis to move (one axis, or sequences of varying length)");
    channels_ = spec_.sample_shape.back();
    spec_.sample_shape.pop_back();
    spec_.sample_shape.insert(spec_.sample_shape.begin(), channels_);
  }
  const DatasetSpec& spec() const override { return spec_; }
  int64_t count() const override { return inner_->count(); }
  const std::vector<int64_t>& labels() const override { return inner_->labels(); }
  const std::vector<int64_t>& groups() const override { return inner_->groups(); }
  const std::vector<int64_t>& extras() const override { return inner_->extras(); }
  std::string name() const override { return inner_->name(); }
  int64_t skipped() const override { return inner_->skipped(); }
  void read(int64_t begin, int64_t n, void* out) override {
    const size_t item = dtype_size(spec_.dtype), bytes = spec_.sample_bytes();
    const int64_t positions = spec_.sample_elems() / channels_;
    buffer_.resize(static_cast<size_t>(n) * bytes);
    inner_->read(begin, n, buffer_.data());
    auto* dst = static_cast<unsigned char*>(out);
    for (int64_t i = 0; i < n; ++i) {
      const unsigned char* in = buffer_.data() + static_cast<size_t>(i) * bytes;
      unsigned char* o = dst + static_cast<size_t>(i) * bytes;
      for (int64_t p = 0; p < positions; ++p)
        for (int64_t c = 0; c < channels_; ++c)
          std::memcpy(o + static_cast<size_t>(c * positions + p) * item, in + static_cast<size_t>(p * channels_ + c) * item,
                      item);
    }
  }

 private:
  std::unique_ptr<SampleSource> inner_;
  DatasetSpec spec_;
  int64_t channels_ = 1;
  std::vector<unsigned char> buffer_;
};

}  // namespace

std::unique_ptr<SampleSource> channels_first(std::unique_ptr<SampleSource> source) {
  return std::make_unique<ChannelsFirstSource>(std::move(source));
}

bool looks_channels_last(const std::vector<int64_t>& shape) {
  return (shape.size() == 3 || shape.size() == 4) && shape.back() <= 4 && shape.front() > 4;
}

std::unique_ptr<SampleSource> reshape_samples(std::unique_ptr<SampleSource> source, const std::vector<int64_t>& shape) {
  return std::make_unique<ReshapedSource>(std::move(source), shape);
}

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
