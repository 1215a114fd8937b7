// inference_setup: what `lockstep evaluate` and `lockstep predict` both build, once and in
// one order (every rank; collectives in the same order everywhere):
// 1. the manifest, which the command first checks is fit for it (labels to score, class
//    outputs to write); --eval.hflip is checked against the data;
// 2. the weights (a checkpoint or safetensors file: core/train/weight_source.hpp) and the
//    data spec the model sees the data with (the training run's normalisation);
// 3. this rank's reader of --eval.split, in its fixed plan (io/loader/shard_plan.hpp);
// 4. placement (device and communicator: collective), the model in eval form on the
//    device, and the batch maker.
// close() ends the communicator on the normal path; an error unwinding aborts it.
#pragma once

#include <functional>
#include <memory>

#include "core/config/config.hpp"
#include "core/data/batch_maker.hpp"
#include "core/dist/placement.hpp"
#include "core/model/registry.hpp"
#include "core/train/weight_source.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/loader/rank_reader.hpp"

namespace lockstep {

class MpiRuntime;

struct Inference {
  io::Manifest manifest;
  WeightSource src;
  io::DatasetSpec spec;  // the data as the model sees it (spec_for_model)
  std::unique_ptr<io::RankReader> data;
  Placement place;
  std::shared_ptr<Net> model;
  std::unique_ptr<BatchMaker> maker;

  void close();  // collective: the communicator's normal end
};

// FIT_FOR: the command's refusal of a manifest it cannot use (throws a UsageError naming
// the dataset), called before anything else is read.
Inference open_inference(const Config& cfg, const MpiRuntime& mpi,
                         const std::function<void(const io::Manifest&)>& fit_for);

}  // namespace lockstep
