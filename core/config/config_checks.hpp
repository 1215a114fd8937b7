// config_checks: every range and relation the configuration's values must satisfy, checked
// once, by the option parser, before anything runs (NaN and infinity are refused before
// this, for every number). Also the --train.stop-at target's grammar.
#pragma once

#include <string>

#include "core/config/config.hpp"

namespace lockstep {

// The first problem as one line ("--train.lr must be positive"), "" when there is none.
// Fills derived fields (the parsed --train.stop-at).
std::string check_config(Config* c);

// "val_acc>=0.93" / "val_f1>=0.9" / "val_loss<=0.25" -> metric and value; false otherwise.
bool parse_stop_target(const std::string& text, BestMetric* metric, double* value);

}  // namespace lockstep
