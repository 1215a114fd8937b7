// plan_checks: see plan_checks.hpp.
#include "core/train/plan_checks.hpp"

#include <fmt/format.h>

#include <tuple>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/config/enums.hpp"
#include "core/eval/mirror.hpp"
#include "core/optim/loss.hpp"
#include "core/train/step_trace.hpp"

namespace lockstep {
namespace {

// Options that only make sense for class labels, or only for sequence targets.
void check_task_options(const Config& cfg, const io::DatasetSpec& spec) {
  const std::string what = "dataset '" + spec.name + "' has ";
  for (const auto& [metric, option] : {std::make_pair(cfg.best_metric, "--ckpt.best-metric"),
                                       std::make_pair(cfg.early_stop_metric, "--train.early-stop-metric"),
                                       std::make_pair(cfg.stop_metric, "--train.stop-at")}) {
    if (spec.sequence_targets() && class_metric(metric))
      throw UsageError(std::string(option) + " " + to_string(metric) + " needs class labels; " + what +
                       "sequence targets: set " + option + " val_wer (or val_cer, val_loss)");
    if (!spec.sequence_targets() && sequence_metric(metric))
      throw UsageError(std::string(option) + " " + to_string(metric) + " needs sequence targets; " + what +
                       "class labels: use val_f1, val_acc or val_loss");
  }
  if (!spec.sequence_targets()) return;
  if (cfg.weighted_classes || cfg.label_smoothing > 0)
    throw UsageError("--train.class-weights and --train.label-smoothing apply to class labels; " + what +
                     "sequence targets (CTC)");
  if (augment_options(cfg).enabled())
    throw UsageError("--data.random-crop, --data.hflip, --data.time-jitter, --data.brightness, --data.contrast and "
                     "--data.random-erase augment images and clips; " + what + "sequences");
}

// Throws when OPTION names a split other than DEFAULT_SPLIT that the data lacks.
void check_named_split(const Config& cfg, const io::Manifest& m, bool use, const std::string& split,
                       const char* option, const std::string& default_split, const char* role) {
  if (!use || m.has_split(split) || split == default_split) return;
  std::string have;
  for (const auto& [name, entry] : m.splits) have += (have.empty() ? "" : ", ") + name;
  throw UsageError(fmt::format("{} {}: {} has no such split (it has {}; none: no {})", option, split, cfg.data_dir, have,
                               role));
}

}  // namespace

AugmentOptions augment_options(const Config& cfg) {
  return AugmentOptions{cfg.random_crop, cfg.hflip, cfg.time_jitter, cfg.brightness, cfg.contrast, cfg.random_erase};
}

void check_training_plan(const Config& cfg, const io::Manifest& m) {
  if (!m.spec.labeled && !m.spec.sequence_targets())
    throw UsageError(cfg.data_dir + ": dataset '" + m.spec.name +
                     "' has neither class labels nor sequence targets: nothing to train on");
  check_task_options(cfg, m.spec);
  m.split(cfg.train_split, cfg.data_dir);  // names the splits the data has
  check_augment(augment_options(cfg), m.spec.sample_shape, cfg.data_dir);
  check_eval_hflip(cfg.eval_hflip, m.spec, cfg.data_dir);
  check_named_split(cfg, m, cfg.use_val, cfg.val_split, "--data.val-split", Config{}.val_split, "validation");
  check_named_split(cfg, m, cfg.use_test, cfg.test_split, "--data.test-split", Config{}.test_split,
                    "the final test evaluation");
  // Said, not refused (a check that the model can fit its data is a real use): scores on the
  // samples it trains on say nothing of new ones.
  for (const auto& [on, split, option, what] :
       {std::make_tuple(cfg.use_val, cfg.val_split, "--data.val-split", "validation"),
        std::make_tuple(cfg.use_test, cfg.test_split, "--data.test-split", "the test")})
    if (on && split == cfg.train_split)
      log::warn0(fmt::format("--data.train-split and {} are both '{}': {} scores the samples it trains on, which says "
                             "nothing of how the model does on new ones",
                             option, split, what));
  parse_trace_range(cfg.trace_steps);
  if (m.spec.labeled) class_weights(cfg.class_weights, m.split(cfg.train_split, cfg.data_dir).histogram(m.spec.num_classes));
}

}  // namespace lockstep
