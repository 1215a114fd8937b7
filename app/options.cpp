// options: see options.hpp.
#include "app/options.hpp"

#include <sys/stat.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "app/po_error.hpp"
#include "core/base/error.hpp"
#include "core/config/ini_text.hpp"
#include "core/config/config_checks.hpp"
#include "core/config/enums.hpp"

namespace po = boost::program_options;

namespace lockstep {

// Boost.Program_options turns an option's text into a configuration enum through this
// overload (found by argument-dependent lookup): a name that is not one of the enum's is
// a usage error listing the choices, e.g. "--dist.backend must be auto, mpi or nccl, not
// 'gloo'".
template <typename E, typename = decltype(enum_names(E{}))>
void validate(boost::any& out, const std::vector<std::string>& values, E*, int) {
  po::validators::check_first_occurrence(out);
  const std::string& text = po::validators::get_single_string(values);
  E value{};
  if (!parse_enum(text, &value)) {
    po::error_with_option_name e("%canonical_option% must be " + enum_choices<E>() + ", not '%value%'");
    e.set_substitute("value", text);  // never in the template itself: po_error.hpp
    throw e;
  }
  out = value;
}

}  // namespace lockstep

namespace lockstep::app {
namespace {

// An option holding a configuration enum, its default shown by name.
template <typename E>
po::typed_value<E>* enum_value(E* target) {
  return po::value(target)->default_value(*target, to_string(*target));
}

// The text of a configuration enum held in V, if V holds one (the resolved-config dump).
template <typename... E>
bool enum_text(const boost::any& v, EnumList<E...>, std::string* out) {
  return ((boost::any_cast<E>(&v) ? (*out = to_string(*boost::any_cast<E>(&v)), true) : false) || ...);
}

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
      {"split", "eval.split"},           {"keep-last", "ckpt.keep-last"}, {"any-units", "eval.any-units"},
      {"ckpt-every", "ckpt.every"},       {"sync-bn", "model.sync-bn"},
      {"optimizer", "train.optimizer"},   {"lr-scaling", "train.lr-scaling"},
      {"class-weights", "train.class-weights"}, {"label-smoothing", "train.label-smoothing"},
      {"amp", "train.amp"},               {"clip-norm", "train.clip-norm"},
      {"eval-every", "train.eval-every"}, {"best-metric", "ckpt.best-metric"},
      {"schedule", "train.schedule"},     {"width", "model.width"},
      {"init-from", "model.init-from"},   {"init-exclude", "model.init-exclude"},
      {"freeze", "model.freeze"},         {"top-k", "predict.top-k"},
      {"out", "predict.out"}};
  return m;
}

