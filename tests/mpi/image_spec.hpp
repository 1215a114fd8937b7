// image_spec: the dataset description the MPI and GPU tests build their models from — one
// gray image channel of uint8 samples — without a dataset on disk.
#pragma once

#include <string>
#include <utility>

#include "io/dataset/shard_format.hpp"

namespace lockstep::testing {

inline io::DatasetSpec image_spec(std::string name, int64_t side, int64_t classes, double mean = 0.0, double std = 1.0) {
  io::DatasetSpec s;
  s.name = std::move(name);
  s.sample_shape = {1, side, side};
  s.dtype = io::DType::kUInt8;
  s.num_classes = classes;
  s.mean = {mean};
  s.std = {std};
  return s;
}

}  // namespace lockstep::testing
