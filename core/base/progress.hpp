// progress: the text of rank 0's terminal progress bar (log::progress0 draws it) and of
// durations. Pure, so tests pin the format.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

struct Progress {
  int64_t epoch = 1, epochs = 1;  // 1-based
  int64_t step = 0, steps = 1;    // within the epoch, done / total
  double loss = 0.0, accuracy = 0.0, samples_per_s = 0.0;
  double eta_s = -1.0;  // of the whole run; < 0: unknown
};

// "epoch 2/15 [#########-----------]  203/468 loss 0.3121 acc 0.887 1043 samples/s ETA 12:04"
std::string progress_line(const Progress& p, int bar_width = 24);
// "1:02:03" or "12:04"; "--:--" when negative.
std::string format_duration(double seconds);

}  // namespace lockstep