po::options_description common_options(Config* c) {
  po::options_description d("Options (section.key on the command line or as 'key' under [section] in --config)");
  d.add_options()
      ("help,h", "print this help and exit")
      ("config", po::value<std::string>(), "INI job file (jobs/*.ini); the command line wins")
      ("data.path", po::value(&c->data_dir), "dataset directory with manifest.json (alias --data)")
      ("data.train-split", po::value(&c->train_split)->default_value(c->train_split), "split to train on")
      ("data.val-split", po::value(&c->val_split)->default_value(c->val_split),
       "split validated during training (best.ckpt is chosen on it); none: no validation")
      ("data.test-split", po::value(&c->test_split)->default_value(c->test_split),
       "split evaluated once at the end, with the best checkpoint's weights; none: skip")
      ("data.mode", enum_value(&c->data_mode), "auto | memory | stream (auto: memory if the rank's share fits the budget)")
      ("data.memory-budget-mb", po::value(&c->memory_budget_mb)->default_value(c->memory_budget_mb), "per-rank budget for data.mode auto")
      ("data.prefetch", po::value(&c->prefetch)->default_value(c->prefetch), "batches the loader thread keeps ready")
      ("data.block-samples", po::value(&c->block_samples)->default_value(c->block_samples), "stream: samples per read, 0: ~4 MiB")
      ("data.shuffle-blocks", po::value(&c->shuffle_blocks)->default_value(c->shuffle_blocks), "stream: blocks per shuffle window")
      ("data.read-threads", po::value(&c->read_threads)->default_value(c->read_threads), "threads reading shards at once per rank, 0: min(4, the rank's cores)")
      ("data.bucket-batches", po::value(&c->bucket_batches)->default_value(c->bucket_batches),
       "ragged data (memory mode): batches per window sorted by length, so a batch pads little; 0: off")
      ("eval.hflip", po::value(&c->eval_hflip)->default_value(c->eval_hflip)->implicit_value(true), "test-time augmentation: every evaluation (validation, test, evaluate, predict) averages each image's class probabilities with its mirror's (images, clips)")
      ("model.name", po::value(&c->model)->default_value(c->model), "cnn | resnet | mlp | cnn1d | lmu | gru | c3d | r3d | torchscript:PATH (alias --model)")
      ("model.dropout", po::value(&c->dropout)->default_value(c->dropout), "dropout before the classifier")
      ("model.width", po::value(&c->model_width)->default_value(c->model_width), "channels/units scale; 0: the model's default (alias --width)")
      ("model.depth", po::value(&c->model_depth)->default_value(c->model_depth), "resnet depth: 18 | 34; r3d: 10 | 18")
      ("model.memory-format", enum_value(&c->memory_format), "auto | contiguous | channels-last: the layout of a conv net's activations and weights; auto: channels-last (NHWC) for cnn, resnet, c3d, r3d on CPU (oneDNN's faster kernels; NCHW with a note where a layer hits oneDNN issue 6035) and on GPUs")
      ("model.fused-bn", enum_value(&c->fused_bn), "auto | on | off: in training, a built-in model's BatchNorm, residual add and ReLU as one fused node (CUDA kernels on GPUs, the same steps as loops on the CPU) where the activations are channels-last; auto: off until the GPU report has measured it (docs/gpu.md)")
      ("model.max-pool", enum_value(&c->max_pool), "auto | lockstep | aten: in training, a built-in conv net's max-pool layers run lockstep's kernels (1-byte argmax instead of ATen's int64 indices; CUDA kernels on GPUs, the same rules as loops on the CPU) where the activations are channels-last, or ATen's; the same values and gradients either way (ATen's float32 arithmetic, bit for bit); auto: aten until the GPU report has measured it (docs/gpu.md)")
      ("model.checkpoint-activations", po::value(&c->checkpoint_activations)->default_value(c->checkpoint_activations)->implicit_value(true), "recompute each block's activations in backward instead of storing them (resnet, r3d, c3d): less memory, ~1/3 more compute")
      ("model.sync-bn", po::value(&c->sync_bn)->default_value(c->sync_bn)->implicit_value(true), "BatchNorm statistics over all ranks' batches (alias --sync-bn)")
      ("train.threads", po::value(&c->threads)->default_value(c->threads), "intra-op threads per rank (alias --threads)")
      ("train.batch-size", po::value(&c->batch_size)->default_value(c->batch_size), "samples per rank per step (alias --batch-size)")
      ("dist.backend", enum_value(&c->backend), "auto | mpi | nccl (alias --backend)")
      ("dist.bucket-mb", po::value(&c->bucket_mb)->default_value(c->bucket_mb), "gradient bucket size in MiB; 0: one bucket per tensor")
      ("dist.comm-timeout", po::value(&c->comm_timeout)->default_value(c->comm_timeout), "seconds a collective may take before the job is ended")
      ("trace.steps", po::value(&c->trace_steps)->default_value(c->trace_steps), "A-B: write a Chrome/Perfetto trace per rank of global steps A..B to RUN_DIR/trace/ (lockstep report --trace RUN_DIR merges them)")
      ("trace.ops", po::value(&c->trace_ops)->default_value(c->trace_ops)->implicit_value(true), "with --trace.steps: also profile those steps (the first 100 of them) operator by operator through LibTorch's profiler (GPU kernels included) to RUN_DIR/trace/ops-rank-R.json and a summary .txt")
      ("dist.straggler-windows", po::value(&c->straggler_windows)->default_value(c->straggler_windows), "warn when one rank is the slowest (busy time) in this many log windows in a row; 0: off")
      ("dist.straggler-percent", po::value(&c->straggler_percent)->default_value(c->straggler_percent), "... each time more than this many percent slower than the median rank");
  return d;
}

