// weight_source: the weights a file holds — a lockstep checkpoint (.ckpt) or a safetensors
// file (lockstep's export, or any other's, e.g. torchvision's state dict) — by lockstep's
// names, with what is known of the model they belong to. Used by --init-from (partial, a
// table), and by evaluate, predict and export (strict: every tensor must fit).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/model/weights.hpp"
#include "io/dataset/shard_format.hpp"

namespace lockstep {

struct WeightSource {
  std::string path;
  std::string model;  // --model.name it was trained as; "" when unknown (a foreign safetensors file)
  int64_t width = 0;
  int depth = 18;
  std::vector<int64_t> sample_shape;  // empty when unknown
  int64_t num_classes = 0;            // 0 when unknown
  int64_t step = -1;
  std::vector<double> mean, std;      // the normalisation it was trained with (may be empty)
  std::string data_dtype;             // the stored sample dtype it was trained on; "" when unknown
  std::vector<std::string> class_names;
  std::vector<std::string> tokens;  // a CTC model's vocabulary; empty for classifiers
  NamedTensors tensors;               // lockstep's names, on the CPU
};

// Throws UsageError naming PATH when it is neither a readable checkpoint nor safetensors.
// MODEL_NAME: the --model.name the user gave; a checkpoint of a TorchScript model is read
// through the torchscript:FILE it names, and refused when it names none (a file's metadata
// never makes lockstep load code).
WeightSource read_weights(const std::string& path, const std::string& model_name);

// A model for SPEC built as SOURCE says (or as FALLBACK says, for a foreign safetensors
// file), every weight loaded: a tensor missing, extra or of another shape is a UsageError
// naming the file ("a checkpoint of another model family"). A TorchScript model is code:
// its file is loaded only when FALLBACK (--model.name) names one, never because a
// checkpoint's or safetensors file's metadata does.
std::shared_ptr<Net> build_model(const WeightSource& source, const ModelOptions& fallback, const io::DatasetSpec& spec);
// Throws UsageError naming SOURCE's file when its model cannot read SPEC's data as it was trained
// to: another sample shape (a ragged one's padded length aside), token vocabulary or class count,
// or labelled classes named differently (another order included: every label would mean another
// class). build_model checks it; export --data too, before it takes anything from the data.
void check_data_fits(const WeightSource& source, const io::DatasetSpec& spec);
// Throws UsageError naming SOURCE's file when SPEC's samples (by their own statistics) are in
// other units than its model's training data (io/dataset/units_check.hpp: pixels 0-1 for
// 0-255, the model's normalisation would make every input wrong), naming the stored dtypes.
// open_inference and export --data check it unless --any-units.
void check_units(const WeightSource& source, const io::DatasetSpec& spec);

// The dataset spec a model from SOURCE sees DATA with: the data's samples, normalised as
// the model was trained (SOURCE's mean/std when known: inference on new data must not
// use the new data's statistics), with the model's classes (or a CTC model's vocabulary)
// when DATA is unlabelled.
// Logs (rank 0) when the normalisation differs from the data's own.
io::DatasetSpec spec_for_model(const io::DatasetSpec& data, const WeightSource& source);

// Safetensors metadata: model family and size, data shape, classes, normalisation, step.
std::map<std::string, std::string> export_metadata(const WeightSource& source);

}  // namespace lockstep
