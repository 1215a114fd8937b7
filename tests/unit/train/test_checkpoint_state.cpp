// Model construction and checkpoint state (model + optimizer + metadata) round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/memory_format.hpp"
#include "core/model/registry.hpp"
#include "core/optim/optimizer.hpp"
#include "core/dist/preflight.hpp"
#include "core/train/checkpoint_state.hpp"
#include "core/train/weight_source.hpp"
#include "io/records/safetensors.hpp"
#include "io/util/json_io.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

namespace {
io::DatasetSpec mnist_like() {
  io::DatasetSpec s = lockstep::testing::tiny_spec(10);
  s.sample_shape = {1, 28, 28};
  return s;
}

void sgd_step(Net& model, torch::optim::Optimizer& opt, const torch::Tensor& x, const torch::Tensor& y) {
  opt.zero_grad();
  torch::nn::functional::cross_entropy(model.forward(x), y).backward();
  opt.step();
}

}  // namespace

TEST(Model, ReferenceCnnShapes) {
  auto model = make_model(ModelOptions{"cnn", 0.25}, mnist_like());
  const auto out = model->forward(torch::randn({5, 1, 28, 28}));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{5, 10}));
  int64_t params = 0;
  for (const auto& p : model->parameters()) params += p.numel();
  // conv 288 + bn 64 + conv 18432 + bn 128 + fc 3136*128+128 + fc 1290
  EXPECT_EQ(params, 288 + 64 + 18432 + 128 + 3136 * 128 + 128 + 1290);
}

TEST(Model, UnknownNameAndBadShapeAreUsageErrors) {
  EXPECT_THROW(make_model(ModelOptions{"transformer", 0.0}, mnist_like()), UsageError);
  io::DatasetSpec flat = mnist_like();
  flat.sample_shape = {561};
  EXPECT_THROW(make_model(ModelOptions{"cnn", 0.0}, flat), UsageError);
}

