// epoch_stats: see epoch_stats.hpp.
#include "core/train/epoch_stats.hpp"

#include <fmt/format.h>

#include <torch/torch.h>

#include <cmath>

#include "core/base/error.hpp"
#include "io/util/json_io.hpp"

namespace lockstep {

double WindowStats::loss() const {
  return finite_steps > 0 ? loss_sum / static_cast<double>(finite_steps) : std::nan("");
}

double WindowStats::acc() const { return samples > 0 ? correct / samples : std::nan(""); }
double WindowStats::samples_per_s() const { return samples > 0 && times.seconds > 0 ? samples / times.seconds : 0; }

WindowStats& WindowStats::operator+=(const WindowStats& o) {
  steps += o.steps;
  finite_steps += o.finite_steps;
  loss_sum += o.loss_sum;
  correct += o.correct;
  samples += o.samples;
  times += o.times;
  return *this;
}

std::string WindowStats::to_json() const {
  io::Json j{{"steps", steps},       {"finite_steps", finite_steps},  {"loss_sum", loss_sum},
                   {"correct", correct},   {"samples", samples},            {"seconds", times.seconds},
                   {"data_wait", times.data_wait}, {"forward", times.forward}, {"backward", times.backward},
                   {"exposed_comm", times.exposed_comm}, {"optimizer", times.optimizer}};
  return io::dump_json(j);
}

WindowStats WindowStats::from_json(const std::string& json, const std::string& what) {
  WindowStats w;
  const std::string ctx = what + ": malformed epoch statistics";
  try {
    const io::Json j = io::Json::parse(json);
    w.steps = io::json_get<int64_t>(j, "steps", ctx);
    w.finite_steps = io::json_get<int64_t>(j, "finite_steps", ctx);
    w.loss_sum = io::json_get<double>(j, "loss_sum", ctx);
    w.correct = io::json_get<double>(j, "correct", ctx);
    w.samples = io::json_get<double>(j, "samples", ctx);
    w.times.seconds = io::json_get<double>(j, "seconds", ctx);
    w.times.data_wait = io::json_get<double>(j, "data_wait", ctx);
    w.times.forward = io::json_get<double>(j, "forward", ctx);
    w.times.backward = io::json_get<double>(j, "backward", ctx);
    w.times.exposed_comm = io::json_get<double>(j, "exposed_comm", ctx);
    w.times.optimizer = io::json_get<double>(j, "optimizer", ctx);
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + ": malformed epoch statistics (" + e.what() + ")");
  }
  LOCKSTEP_REQUIRE(w.steps >= 0 && w.finite_steps >= 0 && w.finite_steps <= w.steps && std::isfinite(w.loss_sum),
                   what + ": inconsistent epoch statistics");
  return w;
}

LogWindow::LogWindow(int64_t global_batch, int world, bool skip_nonfinite)
    : global_batch_(global_batch), world_(world), skip_nonfinite_(skip_nonfinite) {}

void LogWindow::add_step(const torch::Tensor& loss, const torch::Tensor& correct) {
  losses_.push_back(loss.detach());
  correct_.push_back(correct.detach());
}

WindowStats LogWindow::peek(const AllreduceSum& sum, double lr) const {
  WindowStats out;
  out.steps = steps();
  out.times = times_;
  std::vector<double> v(losses_.size() + 1, 0.0);  // per-step loss sums, then the correct count
  if (!losses_.empty()) {
    const torch::Tensor l = torch::stack(losses_).to(torch::kCPU, torch::kDouble).contiguous();
    std::copy(l.data_ptr<double>(), l.data_ptr<double>() + l.numel(), v.begin());
    v.back() = torch::stack(correct_).sum().to(torch::kCPU, torch::kDouble).item<double>();
  }
  sum(v.data(), static_cast<int>(v.size()));  // every rank takes part, even with an empty window
  const double world = world_;
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      if (skip_nonfinite_) continue;
      // "nan" whatever its sign bit ("-nan" did not match what the docs quote)
      throw Error("training loss is " + (std::isnan(v[i]) ? std::string("nan") : fmt::format("{:g}", v[i] / world)) +
                  " at step " +
                  std::to_string(first_step_ + static_cast<int64_t>(i)) + " (lr " + fmt::format("{:g}", lr) +
                  "; lower --train.lr, or try --train.clip-norm)");
    }
    out.loss_sum += v[i] / world;
    ++out.finite_steps;
  }
  out.correct = v.back();
  out.samples = static_cast<double>(out.steps * global_batch_);
  return out;
}

WindowStats LogWindow::close(const AllreduceSum& sum, double lr, int64_t next_first_step) {
  const WindowStats out = peek(sum, lr);
  restart(next_first_step);
  return out;
}

void LogWindow::restart(int64_t first_step) {
  losses_.clear();
  correct_.clear();
  times_ = Times{};
  first_step_ = first_step;
}

std::pair<double, double> LogWindow::local_means(int64_t local_batch) const {
  if (losses_.empty()) return {std::nan(""), std::nan("")};
  const double loss = torch::stack(losses_).mean().item<double>();
  const double acc = torch::stack(correct_).sum().item<double>() /
                     static_cast<double>(static_cast<int64_t>(losses_.size()) * local_batch);
  return {loss, acc};
}

}  // namespace lockstep
