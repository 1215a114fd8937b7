// MetricsRow: one schema for metrics.jsonl, TensorBoard and the tools that read runs back.
// A row of every kind survives to_json -> text -> from_json; unset fields stay unset; a
// NaN is written as null and reads back as NaN; TensorBoard gets the tags it always had.
#include <gtest/gtest.h>

#include <cmath>

#include "io/records/metrics_row.hpp"

using namespace lockstep;
using io::MetricsRow;
using io::RowKind;

namespace {

MetricsRow through_text(const MetricsRow& r) {
  return MetricsRow::from_json(io::Json::parse(io::dump_json(r.to_json())), "metrics.jsonl");
}

MetricsRow end_row() {
  MetricsRow r;
  r.kind = RowKind::kEnd;
  r.epoch = 3;
  r.step = 120;
  r.train_loss = 0.25;
  r.train_acc = 0.9;
  r.samples_per_s = 1234.5;
  r.set_times(Times{10.0, 1.0, 3.0, 4.0, 0.5, 1.5});
  r.lr = 0.01;
  r.loss_scale = 1024.0;
  r.skipped_steps = 2;
  r.clipped_steps = 7;
  r.val_loss = 0.3;
  r.val_acc = 0.88;
  r.val_f1 = 0.87;
  r.test_loss = 0.31;
  r.test_acc = 0.86;
  r.test_f1 = 0.85;
  r.stopped_early = "val_acc did not improve";
  r.world_size = 2;
  r.global_batch = 64;
  r.params = 421642;
  r.grad_wire_bytes = 1686568;
  r.grad_buckets = 3;
  r.first_step_unix_ms = 1790000000123;
  return r;
}

}  // namespace

TEST(MetricsRow, EveryKindRoundTrips) {
  const MetricsRow end = end_row();
  EXPECT_EQ(through_text(end).to_json(), end.to_json());

  MetricsRow train;
  train.kind = RowKind::kTrain;
  train.epoch = 1;
  train.step = 50;
  train.train_loss = 1.5;
  train.rank_ms[0] = {0.1, 0.2, 0.3};
  train.rank_ms[5] = {5.0, 6.0, 7.5};
  train.slowest_rank = 1;
  train.slowest_host = "node07";
  const MetricsRow t = through_text(train);
  EXPECT_EQ(t.to_json(), train.to_json());
  EXPECT_DOUBLE_EQ(*t.rank_ms[5][2], 7.5);
  EXPECT_FALSE(t.rank_ms[1][0].has_value());
  EXPECT_EQ(train.to_json().at("busy_ms_max"), 7.5);
  EXPECT_EQ(train.to_json().at("data_wait_ms_min"), 0.1);

  MetricsRow test;
  test.kind = RowKind::kTest;
  test.step = 120;
  test.split = "test";
  test.weights_step = 100;
  test.selected_by = "val_f1";
  test.eval_hflip = true;
  test.test_loss = 2.0;
  test.test_cer = 0.1;
  test.test_wer = 0.3;
  EXPECT_EQ(through_text(test).to_json(), test.to_json());

  MetricsRow start;
  start.kind = RowKind::kStart;
  start.world_size = 4;
  start.unix_time = 1790000000.5;
  start.versions = {{"HDF5", "1.10.8"}, {"lockstep", "0.2.0 (git abc)"}};
  const MetricsRow s = through_text(start);
  EXPECT_EQ(s.versions, start.versions);
  EXPECT_EQ(s.to_json(), start.to_json());
}

TEST(MetricsRow, UnsetFieldsAreNotWrittenAndNanIsNull) {
  MetricsRow r;
  r.kind = RowKind::kEval;
  r.epoch = 2;
  r.step = 10;
  r.val_loss = 0.5;
  const io::Json j = r.to_json();
  EXPECT_EQ(j.size(), 4u);  // kind, epoch, step, val_loss
  EXPECT_EQ(j.at("kind"), "eval");

  MetricsRow nan;
  nan.kind = RowKind::kTrain;
  nan.train_loss = std::nan("");
  EXPECT_TRUE(nan.to_json().at("train_loss").is_null());
  const MetricsRow back = through_text(nan);
  ASSERT_TRUE(back.train_loss.has_value());
  EXPECT_TRUE(std::isnan(*back.train_loss));
  EXPECT_TRUE(back.scalars().empty());  // no NaN reaches TensorBoard
}

