// weights: a model's tensors by name, in and out of lockstep.
//
// Names outside lockstep: the built-in ResNets use torchvision's resnet18/resnet34 names
// (conv1, bn1, layer1.0.conv1, layer1.0.downsample.0, fc, ...), so an exported file loads
// into torchvision with load_state_dict(strict=True) and torchvision's weights load into
// lockstep; the other built-in models keep their own names (docs/after-training.md has a
// reference nn.Module for each). export_name/import_name translate one name.
//
// Loading is partial and reported: every tensor of the source is loaded when the model
// has a tensor of that name and shape (converted to the model's dtype), or counted as
// unexpected, shape-mismatched or excluded (--init-exclude PREFIX); every model tensor the
// source lacks is missing. The report prints as a table.
#pragma once

#include <torch/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/model/registry.hpp"
#include "io/records/safetensors.hpp"

namespace lockstep {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// The model family of a --model.name: "resnet", "cnn", ..., "torchscript".
std::string model_family(const std::string& model_name);
std::string export_name(const std::string& family, const std::string& name);
std::string import_name(const std::string& family, const std::string& name);

// Parameters, then buffers, under their public names (Net::public_name).
NamedTensors named_state(Net& model);
// TENSORS (lockstep's names) as safetensors: exported names, CPU, little-endian; METADATA.
io::SafeTensors to_safetensors(const NamedTensors& tensors, const std::string& family,
                               const std::map<std::string, std::string>& metadata);
// A safetensors file's tensors under lockstep's names for FAMILY (torchvision names
// accepted for resnet). Throws Error naming PATH for a dtype torch cannot hold.
NamedTensors from_safetensors(const io::SafeTensors& st, const std::string& family, const std::string& path);

struct LoadReport {
  std::vector<std::string> loaded, missing, unexpected, mismatched, excluded;
  std::vector<std::string> unused_exclude;  // EXCLUDE prefixes that left nothing out
  std::string table() const;  // one line per category with counts and the first names
};

// Copies SOURCE into MODEL where names and shapes match; EXCLUDE: name prefixes not loaded.
// Names are public names; a source name that is a tensor's key here matches it too (a
// TorchScript model's file exported before 2026-11-29, under "conv__weight").
LoadReport load_named(Net& model, const NamedTensors& source, const std::vector<std::string>& exclude);
// Makes every parameter whose public name (or key) starts with one of PREFIXES untrainable;
// returns how many. A prefix that names no parameter is a UsageError naming --model.freeze
// and the first names the model has (a misspelt prefix froze nothing, silently).
int freeze(Net& model, const std::vector<std::string>& prefixes);

}  // namespace lockstep
