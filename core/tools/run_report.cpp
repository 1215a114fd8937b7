// run_report: see run_report.hpp.
#include "core/tools/run_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/base/error.hpp"
#include "core/config/enums.hpp"
#include "core/config/ini_text.hpp"
#include "io/records/metrics_row.hpp"
#include "io/records/run_outcome.hpp"
#include "io/records/svg_plot.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

namespace lockstep {
namespace {

using io::MetricsRow;
using io::RowKind;

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};

// Run I's colour: the ten above, then hues a golden angle apart (11 runs or more repeated
// the first colours: two runs drawn alike).
std::string colour(size_t i) {
  if (i < 10) return kColors[i];
  return fmt::format("hsl({:.0f},70%,{}%)", std::fmod(static_cast<double>(i) * 137.508, 360.0), i % 2 ? 35 : 50);
}

struct Run {
  std::string dir, name;
  std::vector<MetricsRow> rows;
  std::vector<io::Json> json;  // the rows as their metrics.jsonl objects: fields by name
  std::map<std::string, std::string> config;
  bool resumable = false;
  std::vector<std::string> foreign;  // metrics.jsonl's lines that are no row (metrics_row.hpp)
};

Run read_run(const std::string& dir) {
  Run r;
  r.dir = dir;
  r.name = dir;  // name_runs names it
  r.rows = io::read_metrics_rows(dir + "/metrics.jsonl", &r.foreign);
  for (const auto& row : r.rows) r.json.push_back(row.to_json());
  const std::string ini = dir + "/config.ini";
  if (io::path_exists(ini))
    for (const IniEntry& e : parse_ini(io::read_text_file(ini), ini)) r.config[e.key] = e.value;
  r.resumable = io::path_exists(dir + "/resumable");
  return r;
}

std::optional<double> field(const io::Json& row, const std::string& metric) {
  if (!row.contains(metric) || !row[metric].is_number()) return std::nullopt;
  const double v = io::json_as<double>(row[metric], metric);
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// The rows holding validations: eval and epoch rows, and the end row, whose scores are the
// final weights' (the only ones of a run stopped mid-epoch by --train.max-steps); one per step.
std::vector<size_t> validation_rows(const Run& r) {
  std::vector<size_t> out;
  std::set<int64_t> steps;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const RowKind k = r.rows[i].kind;
    if ((k == RowKind::kEval || k == RowKind::kEpoch || k == RowKind::kEnd) && steps.insert(r.rows[i].step).second)
      out.push_back(i);
  }
  return out;
}

using Curve = std::vector<std::pair<double, double>>;  // (step, value)
using Curves = std::vector<std::map<std::string, Curve>>;  // per run, per metric

// METRIC's curve: from the train rows when they carry it, else from the validations.
Curve curve(const Run& r, const std::string& metric) {
  Curve pts;
  for (size_t i = 0; i < r.rows.size(); ++i)
    if (r.rows[i].kind == RowKind::kTrain)
      if (const auto v = field(r.json[i], metric)) pts.emplace_back(static_cast<double>(r.rows[i].step), *v);
  if (pts.empty())
    for (size_t i : validation_rows(r))
      if (const auto v = field(r.json[i], metric)) pts.emplace_back(static_cast<double>(r.rows[i].step), *v);
  std::stable_sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return pts;
}

std::string best_metric(const Run& r) {
  const auto it = r.config.find("ckpt.best-metric");
  const std::string m = it == r.config.end() ? "val_f1" : it->second;
  return m == "none" ? "val_loss" : m;
}

bool lower_better(const std::string& metric) {
  BestMetric m = BestMetric::kValF1;
  return parse_enum(metric, &m) ? lower_is_better(m) : metric.find("loss") != std::string::npos;
}

struct Summary {
  std::string best = "-", test = "-", to_best = "-", speed = "-", ended;
};

std::string duration(double s) {
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

// The seconds the run's jobs trained until row AT: the gaps between consecutive rows of a
// job, a job starting at its start row (one without a time still ends the job before it).
// Time queued between jobs counts nothing, nor does a wall clock stepped back (between jobs:
// the first start's time subtracted from the best row's came out negative after a resume on
// a clock 2 h behind, a hostile finding; within one: that gap alone). Empty without a start row.
std::optional<double> seconds_until(const std::vector<MetricsRow>& rows, size_t at) {
  std::optional<double> total, last;  // LAST: the job's latest time (none right after a start without one)
  for (size_t i = 0; i <= at && i < rows.size(); ++i) {
    if (rows[i].kind == RowKind::kStart) {
      total = total.value_or(0);
      last = rows[i].unix_time ? std::optional<double>(*rows[i].unix_time) : std::nullopt;
      continue;
    }
    if (!rows[i].unix_time || !total) continue;
    if (last) *total += std::max(0.0, *rows[i].unix_time - *last);
    last = *rows[i].unix_time;
  }
  return total;
}

Summary summarize(const Run& r) {
  Summary s;
  int64_t last_step = 0;
  const MetricsRow* end = io::standing_end(r.rows);
  const MetricsRow* test = nullptr;
  std::vector<double> speeds;
  for (const auto& row : r.rows) {
    if (row.kind == RowKind::kTest) test = &row;
    if (row.kind == RowKind::kTrain && row.samples_per_s) speeds.push_back(*row.samples_per_s);
    last_step = std::max(last_step, row.step);
  }
  // The best validation score and when it came.
  const std::string metric = best_metric(r);
  const bool lower = lower_better(metric);
  std::optional<double> best;
  size_t at = 0;
  for (size_t i : validation_rows(r)) {
    const auto v = field(r.json[i], metric);
    if (v && (!best || (lower ? *v < *best : *v > *best))) best = v, at = i;
  }
  if (best) {
    s.best = fmt::format("{} {:.4f} (step {})", metric, *best, r.rows[at].step);
    if (const auto t = seconds_until(r.rows, at)) s.to_best = duration(*t);
  }
  if (test) {
    const auto& t = *test;
    if (t.test_cer || t.test_wer)
      s.test = fmt::format("cer {:.4f} wer {:.4f}", t.test_cer.value_or(NAN), t.test_wer.value_or(NAN));
    else if (t.test_acc)
      s.test = fmt::format("acc {:.4f} f1 {:.4f}", *t.test_acc, t.test_f1.value_or(NAN));
  }
  if (end && end->samples_per_s) {
    s.speed = fmt::format("{:.0f}", *end->samples_per_s);
  } else if (!speeds.empty()) {
    std::sort(speeds.begin(), speeds.end());
    s.speed = fmt::format("{:.0f}", speeds[speeds.size() / 2]);
  }
  if (end)
    s.ended = end->stopped_early.empty() ? fmt::format("completed at step {}", end->step)
                                         : fmt::format("stopped early at step {}: {}", end->step, end->stopped_early);
  else if (r.resumable)
    s.ended = fmt::format("resumable at step {} (stopped by a signal)", last_step);
  else
    s.ended = fmt::format("no end row: running, or killed, at step {}", last_step);
  return s;
}

// The config keys whose values differ between the runs that have a config.ini (a key one
// of them lacks counts).
std::vector<std::string> differing_keys(const std::vector<Run>& runs) {
  std::set<std::string> keys;
  for (const auto& r : runs)
    for (const auto& kv : r.config) keys.insert(kv.first);
  std::vector<std::string> out;
  for (const auto& k : keys) {
    if (k == "run.dir") continue;
    std::set<std::string> values;
    for (const auto& r : runs) {
      if (r.config.empty()) continue;  // no config.ini (a run killed before writing it): no verdict
      const auto it = r.config.find(k);
      values.insert(it == r.config.end() ? "(unset)" : it->second);
    }
    if (values.size() > 1) out.push_back(k);
  }
  return out;
}

using Table = std::vector<std::vector<std::string>>;  // the header row, then one row per run

std::string markdown(const Table& t) {
  std::string out;
  for (size_t r = 0; r < t.size(); ++r) {
    out += "|";
    for (const auto& c : t[r]) {
      std::string text;
      for (char ch : c) text += ch == '|' ? std::string("\\|") : std::string(1, ch);
      out += " " + text + " |";
    }
    out += "\n";
    if (r == 0) {
      out += "|";
      for (size_t c = 0; c < t[0].size(); ++c) out += "---|";
      out += "\n";
    }
  }
  return out;
}

std::string html_table(const Table& t) {
  std::string out;
  for (size_t r = 0; r < t.size(); ++r) {
    out += "<tr>";
    for (const auto& c : t[r]) out += (r == 0 ? "<th>" : "<td>") + io::xml_escape(c) + (r == 0 ? "</th>" : "</td>");
    out += "</tr>\n";
  }
  return out;
}

std::string html_page(const std::vector<Run>& runs, const std::vector<std::string>& metrics, const Curves& curves,
                      const Table& table) {
  io::Json data = {{"metrics", metrics}, {"runs", io::Json::array()}};
  for (size_t i = 0; i < runs.size(); ++i) {
    io::Json series = io::Json::object();
    for (const auto& m : metrics) {
      io::Json pts = io::Json::array();
      for (const auto& [x, y] : curves[i].at(m)) pts.push_back({x, y});
      series[m] = pts;
    }
    data["runs"].push_back({{"name", runs[i].name}, {"color", colour(i)}, {"series", series}});
  }
  // No '<' inside the script: "</script" ended it and "<!--" in a run's name broke it (a
  // hostile finding); JSON's \u003c is the same character to the script.
  std::string json;
  for (const char c : io::dump_json(data)) json += c == '<' ? std::string("\\u003c") : std::string(1, c);
  const std::string rows = html_table(table);
  return R"(<!doctype html>
<html><head><meta charset="utf-8"><title>lockstep report</title>
<style>body{font-family:sans-serif;margin:16px}table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}#runs label{margin-right:14px;white-space:nowrap}
.chart{display:inline-block;margin:8px 12px 0 0}</style></head><body>
<h2>lockstep report</h2>
<table>
)" + rows + R"(</table>
<p id="runs"></p><div id="charts"></div>
<script>
const DATA = )" + json + R"(;
const hidden = new Set((location.hash.match(/hide=([^&]*)/) || [, ""])[1].split(",").filter(Boolean).map(decodeURIComponent));
const NS = "http://www.w3.org/2000/svg";
function el(tag, attrs, parent) { const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]); if (parent) parent.appendChild(e); return e; }
function draw() {
  const box = document.getElementById("charts"); box.innerHTML = "";
  for (const m of DATA.metrics) {
    const W = 520, H = 320, L = 60, R = 12, T = 28, B = 40;
    const shown = DATA.runs.filter(r => !hidden.has(r.name) && r.series[m].length);
    const pts = shown.flatMap(r => r.series[m]);
    const svg = el("svg", {width: W, height: H, class: "chart", "data-metric": m}, box);
    el("rect", {x: 0, y: 0, width: W, height: H, fill: "white"}, svg);
    el("text", {x: W / 2, y: 18, "text-anchor": "middle", "font-size": 14}, svg).textContent = m;
    el("rect", {x: L, y: T, width: W - L - R, height: H - T - B, fill: "none", stroke: "#888"}, svg);
    if (!pts.length) continue;
    let x0 = Math.min(...pts.map(p => p[0])), x1 = Math.max(...pts.map(p => p[0]));
    let y0 = Math.min(...pts.map(p => p[1])), y1 = Math.max(...pts.map(p => p[1]));
    if (x1 <= x0) x1 = x0 + 1; if (y1 <= y0) { y1 = y0 + 1; } const pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
    const px = x => L + (W - L - R) * (x - x0) / (x1 - x0), py = y => H - B - (H - T - B) * (y - y0) / (y1 - y0);
    for (let i = 0; i <= 4; i++) {
      const xv = x0 + (x1 - x0) * i / 4, yv = y0 + (y1 - y0) * i / 4;
      el("text", {x: px(xv), y: H - B + 14, "text-anchor": "middle", "font-size": 10}, svg).textContent = Math.round(xv);
      el("text", {x: L - 4, y: py(yv) + 3, "text-anchor": "end", "font-size": 10}, svg).textContent = yv.toPrecision(3);
    }
    el("text", {x: (W + L) / 2, y: H - 8, "text-anchor": "middle", "font-size": 11}, svg).textContent = "step";
    for (const r of shown)
      el("polyline", {fill: "none", stroke: r.color, "stroke-width": 2.5, "data-run": r.name,
                      points: r.series[m].map(p => px(p[0]) + "," + py(p[1])).join(" ")}, svg);
  }
}
const runs = document.getElementById("runs");
for (const r of DATA.runs) {
  const label = document.createElement("label"), box = document.createElement("input");
  box.type = "checkbox"; box.checked = !hidden.has(r.name);
  box.onchange = () => { box.checked ? hidden.delete(r.name) : hidden.add(r.name); draw(); };
  const sw = document.createElement("span"); sw.textContent = "\u25A0 "; sw.style.color = r.color;
  label.append(box, sw, r.name); runs.appendChild(label);
}
draw();
</script></body></html>
)";
}