po::options_description train_options(Config* c) {
  po::options_description d("Training");
  d.add_options()
      ("train.epochs", po::value(&c->epochs)->default_value(c->epochs), "epochs (alias --epochs)")
      ("data.remainder", enum_value(&c->remainder), "drop | wrap: ranks' leftover samples each epoch (docs/shard-format.md)")
      ("data.random-crop", po::value(&c->random_crop)->default_value(c->random_crop), "augment: random crops with this zero padding (images, clips), 0: off")
      ("data.hflip", po::value(&c->hflip)->default_value(c->hflip), "augment: random horizontal flips (images, clips)")
      ("data.time-jitter", po::value(&c->time_jitter)->default_value(c->time_jitter), "augment clips: shift each clip by up to this many frames (edge frames repeated), 0: off")
      ("data.brightness", po::value(&c->brightness)->default_value(c->brightness), "augment: add a random shift in [-b, b] to each sample (normalised units), 0: off")
      ("data.contrast", po::value(&c->contrast)->default_value(c->contrast), "augment: scale each sample about its mean by a random factor in [1-c, 1+c], 0: off")
      ("data.random-erase", po::value(&c->random_erase)->default_value(c->random_erase), "augment: erase a random rectangle (2-40% of the image, set to the mean) in each sample with this probability, 0: off")
      ("train.optimizer", enum_value(&c->optimizer), "sgd | adam | adamw (alias --optimizer)")
      ("train.fused-optimizer", po::value(&c->fused_optimizer)->default_value(c->fused_optimizer)->implicit_value(true),
       "step through ATen's fused multi-tensor kernels (same state and checkpoints as false: torch::optim's per-parameter step)")
      ("train.cuda-graph", enum_value(&c->cuda_graph),
       "auto | on | off: GPUs, one rank: capture forward, backward and optimizer as one CUDA graph after warm-up and replay it (auto: where it applies; docs/gpu.md)")
      ("train.cudnn-benchmark", po::value(&c->cudnn_benchmark)->default_value(c->cudnn_benchmark)->implicit_value(true),
       "GPUs: cuDNN times its convolution algorithms once per input shape and keeps the fastest (never for ragged sequences)")
      ("train.copy-stream", po::value(&c->copy_stream)->default_value(c->copy_stream)->implicit_value(true),
       "GPUs: each training batch is copied to the device on a stream of its own, overlapping the steps before it (false: on the compute stream, between steps)")
      ("train.lr", po::value(&c->lr)->default_value(c->lr), "learning rate before --train.lr-scaling (alias --lr)")
      ("train.lr-scaling", enum_value(&c->lr_scaling), "none | linear | sqrt: lr times f(world size) (alias --lr-scaling)")
      ("train.momentum", po::value(&c->momentum)->default_value(c->momentum), "SGD momentum")
      ("train.nesterov", po::value(&c->nesterov)->default_value(c->nesterov)->implicit_value(true), "SGD with Nesterov momentum")
      ("train.beta1", po::value(&c->beta1)->default_value(c->beta1), "adam/adamw beta1")
      ("train.beta2", po::value(&c->beta2)->default_value(c->beta2), "adam/adamw beta2")
      ("train.weight-decay", po::value(&c->weight_decay)->default_value(c->weight_decay), "weight decay (L2 for sgd/adam, decoupled for adamw)")
      ("train.schedule", enum_value(&c->schedule), "learning-rate schedule after warmup: constant | cosine | step (alias --schedule)")
      ("train.warmup-steps", po::value(&c->warmup_steps)->default_value(c->warmup_steps), "linear warmup steps")
      ("train.warmup-epochs", po::value(&c->warmup_epochs)->default_value(c->warmup_epochs), "linear warmup in epochs (added to warmup-steps)")
      ("train.min-lr-fraction", po::value(&c->min_lr_fraction)->default_value(c->min_lr_fraction), "cosine floor as a fraction of lr")
      ("train.step-epochs", po::value(&c->step_epochs)->default_value(c->step_epochs), "step schedule: epochs between decays")
      ("train.step-gamma", po::value(&c->step_gamma)->default_value(c->step_gamma), "step schedule: factor per decay")
      ("train.clip-norm", po::value(&c->clip_norm)->default_value(c->clip_norm), "clip gradients to this global L2 norm after the all-reduce; 0: off (alias --clip-norm)")
      ("train.class-weights", po::value(&c->class_weights)->default_value(c->class_weights), "none | auto (inverse frequency) | w0,w1,... (alias --class-weights)")
      ("train.label-smoothing", po::value(&c->label_smoothing)->default_value(c->label_smoothing), "label smoothing in [0, 1) (alias --label-smoothing)")
      ("train.amp", enum_value(&c->amp), "mixed precision: none | bf16 | fp16 (fp16 with dynamic loss scaling) (alias --amp)")
      ("train.loss-scale", po::value(&c->loss_scale)->default_value(c->loss_scale), "fp16: the dynamic loss scale at the start (a resume keeps the checkpoint's; a power of two unscales exactly); halved on every overflowing step, never below 1")
      ("train.loss-scale-growth", po::value(&c->loss_scale_growth)->default_value(c->loss_scale_growth), "fp16: finite steps in a row before the loss scale doubles")
      ("train.eval-every", po::value(&c->eval_every)->default_value(c->eval_every), "steps between evaluations; 0: each epoch end (alias --eval-every)")
      ("train.early-stop-metric", enum_value(&c->early_stop_metric), "val_f1 | val_acc | val_loss | val_cer | val_wer (CTC) | none: stop when it has not improved for early-stop-patience evaluations")
      ("train.early-stop-patience", po::value(&c->early_stop_patience)->default_value(c->early_stop_patience), "evaluations without improvement before early stopping")
      ("train.early-stop-min-delta", po::value(&c->early_stop_min_delta)->default_value(c->early_stop_min_delta), "the least change that counts as an improvement")
      ("train.stop-at", po::value(&c->stop_at)->default_value(c->stop_at), "stop once validation reaches a target, e.g. val_acc>=0.93 or val_loss<=0.25 (time to accuracy)")
      ("model.init-from", po::value(&c->init_from)->default_value(c->init_from), "warm start from a checkpoint (.ckpt) or .safetensors file: weights only, loaded by name and shape, a table printed (alias --init-from)")
      ("model.init-exclude", po::value(&c->init_exclude)->default_value(c->init_exclude), "comma-separated name prefixes --init-from does not load, e.g. fc. for a new head (alias --init-exclude)")
      ("model.freeze", po::value(&c->freeze)->default_value(c->freeze), "comma-separated name prefixes of parameters kept untrainable (alias --freeze)")
      ("train.progress", enum_value(&c->progress), "auto | bar | lines: terminal progress bar or a plain line every log-every steps (auto: bar on a terminal, not under mpirun)")
      ("train.tensorboard", po::value(&c->tensorboard)->default_value(c->tensorboard)->implicit_value(true), "write TensorBoard event files to RUN_DIR/tb")
      ("train.seed", po::value(&c->seed)->default_value(c->seed), "seed of weights and data order (alias --seed)")
      ("train.max-steps", po::value(&c->max_steps)->default_value(c->max_steps), "stop after this global step, 0: none (alias --max-steps)")
      ("train.log-every", po::value(&c->log_every)->default_value(c->log_every), "steps between log lines and metrics rows (alias --log-every)")
      ("run.dir", po::value(&c->run_dir)->default_value(c->run_dir), "run directory: checkpoints, logs, metrics (alias --run-dir)")
      ("run.resume", po::value(&c->resume)->default_value(c->resume), "auto | none | PATH (alias --resume)")
      ("ckpt.every", po::value(&c->ckpt_every)->default_value(c->ckpt_every), "steps between checkpoints; 0: epoch ends only (alias --ckpt-every)")
      ("ckpt.keep-last", po::value(&c->keep_last)->default_value(c->keep_last), "checkpoints kept; 0: all (alias --keep-last)")
      ("ckpt.best-metric", enum_value(&c->best_metric), "val_f1 | val_acc | val_loss | val_cer | val_wer (CTC) | none: keep the best evaluation as checkpoints/best.ckpt (alias --best-metric)")
      ("dist.overlap", enum_value(&c->overlap), "auto | true | false: reduce gradient buckets during backward (auto = true); false: all after backward, on the training thread")
      ("dist.compress", enum_value(&c->compress), "none | bf16 | fp16: all-reduce gradients in 16 bits (half the bytes; divided by the world size first, summed in float32 per combine)")
      ("dist.grad-accum", po::value(&c->grad_accum)->default_value(c->grad_accum), "micro-batches per optimizer step (alias --grad-accum)")
      ("dist.sync-buffers", po::value(&c->sync_buffers)->default_value(c->sync_buffers), "before evaluations and checkpoints, average BatchNorm statistics across ranks (false: every rank takes rank 0's)")
      ("debug.fault", enum_value(&c->fault), "fault injection for tests: none | throw | stall | kill | slow | oom (an out-of-memory error, as the GPU allocator raises it) | stall-start (in start-up) | slow-start (--debug.slow-ms in start-up)")
      ("debug.slow-ms", po::value(&c->fault_slow_ms)->default_value(c->fault_slow_ms), "slow: the fault rank sleeps this long every step from the fault step on")
      ("debug.fault-rank", po::value(&c->fault_rank)->default_value(c->fault_rank), "rank that injects the fault")
      ("debug.fault-step", po::value(&c->fault_step)->default_value(c->fault_step), "global step at which the fault happens")
      ("debug.sync-check", po::value(&c->sync_check)->default_value(c->sync_check),
       "GPUs: from this global step on, a host sync inside the training step is an error naming the call (0: off)");
  return d;
}