TEST(TrainState, ModelAndOptimizerRoundTrip) {
  torch::manual_seed(1);
  auto a = make_model(ModelOptions{"cnn", 0.0}, mnist_like());
  torch::optim::SGD opt_a(a->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const auto x = torch::randn({4, 1, 28, 28});
  const auto y = torch::tensor(std::vector<int64_t>{1, 2, 3, 4});
  for (int i = 0; i < 2; ++i) sgd_step(*a, opt_a, x, y);
  const std::string payload = serialize_state(*a, opt_a);

  torch::manual_seed(2);  // different initial weights
  auto b = make_model(ModelOptions{"cnn", 0.0}, mnist_like());
  torch::optim::SGD opt_b(b->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  load_state(payload, *b, &opt_b, "mem");
  // Same weights, and the same next step (momentum buffers restored).
  sgd_step(*a, opt_a, x, y);
  sgd_step(*b, opt_b, x, y);
  const auto pa = a->parameters(), pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
  EXPECT_THROW(load_state("not a torch archive", *b, &opt_b, "bad.ckpt"), Error);
}

// A checkpoint written by a contiguous run resumes into a channels-last one (and back):
// the same next step, and the resumed model keeps its layout (--model.memory-format) — its
// parameters too, not the file's strides.
TEST(TrainState, ACheckpointCrossesMemoryFormats) {
  const auto x = torch::randn({4, 1, 28, 28});
  const auto y = torch::tensor(std::vector<int64_t>{1, 2, 3, 4});
  for (const bool from_channels_last : {false, true}) {
    torch::manual_seed(1);
    auto a = make_model(ModelOptions{"cnn", 0.0}, mnist_like());
    if (from_channels_last) use_channels_last(*a);
    torch::optim::SGD opt_a(a->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    sgd_step(*a, opt_a, x, y);
    const std::string payload = serialize_state(*a, opt_a);
    torch::manual_seed(2);
    auto b = make_model(ModelOptions{"cnn", 0.0}, mnist_like());
    if (!from_channels_last) use_channels_last(*b);
    torch::optim::SGD opt_b(b->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    load_state(payload, *b, &opt_b, "mem");
    EXPECT_EQ(b->channels_last(), !from_channels_last);
    if (b->channels_last()) EXPECT_EQ(b->parameters()[0].suggest_memory_format(), torch::MemoryFormat::ChannelsLast);
    for (const auto& p : b->parameters())
      if (p.dim() == 4 && !b->channels_last()) EXPECT_TRUE(p.is_contiguous()) << "a channels-last file's strides kept";
    if (b->channels_last()) EXPECT_NE(b->named_parameters()["conv2.weight"].suggest_memory_format(),
                                      torch::MemoryFormat::Contiguous);
    sgd_step(*a, opt_a, x, y);
    sgd_step(*b, opt_b, x, y);
    const auto pa = a->parameters(), pb = b->parameters();
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::allclose(pa[i], pb[i], 1e-4, 1e-6)) << i;
  }
}

TEST(TrainState, MetaRoundTrip) {
  CheckpointMeta m;
  m.pos = {123, 2, 4096};
  m.world_size = 4;
  m.batch_size = 32;
  m.seed = 18446744073709551615ull;  // the full uint64 range survives JSON
  m.model = "cnn";
  m.dataset = "fashion-mnist";
  m.sample_shape = {1, 28, 28};
  m.num_classes = 10;
  m.config_ini = "[train]\nlr = 0.1\n";
  m.eval_hflip = true;
  m.lr = 0.0123456789012345;
  m.clipped_steps = 99;
  CheckpointMeta r = meta_from_json(meta_to_json(m), "x");
  EXPECT_EQ(r.pos.step, 123);
  EXPECT_TRUE(r.eval_hflip);
  EXPECT_EQ(r.lr, m.lr) << "a double survives JSON exactly (the resume compares it)";
  EXPECT_EQ(r.clipped_steps, 99);
  io::Json older = io::Json::parse(meta_to_json(m));  // a checkpoint written before both fields
  older.erase("lr");
  older.erase("clipped_steps");
  r = meta_from_json(older.dump(), "old.ckpt");
  EXPECT_EQ(r.lr, -1.0) << "unknown";
  EXPECT_EQ(r.clipped_steps, 0);
  m.clipped_steps = 124;  // more clipped steps than steps
  EXPECT_THROW(meta_from_json(meta_to_json(m), "x"), Error);
  EXPECT_EQ(r.pos.samples_done_in_epoch, 4096);
  EXPECT_EQ(r.seed, m.seed);
  EXPECT_EQ(r.sample_shape, m.sample_shape);
  EXPECT_EQ(r.config_ini, m.config_ini);
  EXPECT_THROW(meta_from_json("{\"step\": 1}", "short.ckpt"), Error);
}

TEST(ResumeCheck, AnotherWidthOrOptimizerIsOneLineNotALibTorchAssert) {
  io::DatasetSpec spec = lockstep::testing::tiny_spec(3);
  spec.sample_shape = {1, 8, 8};
  Config cfg;
  cfg.model = "cnn";
  cfg.model_width = 8;
  auto model = make_model(ModelOptions{"cnn", 0.0, 8, 18}, spec);
  CheckpointMeta m;
  m.model = "cnn";
  m.model_width = 8;
  m.optimizer = "sgd";
  m.param_shapes = fnv1a64(param_shapes_text(*model));
  io::Manifest data;
  data.spec = spec;
  data.source = "csv:a.csv";
  m.dataset = spec.name;
  m.data_source = data.source;
  m.sample_shape = spec.sample_shape;
  m.num_classes = spec.num_classes;
  EXPECT_EQ(resume_mismatch(m, cfg, data, *model, "a.ckpt"), "");
  m.model_width = 16;
  EXPECT_NE(resume_mismatch(m, cfg, data, *model, "a.ckpt").find("a.ckpt: cannot continue this run from a checkpoint of "
                                                           "--model.width 16 (this run: 8)"),
            std::string::npos);
  m.model_width = 8;
  cfg.optimizer = OptimizerKind::kAdam;
  EXPECT_NE(resume_mismatch(m, cfg, data, *model, "a.ckpt").find("--train.optimizer sgd (this run: adam)"), std::string::npos);
  cfg.optimizer = OptimizerKind::kSgd;
  m.param_shapes = 42;
  EXPECT_NE(resume_mismatch(m, cfg, data, *model, "a.ckpt").find("parameter names or shapes differ"), std::string::npos);
  m.param_shapes = fnv1a64(param_shapes_text(*model));
  // The data: its shape and classes, then which dataset and source it is.
  m.num_classes = 4;
  EXPECT_NE(resume_mismatch(m, cfg, data, *model, "a.ckpt").find("a.ckpt: checkpoint is of model 'cnn' on other data"),
            std::string::npos);
  m.num_classes = spec.num_classes;
  m.data_source = "csv:b.csv";
  EXPECT_NE(resume_mismatch(m, cfg, data, *model, "a.ckpt").find("a run continues on its own data"), std::string::npos);
  m.data_source = "";  // an older checkpoint: the dataset's name alone
  EXPECT_EQ(resume_mismatch(m, cfg, data, *model, "a.ckpt"), "");
  // The same name and source, other samples (inputs regenerated and re-imported): the
  // statistics differ. A re-import of the same samples gives them bit for bit.
  data.spec.mean = {0.5};
  data.spec.std = {0.25};
  m.mean = data.spec.mean;
  m.std = data.spec.std;
  EXPECT_EQ(resume_mismatch(m, cfg, data, *model, "a.ckpt"), "");
  m.mean = {0.51};
  EXPECT_NE(resume_mismatch(m, cfg, data, *model, "a.ckpt").find("a.ckpt: its training samples differ from those of --data"),
            std::string::npos);
  m.mean = data.spec.mean;
  m.std = {0.3};
  EXPECT_NE(resume_mismatch(m, cfg, data, *model, "a.ckpt").find("(channel 0: mean 0.5 std 0.29999999999999999, the data's 0.5 and 0.25): the inputs changed"),
            std::string::npos);
}

TEST(CheckpointMetaErrors, AMalformedFieldIsNamed) {
  EXPECT_ERROR_CONTAINS(meta_from_json("{\"step\": \"twelve\"}", "m.ckpt"), "m.ckpt: checkpoint metadata field 'step'");
  EXPECT_ERROR_CONTAINS(meta_from_json("{not json", "m.ckpt"), "m.ckpt: checkpoint metadata: not valid JSON");
  // A number beyond double range is a JSON error like any other (found by fuzz_manifest).
  EXPECT_ERROR_CONTAINS(meta_from_json("{\"step\": 1e999}", "m.ckpt"), "m.ckpt: checkpoint metadata: not valid JSON");
  // A number that does not fit the field's integer type is refused, not cast (undefined
  // behaviour under nlohmann's get<int>; io::json_as).
  EXPECT_ERROR_CONTAINS(meta_from_json("{\"step\": 1e300}", "m.ckpt"), "key 'step' holds a malformed value 1e+300");
  EXPECT_ERROR_CONTAINS(meta_from_json("{\"step\": 1, \"epoch\": 0, \"samples_done_in_epoch\": 0, \"world_size\": 2.5}", "m.ckpt"),
                        "field 'world_size' is missing or malformed");
}

TEST(CheckpointMeta, BytesThatAreNotUtf8DoNotBreakTheHeader) {
  CheckpointMeta m;
  m.model = "cnn";
  m.batch_size = 1;
  m.sample_shape = {1};
  m.config_ini = "[run]\ndir = runs/caf\xe9\xff\n";  // a Latin-1 path
  const CheckpointMeta r = meta_from_json(meta_to_json(m), "x");
  EXPECT_EQ(r.config_ini.substr(0, 18), "[run]\ndir = runs/c");
}

// Issue 31 (7), a class: normalisation statistics from any file are validated where they
// are read (io::normalisation_problem): std 0, a negative or non-finite std, or a mean so
// large that float32 normalisation gives inf — evaluate printed "loss -nan", predict wrote
// NaN. Checkpoint metadata, safetensors metadata and manifests go through one check.
TEST(Normalisation, EveryFileThatCarriesItIsChecked) {
  for (const auto& [mean, std] : std::vector<std::pair<double, double>>{
           {0.0, 0.0}, {0.0, -1.0}, {1e300, 1.0}, {0.0, 1e-300}, {std::nan(""), 1.0}, {0.0, INFINITY}}) {
    CheckpointMeta m;
    m.batch_size = 1;
    m.sample_shape = {1, 4, 4};
    m.mean = {mean};
    m.std = {std};
    const bool writable = !std::isnan(mean) && std::isfinite(std);  // JSON has no NaN/inf: written as null
    if (writable)
      EXPECT_ERROR_CONTAINS(meta_from_json(meta_to_json(m), "c.ckpt"), "c.ckpt: checkpoint metadata: channel 0 has mean");
    else
      EXPECT_ERROR_CONTAINS(meta_from_json(meta_to_json(m), "c.ckpt"), "c.ckpt: checkpoint metadata");

    const std::string dir = lockstep::testing::fresh_dir("norm");
    io::SafeTensors st;
    st.tensors.push_back(io::SafeTensor{"w", "F32", {1}, std::string(4, '\0')});
    st.metadata["mean"] = io::dump_json(io::Json(std::vector<double>{mean}));
    st.metadata["std"] = io::dump_json(io::Json(std::vector<double>{std}));
    st.metadata["sample_shape"] = "[1,4,4]";
    if (writable) {
      io::write_safetensors(dir + "/w.safetensors", st);
      EXPECT_ERROR_CONTAINS(read_weights(dir + "/w.safetensors", ""), "w.safetensors: safetensors metadata: channel 0");
    }
  }
  CheckpointMeta ok;
  ok.batch_size = 1;
  ok.sample_shape = {3, 4, 4};
  ok.mean = {0.5, 0.5, 0.5};
  ok.std = {0.25, 0.25, 0.25};
  EXPECT_NO_THROW(meta_from_json(meta_to_json(ok), "ok.ckpt"));
  ok.mean.clear();  // older checkpoints carry none
  ok.std.clear();
  EXPECT_NO_THROW(meta_from_json(meta_to_json(ok), "old.ckpt"));
  EXPECT_NE(io::normalisation_problem({0.0, 0.0}, {1.0}, -1), "");
  EXPECT_NE(io::normalisation_problem({0.0}, {1.0}, 3), "");
}

// Issue 31 (14): resuming after --model.freeze changed failed inside LibTorch's optimizer
// loader; now one usage error naming the option, whichever way the trainable set changed.
TEST(TrainState, AnotherTrainableSetIsOneLineNamingFreeze) {
  torch::manual_seed(1);
  auto a = make_model(ModelOptions{"mlp", 0.0}, mnist_like());
  const auto all = a->parameters();
  const std::vector<torch::Tensor> head(all.begin() + 2, all.end());  // the first layer frozen
  for (const auto& [saved, loaded] : {std::make_pair(head, all), std::make_pair(all, head)}) {
    torch::optim::SGD opt_a(saved, torch::optim::SGDOptions(0.1).momentum(0.9));
    opt_a.zero_grad();
    a->forward(torch::randn({2, 1, 28, 28})).sum().backward();
    opt_a.step();
    const std::string payload = serialize_state(*a, opt_a);
    torch::optim::SGD opt_b(loaded, torch::optim::SGDOptions(0.1).momentum(0.9));
    try {
      load_state(payload, *a, &opt_b, "r/step-000000010.ckpt");
      ADD_FAILURE() << "an optimizer state of another parameter set was loaded";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("r/step-000000010.ckpt: its optimizer state does not fit"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("--model.freeze"), std::string::npos);
    }
  }
}

// A checkpoint is never written of diverged weights (checkpointer.cpp): the first parameter or
// floating-point buffer holding a NaN or an infinity is named; huge finite values are not.
TEST(TrainState, NonFiniteWeightsOrStatisticsAreNamed) {
  auto model = make_model(ModelOptions{"cnn", 0.0}, mnist_like());
  EXPECT_EQ(non_finite_state(*model), "");
  torch::NoGradGuard no_grad;
  for (const auto& p : model->named_parameters())
    if (p.key().find("fc") != std::string::npos) p.value().fill_(1e30);
  EXPECT_EQ(non_finite_state(*model), "") << "large is not diverged";
  model->register_buffer("mask", torch::full({3}, -INFINITY));  // a TorchScript model's additive mask
  EXPECT_EQ(non_finite_state(*model), "") << "only BatchNorm's statistics among the buffers";
  std::string buffer;
  for (const auto& b : model->named_buffers())
    if (buffer.empty() && b.key().find("running_var") != std::string::npos) buffer = b.key();
  ASSERT_FALSE(buffer.empty());
  model->named_buffers()[buffer].index_put_({0}, NAN);
  EXPECT_EQ(non_finite_state(*model), "buffer '" + buffer + "'");
  const std::string param = model->named_parameters().keys().back();
  model->named_parameters()[param].view(-1).index_put_({0}, -INFINITY);
  EXPECT_EQ(non_finite_state(*model), "parameter '" + param + "'") << "parameters are named first";
}

// A hostile finding: finite weights with a NaN momentum (or Adam moment) were checkpointed,
// and every step after the resume was NaN. The optimizer's state is checked with them.
TEST(TrainState, NonFiniteOptimizerStateIsNamed) {
  for (const OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    auto model = make_model(ModelOptions{"mlp", 0.0}, mnist_like());
    OptimizerOptions o;
    o.kind = kind;
    auto opt = make_optimizer(model->parameters(), o);
    model->forward(torch::rand({2, 1, 28, 28})).sum().backward();
    opt->step();
    EXPECT_EQ(non_finite_state(*model, opt.get()), "") << to_string(kind);
    const std::string param = model->named_parameters().keys().front();
    torch::NoGradGuard no_grad;
    for (const auto& [key, state] : opt->state()) {
      if (key != model->named_parameters()[param].unsafeGetTensorImpl()) continue;
      if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(state.get())) s->momentum_buffer().view(-1)[0] = NAN;
      if (auto* a = dynamic_cast<torch::optim::AdamParamState*>(state.get())) a->exp_avg_sq().view(-1)[0] = NAN;
      if (auto* w = dynamic_cast<torch::optim::AdamWParamState*>(state.get())) w->exp_avg_sq().view(-1)[0] = NAN;
    }
    EXPECT_EQ(non_finite_state(*model), "") << "the weights are finite";
    EXPECT_EQ(non_finite_state(*model, opt.get()),
              "optimizer state '" + std::string(kind == OptimizerKind::kSgd ? "momentum_buffer" : "exp_avg_sq") +
                  "' of '" + param + "'")
        << to_string(kind);
  }
}
