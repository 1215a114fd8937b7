// config_checks: see config_checks.hpp.
#include "core/config/config_checks.hpp"

#include <cmath>
#include <cstdlib>
#include <tuple>

namespace lockstep {

bool parse_stop_target(const std::string& text, BestMetric* metric, double* value) {
  for (const auto& [m, name, op] : {std::make_tuple(BestMetric::kValAcc, "val_acc", ">="),
                                    std::make_tuple(BestMetric::kValF1, "val_f1", ">="),
                                    std::make_tuple(BestMetric::kValLoss, "val_loss", "<="),
                                    std::make_tuple(BestMetric::kValCer, "val_cer", "<="),
                                    std::make_tuple(BestMetric::kValWer, "val_wer", "<=")}) {
    const std::string head = std::string(name) + op;
    if (text.compare(0, head.size(), head) != 0 || text.size() == head.size()) continue;
    char* end = nullptr;
    const double v = std::strtod(text.c_str() + head.size(), &end);
    if (*end != '\0' || !std::isfinite(v)) return false;
    // A target validation can never meet would never stop the run, silently.
    if (class_metric(m) ? !(v >= 0 && v <= 1) : v < 0) return false;
    *metric = m;
    *value = v;
    return true;
  }
  return false;
}

std::string check_config(Config* c) {
  // An empty path is no path: --run.dir "" (or `dir =` in a job file) wrote the lock file and
  // checkpoints/ at the file system's root ("" + "/lock").
  if (c->run_dir.empty()) return "--run.dir is empty: name the run's directory";
  if (c->resume.empty()) return "--run.resume is empty: give auto, none or a checkpoint's path";
  if (c->val_split.empty()) return "--data.val-split is empty: name a split, or none";
  if (c->test_split.empty()) return "--data.test-split is empty: name a split, or none";
  if (c->batch_size < 1) return "--train.batch-size must be at least 1";
  if (c->seed < 0)
    return "--train.seed must be 0 or more (a seed fixes the run: there is no random seed; pick any number)";
  // Products of these (the global batch, step counts, schedule lengths) stay far from 2^63.
  if (c->batch_size > (int64_t{1} << 40)) return "--train.batch-size must be at most 2^40";
  if (c->grad_accum > 1024) return "--dist.grad-accum must be at most 1024";
  if (c->epochs > 1000000000) return "--train.epochs must be at most 10^9";
  if (c->threads < 1) return "--train.threads must be at least 1";
  if (c->threads > 1024) return "--train.threads must be at most 1024 (threads per rank)";
  if (c->epochs < 1) return "--train.epochs must be at least 1";
  if (c->log_every < 1) return "--train.log-every must be at least 1";
  if (c->max_steps < 0) return "--train.max-steps must be >= 0";
  if (c->lr <= 0) return "--train.lr must be positive";
  if (c->grad_accum < 1) return "--dist.grad-accum must be at least 1";
  if (c->comm_timeout <= 0) return "--dist.comm-timeout must be positive";
  if (c->prefetch < 1) return "--data.prefetch must be at least 1";
  if (c->random_crop < 0) return "--data.random-crop must be >= 0";
  if (c->straggler_windows < 0) return "--dist.straggler-windows must be >= 0";
  if (!(c->straggler_percent >= 0)) return "--dist.straggler-percent must be >= 0";
  if (!(c->fault_slow_ms >= 0 && c->fault_slow_ms <= 60000)) return "--debug.slow-ms must be in [0, 60000]";
  if (c->time_jitter < 0) return "--data.time-jitter must be >= 0";
  if (!(c->brightness >= 0 && c->brightness <= 10)) return "--data.brightness must be in [0, 10]";
  if (!(c->contrast >= 0 && c->contrast < 1)) return "--data.contrast must be in [0, 1)";
  if (!(c->random_erase >= 0 && c->random_erase <= 1)) return "--data.random-erase must be a probability in [0, 1]";
  if (c->label_smoothing < 0 || c->label_smoothing >= 1)
    return "--train.label-smoothing must be in [0, 1)";
  // Compared with a float32 norm on the device: past float's range LibTorch refused it mid-run.
  if (!(c->clip_norm >= 0 && c->clip_norm <= 1e38)) return "--train.clip-norm must be in [0, 1e38]";
  // The scale never goes below 1 (loss_scaler.hpp) and lives in float32.
  if (!(c->loss_scale >= 1 && c->loss_scale <= 1e38)) return "--train.loss-scale must be in [1, 1e38]";
  if (c->loss_scale_growth < 1) return "--train.loss-scale-growth must be at least 1";
  if (c->eval_every < 0) return "--train.eval-every must be >= 0";
  // Epoch counts of the schedule, in epochs: 1e18 ("never decay") overflowed into 1 step.
  if (!(c->warmup_epochs >= 0 && c->warmup_epochs <= 1e9)) return "--train.warmup-epochs must be in [0, 10^9]";
  if (!(c->step_epochs > 0 && c->step_epochs <= 1e9))
    return "--train.step-epochs must be in (0, 10^9] (--train.schedule constant never decays)";
  if (c->step_gamma <= 0 || c->step_gamma > 1) return "--train.step-gamma must be in (0, 1]";
  if (c->model_width < 0) return "--model.width must be >= 0";
  if (!(c->momentum >= 0 && c->momentum < 1)) return "--train.momentum must be in [0, 1)";
  if (c->nesterov && c->optimizer != OptimizerKind::kSgd)
    return std::string("--train.nesterov is SGD's momentum; --train.optimizer ") + to_string(c->optimizer) + " has none";
  if (c->weight_decay < 0) return "--train.weight-decay must be >= 0";
  if (c->warmup_steps < 0 || c->warmup_steps > 1000000000000000) return "--train.warmup-steps must be in [0, 10^15]";
  if (c->dropout < 0 || c->dropout >= 1) return "--model.dropout must be in [0, 1)";
  if (c->model_depth != 10 && c->model_depth != 18 && c->model_depth != 34)
    return "--model.depth must be 10 or 18 (r3d), or 18 or 34 (resnet)";
  // An option the chosen model does not read was ignored, silently (a TorchScript module
  // defines its own widths and dropout; only resnet and r3d have a depth).
  const Config defaults;
  const bool scripted = c->model.rfind("torchscript:", 0) == 0;
  if (scripted && (c->model_width != defaults.model_width || c->dropout != defaults.dropout))
    return "--model.width and --model.dropout do not apply to a TorchScript model (its module defines its own)";
  if (c->model_depth != defaults.model_depth && c->model != "resnet" && c->model != "r3d")
    return "--model.depth applies to resnet and r3d only, not to --model " + c->model;
  if (c->memory_budget_mb < 0) return "--data.memory-budget-mb must be >= 0";
  if (c->block_samples < 0) return "--data.block-samples must be >= 0";
  if (c->shuffle_blocks < 1) return "--data.shuffle-blocks must be at least 1";
  if (c->read_threads < 0 || c->read_threads > 64) return "--data.read-threads must be in 0..64 (0: min(4, cores))";
  if (c->bucket_mb < 0) return "--dist.bucket-mb must be >= 0";
  if (c->keep_last < 0) return "--ckpt.keep-last must be >= 0 (0: keep all)";
  if (c->ckpt_every < 0) return "--ckpt.every must be >= 0";
  if (c->beta1 < 0 || c->beta1 >= 1 || c->beta2 < 0 || c->beta2 >= 1)
    return "--train.beta1 and --train.beta2 must be in [0, 1)";
  if (c->min_lr_fraction < 0 || c->min_lr_fraction > 1) return "--train.min-lr-fraction must be in [0, 1]";
  if (!(c->doctor_allreduce_mb > 0 && c->doctor_allreduce_mb <= 4096))  // its buffers are allocated: NaN, 1e300 overflowed
    return "--doctor.allreduce-mb must be in (0, 4096] MiB";
  if (c->fault_step < 0) return "--debug.fault-step must be >= 0";
  if (c->sync_check < 0) return "--debug.sync-check must be >= 0 (a global step; 0: off)";
  if (c->train_split == "none" || c->train_split.empty()) return "--data.train-split must name a split";
  if (c->early_stop_patience < 1) return "--train.early-stop-patience must be at least 1";
  if (c->early_stop_min_delta < 0) return "--train.early-stop-min-delta must be >= 0";
  // Patience or a delta with no metric to watch stopped nothing, silently.
  if (c->early_stop_metric == BestMetric::kNone && (c->early_stop_patience != defaults.early_stop_patience ||
                                                    c->early_stop_min_delta != defaults.early_stop_min_delta))
    return "--train.early-stop-patience and --train.early-stop-min-delta act only with --train.early-stop-metric "
           "(val_f1, val_acc or val_loss), which is none";
  if (c->top_k < 0) return "--predict.top-k must be >= 0";
  if (c->export_format != "safetensors") return "--export.format must be safetensors, not '" + c->export_format + "'";
  c->resume_mode = c->resume == "auto" ? ResumeMode::kAuto : c->resume == "none" ? ResumeMode::kNone : ResumeMode::kPath;
  c->use_val = c->val_split != "none";
  c->use_test = c->test_split != "none";
  c->weighted_classes = c->class_weights != "none" && !c->class_weights.empty();
  c->stop_metric = BestMetric::kNone;
  if (!c->stop_at.empty() && !parse_stop_target(c->stop_at, &c->stop_metric, &c->stop_value))
    return "--train.stop-at must be val_acc>=X or val_f1>=X (X in [0, 1]), or val_loss<=X, val_cer<=X or "
           "val_wer<=X (X >= 0), not '" + c->stop_at + "'";
  // Rules on validation scores with no validation would never fire: the run trained every
  // epoch as if they were not there, silently.
  if (!c->use_val && !c->stop_at.empty())
    return "--train.stop-at " + c->stop_at + " needs validation, and --data.val-split is none";
  if (!c->use_val && c->early_stop_metric != BestMetric::kNone)
    return std::string("--train.early-stop-metric ") + to_string(c->early_stop_metric) +
           " needs validation, and --data.val-split is none";
  return "";
}

}  // namespace lockstep
