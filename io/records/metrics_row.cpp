// metrics_row: see metrics_row.hpp. Each field's key is written once, in the tables below,
// which to_json, from_json and scalars all walk.
#include "io/records/metrics_row.hpp"

#include <cmath>
#include <fstream>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {
namespace {

using Row = MetricsRow;

constexpr std::array<std::pair<RowKind, const char*>, 6> kKinds = {{{RowKind::kStart, "start"},
                                                                     {RowKind::kTrain, "train"},
                                                                     {RowKind::kEval, "eval"},
                                                                     {RowKind::kEpoch, "epoch"},
                                                                     {RowKind::kTest, "test"},
                                                                     {RowKind::kEnd, "end"}}};

struct NumberField {
  const char* key;
  Row::Number Row::*field;
};
struct CountField {
  const char* key;
  Row::Count Row::*field;
};
struct TextField {
  const char* key;
  std::string Row::*field;
};

constexpr NumberField kNumbers[] = {
    {"train_loss", &Row::train_loss}, {"train_acc", &Row::train_acc},   {"samples_per_s", &Row::samples_per_s},
    {"seconds", &Row::seconds},       {"data_wait_s", &Row::data_wait_s}, {"forward_s", &Row::forward_s},
    {"backward_s", &Row::backward_s}, {"exposed_comm_s", &Row::exposed_comm_s}, {"optimizer_s", &Row::optimizer_s},
    {"lr", &Row::lr},                 {"loss_scale", &Row::loss_scale}, {"val_loss", &Row::val_loss},
    {"val_acc", &Row::val_acc},       {"val_f1", &Row::val_f1},         {"val_cer", &Row::val_cer},
    {"val_wer", &Row::val_wer},       {"test_loss", &Row::test_loss},   {"test_acc", &Row::test_acc},
    {"test_f1", &Row::test_f1},       {"test_cer", &Row::test_cer},     {"test_wer", &Row::test_wer},
    {"unix_time", &Row::unix_time},   {"mfu_pct", &Row::mfu_pct}};

constexpr CountField kCounts[] = {{"skipped_steps", &Row::skipped_steps},
                                  {"clipped_steps", &Row::clipped_steps},
                                  {"weights_step", &Row::weights_step},
                                  {"world_size", &Row::world_size},
                                  {"global_batch", &Row::global_batch},
                                  {"params", &Row::params},
                                  {"grad_wire_bytes", &Row::grad_wire_bytes},
                                  {"grad_buckets", &Row::grad_buckets},
                                  {"first_step_unix_ms", &Row::first_step_unix_ms},
                                  {"to_step", &Row::to_step},
                                  {"slowest_rank", &Row::slowest_rank}};

constexpr TextField kTexts[] = {{"split", &Row::split},
                                {"selected_by", &Row::selected_by},
                                {"stopped_early", &Row::stopped_early},
                                {"slowest_host", &Row::slowest_host}};

constexpr std::array<const char*, 3> kStats = {"min", "median", "max"};

// The per-rank GPU gauges: key, field, TensorBoard tag stem.
struct GaugeField {
  const char* key;
  std::vector<double> Row::*field;
  const char* tag;
};
constexpr GaugeField kGauges[] = {{"gpu_util_pct", &Row::gpu_util_pct, "gpu/util_pct"},
                                  {"gpu_mem_gib", &Row::gpu_mem_gib, "gpu/mem_gib"},
                                  {"gpu_power_w", &Row::gpu_power_w, "gpu/power_w"}};

std::string spread_key(int phase, int stat) {
  return std::string(kRankPhaseNames[static_cast<size_t>(phase)]) + "_ms_" + kStats[static_cast<size_t>(stat)];
}

// TensorBoard: which kinds show a field, under which tag.
struct Scalar {
  Row::Number Row::*field;
  const char* tag;
  bool (*shown)(RowKind);
};
bool train_kind(RowKind k) { return k == RowKind::kTrain; }
bool epoch_kind(RowKind k) { return k == RowKind::kEpoch; }
bool not_end(RowKind k) { return k != RowKind::kEnd; }  // the end row repeats the last values

constexpr Scalar kScalars[] = {
    {&Row::train_loss, "train/loss", train_kind},          {&Row::train_acc, "train/acc", train_kind},
    {&Row::lr, "train/lr", train_kind},                    {&Row::samples_per_s, "train/samples_per_s", train_kind},
    {&Row::train_loss, "epoch/train_loss", epoch_kind},    {&Row::train_acc, "epoch/train_acc", epoch_kind},
    {&Row::samples_per_s, "epoch/samples_per_s", epoch_kind},
    {&Row::data_wait_s, "time/data_wait_s", epoch_kind},   {&Row::forward_s, "time/forward_s", epoch_kind},
    {&Row::backward_s, "time/backward_s", epoch_kind},     {&Row::exposed_comm_s, "time/exposed_comm_s", epoch_kind},
    {&Row::optimizer_s, "time/optimizer_s", epoch_kind},   {&Row::val_loss, "val/loss", not_end},
    {&Row::val_acc, "val/acc", not_end},                   {&Row::val_f1, "val/macro_f1", not_end},
    {&Row::test_loss, "test/loss", not_end},               {&Row::test_acc, "test/acc", not_end},
    {&Row::test_f1, "test/macro_f1", not_end},             {&Row::val_cer, "val/cer", not_end},
    {&Row::val_wer, "val/wer", not_end},                   {&Row::test_cer, "test/cer", not_end},
    {&Row::test_wer, "test/wer", not_end},                 {&Row::loss_scale, "train/loss_scale", train_kind},
    {&Row::mfu_pct, "train/mfu_pct", train_kind}};

Json number_json(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

}  // namespace

const char* row_kind_name(RowKind kind) {
  for (const auto& [k, name] : kKinds)
    if (k == kind) return name;
  return "?";
}

void MetricsRow::set_times(const Times& t) {
  seconds = t.seconds;
  data_wait_s = t.data_wait;
  forward_s = t.forward;
  backward_s = t.backward;
  exposed_comm_s = t.exposed_comm;
  optimizer_s = t.optimizer;
}

Json MetricsRow::to_json() const {
  Json j;
  j["kind"] = row_kind_name(kind);
  j["epoch"] = epoch;
  j["step"] = step;
  for (const auto& f : kNumbers)
    if (const Number& v = this->*f.field) j[f.key] = number_json(*v);
  for (const auto& f : kCounts)
    if (const Count& v = this->*f.field) j[f.key] = *v;
  for (const auto& f : kTexts)
    if (!(this->*f.field).empty()) j[f.key] = this->*f.field;
  if (eval_hflip) j["eval_hflip"] = *eval_hflip;
  for (int p = 0; p < kRankPhaseCount; ++p)
    for (int s = 0; s < 3; ++s)
      if (const Number& v = rank_ms[static_cast<size_t>(p)][static_cast<size_t>(s)]) j[spread_key(p, s)] = number_json(*v);
  for (const auto& g : kGauges) {
    const std::vector<double>& v = this->*g.field;
    if (v.empty()) continue;
    Json a = Json::array();
    for (double x : v) a.push_back(number_json(x));
    j[g.key] = a;
  }
  if (kind == RowKind::kStart) {
    j["versions"] = Json::object();
    for (const auto& [name, version] : versions) j["versions"][name] = version;
  }
  return j;
}

MetricsRow MetricsRow::from_json(const Json& j, const std::string& what) {
  MetricsRow r;
  const std::string kind = json_get<std::string>(j, "kind", what);
  bool known = false;
  for (const auto& [k, name] : kKinds)
    if (kind == name) r.kind = k, known = true;
  LOCKSTEP_REQUIRE(known, what + ": unknown metrics row kind '" + kind + "'");
  r.epoch = json_get_or<int64_t>(j, "epoch", 0, what);
  r.step = json_get<int64_t>(j, "step", what);
  const auto number = [&](const std::string& key, Number* out) {
    if (!j.contains(key)) return;
    *out = j[key].is_null() ? std::nan("") : json_get<double>(j, key.c_str(), what);
  };
  for (const auto& f : kNumbers) number(f.key, &(r.*f.field));
  for (const auto& f : kCounts)
    if (j.contains(f.key)) r.*f.field = json_get<int64_t>(j, f.key, what);
  for (const auto& f : kTexts)
    if (j.contains(f.key)) r.*f.field = json_get<std::string>(j, f.key, what);
  if (j.contains("eval_hflip")) r.eval_hflip = json_get<bool>(j, "eval_hflip", what);
  for (int p = 0; p < kRankPhaseCount; ++p)
    for (int s = 0; s < 3; ++s) number(spread_key(p, s), &r.rank_ms[static_cast<size_t>(p)][static_cast<size_t>(s)]);
  for (const auto& g : kGauges) {
    if (!j.contains(g.key)) continue;
    LOCKSTEP_REQUIRE(j[g.key].is_array(), what + ": " + g.key + " is not a list");
    for (const auto& x : j[g.key])
      (r.*g.field).push_back(x.is_null() ? std::nan("") : json_as<double>(x, what + ": " + g.key));
  }
  if (j.contains("versions") && j["versions"].is_object())
    for (const auto& [name, version] : j["versions"].items())
      r.versions.emplace_back(name, version.is_string() ? version.get<std::string>() : version.dump());
  return r;
}

std::vector<std::pair<std::string, double>> MetricsRow::scalars() const {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& s : kScalars) {
    const Number& v = this->*s.field;
    if (s.shown(kind) && v && std::isfinite(*v)) out.emplace_back(s.tag, *v);
  }
  if (kind != RowKind::kTrain) return out;
  // Counters so far, and the per-rank spread of the window's phases (more than one rank).
  if (skipped_steps) out.emplace_back("train/skipped_steps", static_cast<double>(*skipped_steps));
  if (clipped_steps) out.emplace_back("train/clipped_steps", static_cast<double>(*clipped_steps));
  for (int p = 0; p < kRankPhaseCount; ++p)
    for (int st = 0; st < 3; ++st) {
      const Number& v = rank_ms[static_cast<size_t>(p)][static_cast<size_t>(st)];
      if (v && std::isfinite(*v)) out.emplace_back("ranks/" + spread_key(p, st), *v);
    }
  if (slowest_rank) out.emplace_back("ranks/slowest_rank", static_cast<double>(*slowest_rank));
  for (const auto& g : kGauges) {
    const std::vector<double>& v = this->*g.field;
    for (size_t r = 0; r < v.size(); ++r)
      if (std::isfinite(v[r])) out.emplace_back(std::string(g.tag) + "/rank_" + std::to_string(r), v[r]);
  }
  return out;
}