// Runs named by their directory's name, or where two share it (lr=0.1 of two sweeps) by as
// many trailing path parts as tell them apart.
void name_runs(std::vector<Run>& runs) {
  std::vector<std::vector<std::string>> parts(runs.size());
  for (size_t i = 0; i < runs.size(); ++i)
    // "../../b/x/run" -> /.../b/x/run; a link keeps the name the user gave it.
    for (std::string d = std::filesystem::absolute(runs[i].dir).lexically_normal().string(); !d.empty();) {
      while (d.size() > 1 && d.back() == '/') d.pop_back();
      const auto slash = d.find_last_of('/');
      parts[i].push_back(slash == std::string::npos ? d : d.substr(slash + 1));
      if (slash == std::string::npos || slash == 0) break;
      d.resize(slash);
    }
  std::vector<size_t> depth(runs.size(), 1);
  for (bool again = true; again;) {
    again = false;
    std::map<std::string, std::vector<size_t>> by_name;
    for (size_t i = 0; i < runs.size(); ++i) {
      std::string name;
      for (size_t k = std::min(depth[i], parts[i].size()); k > 0; --k) name += (name.empty() ? "" : "/") + parts[i][k - 1];
      runs[i].name = name.empty() ? runs[i].dir : name;
      by_name[runs[i].name].push_back(i);
    }
    for (const auto& [name, idx] : by_name)
      if (idx.size() > 1)
        for (const size_t i : idx)
          if (depth[i] < parts[i].size()) ++depth[i], again = true;
  }
}

