// checkpoint_state: what a checkpoint holds, and its conversion to and from checkpoint_store's
// (meta JSON, payload bytes).
//
// Payload: a torch archive with "model" (parameters and buffers), "optimizer" (its state:
// momentum, Adam moments), "rng" (uint8 [world, bytes]: every rank's generator states, so
// a resume on the same world size continues dropout exactly) and "amp_scaler" (fp16 loss
// scale, finite-step count, skipped steps). Meta: the position (global step, epoch, samples consumed in that
// epoch), world size, batch, seed, model, dataset shape and classes, versions, and the
// resolved config, readable by `lockstep inspect` without LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "core/config/config.hpp"
#include "core/model/registry.hpp"

namespace lockstep::io {
struct Manifest;
}

namespace torch::optim {
class Optimizer;
}

namespace lockstep {

struct TrainPosition {
  int64_t step = 0;                    // optimizer steps completed
  int64_t epoch = 0;                   // 0-based epoch the next step belongs to
  int64_t samples_done_in_epoch = 0;   // global samples of that epoch already consumed
};

struct CheckpointMeta {
  TrainPosition pos;
  int world_size = 1;
  int64_t batch_size = 0;
  uint64_t seed = 0;
  // How the training reader ordered the data ("memory/dealt"; Session::reader_key): "" in
  // checkpoints before 2026-11-29.
  std::string reader;
  std::string model;
  int64_t model_width = 0;
  int model_depth = 18;
  std::string optimizer;     // sgd | adam | adamw; empty in older checkpoints
  uint64_t param_shapes = 0; // fnv1a64 of "name:[shape];..." of the parameters; 0 in older ones
  std::string epoch_stats;   // JSON of the epoch's WindowStats so far (epoch_stats.hpp); may be empty
  std::string dataset;
  std::string data_source;   // the manifest's source ("csv:train.csv"): "" in older checkpoints
  std::vector<int64_t> sample_shape;
  int64_t num_classes = 0;
  std::vector<double> mean, std;          // the data's normalisation (empty in older checkpoints)
  std::string data_dtype;                 // the stored sample dtype it trained on ("uint8"); "" in older ones
  std::vector<std::string> class_names;
  std::vector<std::string> tokens;        // sequence targets' vocabulary (CTC models); empty otherwise
  std::string stopped_early;              // why the run stopped early ("" when it did not)
  std::string stop_rule;                  // JSON of the stop rule's state (stop_rule.hpp)
  std::string lockstep_version, torch_version;
  std::string config_ini;
  double val_acc = -1.0;  // of the last evaluation before the checkpoint, -1 when none
  double val_f1 = -1.0;
  double val_cer = -1.0;  // sequence targets: of the last evaluation, -1 when none
  double val_wer = -1.0;
  bool eval_hflip = false;  // evaluations averaged with mirrors (--eval.hflip); false in older checkpoints
  std::string val_split;    // the split its validations scored (--data.val-split); "" in older checkpoints
  double lr = -1.0;           // the learning rate of the last step; -1 in older checkpoints
  int64_t clipped_steps = 0;  // steps whose gradient norm --train.clip-norm clipped, run total; 0 in older ones
  std::string best_metric;  // set in best.ckpt: the metric and its value
  double best_value = 0.0;
};

// What a checkpoint carries besides model and optimizer.
struct ExtraState {
  torch::Tensor rng;                 // uint8 [world, bytes]; undefined when absent
  std::vector<double> amp_scaler;    // empty when absent
};

// JSON with every field typed (64-bit integers as integers); strings that are not valid
// UTF-8 (paths inside the config text are bytes) are written with U+FFFD in their place.
std::string meta_to_json(const CheckpointMeta& m);
// Every field validated; a missing or malformed one is an error naming PATH and the field.
CheckpointMeta meta_from_json(const std::string& json, const std::string& path);

// The normalisation a checkpoint or safetensors file stores: none (older files), or one sane
// mean/std per channel of SAMPLE_SHAPE (io::normalisation_problem). "" when fine.
std::string stored_normalisation_problem(const std::vector<double>& mean, const std::vector<double>& std,
                                         const std::vector<int64_t>& sample_shape);

// "name:[shape];..." of every parameter: what a checkpoint's weights must match.
std::string param_shapes_text(Net& model);
// MODEL's first parameter or BatchNorm running statistic, or OPT's first state tensor
// (momentum, Adam's moments; OPT may be null), holding a NaN or an infinity, as "parameter
// 'fc.weight'", "buffer 'bn1.running_var'" or "optimizer state 'exp_avg_sq' of 'fc.weight'";
// "" when every one is finite. One reduction over all of them and one read of the device.
std::string non_finite_state(Net& model, torch::optim::Optimizer* opt = nullptr);
// Why a checkpoint of META cannot continue a run of CFG on DATA with MODEL ("" when it can):
// other data (sample shape, classes, another dataset or import source: a re-import of the same
// source, in other shards, is the same data), another model family, width, depth, optimizer or
// parameter shapes. One line, naming PATH. Train's resume and doctor's resume check share it.
std::string resume_mismatch(const CheckpointMeta& meta, const Config& cfg, const io::Manifest& data, Net& model,
                            const std::string& path);
// How the validations that scored checkpoint META differ from a run of CFG's ("" when their
// scores compare): another --data.val-split, or --eval.hflip on or off. Such scores neither
// keep best.ckpt nor count for early stopping: a resume starts both afresh, saying why.
std::string validation_change(const CheckpointMeta& meta, const Config& cfg);
// A resume's weights and optimizer state: PAYLOAD (of the checkpoint at PATH, which
// resume_mismatch passed) into MODEL and OPT, and EXTRA (may be null). Throws UsageError naming
// PATH when the optimizer state does not fit (--model.freeze changed) or the state holds a NaN
// or an infinity (a diverged run's checkpoint, or an older lockstep's NaN momentum: every step
// after the resume would be NaN).
void load_resume_state(const std::string& payload, Net& model, torch::optim::Optimizer& opt, const std::string& path,
                       ExtraState* extra);

std::string serialize_state(Net& model, torch::optim::Optimizer& opt, const ExtraState& extra = {});
// Loads model (and OPT when given); fills EXTRA when given (fields absent in older files
// stay empty).
void load_state(const std::string& payload, Net& model, torch::optim::Optimizer* opt, const std::string& path,
                ExtraState* extra = nullptr);

// This process's generator states (CPU, and DEVICE's when it is a GPU) as bytes, and back.
std::vector<uint8_t> rng_state_bytes(torch::Device device);
void set_rng_state_bytes(const std::vector<uint8_t>& bytes, torch::Device device);

}  // namespace lockstep
