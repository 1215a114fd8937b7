// options: command-line and INI parsing for every lockstep command (Boost.Program_options).
//
// Keys have sections ("train.lr"): the same key is "--train.lr 0.1" on the command line
// and "lr = 0.1" under "[train]" in a --config file; the command line wins. The common
// options also have short aliases (--lr, --epochs, --data, ...). Every rank parses the
// same argv, so every rank reaches the same verdict without talking to the others.
#pragma once

#include <string>
#include <vector>

#include "core/config/config.hpp"

namespace lockstep::app {

enum class ParseStatus { kRun, kExitOk, kError };

struct ParseResult {
  ParseStatus status = ParseStatus::kRun;
  std::string message;  // usage text (kExitOk) or one-line error (kError)
};

// train / evaluate: fills CFG (including cfg.resolved_ini and cfg.command_line).
ParseResult parse_train(const std::vector<std::string>& args, Config* cfg);
ParseResult parse_doctor(const std::vector<std::string>& args, Config* cfg);
ParseResult parse_evaluate(const std::vector<std::string>& args, Config* cfg);
ParseResult parse_predict(const std::vector<std::string>& args, Config* cfg);
ParseResult parse_export(const std::vector<std::string>& args, Config* cfg);

// Rewrites short aliases ("--lr" -> "--train.lr", "--lr=0.1" too). Exposed for tests.
std::vector<std::string> expand_aliases(const std::vector<std::string>& args);

}  // namespace lockstep::app