bool holds_metrics_row(const Json& parsed) { return parsed.is_object() && parsed.contains("step"); }

std::string foreign_line_note(const std::string& line, int64_t line_number) {
  std::string shown;  // printable ASCII, at most 80 bytes: a log line, whatever the file held
  for (size_t i = 0; i < line.size() && shown.size() < 80; ++i) shown += line[i] >= 0x20 && line[i] < 0x7f ? line[i] : '?';
  return "line " + std::to_string(line_number) + ": '" + shown + "'";
}

std::vector<MetricsRow> read_metrics_rows(const std::string& path, std::vector<std::string>* foreign) {
  require_regular_file(path);
  std::ifstream in(path);
  LOCKSTEP_REQUIRE(in.good(), path + ": cannot be read");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::vector<MetricsRow> rows;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const Json j = Json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    if (!holds_metrics_row(j)) {
      if (i + 1 == lines.size()) break;  // being written, or cut by a kill
      if (foreign) foreign->push_back(foreign_line_note(lines[i], static_cast<int64_t>(i + 1)));
      continue;
    }
    try {
      rows.push_back(MetricsRow::from_json(j, path));
    } catch (const Error& e) {
      if (i + 1 == lines.size()) break;  // being written, or cut by a kill
      throw Error(path + ": line " + std::to_string(i + 1) + ": " + e.what());
    }
  }
  return rows;
}

}  // namespace lockstep::io
