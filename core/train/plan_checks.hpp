// plan_checks: what `lockstep train` refuses about its data, splits and task options before it
// reads a sample or meets another rank. Session runs them first, and `lockstep doctor` runs
// the same ones, so a job that doctor passes does not fail on them at its start (a hostile
// finding: --data.val-split nosuch, or --model lmu on images, passed doctor).
#pragma once

#include "core/config/config.hpp"
#include "core/data/augment.hpp"
#include "io/dataset/shard_format.hpp"

namespace lockstep {

// The augmentation CFG asks for (core/data/augment.hpp).
AugmentOptions augment_options(const Config& cfg);

// Throws UsageError naming the option or the data: a dataset with neither class labels nor
// sequence targets; options of the other kind of target (a class metric for CTC data, class
// weights, augmentation of sequences); no training split; augmentation or --eval.hflip the
// samples cannot take; a validation or test split named other than its default that the data
// lacks (a misspelt --data.val-split turned validation, and best.ckpt with it, off silently);
// a --trace.steps range or --train.class-weights that do not parse or fit the classes.
void check_training_plan(const Config& cfg, const io::Manifest& manifest);

}  // namespace lockstep
