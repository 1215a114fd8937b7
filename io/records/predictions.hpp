// predictions: the file `lockstep predict` writes, in sample order, by extension:
//   .csv  index[,label],pred[,pred_name],p_0..p_{C-1}        (all class probabilities)
//         index[,label],top1[,top1_name],p_top1,...,topK,...  (--predict.top-k K)
//   .h5   /index int64 [N], /pred int64 [N], /prob float32 [N,C] or /topk_class int64
//         [N,K] + /topk_prob float32 [N,K], /label int64 [N] for labeled data; attributes
//         checkpoint, split, eval_hflip (0 or 1), class_names.
// Rows arrive in order through append(); the file appears under its name only at
// finish() (temp file, fsync, rename), so a failed prediction leaves nothing half-written.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lockstep::io {

struct PredictionFormat {
  int64_t total = 0;    // rows
  int64_t classes = 0;
  int64_t top_k = 0;    // 0: every class's probability
  bool labeled = false;
  std::vector<std::string> class_names;  // may be empty
  std::string checkpoint, split;         // recorded in the file
  bool eval_hflip = false;               // averaged with mirrors (--eval.hflip): recorded
};

class PredictionWriter {
 public:
  // Throws UsageError when PATH is neither .csv nor .h5.
  PredictionWriter(const std::string& path, PredictionFormat format);
  ~PredictionWriter();
  PredictionWriter(const PredictionWriter&) = delete;
  PredictionWriter& operator=(const PredictionWriter&) = delete;

  // N rows: global sample indices, labels (ignored when unlabeled), and per row either
  // CLASSES probabilities or TOP_K (class, probability) pairs (TOP_CLASS, TOP_PROB).
  void append(const int64_t* index, const int64_t* label, const float* prob, const int64_t* top_class, int64_t n);
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::io
