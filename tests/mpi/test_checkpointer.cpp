// Checkpointer + TrainState on every rank, through the real recorder: a resumed run gets
// the weights, optimizer, position, statistics and stop rule the checkpoint holds; a
// checkpoint taken after a resume, before the next validation, keeps the last validation's
// scores (it recorded val_acc -1); restored scores do not replace best.ckpt; a checkpoint
// of another model is refused alike on every rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/model/registry.hpp"
#include "core/optim/fused_step.hpp"
#include "core/optim/loss_scaler.hpp"
#include "core/optim/optimizer.hpp"
#include "core/optim/step_counter.hpp"
#include "core/train/checkpointer.hpp"
#include "core/train/recorder.hpp"
#include "core/train/train_state.hpp"
#include "io/records/checkpoint_store.hpp"
#include "io/util/file_util.hpp"
#include "image_spec.hpp"
#include "mpi_test_env.hpp"

using namespace lockstep;
using lockstep::testing::fresh_shared_dir;
using lockstep::testing::mpi;

namespace {

io::DatasetSpec tiny() { return lockstep::testing::image_spec("tiny", 4, 3, 10.0, 2.0); }

io::Manifest tiny_data() {
  io::Manifest data;
  data.spec = tiny();
  data.source = "csv:tiny.csv";
  return data;
}

// A run of the mlp in DIR that keeps every checkpoint and chooses best.ckpt on val_acc.
Config mlp_run(const std::string& dir) {
  Config cfg;
  cfg.run_dir = dir;
  cfg.model = "mlp";
  cfg.tensorboard = false;
  cfg.keep_last = 0;
  cfg.best_metric = BestMetric::kValAcc;
  return cfg;
}

struct Parts {
  std::shared_ptr<Net> model;
  std::unique_ptr<torch::optim::Optimizer> opt;
  std::unique_ptr<StepCounter> counter;
  LossScaler scaler{false};
  Parts(const io::DatasetSpec& spec, uint64_t seed, OptimizerKind kind = OptimizerKind::kSgd) {
    torch::manual_seed(seed);
    model = make_model(ModelOptions{"mlp", 0.0}, spec);
    OptimizerOptions o;
    o.kind = kind;
    opt = make_optimizer(model->parameters(), o);
    counter = std::make_unique<StepCounter>(*opt);
    // One step, so the optimizer has momentum buffers to restore.
    opt->zero_grad();
    model->forward(torch::randn({4, 1, 4, 4})).sum().backward();
    opt->step();
  }
  CheckpointParts view() { return CheckpointParts{*model, *opt, *counter, scaler, mpi(), torch::kCPU, "memory/dealt"}; }
};

EvalResult accuracy(double acc) {
  EvalResult ev;
  ev.count = 50;
  ev.accuracy = acc;
  ev.macro_f1 = acc - 0.1;
  ev.loss = 1.0 - acc;
  return ev;
}

// A run of steps 1..LAST in CFG's folder: best.ckpt at step BEST (val_acc 0.8, before that
// step's checkpoint), a checkpoint at each step SAVE_AT says.
void write_history(const Config& cfg, const io::Manifest& data, Parts& parts, int64_t global_batch, int last, int best,
                   const std::function<bool(int)>& save_at) {
  std::unique_ptr<Recorder> rec = open_recorder(cfg, mpi());
  rec->start(0, 0);
  Checkpointer ck(cfg, data, parts.view(), *rec);
  TrainState st(cfg);
  st.set_lr(0.05);
  for (int step = 1; step <= last; ++step) {
    st.advance_step(step, global_batch);
    if (step == best) {
      st.observe_eval(accuracy(0.8), 1.0);
      ck.update_best(st);
    }
    if (save_at(step)) ck.save(st);
  }
  rec->wait_checkpoints();
}

bool same_weights(Net& a, Net& b) {
  const auto x = a.state_tensors(), y = b.state_tensors();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!torch::equal(x[i], y[i])) return false;
  return true;
}

}  // namespace

