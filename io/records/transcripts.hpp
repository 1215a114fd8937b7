// transcripts: the file `lockstep predict` writes for a sequence (CTC) model, in sample
// order, by extension:
//   .csv  index,transcript[,reference]   texts quoted as CSV ("" for a quote inside)
//   .h5   /index int64 [N], /transcript and /reference (variable-length UTF-8 strings),
//         /frames int64 [N] (each row's valid output frames), /log_prob float32 [F, C]: the
//         per-frame log-probabilities of every row, row after row (row i's frames start at
//         the sum of /frames before it; F = that sum, C = tokens + 1, blank last);
//         attributes checkpoint, split, tokens (newline-separated), cer and wer (with
//         references).
// Rows arrive in order through append(); the file appears under its name only at finish()
// (temp file, fsync, rename): a failed prediction leaves nothing half-written.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lockstep::io {

struct TranscriptFormat {
  int64_t total = 0;                // rows
  int64_t classes = 0;              // per-frame outputs (tokens + blank)
  bool references = false;          // a reference transcript per row
  std::vector<std::string> tokens;  // token id -> text
  std::string checkpoint, split;    // recorded in the .h5
};

// One row: its sample index, token ids, and (.h5) FRAMES x classes log-probabilities.
struct TranscriptRow {
  int64_t index = 0;
  std::vector<int64_t> hypothesis, reference;
  int64_t frames = 0;
  std::vector<float> log_prob;
};

class TranscriptWriter {
 public:
  // Throws UsageError when PATH is neither .csv nor .h5.
  TranscriptWriter(const std::string& path, TranscriptFormat format);
  ~TranscriptWriter();
  TranscriptWriter(const TranscriptWriter&) = delete;
  TranscriptWriter& operator=(const TranscriptWriter&) = delete;

  bool wants_log_prob() const;  // .h5: rows carry their log-probabilities
  void append(const std::vector<TranscriptRow>& rows);
  // CER and WER over every row (recorded in the .h5 when there are references).
  void finish(double cer, double wer);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Token ids as text (concatenated token texts; an id outside TOKENS as "?").
std::string token_text(const std::vector<int64_t>& ids, const std::vector<std::string>& tokens);

}  // namespace lockstep::io
