// cmd_export: `lockstep export --checkpoint C --out FILE.safetensors [--data DIR]` — a
// serial tool (no MPI): parse, then core/tools/export_command.
#include <iostream>

#include "app/commands.hpp"
#include "app/launch_checks.hpp"
#include "app/options.hpp"
#include "core/base/error.hpp"
#include "core/tools/export_command.hpp"

namespace lockstep::app {

int cmd_export(const Args& args) {
  Config cfg;
  const ParseResult parsed = parse_export(args, &cfg);
  if (parsed.status == ParseStatus::kExitOk) {
    std::cout << parsed.message;
    return kExitOk;
  }
  if (parsed.status == ParseStatus::kError) throw UsageError(parsed.message + " (see lockstep export --help)");
  require_single_process("export");
  export_weights(
      ExportRequest{cfg.checkpoint, cfg.export_out, cfg.data_dir, cfg.config_file, cfg.model, cfg.force_output,
                    cfg.any_units});
  return kExitOk;
}

}  // namespace lockstep::app
