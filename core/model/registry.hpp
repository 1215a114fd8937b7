// registry: the networks lockstep trains (--model.name). Sizes come from the dataset's
// metadata (sample shape, class count); --model.width scales channels/units (0: the
// model's default).
//
//   cnn      reference CNN for images [C,H,W]: 2 x [conv3x3, BatchNorm, ReLU, max-pool 2],
//            FC 128, dropout, FC classes. Width 32 (second block 2x).
//   mlp      any sample shape, flattened: 2 hidden layers of WIDTH (256) with ReLU,
//            dropout, FC classes (e.g. HAR sensor windows).
//   resnet   ResNet-18 (--model.depth 34: ResNet-34) for images with any channel count:
//            BasicBlocks, stage widths WIDTH x {1,2,4,8} (64); a 3x3 stem for images up
//            to 64 px, the 7x7/2 stem with max-pool above.
//   cnn1d    time series [C,L] (or [L]): 3 x [conv1d k5, BatchNorm, ReLU, max-pool 2],
//            global average pool, dropout, FC. Width 64.
//   lmu      time series [C,L] (or [L]): a Legendre Memory Unit (memory of order
//            min(64, L) over a window of L steps, WIDTH hidden units: 128), the last
//            hidden state through dropout to FC (lmu.cpp has the equations). With sequence
//            targets a CTC model: every step's state to FC (tokens + blank).
//   gru      sequence to sequence (CTC) for ragged series [C,T] with sequence targets:
//            conv1d k5 stride 2 + BatchNorm + ReLU front-end (halves T), 2 bidirectional
//            GRU layers of WIDTH units (160) over the valid steps only (packed), FC to
//            tokens + 1 (the last class is CTC's blank).
//   c3d      video clips [C,T,H,W]: 4 x [conv3d 3x3x3, BatchNorm, ReLU], max-pools
//            (1,2,2), (2,2,2), (2,2,2), none; widths WIDTH x {1,2,4,8} (32); global average
//            pool, dropout, FC.
//   r3d      3-D ResNet-18 (--model.depth 10: one block a stage) for clips [C,T,H,W]:
//            BasicBlocks of 3x3x3 convolutions, stage widths WIDTH x {1,2,4,8} (16: ~2.1M
//            parameters at depth 18), stride 2 in T,H,W from stage 2; a 3x3x3 stem for
//            frames up to 64 px, the (3,7,7)/(1,2,2) stem with max-pool above.
//   torchscript:PATH  a module saved with torch.jit.script(m).save(PATH): forward(x)
//            takes [N, *sample_shape] float32 and returns [N, classes] logits.
// Every BatchNorm is core/norm's, so --model.sync-bn can synchronise it.
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <vector>

#include "io/dataset/shard_format.hpp"

namespace lockstep {

class Net : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // Sequence (CTC) models: per-frame logits [N, T', tokens + 1] (blank last) for X
  // [N, C, T] whose valid lengths are LENGTHS [N] (CPU int64); *OUT_LENGTHS gets each
  // sample's valid T' (CPU int64).
  virtual bool sequence_output() const { return false; }
  virtual torch::Tensor forward_sequence(torch::Tensor x, const torch::Tensor& lengths, torch::Tensor* out_lengths);
  // Ragged class data (variable-length series, last axis time): logits [N, classes] for X
  // [N, C, T] whose valid lengths are LENGTHS [N] (CPU int64), padding ignored. Models
  // that can say true here; the others need fixed-length samples.
  virtual bool takes_ragged() const { return false; }
  virtual torch::Tensor forward_ragged(torch::Tensor x, const torch::Tensor& lengths);
  // Conv nets over images or clips (cnn, resnet, c3d, r3d) say true: they can run
  // channels-last (core/model/memory_format.hpp), and then convert their input with
  // formatted() first thing in forward().
  virtual bool conv_net() const { return false; }
  // Models with activation checkpointing built in (resnet, r3d, c3d) say true.
  virtual bool checkpoints_activations() const { return false; }
  // The name users know a parameter or buffer by, for KEY (its name here, in checkpoints): a
  // TorchScript module's dotted PyTorch name ("conv.weight" for "conv__weight": LibTorch
  // registers no dots); the key itself for the built-in models. --model.freeze, --init-from
  // and export speak these names (weights.hpp).
  virtual std::string public_name(const std::string& key) const { return key; }
  bool channels_last() const { return channels_last_; }
  void set_channels_last(bool on) { channels_last_ = on; }
  int64_t parameter_count() const {
    int64_t n = 0;
    for (const auto& p : parameters()) n += p.numel();
    return n;
  }
  // Parameters, then buffers: everything that defines the function (broadcast at start,
  // copied for the best weights).
  std::vector<torch::Tensor> state_tensors() {
    std::vector<torch::Tensor> all = parameters();
    for (const auto& b : buffers()) all.push_back(b);
    return all;
  }

 protected:
  // X in the model's layout: NHWC / NDHWC strides for a 4-D / 5-D batch when channels_last().
  torch::Tensor formatted(const torch::Tensor& x) const;

 private:
  bool channels_last_ = false;
};

struct ModelOptions {
  std::string name = "cnn";
  double dropout = 0.25;
  int64_t width = 0;  // 0: the model's default
  int depth = 18;     // resnet: 18 | 34; r3d: 10 | 18
  // Recompute each block's activations in backward instead of storing them (resnet, r3d,
  // c3d; core/model/activation_checkpoint.hpp).
  bool checkpoint_activations = false;
};

// Throws UsageError naming the model when it is unknown, the file does not load, or the
// data does not fit it (sequence targets need a sequence model, ragged class data a model
// that takes_ragged).
std::shared_ptr<Net> make_model(const ModelOptions& opt, const io::DatasetSpec& spec);

// The built-in models (model_*.cpp).
std::shared_ptr<Net> make_cnn(const ModelOptions& opt, const io::DatasetSpec& spec);
std::shared_ptr<Net> make_resnet(const ModelOptions& opt, const io::DatasetSpec& spec);
std::shared_ptr<Net> make_mlp(const ModelOptions& opt, const io::DatasetSpec& spec);
std::shared_ptr<Net> make_cnn1d(const ModelOptions& opt, const io::DatasetSpec& spec);
std::shared_ptr<Net> make_lmu(const ModelOptions& opt, const io::DatasetSpec& spec);
std::shared_ptr<Net> make_gru(const ModelOptions& opt, const io::DatasetSpec& spec);
std::shared_ptr<Net> make_c3d(const ModelOptions& opt, const io::DatasetSpec& spec);
std::shared_ptr<Net> make_r3d(const ModelOptions& opt, const io::DatasetSpec& spec);

// Class logits of a batch: forward(X), or forward_ragged(X, LENGTHS) for ragged data
// (LENGTHS defined).
torch::Tensor class_logits(Net& net, const torch::Tensor& x, const torch::Tensor& lengths);
std::shared_ptr<Net> load_script_model(const std::string& path, const io::DatasetSpec& spec);

}  // namespace lockstep