po::options_description predict_options(Config* c) {
  po::options_description d("Prediction");
  d.add_options()
      ("predict.out", po::value(&c->predict_out), "the predictions: .csv or .h5, in sample order (alias --out)")
      ("predict.top-k", po::value(&c->top_k)->default_value(c->top_k), "the K most likely classes per sample; 0: every class's probability (alias --top-k)");
  return d;
}

po::options_description export_options(Config* c) {
  po::options_description d("Export");
  d.add_options()
      ("export.out", po::value(&c->export_out), "the .safetensors file to write (alias --out)")
      ("export.format", po::value(&c->export_format)->default_value(c->export_format), "safetensors (the only format) (alias --format)");
  return d;
}

po::options_description weights_options(Config* c) {
  po::options_description d("Weights");  // the checkpoint read and the outputs' guard: evaluate, predict, export
  d.add_options()
      ("eval.checkpoint", po::value(&c->checkpoint), "checkpoint file to read (alias --checkpoint)")
      ("force", po::bool_switch(&c->force_output), "replace an existing output file; without it one is refused")
      ("eval.any-units", po::bool_switch(&c->any_units), "take data whose spread is 16x off the model's training data in every channel (other units, refused without it: pixels 0-1 for 0-255) as it is (alias --any-units)");
  return d;
}

