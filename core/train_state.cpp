// train_state: see train_state.hpp.
#include "core/train_state.hpp"

#include <torch/torch.h>
#include <torch/version.h>

#include <boost/property_tree/ptree.hpp>
#include <cstring>
#include <mutex>
#include <sstream>

#include "core/error.hpp"
#include "core/version.hpp"
#include "io/json.hpp"


namespace lockstep {

std::string lockstep_version() { return LOCKSTEP_VERSION; }
std::string torch_version() { return TORCH_VERSION; }

std::string meta_to_json(const CheckpointMeta& m) {
  io::JsonObject o;
  o.add("step", m.pos.step)
      .add("epoch", m.pos.epoch)
      .add("samples_done_in_epoch", m.pos.samples_done_in_epoch)
      .add("world_size", m.world_size)
      .add("batch_size", m.batch_size)
      .add("seed", std::to_string(m.seed))
      .add("model", m.model)
      .add("model_width", m.model_width)
      .add("model_depth", m.model_depth)
      .add("dataset", m.dataset)
      .add("sample_shape", m.sample_shape)
      .add("num_classes", m.num_classes)
      .add("val_acc", m.val_acc)
      .add("val_f1", m.val_f1)
      .add("best_metric", m.best_metric)
      .add("best_value", m.best_value)
      .add("lockstep_version", m.lockstep_version)
      .add("torch_version", m.torch_version)
      .add("config", m.config_ini);
  return o.str();
}

CheckpointMeta meta_from_json(const std::string& json, const std::string& path) {
  const auto t = io::json_parse(json, path);
  CheckpointMeta m;
  try {
    m.pos.step = t.get<int64_t>("step");
    m.pos.epoch = t.get<int64_t>("epoch");
    m.pos.samples_done_in_epoch = t.get<int64_t>("samples_done_in_epoch");
    m.world_size = t.get<int>("world_size");
    m.batch_size = t.get<int64_t>("batch_size");
    m.seed = std::stoull(t.get<std::string>("seed"));
    m.model = t.get<std::string>("model");
    m.model_width = t.get<int64_t>("model_width", 0);
    m.model_depth = t.get<int>("model_depth", 18);
    m.val_f1 = t.get<double>("val_f1", -1.0);
    m.best_metric = t.get<std::string>("best_metric", "");
    m.best_value = t.get<double>("best_value", 0.0);
    m.dataset = t.get<std::string>("dataset");
    for (const auto& [k, v] : t.get_child("sample_shape")) m.sample_shape.push_back(v.get_value<int64_t>());
    m.num_classes = t.get<int64_t>("num_classes");
    m.val_acc = t.get<double>("val_acc", -1.0);
    m.lockstep_version = t.get<std::string>("lockstep_version");
    m.torch_version = t.get<std::string>("torch_version");
    m.config_ini = t.get<std::string>("config", "");
  } catch (const boost::property_tree::ptree_error& e) {
    throw Error(path + ": checkpoint metadata incomplete (" + e.what() + ")");
  }
  return m;
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
    root.load_from(in);
    root.read("model", model_ar);
    model.load(model_ar);
    if (opt) {
      root.read("optimizer", opt_ar);
      opt->load(opt_ar);
    }
    if (extra) {
      torch::Tensor scaler;
      root.try_read("rng", extra->rng, /*is_buffer=*/true);
      if (root.try_read("amp_scaler", scaler, /*is_buffer=*/true)) {
        scaler = scaler.to(torch::kDouble).contiguous();
        extra->amp_scaler.assign(scaler.data_ptr<double>(), scaler.data_ptr<double>() + scaler.numel());
      }
    }
  } catch (const c10::Error& e) {
    throw Error(path + ": cannot load model/optimizer state (" + e.what_without_backtrace() + ")");
  }
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
