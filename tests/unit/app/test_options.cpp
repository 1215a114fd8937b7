// Option parsing: aliases, INI + command line precedence, one-line errors.
#include <gtest/gtest.h>

#include <fstream>

#include "app/options.hpp"

using namespace lockstep;
using namespace lockstep::app;

TEST(Options, AliasesExpandToSectionKeys) {
  const auto out = expand_aliases({"--lr", "0.1", "--epochs=3", "--train.seed", "5", "x"});
  EXPECT_EQ(out, (std::vector<std::string>{"--train.lr", "0.1", "--train.epochs=3", "--train.seed", "5", "x"}));
}

TEST(Options, CommandLineWinsOverConfigFile) {
  const std::string path = ::testing::TempDir() + "/job.ini";
  std::ofstream(path) << "[data]\npath = /data/x\n[train]\nlr = 0.2\nepochs = 4\n";
  Config cfg;
  const auto r = parse_train({"--config", path, "--lr", "0.01"}, &cfg);
  ASSERT_EQ(r.status, ParseStatus::kRun) << r.message;
  EXPECT_EQ(cfg.data_dir, "/data/x");
  EXPECT_DOUBLE_EQ(cfg.lr, 0.01);
  EXPECT_EQ(cfg.epochs, 4);
  EXPECT_NE(cfg.resolved_ini.find("[train]"), std::string::npos);
  EXPECT_NE(cfg.resolved_ini.find("lr = 0.01"), std::string::npos);
  EXPECT_NE(cfg.command_line.find("--lr 0.01"), std::string::npos);
}

TEST(Options, ResolvedConfigIsItselfAValidConfig) {
  Config first;
  ASSERT_EQ(parse_train({"--data", "/d", "--epochs", "7", "--batch-size", "16"}, &first).status, ParseStatus::kRun);
  const std::string path = ::testing::TempDir() + "/resolved.ini";
  std::ofstream(path) << first.resolved_ini;
  Config second;
  ASSERT_EQ(parse_train({"--config", path}, &second).status, ParseStatus::kRun);
  EXPECT_EQ(second.epochs, 7);
  EXPECT_EQ(second.batch_size, 16);
  EXPECT_EQ(second.resolved_ini, first.resolved_ini);
}

// Issue 31 (5): a run's config.ini is a valid config for every path. Before, a '#' in
// --data or --run.dir was read back as a comment (another dataset, another run dir) and a
// newline broke the file.
TEST(Options, ResolvedConfigRoundTripsOddPaths) {
  for (const std::string& odd : {std::string("/data/exp#2"), std::string("/data/a;b"), std::string("/data/x\ny"),
                                  std::string("/d/ \"q\" "), std::string("/d/back\\slash"), std::string("/d/caf\xe9")}) {
    Config first;
    ASSERT_EQ(parse_train({"--data", odd, "--run-dir", odd + "/run#1", "--init-exclude", "fc.#"}, &first).status,
              ParseStatus::kRun) << odd;
    const std::string path = ::testing::TempDir() + "/odd.ini";
    std::ofstream(path, std::ios::binary) << first.resolved_ini;
    Config second;
    const auto r = parse_train({"--config", path}, &second);
    ASSERT_EQ(r.status, ParseStatus::kRun) << r.message;
    EXPECT_EQ(second.data_dir, odd);
    EXPECT_EQ(second.run_dir, odd + "/run#1");
    EXPECT_EQ(second.init_exclude, "fc.#");
    EXPECT_EQ(second.resolved_ini, first.resolved_ini);
  }
}

TEST(Options, ConfigFileErrorsNameTheLine) {
  const std::string path = ::testing::TempDir() + "/lines.ini";
  std::ofstream(path) << "[train]\nlr = 0.1\nlearning_rate = 0.1\n";
  Config cfg;
  auto r = parse_train({"--config", path, "--data", "/d"}, &cfg);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.message.find(path + ":3: unrecognised option 'train.learning_rate'"), std::string::npos) << r.message;
  std::ofstream(path) << "[data]\npath = \"/open\n";
  r = parse_train({"--config", path}, &cfg);
  EXPECT_NE(r.message.find(path + ":2: a quoted value has no closing"), std::string::npos) << r.message;
}

TEST(Options, ErrorsAreOneLine) {
  const std::vector<std::vector<std::string>> bad{
      {"--data", "/d", "--no-such-option", "1"},
      {"--data", "/d", "--epochs", "many"},
      {"--epochs", "2"},  // missing --data
      {"--data", "/d", "--batch-size", "0"},
      {"--data", "/d", "--backend", "gloo"},
      {"--config", "/nonexistent/job.ini", "--data", "/d"}};
  for (const auto& args : bad) {
    Config cfg;
    const auto r = parse_train(args, &cfg);
    EXPECT_EQ(r.status, ParseStatus::kError) << args[2];
    EXPECT_FALSE(r.message.empty());
    EXPECT_EQ(r.message.find('\n'), std::string::npos) << r.message;
  }
}

