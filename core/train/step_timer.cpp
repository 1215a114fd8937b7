// step_timer: see step_timer.hpp.
#include "core/train/step_timer.hpp"

#include "core/base/error.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lockstep {

#ifdef LOCKSTEP_HAVE_CUDA
// Timing events, reused across collect() calls: a step records about six.
struct StepTimer::EventPool {
  std::vector<std::unique_ptr<at::cuda::CUDAEvent>> events;
  size_t used = 0;
  size_t record(torch::Device device) {
    if (used == events.size()) events.push_back(std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault));
    events[used]->record(c10::cuda::getCurrentCUDAStream(device.index()));
    return used++;
  }
  double seconds_between(size_t a, size_t b) const { return events[a]->elapsed_time(*events[b]) / 1000.0; }
  void wait_last() const {
    if (used > 0) events[used - 1]->synchronize();
  }
};
#else
struct StepTimer::EventPool {
  size_t record(torch::Device) { throw Error("StepTimer: CUDA timing in a build without CUDA"); }
  double seconds_between(size_t, size_t) const { return 0; }
  void wait_last() const {}
  size_t used = 0;
};
#endif

StepTimer::StepTimer(torch::Device device) : device_(device) {
  if (device_.is_cuda()) events_ = std::make_unique<EventPool>();
}

StepTimer::~StepTimer() {
  if (trace_) trace_->finish();  // catches its own errors
}

void StepTimer::record(Mark m) {
  m.host = Clock::now();
  if (trace_) m.begin ? trace_->begin_step(m.host) : trace_->mark(m.phase, m.host);
  if (events_) m.event = events_->record(device_);
  marks_.push_back(m);
}

void StepTimer::begin_step() { record(Mark{Phase::kData, {}, 0, true}); }

void StepTimer::mark(Phase p) { record(Mark{p, {}, 0, false}); }

void StepTimer::collect(Times* t) {
  if (events_) events_->wait_last();
  for (size_t i = 1; i < marks_.size(); ++i) {
    const Mark& m = marks_[i];
    if (m.begin) continue;  // the gap between steps (logging, checkpoints) is no phase
    const double s = events_ ? events_->seconds_between(marks_[i - 1].event, m.event)
                             : std::chrono::duration<double>(m.host - marks_[i - 1].host).count();
    switch (m.phase) {
      case Phase::kData: t->data_wait += s; break;
      case Phase::kForward: t->forward += s; break;
      case Phase::kBackward: t->backward += s; break;
      case Phase::kComm: t->exposed_comm += s; break;
      case Phase::kOptimizer: t->optimizer += s; break;
    }
  }
  marks_.clear();
  if (events_) events_->used = 0;
}

}  // namespace lockstep
