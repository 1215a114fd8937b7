// checkpoint_state: see checkpoint_state.hpp.
#include "core/model/memory_format.hpp"
#include "core/train/checkpoint_state.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include "core/base/error.hpp"
#include "core/eval/mirror.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"
#include "core/base/hash.hpp"


namespace lockstep {

std::string meta_to_json(const CheckpointMeta& m) {
  io::Json o;
  o["step"] = m.pos.step;
  o["epoch"] = m.pos.epoch;
  o["samples_done_in_epoch"] = m.pos.samples_done_in_epoch;
  o["world_size"] = m.world_size;
  o["batch_size"] = m.batch_size;
  o["seed"] = m.seed;
  o["reader"] = m.reader;
  o["model"] = m.model;
  o["model_width"] = m.model_width;
  o["model_depth"] = m.model_depth;
  o["optimizer"] = m.optimizer;
  o["param_shapes"] = m.param_shapes;
  o["dataset"] = m.dataset;
  o["data_source"] = m.data_source;
  o["sample_shape"] = m.sample_shape;
  o["num_classes"] = m.num_classes;
  o["mean"] = m.mean;
  o["std"] = m.std;
  o["data_dtype"] = m.data_dtype;
  o["class_names"] = m.class_names;
  o["tokens"] = m.tokens;
  o["stopped_early"] = m.stopped_early;
  if (!m.stop_rule.empty()) o["stop_rule"] = io::Json::parse(m.stop_rule);
  o["val_acc"] = m.val_acc;
  o["val_f1"] = m.val_f1;
  o["val_cer"] = m.val_cer;
  o["val_wer"] = m.val_wer;
  o["eval_hflip"] = m.eval_hflip;
  o["val_split"] = m.val_split;
  o["lr"] = m.lr;
  o["clipped_steps"] = m.clipped_steps;
  o["best_metric"] = m.best_metric;
  o["best_value"] = m.best_value;
  if (!m.epoch_stats.empty()) o["epoch_stats"] = io::Json::parse(m.epoch_stats);
  o["lockstep_version"] = m.lockstep_version;
  o["torch_version"] = m.torch_version;
  o["config"] = m.config_ini;
  return io::dump_json(o);
}

CheckpointMeta meta_from_json(const std::string& json, const std::string& path) {
  CheckpointMeta m;
  const io::Json t = io::parse_json(json, path + ": checkpoint metadata");
  const char* field = "";
  const std::string what = path + ": checkpoint metadata";
  try {
    const auto get = [&](const char* key, auto* out) {
      field = key;
      *out = io::json_get<std::decay_t<decltype(*out)>>(t, key, what);
    };
    const auto get_or = [&](const char* key, auto* out) {
      field = key;
      if (t.contains(key) && !t[key].is_null()) *out = io::json_get<std::decay_t<decltype(*out)>>(t, key, what);
    };
    get("step", &m.pos.step);
    get("epoch", &m.pos.epoch);
    get("samples_done_in_epoch", &m.pos.samples_done_in_epoch);
    get("world_size", &m.world_size);
    get("batch_size", &m.batch_size);
    field = "seed";  // a decimal string in checkpoints of lockstep 0.1
    m.seed = t.at("seed").is_string() ? std::stoull(t["seed"].get<std::string>()) : io::json_get<uint64_t>(t, "seed", what);
    get_or("reader", &m.reader);
    get("model", &m.model);
    get_or("model_width", &m.model_width);
    get_or("model_depth", &m.model_depth);
    get_or("optimizer", &m.optimizer);
    get_or("param_shapes", &m.param_shapes);
    get("dataset", &m.dataset);
    get_or("data_source", &m.data_source);
    get("sample_shape", &m.sample_shape);
    get("num_classes", &m.num_classes);
    get_or("mean", &m.mean);
    get_or("std", &m.std);
    get_or("data_dtype", &m.data_dtype);
    get_or("class_names", &m.class_names);
    get_or("tokens", &m.tokens);
    get_or("stopped_early", &m.stopped_early);
    field = "stop_rule";
    if (t.contains("stop_rule")) m.stop_rule = t["stop_rule"].dump();
    get_or("val_acc", &m.val_acc);
    get_or("val_f1", &m.val_f1);
    get_or("val_cer", &m.val_cer);
    get_or("val_wer", &m.val_wer);
    get_or("eval_hflip", &m.eval_hflip);
    get_or("val_split", &m.val_split);
    get_or("lr", &m.lr);
    get_or("clipped_steps", &m.clipped_steps);
    get_or("best_metric", &m.best_metric);
    get_or("best_value", &m.best_value);
    field = "epoch_stats";
    if (t.contains("epoch_stats")) m.epoch_stats = t["epoch_stats"].dump();
    get("lockstep_version", &m.lockstep_version);
    get("torch_version", &m.torch_version);
    get_or("config", &m.config_ini);
  } catch (const std::exception& e) {
    throw Error(path + ": checkpoint metadata field '" + field + "' is missing or malformed (" + e.what() + ")");
  }
  const std::string norm = stored_normalisation_problem(m.mean, m.std, m.sample_shape);
  LOCKSTEP_REQUIRE(norm.empty(), path + ": checkpoint metadata: " + norm);
  if (!m.data_dtype.empty()) {
    try {
      io::dtype_from_name(m.data_dtype);
    } catch (const Error& e) {
      throw Error(path + ": checkpoint metadata field 'data_dtype': " + e.what());
    }
  }
  // Each impossible value named with its field (docs/checkpoints.md promises the field).
  const std::pair<bool, const char*> fields[] = {
      {m.pos.step >= 0, "step"},          {m.pos.epoch >= 0, "epoch"},
      {m.pos.samples_done_in_epoch >= 0, "samples_done_in_epoch"},
      {m.world_size >= 1, "world_size"},  {m.batch_size >= 1, "batch_size"},
      {m.num_classes >= 0, "num_classes"}, {!m.sample_shape.empty(), "sample_shape"},
      {m.clipped_steps >= 0 && m.clipped_steps <= m.pos.step, "clipped_steps"}};
  for (const auto& [ok, field] : fields)
    LOCKSTEP_REQUIRE(ok, path + ": checkpoint metadata field '" + field + "' holds an impossible value");
  return m;
}

std::string stored_normalisation_problem(const std::vector<double>& mean, const std::vector<double>& std,
                                         const std::vector<int64_t>& sample_shape) {
  if (mean.empty() && std.empty()) return "";
  return io::normalisation_problem(mean, std, sample_shape.empty() ? -1 : sample_shape[0]);
}

std::string param_shapes_text(Net& model) {
  std::string shapes;
  for (const auto& p : model.named_parameters()) shapes += p.key() + ":" + c10::str(p.value().sizes()) + ";";
  return shapes;
}

std::string non_finite_state(Net& model, torch::optim::Optimizer* opt) {
  std::vector<std::string> names;
  std::vector<torch::Tensor> values;
  const auto add = [&](const char* kind, const std::string& name, const torch::Tensor& t) {
    if (!t.defined() || t.numel() == 0 || !t.is_floating_point()) return;
    names.push_back(std::string(kind) + " '" + name + "'");
    values.push_back(t.detach());
  };
  for (const auto& p : model.named_parameters()) add("parameter", p.key(), p.value());
  // Buffers: BatchNorm's running statistics only (a model's own buffers may hold -inf on
  // purpose: an additive attention mask in a TorchScript model).
  for (const auto& b : model.named_buffers()) {
    const std::string& k = b.key();
    const auto ends = [&k](const std::string& tail) {
      return k.size() >= tail.size() && k.compare(k.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends("running_mean") || ends("running_var")) add("buffer", k, b.value());
  }
  // The optimizer's state: a NaN momentum made every step after a resume NaN, though the
  // weights saved with it were finite (a hostile finding).
  if (opt) {
    std::map<const void*, std::string> param_names;
    for (const auto& p : model.named_parameters()) param_names[p.value().unsafeGetTensorImpl()] = p.key();
    for (const auto& [key, state] : opt->state()) {
      const auto it = param_names.find(key);
      const std::string of = "' of '" + (it == param_names.end() ? std::string("a parameter") : it->second);
      if (const auto* s = dynamic_cast<const torch::optim::SGDParamState*>(state.get())) {
        add("optimizer state", "momentum_buffer" + of, s->momentum_buffer());
      } else if (const auto* a = dynamic_cast<const torch::optim::AdamParamState*>(state.get())) {
        add("optimizer state", "exp_avg" + of, a->exp_avg());
        add("optimizer state", "exp_avg_sq" + of, a->exp_avg_sq());
      } else if (const auto* w = dynamic_cast<const torch::optim::AdamWParamState*>(state.get())) {
        add("optimizer state", "exp_avg" + of, w->exp_avg());
        add("optimizer state", "exp_avg_sq" + of, w->exp_avg_sq());
      }
    }
  }
  if (values.empty()) return "";
  // The largest magnitude of each: NaN for a NaN, inf for an infinity (never a sum that overflows).
  const torch::Tensor peaks = torch::stack(at::_foreach_norm(values, std::numeric_limits<double>::infinity()))
                                  .to(torch::kCPU, torch::kDouble)
                                  .contiguous();
  const double* v = peaks.data_ptr<double>();
  for (size_t i = 0; i < names.size(); ++i)
    if (!std::isfinite(v[i])) return names[i];
  return "";
}

std::string resume_mismatch(const CheckpointMeta& m, const Config& cfg, const io::Manifest& data, Net& model,
                            const std::string& path) {
  const io::DatasetSpec& spec = data.spec;
  if (m.sample_shape != spec.sample_shape || m.num_classes != spec.num_classes)
    return path + ": checkpoint is of model '" + m.model + "' on other data than this run's (samples " +
           io::shape_text(m.sample_shape) + ", " + std::to_string(m.num_classes) + " classes; --data " + cfg.data_dir +
           ": " + io::shape_text(spec.sample_shape) + ", " + std::to_string(spec.num_classes) + ")";
  // A run continues on its own data: another dataset (of the same shape) would train on, and
  // keep a best.ckpt chosen on, data the run never saw.
  if (m.dataset != spec.name || (!m.data_source.empty() && m.data_source != data.source))
    return path + ": this run trained on dataset '" + m.dataset + "'" +
           (m.data_source.empty() ? std::string() : " from " + m.data_source) + ", but --data " + cfg.data_dir +
           " is dataset '" + spec.name + "' from " + data.source +
           ": a run continues on its own data (a new --run.dir starts afresh; --model.init-from " + path +
           " fine-tunes from it)";
  // The same name and source, other samples: the inputs regenerated under the same names and
  // re-imported (--force). Resumed silently on other samples, under another normalisation (a
  // hostile finding). The statistics are sums over the training input in source order: a
  // re-import of the same data, in other shards, gives them bit for bit.
  const auto differs = [](const std::vector<double>& a, const std::vector<double>& b) -> int64_t {
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); ++i)
      if (!(std::fabs(a[i] - b[i]) <= 1e-9 * std::max(1.0, std::fabs(a[i])))) return static_cast<int64_t>(i);
    return -1;
  };
  if (!m.mean.empty()) {
    const int64_t c = std::max(differs(m.mean, spec.mean), differs(m.std, spec.std));
    const auto at = [c](const std::vector<double>& v) { return c < static_cast<int64_t>(v.size()) ? v[c] : 0.0; };
    if (c >= 0)
      return fmt::format("{}: its training samples differ from those of --data {} (channel {}: mean {:.17g} std "
                         "{:.17g}, the data's {:.17g} and {:.17g}): the inputs changed, or were re-imported with "
                         "other options; a run continues on its own data (a new --run.dir starts afresh; "
                         "--model.init-from {} fine-tunes from it)",
                         path, cfg.data_dir, c, at(m.mean), at(m.std), at(spec.mean), at(spec.std), path);
  }
  const std::string head = path + ": cannot continue this run from a checkpoint of ";
  const std::string tail = " (a new --run.dir starts afresh)";
  if (m.model != cfg.model) return head + "model '" + m.model + "' (this run: '" + cfg.model + "')" + tail;
  if (m.model_width != cfg.model_width)
    return head + "--model.width " + std::to_string(m.model_width) + " (this run: " + std::to_string(cfg.model_width) + ")" + tail;
  if (m.model == "resnet" && m.model_depth != cfg.model_depth)
    return head + "--model.depth " + std::to_string(m.model_depth) + " (this run: " + std::to_string(cfg.model_depth) + ")" + tail;
  if (!m.optimizer.empty() && m.optimizer != to_string(cfg.optimizer))
    return head + "--train.optimizer " + m.optimizer + " (this run: " + to_string(cfg.optimizer) +
           "): its optimizer state does not fit" + tail;
  if (m.param_shapes != 0 && m.param_shapes != fnv1a64(param_shapes_text(model)))
    return head + "a model whose parameter names or shapes differ from this run's" + tail;
  return "";
}