// Boost fills an error's %placeholders% until none is left: a value spelling one hung
// what() forever (found by tests/fuzz/fuzz_options). Now an error like any other.
TEST(Options, AValueSpellingABoostPlaceholderIsAnErrorNotAHang) {
  const std::string ini = ::testing::TempDir() + "/placeholder.ini";
  std::ofstream(ini) << "[train]\nepochs = x%value%\n";
  const std::vector<std::vector<std::string>> bad{
      {"--data", "/d", "--epochs", "x%value%"},
      {"--data", "/d", "--train.epochs", "%canonical_option%%value%%option%%original_token%"},
      {"--data", "/d", "--backend", "%value%"},
      {"--data", "/d", "--%value%", "1"},
      {"--config", ini, "--data", "/d"}};
  for (const auto& args : bad) {
    Config cfg;
    const auto r = parse_train(args, &cfg);
    EXPECT_EQ(r.status, ParseStatus::kError) << args[2];
    EXPECT_NE(r.message.find("value"), std::string::npos) << r.message;
    EXPECT_EQ(r.message.find('\n'), std::string::npos) << r.message;
  }
  Config cfg;  // a '%' that spells no placeholder is shown as given
  const auto r = parse_train({"--data", "/d", "--epochs", "50%"}, &cfg);
  EXPECT_NE(r.message.find("50%"), std::string::npos) << r.message;
}

TEST(Options, UnknownKeyInConfigFileNamesTheFile) {
  const std::string path = ::testing::TempDir() + "/typo.ini";
  std::ofstream(path) << "[train]\nlearning_rate = 0.1\n";
  Config cfg;
  const auto r = parse_train({"--config", path, "--data", "/d"}, &cfg);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.message.find(path), std::string::npos) << r.message;
}

TEST(Options, HelpExitsOk) {
  Config cfg;
  const auto r = parse_train({"--help"}, &cfg);
  EXPECT_EQ(r.status, ParseStatus::kExitOk);
  EXPECT_NE(r.message.find("train.lr"), std::string::npos);
}

TEST(Options, EvaluateNeedsCheckpoint) {
  Config cfg;
  EXPECT_EQ(parse_evaluate({"--data", "/d"}, &cfg).status, ParseStatus::kError);
  ASSERT_EQ(parse_evaluate({"--data", "/d", "--checkpoint", "c.ckpt", "--split", "train"}, &cfg).status,
            ParseStatus::kRun);
  EXPECT_EQ(cfg.checkpoint, "c.ckpt");
  EXPECT_EQ(cfg.eval_split, "train");
}

// export reads a checkpoint and writes a file: its help lists no split to evaluate and no
// JSON result, and such an option is refused as unknown (it listed evaluate's, taken and unused).
TEST(Options, ExportListsOnlyWhatItUses) {
  Config cfg;
  const auto help = parse_export({"--help"}, &cfg);
  ASSERT_EQ(help.status, ParseStatus::kExitOk);
  EXPECT_NE(help.message.find("eval.checkpoint"), std::string::npos) << help.message;
  EXPECT_NE(help.message.find("eval.any-units"), std::string::npos) << help.message;
  EXPECT_EQ(help.message.find("eval.split"), std::string::npos) << help.message;
  EXPECT_EQ(help.message.find("eval.out"), std::string::npos) << help.message;
  Config ex;
  const auto r = parse_export({"--checkpoint", "c.ckpt", "--out", "w.safetensors", "--split", "test"}, &ex);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.message.find("eval.split"), std::string::npos) << r.message;
  ASSERT_EQ(parse_export({"--checkpoint", "c.ckpt", "--out", "w.safetensors", "--force"}, &ex).status, ParseStatus::kRun);
  EXPECT_TRUE(ex.force_output);
}

// The job file a run was trained with serves evaluate and predict too: its [train] keys
// were "unrecognised options"; a key no command knows is still one. An empty switch
// (`sync-bn =`, a value deleted) read as true.
TEST(Options, AJobFileServesEvaluateAndPredict) {
  const std::string path = ::testing::TempDir() + "/job_eval.ini";
  std::ofstream(path) << "[data]\npath = /data/x\n[model]\nname = cnn\n[train]\nepochs = 7\nlr = 0.1\n";
  Config cfg;
  ASSERT_EQ(parse_evaluate({"--config", path, "--checkpoint", "c.ckpt"}, &cfg).status, ParseStatus::kRun);
  EXPECT_EQ(cfg.data_dir, "/data/x");
  EXPECT_EQ(cfg.model, "cnn");
  Config p;
  EXPECT_EQ(parse_predict({"--config", path, "--checkpoint", "c.ckpt", "--out", "p.csv"}, &p).status, ParseStatus::kRun);
  std::ofstream(path) << "[data]\npath = /data/x\n[train]\nepoch = 7\n";
  Config typo;
  const auto r = parse_evaluate({"--config", path, "--checkpoint", "c.ckpt"}, &typo);
  EXPECT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.message.find("job_eval.ini:4: unrecognised option 'train.epoch'"), std::string::npos) << r.message;
  std::ofstream(path) << "[data]\npath = /data/x\n[model]\nsync-bn =\n";
  Config empty;
  const auto e = parse_train({"--config", path}, &empty);
  EXPECT_EQ(e.status, ParseStatus::kError);
  EXPECT_NE(e.message.find("job_eval.ini:4: model.sync-bn has no value (true or false)"), std::string::npos) << e.message;
}

