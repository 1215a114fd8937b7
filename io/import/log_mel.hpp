// log_mel: the speech features `lockstep shard --input audio:MANIFEST` stores, computed
// in plain C++ at import (io links no torch; tests/e2e/speech.sh checks them against a
// torch.fft reference to 1e-3).
//
// Parameters (the usual ASR front-end, documented in docs/sequences.md):
//   16 kHz mono input; frames of 400 samples (25 ms) every 160 (10 ms), no padding, so a
//   clip of S >= 400 samples has 1 + (S - 400) / 160 frames; Hann window (periodic) over
//   the frame, zero-padded at its end to a 512-point FFT (Kaldi's framing; torch.stft
//   with win_length < n_fft would centre the window in 512 samples instead); power spectrum; MELS (40) triangular filters on the HTK mel scale
//   (mel = 2595 log10(1 + f/700)) spanning 0..8000 Hz, unnormalised (peak 1);
//   feature = ln(mel energy + 1e-6). Output [MELS, frames], channels first.
#pragma once

#include <cstdint>
#include <vector>

namespace lockstep::io {

struct LogMelOptions {
  int sample_rate = 16000;
  int window = 400, hop = 160, fft = 512;
  int mels = 40;
  double f_min = 0.0, f_max = 8000.0;
};

class LogMel {
 public:
  explicit LogMel(const LogMelOptions& opt = {});
  int64_t frames(int64_t samples) const;  // 0 when shorter than one window
  // WAVE (SAMPLES values) -> OUT [mels, STRIDE] row-major, the first frames(samples)
  // columns written (the rest untouched).
  void compute(const float* wave, int64_t samples, float* out, int64_t stride) const;
  const LogMelOptions& options() const { return opt_; }

 private:
  LogMelOptions opt_;
  std::vector<double> window_;
  std::vector<std::vector<std::pair<int, double>>> filters_;  // per mel: (fft bin, weight)
};

}  // namespace lockstep::io