std::string validation_change(const CheckpointMeta& m, const Config& cfg) {
  // "none" on either side: nothing validated there, so nothing to compare (a run finished
  // without validation keeps the best its earlier validations chose).
  if (!m.val_split.empty() && m.val_split != "none" && cfg.val_split != "none" && m.val_split != cfg.val_split)
    return "validated on split '" + m.val_split + "', this run on '" + cfg.val_split + "'";
  if (m.eval_hflip != cfg.eval_hflip)
    return std::string("validated ") + hflip_mode(m.eval_hflip) + ", this run " + hflip_mode(cfg.eval_hflip);
  return "";
}

std::string serialize_state(Net& model, torch::optim::Optimizer& opt, const ExtraState& extra) {
  torch::serialize::OutputArchive root, model_ar, opt_ar;
  model.save(model_ar);
  opt.save(opt_ar);
  root.write("model", model_ar);
  root.write("optimizer", opt_ar);
  if (extra.rng.defined()) root.write("rng", extra.rng, /*is_buffer=*/true);
  if (!extra.amp_scaler.empty()) root.write("amp_scaler", torch::tensor(extra.amp_scaler, torch::kDouble), /*is_buffer=*/true);
  std::ostringstream out;
  root.save_to(out);
  return out.str();
}

void load_state(const std::string& payload, Net& model, torch::optim::Optimizer* opt, const std::string& path,
                ExtraState* extra) {
  try {
    std::istringstream in(payload);
    torch::serialize::InputArchive root, model_ar, opt_ar;
    // Onto the model's device, wherever the file's tensors were: a snapshot writes them from
    // the CPU (state_snapshot.hpp), older checkpoints from the device they trained on.
    const auto params = model.parameters();
    if (params.empty()) root.load_from(in);
    else root.load_from(in, params.front().device());
    root.read("model", model_ar);
    model.load(model_ar);
    // The tensors read take the file's strides: back to the layout this run chose (a
    // channels-last file into a contiguous run would otherwise run channels-last).
    if (model.channels_last())
      use_channels_last(model);
    else
      use_contiguous(model);
    if (opt) {
      root.read("optimizer", opt_ar);
      try {
        opt->load(opt_ar);
      } catch (const c10::Error& e) {
        // The weights fit (checked above), so the optimizer's parameter list differs: the
        // trainable set changed (issue 31: LibTorch's own assertion was all a user saw).
        throw UsageError(path + ": its optimizer state does not fit this run's trainable parameters (was "
                         "--model.freeze changed since it was saved? or, for a TorchScript model, does it hold "
                         "parameters with requires_grad False, which lockstep keeps frozen since 2026-11-29? "
                         "--model.init-from " + path + " starts a new run from its weights)");
      }
    }
    if (extra) {
      torch::Tensor scaler;
      // Host values: the archive was mapped onto the model's device above.
      if (root.try_read("rng", extra->rng, /*is_buffer=*/true)) extra->rng = extra->rng.cpu();
      if (root.try_read("amp_scaler", scaler, /*is_buffer=*/true)) {
        scaler = scaler.to(torch::kCPU, torch::kDouble).contiguous();
        extra->amp_scaler.assign(scaler.data_ptr<double>(), scaler.data_ptr<double>() + scaler.numel());
      }
    }
  } catch (const c10::Error& e) {
    throw Error(path + ": cannot load model/optimizer state (" + e.what_without_backtrace() + ")");
  }
}

