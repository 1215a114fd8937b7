// sample_source: what an importer reads from. Every source knows its shape, dtype, class
// count and all its labels up front (labels are small), and reads sample ranges in source
// order, so the import pipeline can stream a file larger than memory in one pass.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/dataset/shard_format.hpp"

namespace lockstep::io {

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual const DatasetSpec& spec() const = 0;  // shape, dtype, num_classes; no statistics
  virtual int64_t count() const = 0;
  // Class ids; an unlabeled source (spec().labeled false) returns zeros, used only to plan.
  virtual const std::vector<int64_t>& labels() const = 0;
  // Group ids (subject, speaker, trial) per sample, or empty: a validation split then takes
  // whole groups, so no group is in two splits (import_plan.hpp).
  virtual const std::vector<int64_t>& groups() const { return no_groups_; }
  // The rest of each sample's label record after the class label (shard_format.hpp):
  // record_width() - 1 values per sample ([length] for ragged data, then the targets), or
  // empty when the width is 1.
  virtual const std::vector<int64_t>& extras() const { return no_groups_; }
  // Reads samples [BEGIN, BEGIN+N) into OUT (N * spec().sample_bytes()).
  virtual void read(int64_t begin, int64_t n, void* out) = 0;
  virtual std::string name() const = 0;  // the file or directory, for messages
  // Input files left out because they did not decode (images --skip-bad): the manifest's count.
  virtual int64_t skipped() const { return 0; }

 private:
  const std::vector<int64_t> no_groups_{};
};

// SOURCE with every sample seen as SHAPE (the same elements, e.g. [28, 28] -> [1, 28, 28]:
// `lockstep shard --sample-shape`). Throws UsageError naming --sample-shape when the element
// count differs or the source is ragged.
std::unique_ptr<SampleSource> reshape_samples(std::unique_ptr<SampleSource> source, const std::vector<int64_t>& shape);
// Samples stored channels-last ([H,W,C], [T,H,W,C]) read channels-first ([C,H,W], [C,T,H,W]),
// the layout every lockstep model takes. Throws UsageError for samples without a channel axis.
std::unique_ptr<SampleSource> channels_first(std::unique_ptr<SampleSource> source);
// A sample shape that reads as channels-last: 3 or 4 axes, the last at most 4 and the first
// more than 4 (a NumPy/Keras [H,W,3] image or [T,H,W,3] clip taken as 32 channels of 32x3).
bool looks_channels_last(const std::vector<int64_t>& shape);

// A source already in memory (IDX, CSV).
class MemorySource final : public SampleSource {
 public:
  MemorySource(std::string name, DatasetSpec spec, std::vector<unsigned char> samples,
               std::vector<int64_t> labels, std::vector<int64_t> groups = {}, std::vector<int64_t> extras = {});
  const DatasetSpec& spec() const override { return spec_; }
  int64_t count() const override { return static_cast<int64_t>(labels_.size()); }
  const std::vector<int64_t>& labels() const override { return labels_; }
  const std::vector<int64_t>& groups() const override { return groups_; }
  const std::vector<int64_t>& extras() const override { return extras_; }
  void read(int64_t begin, int64_t n, void* out) override;
  std::string name() const override { return name_; }

 private:
  std::string name_;
  DatasetSpec spec_;
  std::vector<unsigned char> samples_;
  std::vector<int64_t> labels_;
  std::vector<int64_t> groups_;
  std::vector<int64_t> extras_;
};

}  // namespace lockstep::io