TEST(MetricsRow, TensorBoardTagsByKind) {
  MetricsRow train;
  train.kind = RowKind::kTrain;
  train.train_loss = 1.0;
  train.train_acc = 0.5;
  train.lr = 0.1;
  train.samples_per_s = 100.0;
  train.set_times(Times{1, 1, 1, 1, 1, 1});  // times are shown per epoch, not per window
  const auto s = train.scalars();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].first, "train/loss");
  EXPECT_EQ(s[3].first, "train/samples_per_s");

  MetricsRow epoch = end_row();
  epoch.kind = RowKind::kEpoch;
  std::vector<std::string> tags;
  for (const auto& [tag, v] : epoch.scalars()) tags.push_back(tag);
  EXPECT_EQ(tags, (std::vector<std::string>{"epoch/train_loss", "epoch/train_acc", "epoch/samples_per_s", "time/data_wait_s",
                                            "time/forward_s", "time/backward_s", "time/exposed_comm_s",
                                            "time/optimizer_s", "val/loss", "val/acc", "val/macro_f1", "test/loss",
                                            "test/acc", "test/macro_f1"}));
  EXPECT_TRUE(end_row().scalars().empty());  // the end row repeats values already plotted
}

TEST(MetricsRow, MalformedRowsAreRefusedNamingTheFile) {
  try {
    MetricsRow::from_json(io::Json{{"kind", "warmup"}, {"step", 1}}, "run/metrics.jsonl");
    FAIL() << "an unknown kind was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("run/metrics.jsonl: unknown metrics row kind 'warmup'"), std::string::npos);
  }
  EXPECT_ANY_THROW(MetricsRow::from_json(io::Json{{"kind", "train"}, {"step", "ten"}}, "m"));
  EXPECT_ANY_THROW(MetricsRow::from_json(io::Json{{"kind", "train"}, {"step", 1}, {"lr", "fast"}}, "m"));
}

TEST(MetricsRow, GpuGaugesArePerRankListsWithNullWhereNotMeasured) {
  MetricsRow r;
  r.kind = RowKind::kTrain;
  r.step = 5;
  r.gpu_util_pct = {98.0, std::nan("")};  // rank 1 did not measure its utilisation
  r.gpu_mem_gib = {41.5, 40.25};
  r.gpu_power_w = {650.0, 612.0};
  const io::Json j = r.to_json();
  EXPECT_EQ(io::dump_json(j["gpu_util_pct"]), "[98.0,null]");
  const MetricsRow back = through_text(r);
  ASSERT_EQ(back.gpu_util_pct.size(), 2u);
  EXPECT_EQ(back.gpu_util_pct[0], 98.0);
  EXPECT_TRUE(std::isnan(back.gpu_util_pct[1]));
  EXPECT_EQ(back.gpu_mem_gib, r.gpu_mem_gib);
  EXPECT_EQ(back.gpu_power_w, r.gpu_power_w);
  std::vector<std::string> tags;
  for (const auto& [tag, v] : r.scalars()) tags.push_back(tag);
  EXPECT_EQ(tags, (std::vector<std::string>{"gpu/util_pct/rank_0", "gpu/mem_gib/rank_0", "gpu/mem_gib/rank_1",
                                            "gpu/power_w/rank_0", "gpu/power_w/rank_1"}));
  EXPECT_FALSE(MetricsRow().to_json().contains("gpu_util_pct")) << "a CPU run's rows have no gauges";
  EXPECT_ANY_THROW(MetricsRow::from_json(io::Json{{"kind", "train"}, {"step", 1}, {"gpu_util_pct", "high"}}, "m"));
  EXPECT_ANY_THROW(
      MetricsRow::from_json(io::Json{{"kind", "train"}, {"step", 1}, {"gpu_power_w", io::Json::array({"x"})}}, "m"));
}
