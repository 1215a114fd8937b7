// inference_setup: see inference_setup.hpp.
#include "core/tools/inference_setup.hpp"

#include <torch/torch.h>

#include "core/data/reader_options.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/eval/mirror.hpp"

namespace lockstep {

void Inference::close() {
  if (place.comm) place.comm->destroy();
}

Inference open_inference(const Config& cfg, const MpiRuntime& mpi,
                         const std::function<void(const io::Manifest&)>& fit_for) {
  Inference in;
  in.manifest = io::read_manifest(cfg.data_dir);
  fit_for(in.manifest);
  check_eval_hflip(cfg.eval_hflip, in.manifest.spec, cfg.data_dir);
  in.manifest.split(cfg.eval_split, cfg.data_dir);  // a missing split: named before any weights are read
  in.src = read_weights(cfg.checkpoint, cfg.model);
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
