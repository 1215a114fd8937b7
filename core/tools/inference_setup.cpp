// inference_setup: see inference_setup.hpp.
#include "core/tools/inference_setup.hpp"

#include <torch/torch.h>

#include <string_view>

#include "core/data/reader_options.hpp"
#include "core/base/hash.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/preflight.hpp"
#include "core/dist/version_info.hpp"
#include "core/eval/mirror.hpp"
#include "io/dataset/shard_format.hpp"

namespace lockstep {
namespace {

// Every tensor's name, shape and bytes, FNV-1a 64: what ranks compare to know they hold one model.
std::string weights_digest(const NamedTensors& tensors) {
  std::string all;
  for (const auto& [name, t] : tensors) {
    const torch::Tensor c = t.contiguous().cpu();
    const std::string_view bytes(static_cast<const char*>(c.data_ptr()), c.nbytes());
    all += name + " " + std::to_string(c.numel()) + " " + std::to_string(fnv1a64(bytes)) + "\n";
  }
  return std::to_string(tensors.size()) + " tensors, FNV-1a " + std::to_string(fnv1a64(all));
}

}  // namespace

void Inference::close() {
  if (place.comm) place.comm->destroy();
}

Inference open_inference(const Config& cfg, const MpiRuntime& mpi,
                         const std::function<void(const io::Manifest&)>& fit_for) {
  Inference in;
  in.manifest = io::read_manifest(cfg.data_dir);
  // What training compares, compared here too: a rank given another split, batch or
  // --eval.hflip scored other samples (or scored them otherwise), blended into one result.
  preflight_check(mpi, {{"resolved config", cfg.resolved_ini},
                        {"dataset manifest", io::manifest_to_json(in.manifest)},
                        {"lockstep version", lockstep_version()},
                        {"LibTorch version", torch_version()}});
  fit_for(in.manifest);
  check_eval_hflip(cfg.eval_hflip, in.manifest.spec, cfg.data_dir);
  in.manifest.split(cfg.eval_split, cfg.data_dir);  // a missing split: named before any weights are read
  // Every rank reads the file itself: copies that differ per node (or one a node cannot see)
  // made each rank score another model, blended into one silent accuracy (a hostile finding).
  preflight_read(mpi, "weights of " + cfg.checkpoint + " as each rank reads them",
                 "every rank must read one copy of the checkpoint (shared storage), not one per node", [&] {
                   in.src = read_weights(cfg.checkpoint, cfg.model);
                   return weights_digest(in.src.tensors);
                 });
  check_data_fits(in.src, in.manifest.spec);
  if (!cfg.any_units) check_units(in.src, in.manifest.spec);  // the data's own statistics
  in.spec = spec_for_model(in.manifest.spec, in.src);
  torch::set_num_threads(cfg.threads);
  in.data = std::make_unique<io::RankReader>(cfg.data_dir, in.manifest, cfg.eval_split, mpi.rank(), mpi.size(),
                                             reader_options(cfg));
  in.place = place_run(cfg, mpi);
  in.model = build_model(in.src, ModelOptions{cfg.model, 0.0, cfg.model_width, cfg.model_depth}, in.spec);
  in.model->to(in.place.device);
  in.maker = std::make_unique<BatchMaker>(in.spec, in.place.device);
  return in;
}

}  // namespace lockstep
