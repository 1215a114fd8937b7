// weight_source: see weight_source.hpp.
#include "core/train/weight_source.hpp"

#include <algorithm>

#include <torch/torch.h>

#include <fmt/format.h>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/train/checkpoint_state.hpp"
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

WeightSource from_checkpoint(const std::string& path) {
  const io::CheckpointData d = io::read_checkpoint(path);
  const CheckpointMeta m = meta_from_json(d.meta_json, path);
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
  w.class_names = m.class_names;
  w.tokens = m.tokens;
  auto model = make_model(ModelOptions{m.model, 0.0, m.model_width, m.model_depth},
                          spec_for(m.sample_shape, m.num_classes, m.tokens));
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

WeightSource read_weights(const std::string& path) {
  try {
    if (ends_with(path, ".safetensors")) return from_safetensors_file(path);
    if (ends_with(path, ".ckpt")) return from_checkpoint(path);
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
  if (!src.tokens.empty() && (spec.labeled || !spec.tokens.empty()) && src.tokens != spec.tokens)
    throw UsageError(src.path + ": its model's token vocabulary (" + std::to_string(src.tokens.size()) +
                     " tokens) differs from the data's (" + std::to_string(spec.tokens.size()) + ")");
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

std::shared_ptr<Net> build_model(const WeightSource& src, const ModelOptions& fallback, const io::DatasetSpec& spec) {
  ModelOptions opt = fallback;
  if (!src.model.empty()) {
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
  auto model = make_model(opt, spec);
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
  return m;
}

}  // namespace lockstep