po::options_description eval_options(Config* c) {
  po::options_description d("Evaluation");
  d.add_options()
      ("eval.split", po::value(&c->eval_split)->default_value(c->eval_split), "split to evaluate on (alias --split)")
      ("eval.out", po::value(&c->eval_out), "also write the result (metrics, per-class recall, confusion matrix) as JSON here");
  return d;
}

std::string value_text(const po::variable_value& v) {
  const auto& a = v.value();
  if (const auto* s = boost::any_cast<std::string>(&a)) return *s;
  if (const auto* i = boost::any_cast<int>(&a)) return std::to_string(*i);
  if (const auto* l = boost::any_cast<int64_t>(&a)) return std::to_string(*l);
  if (const auto* u = boost::any_cast<uint64_t>(&a)) return std::to_string(*u);
  if (const auto* b = boost::any_cast<bool>(&a)) return *b ? "true" : "false";
  if (std::string e; enum_text(a, ConfigEnums{}, &e)) return e;
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
    for (const auto& [k, v] : keys) out += k + " = " + ini_value(v) + "\n";
  }
  return out;
}

// An INI file's entries as Boost options (ini_text reads the file: Boost's own INI
// parser cuts a value at any '#'). An unknown key fails naming PATH:LINE; a key only a
// training job has (JOB_KEYS, for evaluate, predict and export) is passed over, so the job
// file a run was trained with serves them too (its [train] keys refused it).
po::parsed_options config_options(const std::vector<IniEntry>& entries, const po::options_description& desc,
                                  const std::string& path, const po::options_description* job_keys) {
  po::parsed_options parsed(&desc);
  for (const IniEntry& e : entries) {
    const po::option_description* d = desc.find_nothrow(e.key, /*approx=*/false);
    if (!d && job_keys && job_keys->find_nothrow(e.key, /*approx=*/false)) continue;
    if (!d) throw UsageError(path + ":" + std::to_string(e.line) + ": unrecognised option '" + e.key + "'");
    // Boost reads an empty switch as true: `sync-bn =` (a value deleted) turned it on.
    if (e.value.empty() && dynamic_cast<const po::typed_value<bool>*>(d->semantic().get()))
      throw UsageError(path + ":" + std::to_string(e.line) + ": " + e.key + " has no value (true or false)");
    po::option o(e.key, {e.value});
    o.original_tokens = {e.key, e.value};
    parsed.options.push_back(std::move(o));
  }
  return parsed;
}

