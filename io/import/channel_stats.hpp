// channel_stats: the per-channel mean and std of an import's training samples (the
// normalisation the reader applies), and of any other input, whose units are checked against
// them (units_check.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "io/dataset/shard_format.hpp"

namespace lockstep::io {

// Running per-channel mean/std (channel = first sample dimension), any sample dtype.
class ChannelStats {
 public:
  explicit ChannelStats(const DatasetSpec& spec);
  // LENGTH > 0: ragged samples whose first LENGTH time steps are data (N must be 1).
  void add(const void* samples, int64_t n, int64_t length = 0);
  void finish(std::vector<double>* mean, std::vector<double>* std) const;

 private:
  DatasetSpec spec_;
  int64_t channels_, per_channel_;
  std::vector<double> sum_, sq_;
  int64_t values_ = 0;  // per channel: the data values each channel's sums cover
};

}  // namespace lockstep::io
