// train_state: see train_state.hpp.
#include "core/train_state.hpp"

#include <torch/torch.h>
#include <torch/version.h>

#include <boost/property_tree/ptree.hpp>
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
      .add("dataset", m.dataset)
      .add("sample_shape", m.sample_shape)
      .add("num_classes", m.num_classes)
      .add("val_acc", m.val_acc)
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

std::string serialize_state(Net& model, torch::optim::Optimizer& opt) {
  torch::serialize::OutputArchive root, model_ar, opt_ar;
  model.save(model_ar);
  opt.save(opt_ar);
  root.write("model", model_ar);
  root.write("optimizer", opt_ar);
  std::ostringstream out;
  root.save_to(out);
  return out.str();
}

void load_state(const std::string& payload, Net& model, torch::optim::Optimizer* opt,
                const std::string& path) {
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
  } catch (const c10::Error& e) {
    throw Error(path + ": cannot load model/optimizer state (" + e.what_without_backtrace() + ")");
  }
}

}  // namespace lockstep