void load_resume_state(const std::string& payload, Net& model, torch::optim::Optimizer& opt, const std::string& path,
                       ExtraState* extra) {
  load_state(payload, model, &opt, path, extra);
  if (const std::string bad = non_finite_state(model, &opt); !bad.empty())
    throw UsageError(path + ": its " + bad + " holds a NaN or an infinity (a diverged run's checkpoint): resume "
                     "from an earlier one (--run.resume " + io::parent_dir(path) + "/step-N.ckpt)");
}

namespace {

void append_state(std::vector<uint8_t>& out, at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  const torch::Tensor s = gen.get_state().contiguous();
  const auto* p = s.data_ptr<uint8_t>();
  out.insert(out.end(), p, p + s.numel());
}

void restore_state(const std::vector<uint8_t>& bytes, size_t& at, at::Generator& gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  const int64_t n = gen.get_state().numel();
  LOCKSTEP_REQUIRE(at + static_cast<size_t>(n) <= bytes.size(), "checkpoint RNG state is too short");
  torch::Tensor s = torch::empty({n}, torch::kUInt8);
  std::memcpy(s.data_ptr<uint8_t>(), bytes.data() + at, static_cast<size_t>(n));
  gen.set_state(s);
  at += static_cast<size_t>(n);
}

}  // namespace

std::vector<uint8_t> rng_state_bytes(torch::Device device) {
  std::vector<uint8_t> out;
  append_state(out, at::globalContext().defaultGenerator(torch::kCPU));
  if (device.is_cuda()) append_state(out, at::globalContext().defaultGenerator(device));
  return out;
}

void set_rng_state_bytes(const std::vector<uint8_t>& bytes, torch::Device device) {
  size_t at = 0;
  at::Generator cpu = at::globalContext().defaultGenerator(torch::kCPU);
  restore_state(bytes, at, cpu);
  if (device.is_cuda()) {
    at::Generator gpu = at::globalContext().defaultGenerator(device);
    restore_state(bytes, at, gpu);
  }
}

}  // namespace lockstep
