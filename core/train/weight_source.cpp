// weight_source: see weight_source.hpp.
#include "core/train/weight_source.hpp"

#include <algorithm>

#include <torch/torch.h>

#include <fmt/format.h>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/train/checkpoint_state.hpp"
#include "io/dataset/units_check.hpp"
#include "io/records/checkpoint_store.hpp"
#include "io/util/json_io.hpp"

namespace lockstep {
namespace {

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

io::DatasetSpec spec_for(const std::vector<int64_t>& shape, int64_t classes, const std::vector<std::string>& tokens) {
  io::DatasetSpec spec;
  spec.name = "weights";
  spec.sample_shape = shape;
  spec.num_classes = classes;
  if (!tokens.empty()) {  // a CTC model: what it was trained on had sequence targets
    spec.labeled = false;
    spec.ragged = true;
    spec.max_target_length = 1;
    spec.tokens = tokens;
  }
  return spec;
}

template <typename T>
T meta_json(const std::map<std::string, std::string>& meta, const char* key, const T& fallback, const std::string& path) {
  const auto it = meta.find(key);
  if (it == meta.end()) return fallback;
  try {
    return io::json_as<T>(io::Json::parse(it->second), path);
  } catch (const std::exception&) {
    throw UsageError(path + ": safetensors metadata '" + key + "' is malformed: " + it->second);
  }
}

// The model a file's metadata describes: what it cannot build is the file's fault, not an
// option's (a safetensors file's lockstep_width -3 was reported as "--model.width must be >= 0").
std::shared_ptr<Net> described_model(const ModelOptions& opt, const io::DatasetSpec& spec, const std::string& path) {
  try {
    return make_model(opt, spec);
  } catch (const Error& e) {
    throw UsageError(fmt::format("{}: its metadata describes model '{}' (width {}, depth {}), which cannot be built "
                                 "for its data: {}",
                                 path, opt.name, opt.width, opt.depth, e.what()));
  }
}

// A TorchScript model is code: its file is loaded only where the user named one (SCRIPT), the
// file's own metadata never says which (a checkpoint or safetensors file from elsewhere could
// name any file; a relative path named another directory's file).
void require_named_script(const std::string& model, const std::string& script, const std::string& path) {
  if (model_family(model) == "torchscript" && model_family(script) != "torchscript")
    throw UsageError(path + ": its model is " + model + ", a TorchScript file: lockstep loads one only when you name "
                     "it (--model.name " + model + "), never because a file's metadata does");
}

WeightSource from_checkpoint(const std::string& path, const std::string& script) {
  const io::CheckpointData d = io::read_checkpoint(path);
  const CheckpointMeta m = meta_from_json(d.meta_json, path);
  require_named_script(m.model, script, path);
  WeightSource w;
  w.path = path;
  w.model = m.model;
  w.width = m.model_width;
  w.depth = m.model_depth;
  w.sample_shape = m.sample_shape;
  w.num_classes = m.num_classes;
  w.step = m.pos.step;
  w.mean = m.mean;
  w.std = m.std;
  w.data_dtype = m.data_dtype;
  w.class_names = m.class_names;
  w.tokens = m.tokens;
  const std::string built = model_family(m.model) == "torchscript" ? script : m.model;
  auto model = described_model(ModelOptions{built, 0.0, m.model_width, m.model_depth},
                               spec_for(m.sample_shape, m.num_classes, m.tokens), path);
  load_state(d.payload, *model, nullptr, path);
  for (const auto& [name, t] : named_state(*model)) w.tensors.emplace_back(name, t.detach().clone());
  return w;
}

WeightSource from_safetensors_file(const std::string& path) {
  const io::SafeTensors st = io::read_safetensors(path);
  WeightSource w;
  w.path = path;
  const auto& meta = st.metadata;
  w.model = meta.count("lockstep_model") ? meta.at("lockstep_model") : "";
  w.width = meta_json<int64_t>(meta, "lockstep_width", 0, path);
  w.depth = meta_json<int>(meta, "lockstep_depth", 18, path);
  w.sample_shape = meta_json<std::vector<int64_t>>(meta, "sample_shape", {}, path);
  w.num_classes = meta_json<int64_t>(meta, "num_classes", 0, path);
  w.step = meta_json<int64_t>(meta, "step", -1, path);
  w.mean = meta_json<std::vector<double>>(meta, "mean", {}, path);
  w.std = meta_json<std::vector<double>>(meta, "std", {}, path);
  const std::string norm = stored_normalisation_problem(w.mean, w.std, w.sample_shape);
  if (!norm.empty()) throw UsageError(path + ": safetensors metadata: " + norm);
  w.data_dtype = meta.count("data_dtype") ? meta.at("data_dtype") : "";
  if (!w.data_dtype.empty()) {
    try {
      io::dtype_from_name(w.data_dtype);
    } catch (const Error& e) {
      throw UsageError(path + ": safetensors metadata 'data_dtype': " + e.what());
    }
  }
  w.class_names = meta_json<std::vector<std::string>>(meta, "class_names", {}, path);
  w.tokens = meta_json<std::vector<std::string>>(meta, "tokens", {}, path);
  // A file without lockstep's metadata: torchvision's ResNet names are recognised.
  std::string family = model_family(w.model);
  if (w.model.empty() && st.find("conv1.weight") && st.find("fc.weight") && st.find("layer1.0.conv1.weight"))
    family = "resnet";
  try {
    w.tensors = from_safetensors(st, family, path);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  return w;
}

}  // namespace

WeightSource read_weights(const std::string& path, const std::string& model_name) {
  try {
    if (ends_with(path, ".safetensors")) return from_safetensors_file(path);
    if (ends_with(path, ".ckpt")) return from_checkpoint(path, model_name);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  throw UsageError(path + ": not a checkpoint (.ckpt) or a safetensors file (.safetensors)");
}

namespace {

std::string names_text(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 6; ++i) out += (i ? "," : "") + names[i];
  return names.size() > 6 ? out + ",..." : out;
}

// Samples in other units than the model was trained on ("" when none is seen: units_check.hpp's
// rule), with the stored dtypes where they differ and a hint for pixels.
std::string units_problem(const WeightSource& src, const io::DatasetSpec& spec) {
  const std::string found =
      io::units_mismatch(src.mean, src.std, spec.mean, spec.std, "the data's samples", "its model's training data");
  if (found.empty()) return "";
  const std::string dtype = io::dtype_name(spec.dtype);
  const bool other = !src.data_dtype.empty() && src.data_dtype != dtype;
  const std::string dtypes =
      other ? fmt::format(" (it trained on {} samples, the data stores {})", src.data_dtype, dtype) : "";
  const std::string hint = src.data_dtype == "uint8" && dtype != "uint8" ? " (pixels 0-1 for 0-255?)" : "";
  return found + dtypes + ": samples in other units" + hint;
}

}  // namespace

void check_data_fits(const WeightSource& src, const io::DatasetSpec& spec) {
  // Ragged data: the padded length is the dataset's, not the model's; the rest must match.
  const auto fixed = [&](std::vector<int64_t> s) {
    if (spec.ragged && !s.empty()) s.pop_back();
    return s;
  };
  if (!src.sample_shape.empty() && fixed(src.sample_shape) != fixed(spec.sample_shape))  // a usage error, as the rest
    throw UsageError(src.path + ": its model takes samples " + io::shape_text(src.sample_shape) + ", the data has " +
                     io::shape_text(spec.sample_shape));
  // Unlabelled data has no vocabulary or classes of its own to differ (spec_for_model gives it the model's).
  if (!src.tokens.empty() && (spec.labeled || !spec.tokens.empty()) && src.tokens != spec.tokens) {
    // Where they part: "4 tokens) differs from the data's (4)" said nothing of how.
    size_t i = 0;
    while (i < src.tokens.size() && i < spec.tokens.size() && src.tokens[i] == spec.tokens[i]) ++i;
    const auto at = [i](const std::vector<std::string>& t) {
      return i < t.size() ? "'" + t[i] + "'" : std::string("nothing");
    };
    throw UsageError(src.path + ": its model's token vocabulary (" + std::to_string(src.tokens.size()) +
                     " tokens) differs from the data's (" + std::to_string(spec.tokens.size()) + "): token " +
                     std::to_string(i) + " is " + at(src.tokens) + " there, " + at(spec.tokens) + " in the data");
  }
  if (src.num_classes > 0 && spec.labeled && src.num_classes != spec.num_classes)
    throw UsageError(fmt::format("{}: its model has {} classes, the data {}", src.path, src.num_classes, spec.num_classes));
  // Labelled data whose classes the model knows by other names, or in another order: its labels
  // would be scored (and predict's names given) as other classes (a hostile finding: accuracy 0).
  if (src.class_names.empty() || spec.class_names.empty() || src.class_names == spec.class_names) return;
  std::vector<std::string> a = src.class_names, b = spec.class_names;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a == b)
    throw UsageError(src.path + ": its model numbers the classes " + names_text(src.class_names) + ", the data " +
                     names_text(spec.class_names) + ": the same classes in another order, so every label would "
                     "mean another class (re-import the data with --class-names in the model's order: `lockstep inspect " +
                     src.path + "` lists it)");
  throw UsageError(src.path + ": its model's classes (" + names_text(src.class_names) + ") are not the data's (" +
                   names_text(spec.class_names) + ")");
}

void check_units(const WeightSource& src, const io::DatasetSpec& spec) {
  // Pixels stored as floats in [0, 1] for a model of 0-255 pixels: normalised with the model's
  // statistics (mean 73, std 90) every input is wrong (a hostile finding: accuracy 0.098, exit 0).
  const std::string units = units_problem(src, spec);
  if (!units.empty())
    throw UsageError(src.path + ": " + units + ", every input normalised wrong; re-import the data in the units "
                     "the model's was (--any-units: they are the same units)");
}

std::shared_ptr<Net> build_model(const WeightSource& src, const ModelOptions& fallback, const io::DatasetSpec& spec) {
  ModelOptions opt = fallback;
  // A file's metadata never names code to run (a safetensors file is meant to be safe to load).
  require_named_script(src.model, fallback.name, src.path);
  const bool described = !src.model.empty() && model_family(src.model) != "torchscript";
  if (described) {  // else the file the user named (a TorchScript one), or a foreign file's model
    opt.name = src.model;
    opt.width = src.width;
    opt.depth = src.depth;
  }
  check_data_fits(src, spec);
  // Weights a diverged run (or a damaged export) left non-finite: every prediction NaN, its
  // argmax class 0, exit 0 (a hostile finding).
  for (const auto& [name, t] : src.tensors)
    if (t.is_floating_point() && !torch::isfinite(t).all().item<bool>())
      throw UsageError(src.path + ": weight '" + name + "' holds a NaN or an infinity (a diverged run's weights?)");
    else if (name.size() > 12 && name.compare(name.size() - 12, 12, ".running_var") == 0 && (t < 0).any().item<bool>())
      throw UsageError(src.path + ": '" + name + "' holds a negative variance (every output would be NaN)");
  auto model = described ? described_model(opt, spec, src.path) : make_model(opt, spec);
  const LoadReport r = load_named(*model, src.tensors, {});
  if (!r.missing.empty() || !r.unexpected.empty() || !r.mismatched.empty())
    throw UsageError(fmt::format("{}: its weights do not fit model '{}' (a checkpoint of another model family or "
                                 "size?): {} missing, {} unexpected, {} of another shape or type{}",
                                 src.path, opt.name, r.missing.size(), r.unexpected.size(), r.mismatched.size(),
                                 r.missing.empty() ? "" : " (first missing: " + r.missing.front() + ")"));
  return model;
}

io::DatasetSpec spec_for_model(const io::DatasetSpec& data, const WeightSource& src) {
  io::DatasetSpec spec = data;
  if (!spec.labeled && src.num_classes > 0) {
    spec.num_classes = src.num_classes;
    spec.class_names = src.class_names;
  }
  // Unlabelled speech (`shard --no-labels`) has no vocabulary of its own: a CTC model's is
  // what its outputs mean.
  if (!spec.labeled && !spec.sequence_targets() && spec.tokens.empty()) spec.tokens = src.tokens;
  if (src.mean.size() == data.mean.size() && src.std.size() == data.std.size() && !src.mean.empty() &&
      (src.mean != data.mean || src.std != data.std)) {
    spec.mean = src.mean;
    spec.std = src.std;
    log::info0(src.path + ": inputs normalised with the statistics the model was trained with, not the dataset's own");
  }
  return spec;
}

std::map<std::string, std::string> export_metadata(const WeightSource& s) {
  std::map<std::string, std::string> m;
  m["format"] = "pt";  // safetensors' convention for PyTorch state dicts
  m["lockstep_model"] = s.model;
  m["lockstep_width"] = std::to_string(s.width);
  m["lockstep_depth"] = std::to_string(s.depth);
  m["sample_shape"] = io::dump_json(io::Json(s.sample_shape));
  m["num_classes"] = std::to_string(s.num_classes);
  m["step"] = std::to_string(s.step);
  m["mean"] = io::dump_json(io::Json(s.mean));
  m["std"] = io::dump_json(io::Json(s.std));
  m["class_names"] = io::dump_json(io::Json(s.class_names));
  if (!s.tokens.empty()) m["tokens"] = io::dump_json(io::Json(s.tokens));
  if (!s.data_dtype.empty()) m["data_dtype"] = s.data_dtype;
  return m;
}

}  // namespace lockstep