// The numeric fields any run's rows hold (what --metric can name).
std::string metric_names(const std::vector<Run>& runs) {
  std::set<std::string> names;
  for (const auto& r : runs)
    for (const auto& row : r.json)
      for (const auto& [k, v] : row.items())
        if (v.is_number() && k != "step" && k != "epoch") names.insert(k);
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::vector<std::string> find_runs(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  std::set<std::string> seen;  // a run given twice (or through a link) is one run
  const auto add = [&](const std::string& dir) {
    if (seen.insert(io::canonical_path(dir)).second) out.push_back(dir);
  };
  for (const auto& a : args) {
    if (io::path_exists(a + "/metrics.jsonl")) {
      add(a);
      continue;
    }
    if (!io::is_directory(a)) throw UsageError(a + ": not a run directory (no metrics.jsonl) or a directory of them");
    std::vector<std::string> names = io::list_dir(a);
    std::sort(names.begin(), names.end());
    size_t found = 0;
    for (const auto& n : names)
      if (io::is_directory(a + "/" + n) && io::path_exists(a + "/" + n + "/metrics.jsonl")) add(a + "/" + n), ++found;
    if (found == 0) throw UsageError(a + ": neither a run directory (no metrics.jsonl) nor a directory of run directories");
  }
  return out;
}

RunsReport compare_runs(const std::vector<std::string>& run_dirs, const std::vector<std::string>& metrics) {
  std::vector<Run> runs;
  for (const auto& d : run_dirs) runs.push_back(read_run(d));
  name_runs(runs);
  RunsReport rep;
  for (const auto& r : runs)
    for (const auto& line : r.foreign)
      rep.notes.push_back(r.dir + "/metrics.jsonl: " + line + " is no row lockstep writes: left out");
  rep.metrics = metrics;
  if (rep.metrics.empty()) {
    rep.metrics.push_back("train_loss");
    for (const auto& r : runs)
      if (std::find(rep.metrics.begin(), rep.metrics.end(), best_metric(r)) == rep.metrics.end())
        rep.metrics.push_back(best_metric(r));
  }
  const std::vector<std::string> keys = differing_keys(runs);
  Table table{{"run", "overrides", "best validation", "test", "time to best", "samples/s", "ended"}};
  for (const auto& r : runs) {
    std::string over;
    for (const auto& k : keys) {
      const auto it = r.config.find(k);
      over += (over.empty() ? "" : " ") + k + "=" + (it == r.config.end() ? "(unset)" : it->second);
    }
    const Summary s = summarize(r);
    if (r.config.empty()) over = "(no config.ini)";
    table.push_back({r.name, over.empty() ? "-" : over, s.best, s.test, s.to_best, s.speed, s.ended});
  }
  rep.table = markdown(table);
  Curves curves(runs.size());  // once, for the SVG and the page
  for (size_t i = 0; i < runs.size(); ++i)
    for (const auto& m : rep.metrics) curves[i][m] = curve(runs[i], m);
  // A metric named on purpose that no run has (a typo) drew an empty chart, exit 0.
  for (const auto& m : metrics)
    if (std::all_of(curves.begin(), curves.end(), [&](const auto& c) { return c.at(m).empty(); }))
      throw UsageError("--metric " + m + ": no run has it (the rows hold " + metric_names(runs) + ")");
  std::vector<io::Chart> charts;
  for (const auto& m : rep.metrics) {
    io::Chart c;
    c.title = m;
    c.x_label = "step";
    c.y_label = m;
    c.log_x = false;
    double lo = 0;
    bool any = false;
    for (size_t i = 0; i < runs.size(); ++i) {
      io::PlotSeries s;
      s.name = runs[i].name;
      s.color = colour(i);
      for (const auto& [x, y] : curves[i].at(m)) {
        s.x.push_back(x), s.y.push_back(y);
        lo = any ? std::min(lo, y) : y;
        any = true;
      }
      s.points = s.x.size() == 1;
      c.series.push_back(std::move(s));
    }
    c.y_min = std::min(0.0, lo);
    charts.push_back(std::move(c));
  }
  rep.svg = io::svg_charts(charts, 460, 320);
  rep.html = html_page(runs, rep.metrics, curves, table);
  return rep;
}

}  // namespace lockstep
