// evaluate_command: see evaluate_command.hpp.
#include "core/tools/evaluate_command.hpp"

#include <torch/torch.h>
#include <fmt/format.h>

#include "core/base/error.hpp"
#include "core/eval/evaluator.hpp"
#include "core/eval/mirror.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/data/reader_options.hpp"
#include "core/dist/placement.hpp"
#include "core/base/clock.hpp"
#include "core/model/torch_errors.hpp"
#include "core/train/weight_source.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

namespace lockstep {
namespace {

int evaluate_impl(const Config& cfg, const MpiRuntime& mpi) {
  const io::Manifest manifest = io::read_manifest(cfg.data_dir);
  if (!manifest.spec.labeled && !manifest.spec.sequence_targets())
    throw UsageError(cfg.data_dir + ": dataset '" + manifest.spec.name + "' has no labels to evaluate against "
                     "(lockstep predict writes predictions for unlabelled data)");
  check_eval_hflip(cfg.eval_hflip, manifest.spec, cfg.data_dir);
  const WeightSource src = read_weights(cfg.checkpoint);
  torch::set_num_threads(cfg.threads);
  const io::RankReader data(cfg.data_dir, manifest, cfg.eval_split, mpi.rank(), mpi.size(), reader_options(cfg));
  Placement place = place_run(cfg, mpi);
  const io::DatasetSpec spec = spec_for_model(manifest.spec, src);
  auto model = build_model(src, ModelOptions{cfg.model, 0.0, cfg.model_width, cfg.model_depth}, spec);
  model->to(place.device);
  const BatchMaker maker(spec, place.device);
  const auto t0 = Clock::now();
  const EvalResult ev = evaluate(*model, data, maker, cfg.batch_size, cfg.prefetch, manifest.spec.num_classes, mpi, cfg.eval_hflip);
  if (ev.sequence) {
    log::info0(fmt::format("evaluate {} (step {}) on {} split '{}': CER {:.4f} WER {:.4f} loss {:.4f} over {} samples, "
                           "{} rank(s), {:.2f} s",
                           cfg.checkpoint, src.step, cfg.data_dir, cfg.eval_split, ev.cer, ev.wer, ev.loss, ev.count,
                           mpi.size(), seconds_since(t0)));
    if (!cfg.eval_out.empty() && mpi.rank() == 0)
      io::write_file_atomic(cfg.eval_out, io::dump_json(io::Json{{"checkpoint", cfg.checkpoint}, {"step", src.step},
                                                                 {"split", cfg.eval_split}, {"samples", ev.count},
                                                                 {"loss", ev.loss}, {"cer", ev.cer}, {"wer", ev.wer},
                                                                 {"ranks", mpi.size()}}) + "\n");
    if (place.comm) place.comm->destroy();
    return kExitOk;
  }
  log::info0("evaluate " + cfg.checkpoint + " (step " + std::to_string(src.step) + ") on " + cfg.data_dir +
             " split '" + cfg.eval_split + "'" + (cfg.eval_hflip ? " averaged with mirrors (--eval.hflip)" : "") + ": accuracy " + fmt::format("{:.4f}", ev.accuracy) + " macro-F1 " +
             fmt::format("{:.4f}", ev.macro_f1) + " loss " + fmt::format("{:.4f}", ev.loss) + " over " + std::to_string(ev.count) +
             " samples, " + std::to_string(mpi.size()) + " rank(s), " + fmt::format("{:.2f}", seconds_since(t0)) + " s");
  log::info0("per-class metrics:\n" + per_class_table(ev.metrics, ev.confusion, manifest.spec.class_names));
  log::info0("confusion matrix (rows: true class, columns: predicted):\n" +
             confusion_table(ev.confusion, manifest.spec.num_classes));
  if (!cfg.eval_out.empty() && mpi.rank() == 0) {
    const io::Json o = {{"checkpoint", cfg.checkpoint}, {"step", src.step},     {"split", cfg.eval_split},
                        {"samples", ev.count},         {"loss", ev.loss},           {"accuracy", ev.accuracy},
                        {"macro_f1", ev.macro_f1},     {"recall", ev.metrics.recall}, {"confusion", ev.confusion},
                        {"ranks", mpi.size()}, {"eval_hflip", cfg.eval_hflip}};
    io::write_file_atomic(cfg.eval_out, io::dump_json(o) + "\n");
  }
  if (place.comm) place.comm->destroy();
  return kExitOk;
}

}  // namespace

int run_evaluation(const Config& cfg, const MpiRuntime& mpi) {
  return with_torch_errors([&] { return evaluate_impl(cfg, mpi); });
}

}  // namespace lockstep