std::string join(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

// A later occurrence of an option replaces an earlier one ("--lr 0.1 ... --lr 0.2" is
// 0.2), so a job template's options can be overridden by arguments appended to it.
std::vector<std::string> last_wins(const std::vector<std::string>& args) {
  struct Item {
    std::string name;
    std::vector<std::string> tokens;
  };
  std::vector<Item> items;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    Item it;
    it.tokens.push_back(a);
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      const auto eq = a.find('=');
      it.name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (eq == std::string::npos && i + 1 < args.size() && args[i + 1].compare(0, 2, "--") != 0)
        it.tokens.push_back(args[++i]);
    }
    items.push_back(std::move(it));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < items.size(); ++i) {
    bool later = false;
    for (size_t j = i + 1; j < items.size() && !items[i].name.empty(); ++j) later |= items[j].name == items[i].name;
    if (!later) out.insert(out.end(), items[i].tokens.begin(), items[i].tokens.end());
  }
  return out;
}

ParseResult parse(const std::string& command, const std::vector<std::string>& args,
                  const po::options_description& desc, Config* cfg,
                  const std::vector<std::string>& required) {
  po::variables_map vm;
  try {
    const auto expanded = last_wins(expand_aliases(args));
    // A switch takes its value after '=' only: the word after it is the next argument, and an
    // empty one ('' from an unset shell variable) vanished, so `--train.nesterov ""` was true.
    for (size_t i = 1; i < expanded.size(); ++i) {
      const std::string& prev = expanded[i - 1];
      if (!expanded[i].empty() || prev.size() < 3 || prev.compare(0, 2, "--") != 0 || prev.find('=') != std::string::npos)
        continue;
      const po::option_description* o = desc.find_nothrow(prev.substr(2), /*approx=*/false);
      if (o && o->semantic()->min_tokens() == 0)
        return {ParseStatus::kError,
                o->semantic()->max_tokens() == 0
                    ? prev + " is followed by an empty argument (''): it takes no value; drop the ''"
                    : prev + " is followed by an empty argument (''): a switch takes its value after '=' (" + prev +
                          "=true or " + prev + "=false), or none (true)"};
    }
    // No guessing (a hostile finding: a sweep's runs all went into one directory by --run.di).
    const po::parsed_options parsed =
        po::command_line_parser(expanded).options(desc).style(no_guessing_style()).run();
    // A word no option takes (a shell glob's second match, a value with a space unquoted) was
    // dropped: `--checkpoint step-*.ckpt` scored the oldest checkpoint alone.
    for (const po::option& o : parsed.options)
      if (o.position_key >= 0)
        return {ParseStatus::kError, "unexpected argument '" + (o.value.empty() ? std::string() : o.value.front()) +
                                         "': each option takes one value (a shell glob matched several files? name one)"};
    po::store(parsed, vm);
    if (vm.count("help")) {
      std::ostringstream ss;
      ss << "usage: lockstep " << command << " [--config FILE] [options]\n\n" << desc;
      return {ParseStatus::kExitOk, ss.str()};
    }
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      cfg->config_file = path;
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        return {ParseStatus::kError, "--config " + path + " is a directory, not an INI job file"};
      if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))  // a FIFO would block here
        return {ParseStatus::kError, "--config " + path + " is not a regular file (a FIFO or device), not an INI job file"};
      std::ifstream in(path, std::ios::binary);
      if (!in) return {ParseStatus::kError, "cannot read config file " + path};
      std::ostringstream text;
      text << in.rdbuf();
      try {
        Config scratch;  // every job key, only their names read
        po::options_description job;
        job.add(common_options(&scratch)).add(train_options(&scratch)).add(weights_options(&scratch)).add(eval_options(&scratch));
        po::store(config_options(parse_ini(text.str(), path), desc, path, command == "train" ? nullptr : &job), vm);
      } catch (const UsageError& e) {
        return {ParseStatus::kError, e.what()};
      } catch (const po::error& e) {
        return {ParseStatus::kError, path + ": " + po_message(e)};
      }
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return {ParseStatus::kError, po_message(e)};
  }
  for (const auto& key : required)
    if (!vm.count(key)) return {ParseStatus::kError, "missing required option --" + key};
  for (const auto& [key, value] : vm)  // NaN passes every "< 0" test: refuse it (and inf) once, for all
    if (const auto* d = boost::any_cast<double>(&value.value()); d && !std::isfinite(*d))
      return {ParseStatus::kError, "--" + key + " must be a finite number, not '" + value_text(value) + "'"};
  if (const std::string problem = check_config(cfg); !problem.empty()) return {ParseStatus::kError, problem};
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