TEST(Options, LaterOptionsOverrideEarlierOnesAndFlagsNeedNoValue) {
  Config cfg;
  ASSERT_EQ(parse_train({"--data", "/d", "--lr", "0.1", "--train.lr=0.3", "--sync-bn", "--lr", "0.2",
                         "--optimizer", "adamw", "--amp", "bf16", "--class-weights", "auto"},
                        &cfg)
                .status,
            ParseStatus::kRun);
  EXPECT_DOUBLE_EQ(cfg.lr, 0.2);
  EXPECT_TRUE(cfg.sync_bn);
  EXPECT_EQ(cfg.optimizer, OptimizerKind::kAdamW);
  EXPECT_EQ(cfg.amp, Amp::kBf16);
  EXPECT_EQ(cfg.class_weights, "auto");
  EXPECT_EQ(cfg.command_line.find("lr 0.1") != std::string::npos, true);  // the command as typed
}

TEST(Options, TrainerChoicesAreChecked) {
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--optimizer", "lamb"}, {"--amp", "fp8"}, {"--lr-scaling", "cubic"},
        {"--best-metric", "val_auc"}, {"--label-smoothing", "1"}, {"--clip-norm", "-1"}, {"--schedule", "poly"},
        {"--train.step-gamma", "0"}, {"--train.progress", "fancy"}, {"--data.random-erase", "1.5"},
        {"--data.random-erase", "-0.1"}, {"--train.loss-scale", "0.5"}, {"--train.loss-scale", "1e39"},
        {"--train.loss-scale-growth", "0"}}) {
    Config cfg;
    std::vector<std::string> args{"--data", "/d"};
    args.insert(args.end(), bad.begin(), bad.end());
    const auto r = parse_train(args, &cfg);
    EXPECT_EQ(r.status, ParseStatus::kError) << bad[0];
    EXPECT_NE(r.message.find(bad[0].substr(2)), std::string::npos) << r.message;
  }
}

TEST(Options, NaNAndInfinityAreRefusedForEveryNumber) {
  for (const char* value : {"nan", "inf", "-nan"}) {
    Config cfg;
    const auto r = parse_train({"--data", "/d", "--lr", value}, &cfg);  // NaN passed "lr <= 0"
    EXPECT_EQ(r.status, ParseStatus::kError) << value;
    EXPECT_NE(r.message.find("--train.lr must be a finite number"), std::string::npos) << r.message;
  }
  Config cfg;
  EXPECT_EQ(parse_train({"--data", "/d", "--train.momentum", "nan"}, &cfg).status, ParseStatus::kError);
}

TEST(Options, AConfigPathThatIsADirectoryIsAnError) {
  Config cfg;
  const auto r = parse_train({"--config", "/tmp"}, &cfg);  // before: read as an empty file
  EXPECT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.message.find("--config /tmp is a directory"), std::string::npos) << r.message;
}

TEST(Options, ValidationIsHonestByDefault) {
  Config cfg;
  ASSERT_EQ(parse_train({"--data", "/d"}, &cfg).status, ParseStatus::kRun);
  EXPECT_EQ(cfg.val_split, "val");
  EXPECT_EQ(cfg.test_split, "test");
  Config ev;
  ASSERT_EQ(parse_evaluate({"--data", "/d", "--checkpoint", "c"}, &ev).status, ParseStatus::kRun);
  EXPECT_EQ(ev.eval_split, "test");
}

TEST(Options, ClosedChoicesAreTypedOnceAndListTheirNames) {
  Config cfg;
  ASSERT_EQ(parse_train({"--data", "/d", "--backend", "nccl", "--amp", "bf16", "--data.mode", "stream"}, &cfg).status,
            ParseStatus::kRun);
  EXPECT_EQ(cfg.backend, Backend::kNccl);
  EXPECT_EQ(cfg.amp, Amp::kBf16);
  EXPECT_EQ(cfg.data_mode, DataMode::kStream);
  // The resolved config names them as the user writes them (a valid --config file).
  EXPECT_NE(cfg.resolved_ini.find("backend = nccl"), std::string::npos) << cfg.resolved_ini;
  EXPECT_NE(cfg.resolved_ini.find("overlap = auto"), std::string::npos) << cfg.resolved_ini;
  Config bad;
  const auto r = parse_train({"--data", "/d", "--dist.backend", "gloo"}, &bad);
  EXPECT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.message.find("--dist.backend must be auto, mpi or nccl, not 'gloo'"), std::string::npos) << r.message;
}

