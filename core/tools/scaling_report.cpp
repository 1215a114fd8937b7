// scaling_report: see scaling_report.hpp.
#include "core/tools/scaling_report.hpp"

#include <fmt/format.h>

#include "core/base/error.hpp"
#include "core/tools/scaling_model.hpp"
#include "io/records/svg_plot.hpp"
#include "io/util/json_io.hpp"

namespace lockstep {

ScalingReport scaling_report(const io::Sweep& sweep, const std::string& dir) {
  const io::SweepRun& base = sweep.runs.front();
  if (base.ranks != 1)
    throw UsageError(dir + ": the sweep has no 1-rank run (ranks-1/), the baseline of speed-up and efficiency");
  const bool strong = sweep.mode == "strong";

  // Calibrate the model at the largest run with an all-reduce timing.
  const io::SweepRun* cal = nullptr;
  for (const auto& r : sweep.runs)
    if (r.ranks >= 2 && r.big_seconds > 0) cal = &r;
  std::string model_note;
  RingModel model;
  bool have_model = false;
  if (cal && base.params > 0) {
    model = calibrate_ring(AllreduceSample{cal->ranks, cal->small_bytes, cal->small_seconds, cal->big_bytes,
                                           cal->big_seconds},
                           base.wire_bytes > 0 ? base.wire_bytes : 4.0 * static_cast<double>(base.params),
                           base.step_seconds, strong, std::max(1, cal->buckets));
    calibrate_exposed(model, cal->ranks, cal->step_seconds);
    have_model = true;
    model_note = "ring all-reduce model calibrated at " + std::to_string(cal->ranks) + " ranks on " +
                 std::to_string(cal->hosts) + " host(s): latency " + fmt::format("{:.1f}", model.alpha * 1e6) + " us/step, bandwidth " +
                 fmt::format("{:.2f}", model.beta / 1e9) + " GB/s, gradient " + fmt::format("{:.2f}", model.bytes / 1e6) + " MB, " +
                 fmt::format("{:.0f}", 100 * model.exposed) + "% of the all-reduce exposed, " + fmt::format("{:.2f}", model.overhead * 1e3) +
                 " ms/step other overhead (model: core/tools/scaling_model.hpp, docs/scaling.md)";
  }

  std::string md = "# Scaling sweep: " + dir + " (" + sweep.mode + " scaling)\n\n";
  md += "| ranks | hosts | global batch | samples/s | speed-up | efficiency | exposed comm | model efficiency |\n";
  md += "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : sweep.runs) {
    const double speedup = r.samples_per_s / base.samples_per_s;
    md += "| " + std::to_string(r.ranks) + " | " + (r.hosts > 0 ? std::to_string(r.hosts) : "-") + " | " +
          std::to_string(r.global_batch) + " | " + fmt::format("{:.0f}", r.samples_per_s) + " | " + fmt::format("{:.2f}", speedup) + "x | " +
          fmt::format("{:.1f}", 100 * speedup / r.ranks) + "% | " + fmt::format("{:.1f}", 100 * r.exposed_share) + "% | " +
          (have_model ? fmt::format("{:.1f}", 100 * model.efficiency(r.ranks)) + "%" : "-") + " |\n";
  }
  io::Chart tput{"throughput", "ranks", "samples/s", {}, 0, 0};
  io::Chart eff{"efficiency (" + sweep.mode + " scaling)", "ranks", "efficiency", {}, 0, 1.05};
  io::PlotSeries measured{"measured", {}, {}, "#1f77b4", true, true, false};
  io::PlotSeries measured_eff = measured;
  for (const auto& r : sweep.runs) {
    measured.x.push_back(r.ranks);
    measured.y.push_back(r.samples_per_s);
    measured_eff.x.push_back(r.ranks);
    measured_eff.y.push_back(r.samples_per_s / base.samples_per_s / r.ranks);
  }
  const double top_ranks = have_model ? 1024 : sweep.runs.back().ranks;
  io::PlotSeries ideal{"ideal", {1, top_ranks}, {base.samples_per_s, base.samples_per_s * top_ranks}, "#aaaaaa",
                       true, false, true};
  tput.series.push_back(ideal);
  tput.series.push_back(measured);
  eff.series.push_back(measured_eff);
  if (have_model) {
    io::PlotSeries pt{"ring model", {}, {}, "#d62728", true, false, true}, pe = pt;
    md += "\n" + model_note + ". Predicted:\n\n| ranks |";
    std::string sep = "|---:|", row = "| efficiency |", rate = "| samples/s |";
    int below80 = 0, below50 = 0;
    for (int n = 1; n <= 1024; n *= 2) {
      const double e = model.efficiency(n);
      const double sps = e * n * base.samples_per_s;
      pt.x.push_back(n);
      pt.y.push_back(sps);
      pe.x.push_back(n);
      pe.y.push_back(e);
      md += " " + std::to_string(n) + " |";
      sep += "---:|";
      row += " " + fmt::format("{:.0f}", 100 * e) + "% |";
      rate += " " + fmt::format("{:.0f}", sps) + " |";
      if (e < 0.8 && below80 == 0) below80 = n;
      if (e < 0.5 && below50 == 0) below50 = n;
    }
    md += "\n" + sep + "\n" + row + "\n" + rate + "\n\n";
    md += below80 ? "The model puts efficiency below 80% from " + std::to_string(below80) + " ranks" +
                        (below50 ? " and below 50% from " + std::to_string(below50) : std::string()) + ".\n"
                  : "The model keeps efficiency at or above 80% up to 1024 ranks.\n";
    tput.series.push_back(pt);
    eff.series.push_back(pe);
  } else {
    md += "\nNo all-reduce timing (doctor.json at 2+ ranks): no model prediction.\n";
  }
  std::string model_json;
  if (have_model)
    model_json = io::dump_json(io::Json{{"calibrated_at_ranks", cal->ranks}, {"alpha_s", model.alpha},
                                        {"beta_bytes_per_s", model.beta}, {"gradient_bytes", model.bytes},
                                        {"buckets", model.buckets}, {"t1_step_s", model.t1},
                                        {"exposed", model.exposed}, {"overhead_s", model.overhead},
                                        {"strong", model.strong}}) + "\n";
  return ScalingReport{md, io::svg_charts({tput, eff}), model_json};
}

}  // namespace lockstep
