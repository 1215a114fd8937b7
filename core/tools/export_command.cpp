// export_command: see export_command.hpp.
#include "core/tools/export_command.hpp"
#include "core/tools/output_guard.hpp"

#include <fmt/format.h>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/model/torch_errors.hpp"
#include "core/model/weights.hpp"
#include "core/train/weight_source.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/records/safetensors.hpp"

namespace lockstep {

void export_weights(const ExportRequest& req) {
  with_torch_errors([&] {
    const bool to_safetensors_file =
        req.out.size() > 12 && req.out.compare(req.out.size() - 12, 12, ".safetensors") == 0;
    if (!to_safetensors_file) throw UsageError("--export.out " + req.out + ": the file name must end in .safetensors");
    check_output("--export.out", req.out, {req.checkpoint, req.config_file}, req.force);
    WeightSource src = read_weights(req.checkpoint, req.model);
    if (!req.data_dir.empty()) {
      const io::Manifest m = io::read_manifest(req.data_dir);
      // Only data the model reads as it was trained fills in what the checkpoint lacks (any
      // dataset's names and statistics were written into the file).
      check_data_fits(src, m.spec);
      if (!req.any_units) check_units(src, m.spec);
      if (src.mean.empty()) src.mean = m.spec.mean;
      if (src.std.empty()) src.std = m.spec.std;
      if (src.data_dtype.empty()) src.data_dtype = io::dtype_name(m.spec.dtype);
      if (src.class_names.empty()) src.class_names = m.spec.class_names;
    }
    LOCKSTEP_REQUIRE(!src.model.empty(), req.checkpoint + ": the model family is unknown (a foreign safetensors file)");
    const io::SafeTensors st = to_safetensors(src.tensors, model_family(src.model), export_metadata(src));
    io::write_safetensors(req.out, st);
    log::info0(fmt::format("exported {} (model {}, step {}, {} tensors{}) -> {}", req.checkpoint, src.model, src.step,
                           st.tensors.size(), model_family(src.model) == "resnet" ? ", torchvision names" : "",
                           req.out));
    return 0;
  });
}

}  // namespace lockstep