// Adam's step count on the device (step_counter.hpp: the fp16 step and the captured one keep
// it there, the host states lagging): a checkpoint holds the steps taken, skipped ones not
// counted, and after a resume the device count starts from the loaded states.
TEST(Checkpointer, SavesTheDeviceStepCountAndResumesIt) {
  const MpiRuntime& m = mpi();
  Config cfg;
  cfg.run_dir = fresh_shared_dir("ckpt-count");
  cfg.model = "mlp";
  cfg.optimizer = OptimizerKind::kAdam;
  cfg.tensorboard = false;
  const io::Manifest data = tiny_data();
  const auto device_steps = [](Parts& p, int steps, int skip_every) {
    const torch::Tensor found_inf = torch::zeros({});
    for (int i = 0; i < steps; ++i) {
      p.opt->zero_grad();
      p.model->forward(torch::randn({4, 1, 4, 4})).sum().backward();
      found_inf.fill_(i % skip_every == 0 ? 1.0 : 0.0);
      p.counter->step(&found_inf, nullptr);
    }
  };
  Parts first(data.spec, 3, OptimizerKind::kAdam);  // 1 host step, then 9 on the device, 3 of them skipped
  device_steps(first, 9, 3);
  ASSERT_EQ(next_step_count(*first.opt, OptimizerKind::kAdam), 2) << "the host counts lag";
  TrainState saved(cfg);
  {
    std::unique_ptr<Recorder> rec = open_recorder(cfg, m);
    rec->start(0, 0);
    Checkpointer ck(cfg, data, first.view(), *rec);
    for (int i = 1; i <= 10; ++i) saved.advance_step(i, 8 * m.size());
    ck.save(saved);
    rec->wait_checkpoints();
  }
  m.barrier();
  Parts second(data.spec, 4, OptimizerKind::kAdam);  // its host count at 1
  std::unique_ptr<Recorder> rec = open_recorder(cfg, m);
  Checkpointer ck(cfg, data, second.view(), *rec);
  TrainState state(cfg);
  ck.resume(ck.agree_resume_path(), &state, 8 * m.size(), 10);
  EXPECT_EQ(next_step_count(*second.opt, OptimizerKind::kAdam), 1 + 6 + 1) << "1 host step and 6 taken of 9";
  EXPECT_EQ(second.counter->begin().item<float>(), 8.0f) << "the device count follows the loaded states";
}

