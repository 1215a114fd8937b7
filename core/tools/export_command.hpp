// export_command: `lockstep export` — a checkpoint's weights as a safetensors file that
// PyTorch loads without lockstep: torchvision's names for the built-in ResNets
// (load_state_dict(strict=True) into torchvision.models.resnet18/34), lockstep's names
// for the other models (docs/after-training.md has their reference nn.Modules), and in
// the metadata the model, the sample shape, the classes and their names, and the
// normalisation (mean/std per channel, raw sample units) the inputs need.
#pragma once

#include <string>

namespace lockstep {

struct ExportRequest {
  std::string checkpoint;  // .ckpt (or .safetensors: rewritten with lockstep's metadata)
  std::string out;         // .safetensors
  std::string data_dir;    // optional: normalisation and class names for checkpoints older than 0.2
  std::string config_file;  // the --config file, an input --out may not name
  std::string model;        // --model.name: a TorchScript checkpoint's file is read only when named
  bool force = false;       // --force: replace an existing --out
  bool any_units = false;   // --any-units: --data in other units than the model's is taken
};

// Serial. Throws UsageError for bad input (one line naming the file).
void export_weights(const ExportRequest& request);

}  // namespace lockstep
