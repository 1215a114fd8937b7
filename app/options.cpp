// options: see options.hpp.
#include "app/options.hpp"

#include <boost/program_options.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "core/lr_schedule.hpp"

namespace po = boost::program_options;

namespace lockstep::app {
namespace {

const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> m{
      {"data", "data.path"},         {"epochs", "train.epochs"},
      {"batch-size", "train.batch-size"}, {"lr", "train.lr"},
      {"seed", "train.seed"},        {"max-steps", "train.max-steps"},
      {"threads", "train.threads"},  {"log-every", "train.log-every"},
      {"run-dir", "run.dir"},        {"resume", "run.resume"},
      {"model", "model.name"},       {"backend", "dist.backend"},
      {"bucket-mb", "dist.bucket-mb"}, {"grad-accum", "dist.grad-accum"},
      {"comm-timeout", "dist.comm-timeout"}, {"checkpoint", "eval.checkpoint"},
      {"split", "data.val-split"},       {"keep-last", "ckpt.keep-last"},
      {"ckpt-every", "ckpt.every"}};
  return m;
}

po::options_description common_options(Config* c) {
  po::options_description d("Options (section.key on the command line or as 'key' under [section] in --config)");
  d.add_options()
      ("help,h", "print this help and exit")
      ("config", po::value<std::string>(), "INI job file (jobs/*.ini); the command line wins")
      ("data.path", po::value(&c->data_dir), "dataset directory with manifest.json (alias --data)")
      ("data.train-split", po::value(&c->train_split)->default_value(c->train_split), "split to train on")
      ("data.val-split", po::value(&c->val_split)->default_value(c->val_split), "split validated every epoch")
      ("data.mode", po::value(&c->data_mode)->default_value(c->data_mode), "auto | memory | stream (auto: memory if the rank's share fits the budget)")
      ("data.memory-budget-mb", po::value(&c->memory_budget_mb)->default_value(c->memory_budget_mb), "per-rank budget for data.mode auto")
      ("data.prefetch", po::value(&c->prefetch)->default_value(c->prefetch), "batches the loader thread keeps ready")
      ("data.block-samples", po::value(&c->block_samples)->default_value(c->block_samples), "stream: samples per read, 0: ~4 MiB")
      ("data.shuffle-blocks", po::value(&c->shuffle_blocks)->default_value(c->shuffle_blocks), "stream: blocks per shuffle window")
      ("model.name", po::value(&c->model)->default_value(c->model), "model: cnn (alias --model)")
      ("model.dropout", po::value(&c->dropout)->default_value(c->dropout), "dropout before the classifier")
      ("train.threads", po::value(&c->threads)->default_value(c->threads), "intra-op threads per rank (alias --threads)")
      ("train.batch-size", po::value(&c->batch_size)->default_value(c->batch_size), "samples per rank per step (alias --batch-size)")
      ("dist.backend", po::value(&c->backend)->default_value(c->backend), "auto | mpi | nccl (alias --backend)")
      ("dist.bucket-mb", po::value(&c->bucket_mb)->default_value(c->bucket_mb), "gradient bucket size in MiB; 0: one bucket per tensor")
      ("dist.comm-timeout", po::value(&c->comm_timeout)->default_value(c->comm_timeout), "seconds a collective may take before the job is ended");
  return d;
}

po::options_description train_options(Config* c) {
  po::options_description d("Training");
  d.add_options()
      ("train.epochs", po::value(&c->epochs)->default_value(c->epochs), "epochs (alias --epochs)")
      ("data.remainder", po::value(&c->remainder)->default_value(c->remainder), "drop | wrap: ranks' leftover samples each epoch (docs/shard-format.md)")
      ("data.random-crop", po::value(&c->random_crop)->default_value(c->random_crop), "augment: random crops with this zero padding (images), 0: off")
      ("data.hflip", po::value(&c->hflip)->default_value(c->hflip), "augment: random horizontal flips (images)")
      ("train.lr", po::value(&c->lr)->default_value(c->lr), "learning rate (alias --lr)")
      ("train.momentum", po::value(&c->momentum)->default_value(c->momentum), "SGD momentum")
      ("train.weight-decay", po::value(&c->weight_decay)->default_value(c->weight_decay), "L2 weight decay")
      ("train.schedule", po::value(&c->schedule)->default_value(c->schedule), "learning-rate schedule: constant | cosine")
      ("train.warmup-steps", po::value(&c->warmup_steps)->default_value(c->warmup_steps), "linear warmup steps")
      ("train.min-lr-fraction", po::value(&c->min_lr_fraction)->default_value(c->min_lr_fraction), "cosine floor as a fraction of lr")
      ("train.seed", po::value(&c->seed)->default_value(c->seed), "seed of weights and data order (alias --seed)")
      ("train.max-steps", po::value(&c->max_steps)->default_value(c->max_steps), "stop after this global step, 0: none (alias --max-steps)")
      ("train.log-every", po::value(&c->log_every)->default_value(c->log_every), "steps between log lines and metrics rows (alias --log-every)")
      ("run.dir", po::value(&c->run_dir)->default_value(c->run_dir), "run directory: checkpoints, logs, metrics (alias --run-dir)")
      ("run.resume", po::value(&c->resume)->default_value(c->resume), "auto | none | PATH (alias --resume)")
      ("ckpt.every", po::value(&c->ckpt_every)->default_value(c->ckpt_every), "steps between checkpoints; 0: epoch ends only (alias --ckpt-every)")
      ("ckpt.keep-last", po::value(&c->keep_last)->default_value(c->keep_last), "checkpoints kept; 0: all (alias --keep-last)")
      ("dist.overlap", po::value(&c->overlap)->default_value(c->overlap), "auto | true | false: reduce gradient buckets during backward (auto: on for NCCL, on for MPI when the rank has a core beyond its threads)")
      ("dist.grad-accum", po::value(&c->grad_accum)->default_value(c->grad_accum), "micro-batches per optimizer step (alias --grad-accum)")
      ("dist.sync-buffers", po::value(&c->sync_buffers)->default_value(c->sync_buffers), "average BatchNorm statistics across ranks before evaluations and checkpoints")
      ("debug.fault", po::value(&c->fault)->default_value(c->fault), "fault injection for tests: none | throw | stall | kill")
      ("debug.fault-rank", po::value(&c->fault_rank)->default_value(c->fault_rank), "rank that injects the fault")
      ("debug.fault-step", po::value(&c->fault_step)->default_value(c->fault_step), "global step at which the fault happens");
  return d;
}

po::options_description eval_options(Config* c) {
  po::options_description d("Evaluation");
  d.add_options()
      ("eval.checkpoint", po::value(&c->checkpoint), "checkpoint file to evaluate (alias --checkpoint); "
       "the split is --data.val-split (alias --split)");
  return d;
}

std::string value_text(const po::variable_value& v) {
  const auto& a = v.value();
  if (const auto* s = boost::any_cast<std::string>(&a)) return *s;
  if (const auto* i = boost::any_cast<int>(&a)) return std::to_string(*i);
  if (const auto* l = boost::any_cast<int64_t>(&a)) return std::to_string(*l);
  if (const auto* u = boost::any_cast<uint64_t>(&a)) return std::to_string(*u);
  if (const auto* b = boost::any_cast<bool>(&a)) return *b ? "true" : "false";
  if (const auto* d = boost::any_cast<double>(&a)) {
    std::ostringstream ss;
    ss.precision(10);
    ss << *d;
    return ss.str();
  }
  return "?";
}

// The resolved configuration as INI, grouped by section; a valid --config file.
std::string render_ini(const po::variables_map& vm) {
  std::map<std::string, std::map<std::string, std::string>> sections;
  for (const auto& [key, value] : vm) {
    const auto dot = key.find('.');
    if (dot == std::string::npos || value.empty()) continue;
    sections[key.substr(0, dot)][key.substr(dot + 1)] = value_text(value);
  }
  std::string out = "# resolved lockstep configuration\n";
  for (const auto& [section, keys] : sections) {
    out += "\n[" + section + "]\n";
    for (const auto& [k, v] : keys) out += k + " = " + v + "\n";
  }
  return out;
}

std::string join(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

ParseResult parse(const std::string& command, const std::vector<std::string>& args,
                  const po::options_description& desc, Config* cfg,
                  const std::vector<std::string>& required) {
  po::variables_map vm;
  try {
    const auto expanded = expand_aliases(args);
    po::store(po::command_line_parser(expanded).options(desc).run(), vm);
    if (vm.count("help")) {
      std::ostringstream ss;
      ss << "usage: lockstep " << command << " [--config FILE] [options]\n\n" << desc;
      return {ParseStatus::kExitOk, ss.str()};
    }
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      std::ifstream in(path);
      if (!in) return {ParseStatus::kError, "cannot read config file " + path};
      try {
        po::store(po::parse_config_file(in, desc, /*allow_unregistered=*/false), vm);
      } catch (const po::error& e) {
        return {ParseStatus::kError, path + ": " + e.what()};
      }
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return {ParseStatus::kError, e.what()};
  }
  for (const auto& key : required)
    if (!vm.count(key)) return {ParseStatus::kError, "missing required option --" + key};
  if (cfg->batch_size < 1) return {ParseStatus::kError, "--train.batch-size must be at least 1"};
  if (cfg->threads < 1) return {ParseStatus::kError, "--train.threads must be at least 1"};
  if (cfg->epochs < 1) return {ParseStatus::kError, "--train.epochs must be at least 1"};
  if (cfg->log_every < 1) return {ParseStatus::kError, "--train.log-every must be at least 1"};
  if (cfg->max_steps < 0) return {ParseStatus::kError, "--train.max-steps must be >= 0"};
  if (cfg->lr <= 0) return {ParseStatus::kError, "--train.lr must be positive"};
  if (cfg->backend != "auto" && cfg->backend != "mpi" && cfg->backend != "nccl")
    return {ParseStatus::kError, "--dist.backend must be auto, mpi or nccl, not '" + cfg->backend + "'"};
  if (cfg->data_mode != "auto" && cfg->data_mode != "memory" && cfg->data_mode != "stream")
    return {ParseStatus::kError, "--data.mode must be auto, memory or stream, not '" + cfg->data_mode + "'"};
  if (cfg->remainder != "drop" && cfg->remainder != "wrap")
    return {ParseStatus::kError, "--data.remainder must be drop or wrap, not '" + cfg->remainder + "'"};
  if (cfg->overlap != "auto" && cfg->overlap != "true" && cfg->overlap != "false")
    return {ParseStatus::kError, "--dist.overlap must be auto, true or false"};
  if (cfg->grad_accum < 1) return {ParseStatus::kError, "--dist.grad-accum must be at least 1"};
  if (cfg->comm_timeout <= 0) return {ParseStatus::kError, "--dist.comm-timeout must be positive"};
  if (cfg->fault != "none" && cfg->fault != "throw" && cfg->fault != "stall" && cfg->fault != "kill")
    return {ParseStatus::kError, "--debug.fault must be none, throw, stall or kill"};
  if (cfg->prefetch < 1) return {ParseStatus::kError, "--data.prefetch must be at least 1"};
  if (cfg->random_crop < 0) return {ParseStatus::kError, "--data.random-crop must be >= 0"};
  if (!valid_schedule_kind(cfg->schedule))
    return {ParseStatus::kError, "--train.schedule must be constant or cosine, not '" + cfg->schedule + "'"};
  if (cfg->warmup_steps < 0) return {ParseStatus::kError, "--train.warmup-steps must be >= 0"};
  if (cfg->dropout < 0 || cfg->dropout >= 1) return {ParseStatus::kError, "--model.dropout must be in [0, 1)"};
  cfg->resolved_ini = render_ini(vm);
  cfg->command_line = "lockstep " + command + (args.empty() ? "" : " " + join(args));
  return {};
}

}  // namespace

std::vector<std::string> expand_aliases(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      const auto eq = a.find('=');
      const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      const auto it = aliases().find(name);
      if (it != aliases().end()) {
        out.push_back("--" + it->second + (eq == std::string::npos ? "" : a.substr(eq)));
        continue;
      }
    }
    out.push_back(a);
  }
  return out;
}

ParseResult parse_train(const std::vector<std::string>& args, Config* cfg) {
  po::options_description all;
  all.add(common_options(cfg)).add(train_options(cfg));
  return parse("train", args, all, cfg, {"data.path"});
}

ParseResult parse_evaluate(const std::vector<std::string>& args, Config* cfg) {
  po::options_description all;
  all.add(common_options(cfg)).add(eval_options(cfg));
  return parse("evaluate", args, all, cfg, {"data.path", "eval.checkpoint"});
}

}  // namespace lockstep::app
