// evaluate_command: `lockstep evaluate` — a checkpoint on a split (default 'test'),
// distributed like training (each rank evaluates its share; core/eval/evaluator), with the
// per-class table and confusion matrix, and optionally the result as JSON (--eval.out).
// Returns the exit code.
#pragma once

#include "core/config/config.hpp"

namespace lockstep {

class MpiRuntime;

int run_evaluation(const Config& cfg, const MpiRuntime& mpi);

}  // namespace lockstep
