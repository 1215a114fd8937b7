// evaluate_command: see evaluate_command.hpp.
#include "core/tools/evaluate_command.hpp"

#include <torch/torch.h>
#include <fmt/format.h>

#include "core/base/error.hpp"
#include "core/eval/eval_report.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/base/clock.hpp"
#include "core/model/torch_errors.hpp"
#include "core/tools/inference_setup.hpp"
#include "core/tools/output_guard.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

namespace lockstep {
namespace {

int evaluate_impl(const Config& cfg, const MpiRuntime& mpi) {
  if (!cfg.eval_out.empty()) check_output("--eval.out", cfg.eval_out, {cfg.checkpoint, cfg.config_file}, cfg.force_output);
  Inference in = open_inference(cfg, mpi, [&](const io::Manifest& m) {
    if (!m.spec.labeled && !m.spec.sequence_targets())
      throw UsageError(cfg.data_dir + ": dataset '" + m.spec.name + "' has no labels to evaluate against "
                       "(lockstep predict writes predictions for unlabelled data)");
  });
  const io::Manifest& manifest = in.manifest;
  const WeightSource& src = in.src;
  const auto t0 = Clock::now();
  const EvalResult ev = evaluate(*in.model, *in.data, *in.maker, cfg.batch_size, cfg.prefetch, manifest.spec.num_classes, mpi, cfg.eval_hflip);
  if (ev.sequence) {
    log::info0(fmt::format("evaluate {} (step {}) on {} split '{}': CER {:.4f} WER {:.4f} loss {:.4f} over {} samples{}, "
                           "{} rank(s), {:.2f} s",
                           cfg.checkpoint, src.step, cfg.data_dir, cfg.eval_split, ev.cer, ev.wer, ev.loss, ev.count,
                           unaligned_note(ev), mpi.size(), seconds_since(t0)));
    if (!cfg.eval_out.empty() && mpi.rank() == 0)
      io::write_file_atomic(cfg.eval_out, io::dump_json(io::Json{{"checkpoint", cfg.checkpoint}, {"step", src.step},
                                                                 {"split", cfg.eval_split}, {"samples", ev.count},
                                                                 {"loss", ev.loss}, {"cer", ev.cer}, {"wer", ev.wer},
                                                                 {"unaligned", ev.unaligned}, {"ranks", mpi.size()}}) + "\n");
    in.close();
    return kExitOk;
  }
  log::info0("evaluate " + cfg.checkpoint + " (step " + std::to_string(src.step) + ") on " + cfg.data_dir +
             " split '" + cfg.eval_split + "'" + (cfg.eval_hflip ? " averaged with mirrors (--eval.hflip)" : "") + ": accuracy " + fmt::format("{:.4f}", ev.accuracy) + " macro-F1 " +
             fmt::format("{:.4f}", ev.macro_f1) + " loss " + fmt::format("{:.4f}", ev.loss) + " over " + std::to_string(ev.count) +
             " samples, " + std::to_string(mpi.size()) + " rank(s), " + fmt::format("{:.2f}", seconds_since(t0)) + " s");
  log_eval_tables(ev, manifest.spec.num_classes, manifest.spec.class_names);
  if (!cfg.eval_out.empty() && mpi.rank() == 0) {
    const io::Json o = {{"checkpoint", cfg.checkpoint}, {"step", src.step},     {"split", cfg.eval_split},
                        {"samples", ev.count},         {"loss", ev.loss},           {"accuracy", ev.accuracy},
                        {"macro_f1", ev.macro_f1},     {"recall", ev.metrics.recall}, {"confusion", ev.confusion},
                        {"ranks", mpi.size()}, {"eval_hflip", cfg.eval_hflip}};
    io::write_file_atomic(cfg.eval_out, io::dump_json(o) + "\n");
  }
  in.close();
  return kExitOk;
}

}  // namespace

int run_evaluation(const Config& cfg, const MpiRuntime& mpi) {
  return with_torch_errors([&] { return evaluate_impl(cfg, mpi); });
}

}  // namespace lockstep
