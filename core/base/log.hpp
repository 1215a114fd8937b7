// log: lockstep's one logger.
//
// 1. info0() prints on rank 0 only (stdout and, once a run dir exists, its train.log).
// 2. warn() and error() print on any rank, to stderr, prefixed "[rank R@HOST]"; warn0()
//    is rank 0's warning about the whole job (one line, not one per rank).
// 3. Every line starts with an ISO-8601 UTC timestamp so Slurm logs from several jobs
//    can be merged and sorted.
// 4. Under the MPI runtime the console (stdout/stderr) is written by a background thread
//    (console_writer.hpp): a launcher that stops reading its ranks' output (mpirun after
//    SIGTERM) must not block the training loop; train.log is still written in line.
//    warn() and error() return once their own line is written (or the console has
//    stalled), so a crash or an abort right after them still shows it; so does
//    std::terminate.
// The rank/host identity is set once by the MPI runtime; it is the only process-wide
// state besides the runtime itself. Lines are formatted with fmt; the rank policy above is
// lockstep's own (no logging library knows MPI ranks or Open MPI's pseudo-terminals).
#pragma once

#include <string>

namespace lockstep::log {

void set_identity(int rank, int world, const std::string& host);
// From now on stdout/stderr are written by a background thread (the MPI runtime calls it).
void use_console_thread();
// Waits until every queued console line is written, giving up after STALL_S seconds
// without progress (a launcher that no longer reads). True when all was written.
bool flush_console(double stall_s);
int rank();
const std::string& host();

// Mirrors rank 0's info lines into PATH (append, never through a symbolic link); empty
// closes it. Rank 0 only. False when PATH cannot be opened.
bool set_file(const std::string& path);

void info0(const std::string& msg);
// Each line of TEXT as its own info0 line (its own timestamp).
void info0_lines(const std::string& text);
// Rank 0's periodic step lines: like info0, except that on a terminal (where the progress
// bar shows the same figures) they go to train.log only.
void step0(const std::string& msg);
// Rank 0, terminal only: redraws the one-line progress bar in place. Any other line
// printed afterwards first clears it.
void progress0(const std::string& line);
// Rank 0 draws a progress bar: its stdout is a terminal (and it was not started by Open
// MPI's mpirun, which gives every rank a pseudo-terminal), or set_progress("bar").
bool interactive();
// --train.progress: bar or lines forced (true / false); unset keeps the rule above.
void force_progress_bar(bool bar);
void warn(const std::string& msg);
// A warning about the whole job (every rank knows it alike): printed by rank 0 only, like
// warn(), and kept in train.log.
void warn0(const std::string& msg);
void error(const std::string& msg);

// "[rank R@HOST]" for this process.
std::string where();

}  // namespace lockstep::log
