// po_error: the one-line message of a Boost.Program_options error, safe for any input.
//
// Boost (1.74) fills an error's %placeholders% (%value%, %option%, ...) by replacing each
// until none is left, so a value that itself contains a placeholder (`--epochs %value%`)
// makes what() loop forever — a hang found by the options fuzzer (tests/fuzz). The message
// here is built from a copy whose substituted texts cannot reintroduce a placeholder.
#pragma once

#include <boost/program_options/errors.hpp>
#include <string>

namespace lockstep::app {

std::string po_message(const boost::program_options::error& e);

// The style every lockstep command line is parsed with: Boost's default without guessing (it
// took any unambiguous prefix, --run.di for --run.dir, past every check made on option names).
int no_guessing_style();

}  // namespace lockstep::app