TEST(Options, EvalHflipIsABareFlagAndAnIniKeyForEveryEvaluatingCommand) {
  Config train, ev, pred, plain;
  ASSERT_EQ(parse_train({"--data", "/d", "--eval.hflip"}, &train).status, ParseStatus::kRun);
  ASSERT_EQ(parse_evaluate({"--data", "/d", "--checkpoint", "c", "--eval.hflip"}, &ev).status, ParseStatus::kRun);
  ASSERT_EQ(parse_predict({"--data", "/d", "--checkpoint", "c", "--out", "p.csv", "--eval.hflip", "true"}, &pred).status,
            ParseStatus::kRun);
  ASSERT_EQ(parse_train({"--data", "/d"}, &plain).status, ParseStatus::kRun);
  EXPECT_TRUE(train.eval_hflip && ev.eval_hflip && pred.eval_hflip);
  EXPECT_FALSE(plain.eval_hflip);
  const std::string path = ::testing::TempDir() + "/hflip.ini";
  std::ofstream(path) << "[data]\npath = /d\n[eval]\nhflip = true\n";
  Config ini;
  ASSERT_EQ(parse_train({"--config", path}, &ini).status, ParseStatus::kRun);
  EXPECT_TRUE(ini.eval_hflip);
  EXPECT_NE(ini.resolved_ini.find("[eval]\nhflip = true"), std::string::npos) << ini.resolved_ini;
}

// A hostile round: --run.dir "" (or `dir =` in a job file) wrote the lock file and checkpoints/
// at the file system's root; a step schedule of 1e18 epochs ("never") decayed every step, and
// a batch of 2^62 x --dist.grad-accum 4 overflowed to a global batch of 4.
TEST(Options, EmptyPathsAndCountsBeyondAnyRunAreRefused) {
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--run.dir", ""}, {"--run.resume", ""}, {"--data.val-split", ""},
        {"--data.test-split", ""}, {"--train.step-epochs", "1e18"}, {"--train.warmup-epochs", "1e300"},
        {"--train.batch-size", "4611686018427387905"}, {"--dist.grad-accum", "2000000"},
        {"--train.epochs", "2000000000"}, {"--train.seed", "-1"}, {"--train.nesterov", ""}, {"--model.sync-bn", ""},
        {"--train.early-stop-patience", "1"}, {"--train.early-stop-min-delta", "0.01"},
        {"--model.depth", "34"}}) {
    Config cfg;
    std::vector<std::string> args{"--data", "/d"};
    args.insert(args.end(), bad.begin(), bad.end());
    const auto r = parse_train(args, &cfg);
    EXPECT_EQ(r.status, ParseStatus::kError) << bad[0] << " " << bad[1];
    EXPECT_NE(r.message.find(bad[0]), std::string::npos) << r.message;
  }
  const std::string path = ::testing::TempDir() + "/empty_dir.ini";
  std::ofstream(path) << "[run]\ndir =\n";
  Config cfg;
  const auto r = parse_train({"--config", path, "--data", "/d"}, &cfg);
  EXPECT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.message.find("--run.dir is empty"), std::string::npos) << r.message;
}

// An option the chosen model does not read was ignored, silently: a TorchScript module's
// widths and dropout are its own; only resnet and r3d have a depth; patience without a metric.
TEST(Options, OptionsTheModelOrRuleDoesNotReadAreRefused) {
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--model", "torchscript:m.pt", "--model.width", "8"},
        {"--model", "torchscript:m.pt", "--model.dropout", "0.5"},
        {"--model", "mlp", "--model.depth", "34"},
        {"--train.early-stop-patience", "5"}}) {
    Config cfg;
    std::vector<std::string> args{"--data", "/d"};
    args.insert(args.end(), bad.begin(), bad.end());
    const auto r = parse_train(args, &cfg);
    EXPECT_EQ(r.status, ParseStatus::kError) << bad.back();
    EXPECT_NE(r.message.find(bad[bad.size() - 2]), std::string::npos) << r.message;
  }
  Config resnet, scripted;
  EXPECT_EQ(parse_train({"--data", "/d", "--model", "resnet", "--model.depth", "34"}, &resnet).status, ParseStatus::kRun);
  EXPECT_EQ(parse_train({"--data", "/d", "--model", "torchscript:m.pt"}, &scripted).status, ParseStatus::kRun);
}