TEST(Checkpointer, ResumeRestoresEveryPartAndTheTrainState) {
  const MpiRuntime& m = mpi();
  const std::string dir = fresh_shared_dir("ckpt");
  Config cfg = mlp_run(dir);
  cfg.early_stop_metric = BestMetric::kValAcc;
  cfg.early_stop_patience = 3;
  const io::Manifest data = tiny_data();
  const io::DatasetSpec& spec = data.spec;
  const int64_t global_batch = 8 * m.size(), steps_per_epoch = 10;

  Parts first(spec, 3);
  TrainState saved(cfg);
  {
    std::unique_ptr<Recorder> rec = open_recorder(cfg, m);
    rec->start(0, 0);
    Checkpointer ck(cfg, data, first.view(), *rec);
    EXPECT_EQ(ck.agree_resume_path(), "");  // a new run: nothing to resume
    for (int i = 1; i <= 3; ++i) saved.advance_step(i, global_batch);
    saved.set_lr(0.05);
    saved.observe_eval(accuracy(0.6), 1.0);
    ck.update_best(saved);  // best.ckpt at step 3
    saved.observe_eval(accuracy(0.5), 2.0);  // the stop rule counts one miss
    ck.save(saved);
    rec->wait_checkpoints();
  }
  m.barrier();

  Parts second(spec, 4);  // other weights and optimizer state
  ASSERT_FALSE(same_weights(*first.model, *second.model));
  std::unique_ptr<Recorder> rec = open_recorder(cfg, m);
  Checkpointer ck(cfg, data, second.view(), *rec);
  const std::string path = ck.agree_resume_path();
  EXPECT_EQ(path, dir + "/checkpoints/step-000000003.ckpt");
  TrainState state(cfg);
  ck.resume(path, &state, global_batch, steps_per_epoch);
  rec->start(state.pos().step, state.pos().epoch + 1);
  EXPECT_TRUE(same_weights(*first.model, *second.model));
  EXPECT_EQ(state.pos().step, 3);
  EXPECT_EQ(state.pos().samples_done_in_epoch, 3 * global_batch);
  EXPECT_EQ(ck.best_step(), 3);
  CheckpointMeta a, b;
  saved.to_meta(&a);
  state.to_meta(&b);
  EXPECT_EQ(b.stop_rule, a.stop_rule);
  EXPECT_EQ(b.epoch_stats, a.epoch_stats);
  // The optimizer state came back: the same next step from the same weights.
  const torch::Tensor x = torch::randn({4, 1, 4, 4});
  for (Parts* p : {&first, &second}) {
    p->opt->zero_grad();
    p->model->forward(x).sum().backward();
    p->opt->step();
  }
  EXPECT_TRUE(same_weights(*first.model, *second.model));

  // A checkpoint before the next validation keeps the last one's scores.
  state.advance_step(4, global_batch);
  ck.save(state);
  rec->wait_checkpoints();
  m.barrier();
  const CheckpointMeta next =
      meta_from_json(io::read_checkpoint_meta(dir + "/checkpoints/step-000000004.ckpt"), "step 4");
  EXPECT_DOUBLE_EQ(next.val_acc, 0.5);
  EXPECT_DOUBLE_EQ(next.val_f1, 0.4);
  EXPECT_EQ(next.pos.step, 4);
  // Restored scores do not drive best.ckpt; a real validation that improves does.
  ck.update_best(state);
  EXPECT_EQ(ck.best_step(), 3);
  state.observe_eval(accuracy(0.7), 3.0);
  ck.update_best(state);
  EXPECT_EQ(ck.best_step(), 4);
  rec->wait_checkpoints();
  m.barrier();
  EXPECT_EQ(meta_from_json(io::read_checkpoint_meta(ck.best_path()), "best").pos.step, 4);

  // A checkpoint of another model: one UsageError on every rank, nothing loaded.
  Config other = cfg;
  other.model = "cnn";
  Checkpointer refuse(other, data, second.view(), *rec);
  TrainState untouched(other);
  EXPECT_THROW(refuse.resume(path, &untouched, global_batch, steps_per_epoch), UsageError);
  EXPECT_EQ(untouched.pos().step, 0);

  // Issue 31, minor list: a checkpoint of another dataset (same shapes) was resumed
  // silently, and its best.ckpt kept. Now refused naming both; a re-import of the same
  // source is the same data.
  for (const auto& [name, source] : {std::pair<std::string, std::string>{spec.name, "csv:other.csv"},
                                     std::pair<std::string, std::string>{"renamed", "csv:tiny.csv"}}) {
    io::Manifest another = data;
    another.spec.name = name;
    another.source = source;
    Checkpointer elsewhere(cfg, another, second.view(), *rec);
    TrainState fresh(cfg);
    try {
      elsewhere.resume(path, &fresh, global_batch, steps_per_epoch);
      ADD_FAILURE() << "resumed onto " << name << " from " << source;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("a run continues on its own data"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(source), std::string::npos) << e.what();
    }
    EXPECT_EQ(fresh.pos().step, 0);
  }
  io::Manifest reimported = data;  // other shards, same source and name
  reimported.dataset_id = "another-import";
  Checkpointer same(cfg, reimported, second.view(), *rec);
  TrainState again(cfg);
  EXPECT_NO_THROW(same.resume(path, &again, global_batch, steps_per_epoch));
}

// A hostile finding: a resume from an older checkpoint (--resume PATH) kept the run's later
// checkpoints, so pruning by step number deleted the new ones it wrote, --resume auto jumped
// back to the abandoned history, and its best.ckpt (chosen after the resume point) was the
// final test's. They are moved aside now, nothing deleted, before any rank reads the folder.
TEST(Checkpointer, AResumeFromAnEarlierStepSetsTheLaterHistoryAside) {
  const MpiRuntime& m = mpi();
  const std::string dir = fresh_shared_dir("ckpt_branch");
  Config cfg = mlp_run(dir);
  const io::Manifest data = tiny_data();
  const int64_t global_batch = 8 * m.size(), steps_per_epoch = 10;
  Parts parts(data.spec, 3);
  write_history(cfg, data, parts, global_batch, 7, 5, [](int s) { return s % 2 == 1; });  // best at 5; 1, 3, 5, 7
  m.barrier();
  const std::string ckpts = dir + "/checkpoints";
  cfg.resume = ckpts + "/step-000000003.ckpt";
  cfg.resume_mode = ResumeMode::kPath;
  {  // A resume that is refused (another model) moves nothing: the next job finds the folder as it was.
    Config other = cfg;
    other.model = "cnn";
    std::unique_ptr<Recorder> rec = open_recorder(other, m);
    Checkpointer refused(other, data, parts.view(), *rec);
    EXPECT_THROW(refused.agree_resume_path(), UsageError);
    EXPECT_TRUE(io::path_exists(ckpts + "/step-000000007.ckpt"));
    EXPECT_TRUE(io::path_exists(ckpts + "/best.ckpt"));
  }
  m.barrier();
  std::unique_ptr<Recorder> rec = open_recorder(cfg, m);
  Checkpointer ck(cfg, data, parts.view(), *rec);
  const std::string path = ck.agree_resume_path();
  EXPECT_EQ(path, cfg.resume);
  std::vector<int64_t> steps;
  for (const auto& [s, file] : io::list_checkpoints(ckpts)) steps.push_back(s);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(io::path_exists(ckpts + "/best.ckpt"));
  for (const char* name : {"step-000000005.ckpt", "step-000000007.ckpt", "best.ckpt"})
    EXPECT_TRUE(io::path_exists(ckpts + "/superseded-at-step-3/" + name)) << name;
  TrainState state(cfg);
  ck.resume(path, &state, global_batch, steps_per_epoch);
  EXPECT_EQ(state.pos().step, 3);
  EXPECT_EQ(ck.best_step(), -1);  // the abandoned history's best does not stand
}