ParseResult parse_doctor(const std::vector<std::string>& args, Config* cfg) {
  po::options_description doctor("Doctor");
  doctor.add_options()
      ("doctor.out", po::value(&cfg->doctor_out), "write the all-reduce timing as JSON (for lockstep report)")
      ("doctor.allreduce-mb", po::value(&cfg->doctor_allreduce_mb)->default_value(cfg->doctor_allreduce_mb), "size of the timed all-reduce in MiB")
      ("force", po::bool_switch(&cfg->force_output), "replace an existing --doctor.out file; without it one is refused");
  po::options_description all;
  all.add(common_options(cfg)).add(train_options(cfg)).add(doctor);
  return parse("doctor", args, all, cfg, {});
}

ParseResult parse_predict(const std::vector<std::string>& args, Config* cfg) {
  po::options_description all;
  all.add(common_options(cfg)).add(weights_options(cfg)).add(eval_options(cfg)).add(predict_options(cfg));
  return parse("predict", args, all, cfg, {"data.path", "eval.checkpoint", "predict.out"});
}

ParseResult parse_export(const std::vector<std::string>& args, Config* cfg) {
  std::vector<std::string> rewritten;  // here --out is the export's file
  for (const std::string& a : args) {
    if (a == "--out" || a == "--format") {
      rewritten.push_back("--export." + a.substr(2));
    } else if (a.rfind("--out=", 0) == 0 || a.rfind("--format=", 0) == 0) {
      rewritten.push_back("--export." + a.substr(2));
    } else {
      rewritten.push_back(a);
    }
  }
  po::options_description all;
  all.add(common_options(cfg)).add(weights_options(cfg)).add(export_options(cfg));
  return parse("export", rewritten, all, cfg, {"eval.checkpoint", "export.out"});
}

ParseResult parse_evaluate(const std::vector<std::string>& args, Config* cfg) {
  po::options_description all;
  all.add(common_options(cfg)).add(weights_options(cfg)).add(eval_options(cfg));
  return parse("evaluate", args, all, cfg, {"data.path", "eval.checkpoint"});
}

}  // namespace lockstep::app
