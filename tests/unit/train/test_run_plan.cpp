// plan_run (core/train/session.hpp): where a run from a position ends, and how its learning-rate
// schedule counts. A run that never changes its world size or batch has offset 0 at every
// position it can checkpoint (the bit-for-bit resumes rest on that); a checkpoint of another
// world size counts in this world's steps (found by a hostile test: a cosine resumed from 2
// ranks on 1 ended at 5% of its base instead of its floor).
#include <gtest/gtest.h>

#include "core/train/checkpoint_state.hpp"
#include "core/train/session.hpp"

using namespace lockstep;

namespace {

// Where a run of GLOBAL_BATCH samples per step and STEPS_PER_EPOCH steps is after STEP steps.
TrainPosition after(int64_t step, int64_t steps_per_epoch, int64_t global_batch) {
  return TrainPosition{step, step / steps_per_epoch, (step % steps_per_epoch) * global_batch};
}

}  // namespace

TEST(RunPlan, TheSameWorldHasNoOffsetAnywhere) {
  for (const int64_t spe : {1, 7, 14, 100}) {
    for (int64_t step = 0; step <= 3 * spe; ++step) {
      const RunPlan p = plan_run(3, 0, spe, 64, after(step, spe, 64));
      EXPECT_EQ(p.offset, 0) << "spe " << spe << " step " << step;
      EXPECT_EQ(p.planned_steps, 3 * spe);
    }
  }
  EXPECT_EQ(plan_run(3, 20, 14, 64, TrainPosition{}).planned_steps, 20) << "--train.max-steps sooner";
  EXPECT_EQ(plan_run(3, 99, 14, 64, TrainPosition{}).planned_steps, 42) << "the epochs sooner";
}

TEST(RunPlan, AnotherWorldSizeCountsInThisWorldsSteps) {
  // 2 ranks x 32: 14 steps of 64 samples per epoch; on 1 rank 28 steps of 32.
  const TrainPosition epoch_one{14, 1, 0};
  RunPlan p = plan_run(2, 0, 28, 32, epoch_one);
  EXPECT_EQ(p.offset, 14) << "step 14 at 2 ranks is step 28 at 1";
  EXPECT_EQ(p.planned_steps, 42) << "28 more steps of one epoch";
  // 1 rank to 2: a negative offset; step 28 + 14 more.
  p = plan_run(2, 0, 14, 64, TrainPosition{28, 1, 0});
  EXPECT_EQ(p.offset, -14);
  EXPECT_EQ(p.planned_steps, 42);
  // Mid-epoch, samples not a multiple of the new batch: the loop resumes after floor(samples /
  // batch) steps, and so does the schedule (5 steps of 64 = 320 samples = 3 steps of 96).
  p = plan_run(2, 0, 9, 96, TrainPosition{5, 0, 320});
  EXPECT_EQ(p.offset, 3 - 5);
  EXPECT_EQ(p.planned_steps, 18 + 2);
  // --train.max-steps is a global step: it ends the run there whatever the world.
  EXPECT_EQ(plan_run(2, 30, 28, 32, epoch_one).planned_steps, 30);
  // An epoch consumed in full (its end work left): on a world whose steps take more samples
  // than the epoch has in whole steps, the schedule counts no step past the epoch's end.
  // 459 samples: 29 wrapped steps of 16 consumed 464, which is 8 steps of 58, where this
  // world's epoch has 7.
  p = plan_run(2, 0, 7, 58, TrainPosition{29, 0, 464});
  EXPECT_EQ(p.offset, 7 - 29);
  EXPECT_EQ(p.planned_steps, 29 + 7) << "one more epoch";
  // A checkpoint already past the end: the plan ends before it (the trainer has nothing to do).
  EXPECT_LT(plan_run(2, 10, 28, 32, epoch_one).planned_steps, epoch_one.step);
}

// lr_jump_note: a resume whose schedule gives the checkpoint's last step another rate than it
// ran at says so (a hostile finding: --max-steps raised on a cosine run restarted the decay
// from a higher rate, silently); an unchanged schedule, on any world size, says nothing.
TEST(RunPlan, AResumeSaysWhenTheLearningRateJumps) {
  LrSchedule cosine{Schedule::kCosine, 0.1, /*warmup*/ 2, /*total*/ 40, /*min*/ 0.0, 1, 0.1};
  const TrainPosition at20{20, 1, 0};
  const double ran = cosine.at(19);  // what step 20 ran at
  EXPECT_EQ(lr_jump_note(cosine, at20, ran, 1, 40), "") << "the same schedule";
  EXPECT_EQ(lr_jump_note(cosine, at20, -1.0, 1, 40), "") << "an older checkpoint: its rate is unknown";
  EXPECT_EQ(lr_jump_note(cosine, at20, ran, 1, 20), "") << "nothing left to train";
  EXPECT_EQ(lr_jump_note(cosine, TrainPosition{}, 0.05, 1, 40), "") << "a fresh run";
  // Another world size maps the checkpoint's step onto this world's, give or take one.
  LrSchedule mapped = cosine;
  mapped.offset = 1;
  EXPECT_EQ(lr_jump_note(mapped, at20, ran, 2, 39), "");
  // A real remap lands between two of this world's steps (2 ranks to 3: a reviewer's case).
  EXPECT_EQ(lr_jump_note(cosine, at20, 0.5 * (cosine.at(19) + cosine.at(20)), 3, 40), "");
  // --train.max-steps raised to 80: step 20 is now early in a longer decay.
  LrSchedule longer = cosine;
  longer.total_steps = 80;
  const std::string note = lr_jump_note(longer, at20, ran, 1, 80);
  EXPECT_NE(note.find("step 20"), std::string::npos) << note;
  EXPECT_NE(note.find("rate jumps"), std::string::npos) << note;
  EXPECT_NE(note.find("ends at step 80"), std::string::npos) << note;
  // Another --train.lr on a constant schedule.
  const LrSchedule constant{Schedule::kConstant, 0.2, 0, 40, 0.0, 1, 0.1};
  EXPECT_NE(lr_jump_note(constant, at20, 0.1, 1, 40), "");
  EXPECT_EQ(lr_jump_note(constant, at20, 0.2, 1, 40), "");
}