// Hostile findings (helper-46): a --resume PATH copied out of the folder (kept safe, then
// resumed) left the run's later checkpoints in place, so pruning deleted every new one as
// it was written; --resume auto trusted a best.ckpt chosen past the checkpoint it resumed
// (a job killed between the two writes), whose weights the final test then scored; a
// checkpoint renamed to a later step was resumed as the newest and outlived the real ones.
// Nothing past the resumed step stays in the folder now, wherever PATH lies.
TEST(Checkpointer, NothingPastTheResumedStepStaysInTheFolder) {
  const MpiRuntime& m = mpi();
  const std::string dir = fresh_shared_dir("ckpt_later");
  const std::string ckpts = dir + "/checkpoints";
  Config cfg = mlp_run(dir);
  const io::Manifest data = tiny_data();
  const int64_t global_batch = 8 * m.size();
  Parts parts(data.spec, 3);
  // best.ckpt at step 6 (written before that step's checkpoint), checkpoints at 2 and 4: the
  // job dies before step 6's.
  write_history(cfg, data, parts, global_batch, 6, 6, [](int s) { return s % 2 == 0 && s < 6; });
  m.barrier();
  const auto steps = [&] {
    std::vector<int64_t> out;
    for (const auto& [s, file] : io::list_checkpoints(ckpts)) out.push_back(s);
    return out;
  };
  const auto resume = [&](Config c) {
    std::unique_ptr<Recorder> rec = open_recorder(c, m);
    Checkpointer ck(c, data, parts.view(), *rec);
    const std::string path = ck.agree_resume_path();
    TrainState state(c);
    ck.resume(path, &state, global_batch, 10);
    m.barrier();
    return std::make_pair(state.pos().step, ck.best_step());
  };
  // --resume auto from step 4: best.ckpt (step 6) is the lost future, set aside.
  EXPECT_EQ(resume(cfg), std::make_pair(int64_t{4}, int64_t{-1}));
  EXPECT_FALSE(io::path_exists(ckpts + "/best.ckpt"));
  EXPECT_TRUE(io::path_exists(ckpts + "/superseded-at-step-4/best.ckpt"));
  // A copy of step 2 renamed step 9: auto skips it (naming it) and sets it aside.
  if (m.rank() == 0) std::filesystem::copy_file(ckpts + "/step-000000002.ckpt", ckpts + "/step-000000009.ckpt");
  m.barrier();
  EXPECT_EQ(resume(cfg).first, 4);
  EXPECT_EQ(steps(), (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(io::path_exists(ckpts + "/superseded-at-step-4-2/step-000000009.ckpt"));
  // --resume PATH of a copy kept outside the folder: step 4 is past it, set aside.
  const std::string kept = dir + "/kept-step-2.ckpt";
  if (m.rank() == 0) std::filesystem::copy_file(ckpts + "/step-000000002.ckpt", kept);
  m.barrier();
  Config from_copy = cfg;
  from_copy.resume = kept;
  from_copy.resume_mode = ResumeMode::kPath;
  EXPECT_EQ(resume(from_copy).first, 2);
  EXPECT_EQ(steps(), (std::vector<int64_t>{2}));
  EXPECT_TRUE(io::path_exists(ckpts + "/superseded-at-step-2/step-000000004.ckpt"));
  EXPECT_TRUE(io::path_exists(kept));
}
