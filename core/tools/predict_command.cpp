// predict_command: see predict_command.hpp.
#include "core/tools/predict_command.hpp"

#include <torch/torch.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/data/batch_maker.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/model/torch_errors.hpp"
#include "core/eval/mirror.hpp"
#include "core/eval/sequence_metrics.hpp"
#include "core/tools/inference_setup.hpp"
#include "core/tools/output_guard.hpp"
#include "core/train/weight_source.hpp"
#include "io/loader/epoch_loader.hpp"
#include "io/loader/sample_store.hpp"
#include "io/loader/shard_plan.hpp"
#include "io/records/predictions.hpp"
#include "io/records/transcripts.hpp"

namespace lockstep {
namespace {

// This rank's rows, in its reading order: labels, and per row WIDTH probabilities (and
// WIDTH classes with --predict.top-k).
struct Rows {
  int64_t width = 0;
  std::vector<int64_t> labels, top_class;
  std::vector<float> prob;
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};

Rows infer(Net& model, const io::RankReader& data, const BatchMaker& maker, const Config& cfg, int64_t classes) {
  Rows r;
  r.width = cfg.top_k > 0 ? std::min<int64_t>(cfg.top_k, classes) : classes;
  torch::NoGradGuard no_grad;
  model.eval();
  const auto loader = io::one_pass(data, cfg.batch_size, cfg.prefetch);
  while (const io::Batch* b = loader->next()) {
    const torch::Tensor x = maker.inputs(b->samples, b->size, b->labels.data());
    const torch::Tensor p =
        torch::softmax(eval_logits(model, x, maker.ragged_lengths(b->labels.data(), b->size), cfg.eval_hflip), 1);
    torch::Tensor values = p, classes_of;
    if (cfg.top_k > 0) std::tie(values, classes_of) = p.topk(r.width, 1);
    values = values.to(torch::kCPU).contiguous();
    r.prob.insert(r.prob.end(), values.data_ptr<float>(), values.data_ptr<float>() + values.numel());
    if (classes_of.defined()) {
      classes_of = classes_of.to(torch::kCPU, torch::kLong).contiguous();
      r.top_class.insert(r.top_class.end(), classes_of.data_ptr<int64_t>(),
                         classes_of.data_ptr<int64_t>() + classes_of.numel());
    }
    const int64_t w = data.spec().record_width();  // the class label leads each record
    for (int64_t i = 0; i < b->size; ++i) r.labels.push_back(b->labels[static_cast<size_t>(i * w)]);
  }
  return r;
}

// A run of rows of one rank that are consecutive in the split: global [start, start+count).
struct Piece {
  int64_t start = 0, count = 0, local = 0;
  int rank = 0;
};

std::vector<Piece> pieces_in_order(const std::vector<int64_t>& counts, int world) {
  std::vector<int64_t> offset(counts.size() + 1, 0);
  for (size_t s = 0; s < counts.size(); ++s) offset[s + 1] = offset[s] + counts[s];
  std::vector<Piece> out;
  for (int r = 0; r < world; ++r) {
    int64_t local = 0;
    for (const auto& range : io::plan_rank_ranges(counts, r, world)) {
      out.push_back({offset[static_cast<size_t>(range.shard)] + range.begin, range.size(), local, r});
      local += range.size();
    }
  }
  std::sort(out.begin(), out.end(), [](const Piece& a, const Piece& b) { return a.start < b.start; });
  return out;
}

// ---- sequence (CTC) models: greedy transcriptions ---------------------------------------

// This rank's rows in its reading order: greedy transcription, reference (data with
// sequence targets) and (LOG_PROB) per-frame log-probabilities; the sample index is set when
// rank 0 orders them. SPEC: the model's view of the data (its vocabulary).
std::vector<io::TranscriptRow> transcribe(Net& model, const io::RankReader& data, const io::DatasetSpec& spec,
                                          const BatchMaker& maker, const Config& cfg, bool log_prob) {
  const int64_t blank = static_cast<int64_t>(spec.tokens.size()), w = spec.record_width();
  const bool references = spec.sequence_targets();
  std::vector<io::TranscriptRow> out;
  torch::NoGradGuard no_grad;
  model.eval();
  const auto loader = io::one_pass(data, cfg.batch_size, cfg.prefetch);
  while (const io::Batch* b = loader->next()) {
    const torch::Tensor lengths = maker.lengths(b->labels.data(), b->size);
    torch::Tensor out_lengths;
    const torch::Tensor logits =
        model.forward_sequence(maker.inputs(b->samples, b->size, b->labels.data()), lengths, &out_lengths);
    const std::vector<TokenSeq> hyps = greedy_decode(logits, out_lengths, blank);
    const torch::Tensor frames = out_lengths.to(torch::kCPU, torch::kLong).contiguous();
    torch::Tensor lp;
    if (log_prob) lp = torch::log_softmax(logits.to(torch::kFloat), 2).to(torch::kCPU).contiguous();
    for (int64_t i = 0; i < b->size; ++i) {
      io::TranscriptRow r;
      r.hypothesis = hyps[static_cast<size_t>(i)];
      const int64_t* rec = b->labels.data() + i * w;
      if (references) {
        const int64_t* tok = io::record_targets(spec, rec);
        r.reference.assign(tok, tok + io::target_length(spec, rec));
      }
      r.frames = frames.data_ptr<int64_t>()[i];
      if (log_prob) {
        const float* p = lp.data_ptr<float>() + i * lp.size(1) * lp.size(2);
        r.log_prob.assign(p, p + r.frames * lp.size(2));
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

// Rows [FIRST, FIRST+N) as bytes: per row frames, hypothesis and reference lengths (int64),
// then the token ids and the log-probabilities.
std::vector<uint8_t> pack_rows(const std::vector<io::TranscriptRow>& rows, int64_t first, int64_t n) {
  std::vector<uint8_t> msg;
  const auto put = [&](const void* p, size_t bytes) {
    const auto* b = static_cast<const uint8_t*>(p);
    msg.insert(msg.end(), b, b + bytes);
  };
  for (int64_t i = first; i < first + n; ++i) {
    const io::TranscriptRow& r = rows[static_cast<size_t>(i)];
    const int64_t head[3] = {r.frames, static_cast<int64_t>(r.hypothesis.size()), static_cast<int64_t>(r.reference.size())};
    put(head, sizeof head);
    put(r.hypothesis.data(), 8 * r.hypothesis.size());
    put(r.reference.data(), 8 * r.reference.size());
    const int64_t lp = static_cast<int64_t>(r.log_prob.size());
    put(&lp, 8);
    put(r.log_prob.data(), 4 * r.log_prob.size());
  }
  return msg;
}

std::vector<io::TranscriptRow> unpack_rows(const std::vector<uint8_t>& msg, int64_t n, int from) {
  std::vector<io::TranscriptRow> rows(static_cast<size_t>(n));
  size_t at = 0;
  const auto get = [&](void* p, size_t bytes) {
    LOCKSTEP_REQUIRE(at + bytes <= msg.size(), fmt::format("rank {} sent {} bytes of transcriptions, too few", from, msg.size()));
    std::memcpy(p, msg.data() + at, bytes);
    at += bytes;
  };
  for (io::TranscriptRow& r : rows) {
    int64_t head[3], lp = 0;
    get(head, sizeof head);
    r.frames = head[0];
    r.hypothesis.resize(static_cast<size_t>(head[1]));
    r.reference.resize(static_cast<size_t>(head[2]));
    get(r.hypothesis.data(), 8 * r.hypothesis.size());
    get(r.reference.data(), 8 * r.reference.size());
    get(&lp, 8);
    r.log_prob.resize(static_cast<size_t>(lp));
    get(r.log_prob.data(), 4 * r.log_prob.size());
  }
  LOCKSTEP_REQUIRE(at == msg.size(), fmt::format("rank {} sent {} bytes of transcriptions, {} expected", from, msg.size(), at));
  return rows;
}

int predict_sequences(const Config& cfg, const MpiRuntime& mpi, Inference& in) {
  const auto t0 = Clock::now();
  const io::SplitEntry& split = in.manifest.split(cfg.eval_split, cfg.data_dir);
  const io::DatasetSpec& spec = in.spec;
  std::unique_ptr<io::TranscriptWriter> writer;
  const std::string& out = cfg.predict_out;  // .h5 (not .csv): rows carry their log-probabilities
  const bool log_prob = out.size() < 4 || out.compare(out.size() - 4, 4, ".csv") != 0;
  if (mpi.rank() == 0) {
    io::TranscriptFormat f;
    f.total = split.count();
    f.classes = static_cast<int64_t>(spec.tokens.size()) + 1;
    f.references = spec.sequence_targets();
    f.tokens = spec.tokens;
    f.checkpoint = cfg.checkpoint;
    f.split = cfg.eval_split;
    writer = std::make_unique<io::TranscriptWriter>(cfg.predict_out, f);
    LOCKSTEP_REQUIRE(writer->wants_log_prob() == log_prob, "predict: the output kind of " + out + " is ambiguous");
  }
  const std::vector<io::TranscriptRow> rows = transcribe(*in.model, *in.data, spec, *in.maker, cfg, log_prob);
  int64_t space = -1;
  for (size_t i = 0; i < spec.tokens.size(); ++i)
    if (spec.tokens[i] == " ") space = static_cast<int64_t>(i);
  ErrorCounts errors;
  const int64_t chunk = 1024;
  for (const Piece& piece : pieces_in_order(io::shard_counts(split), mpi.size())) {
    for (int64_t at = 0; at < piece.count; at += chunk) {
      const int64_t n = std::min(chunk, piece.count - at), local = piece.local + at;
      if (mpi.rank() != 0 && mpi.rank() != piece.rank) continue;
      if (mpi.rank() == piece.rank && piece.rank != 0) {
        const std::vector<uint8_t> msg = pack_rows(rows, local, n);
        mpi.send_bytes(msg.data(), msg.size(), 0, "transcriptions");
        continue;
      }
      std::vector<io::TranscriptRow> got =
          piece.rank == 0 ? std::vector<io::TranscriptRow>(rows.begin() + local, rows.begin() + local + n)
                          : unpack_rows(mpi.recv_bytes(piece.rank, "transcriptions"), n, piece.rank);
      for (int64_t i = 0; i < n; ++i) {
        io::TranscriptRow& r = got[static_cast<size_t>(i)];
        r.index = piece.start + at + i;
        if (spec.sequence_targets()) errors.add(r.hypothesis, r.reference, space);
      }
      writer->append(got);
    }
  }
  if (writer) writer->finish(errors.cer(), errors.wer());
  log::info0(fmt::format("predict {} (step {}) on {} split '{}': {} samples by {} rank(s) in {:.2f} s -> {} "
                         "(greedy transcriptions{}); {}",
                         cfg.checkpoint, in.src.step, cfg.data_dir, cfg.eval_split, split.count(), mpi.size(),
                         seconds_since(t0), cfg.predict_out, log_prob ? " and per-frame log-probabilities" : "",
                         spec.sequence_targets()
                             ? fmt::format("CER {:.4f} WER {:.4f} against the references", errors.cer(), errors.wer())
                             : "unlabelled data: no references to score against"));
  in.close();
  return kExitOk;
}

int predict_impl(const Config& cfg, const MpiRuntime& mpi) {
  const auto t0 = Clock::now();
  check_output("--predict.out", cfg.predict_out, {cfg.checkpoint, cfg.config_file}, cfg.force_output);
  Inference in = open_inference(cfg, mpi, [&](const io::Manifest& m) {
    if (m.spec.sequence_targets() && cfg.top_k > 0)
      throw UsageError("--predict.top-k is for class outputs; dataset '" + m.spec.name + "' has sequence targets "
                       "(predict writes its greedy transcriptions)");
  });
  if (in.spec.sequence_outputs()) {
    if (cfg.top_k > 0)
      throw UsageError("--predict.top-k is for class outputs; " + cfg.checkpoint + " is a CTC model (predict writes "
                       "its greedy transcriptions)");
    return predict_sequences(cfg, mpi, in);
  }
  const io::Manifest& manifest = in.manifest;
  const io::SplitEntry& split = manifest.split(cfg.eval_split, cfg.data_dir);
  const WeightSource& src = in.src;
  const io::DatasetSpec& spec = in.spec;
  const Rows rows = infer(*in.model, *in.data, *in.maker, cfg, spec.num_classes);

  // Rank 0 writes; every rank walks the same list of pieces, so sends and receives pair up.
  std::unique_ptr<io::PredictionWriter> writer;
  if (mpi.rank() == 0) {
    io::PredictionFormat f;
    f.total = split.count();
    f.classes = spec.num_classes;
    f.top_k = cfg.top_k > 0 ? rows.width : 0;
    f.labeled = manifest.spec.labeled;
    f.class_names = spec.class_names;
    f.checkpoint = cfg.checkpoint;
    f.split = cfg.eval_split;
    f.eval_hflip = cfg.eval_hflip;
    writer = std::make_unique<io::PredictionWriter>(cfg.predict_out, f);
  }
  const int64_t w = rows.width, chunk = 1 << 16;
  const bool top = cfg.top_k > 0;
  std::vector<int64_t> index;
  for (const Piece& piece : pieces_in_order(io::shard_counts(split), mpi.size())) {
    for (int64_t at = 0; at < piece.count; at += chunk) {
      const int64_t n = std::min(chunk, piece.count - at), local = piece.local + at;
      if (mpi.rank() != 0 && mpi.rank() != piece.rank) continue;
      if (mpi.rank() == piece.rank && piece.rank != 0) {  // labels | classes | probabilities
        std::vector<uint8_t> msg(static_cast<size_t>(n) * (8 + (top ? 8 * w : 0) + 4 * w));
        uint8_t* p = msg.data();
        std::memcpy(p, rows.labels.data() + local, 8 * n);
        p += 8 * n;
        if (top) {
          std::memcpy(p, rows.top_class.data() + local * w, 8 * n * w);
          p += 8 * n * w;
        }
        std::memcpy(p, rows.prob.data() + local * w, 4 * n * w);
        mpi.send_bytes(msg.data(), msg.size(), 0, "predictions");
        continue;
      }
      index.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) index[static_cast<size_t>(i)] = piece.start + at + i;
      if (piece.rank == 0) {
        writer->append(index.data(), rows.labels.data() + local, rows.prob.data() + local * w,
                       top ? rows.top_class.data() + local * w : nullptr, n);
        continue;
      }
      const std::vector<uint8_t> msg = mpi.recv_bytes(piece.rank, "predictions");
      LOCKSTEP_REQUIRE(msg.size() == static_cast<size_t>(n) * (8 + (top ? 8 * w : 0) + 4 * w),
                       fmt::format("rank {} sent {} bytes of predictions, expected {}", piece.rank, msg.size(),
                                   static_cast<size_t>(n) * (8 + (top ? 8 * w : 0) + 4 * w)));
      const auto* labels = reinterpret_cast<const int64_t*>(msg.data());
      const auto* classes = reinterpret_cast<const int64_t*>(msg.data() + 8 * n);
      const auto* prob = reinterpret_cast<const float*>(msg.data() + 8 * n + (top ? 8 * n * w : 0));
      writer->append(index.data(), labels, prob, top ? classes : nullptr, n);
    }
  }
  if (writer) writer->finish();
  log::info0(fmt::format("predict {} (step {}) on {} split '{}': {} samples by {} rank(s) in {:.2f} s -> {}{}{}",
                         cfg.checkpoint, src.step, cfg.data_dir, cfg.eval_split, split.count(), mpi.size(),
                         seconds_since(t0), cfg.predict_out,
                         top ? fmt::format(" (top {})", w) : " (every class's probability)",
                         cfg.eval_hflip ? ", averaged with mirrors (--eval.hflip)" : ""));
  in.close();
  return kExitOk;
}

}  // namespace

int run_prediction(const Config& cfg, const MpiRuntime& mpi) {
  return with_torch_errors([&] { return predict_impl(cfg, mpi); });
}

}  // namespace lockstep
