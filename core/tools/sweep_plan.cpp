// sweep_plan: see sweep_plan.hpp.
#include "core/tools/sweep_plan.hpp"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "core/base/error.hpp"

namespace lockstep {
namespace {

std::string safe(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' || c == '=' || c == '-')) c = '_';
  return out;
}

// The values of "a,b" or "\"1,2,1\",\"1,1,1\"": commas inside double quotes belong to the
// value (--train.class-weights 1,2,1 could not be written before).
std::vector<std::string> split_values(const std::string& text, const std::string& where, const std::string& key,
                                      const std::string& token) {
  std::vector<std::string> out(1);
  bool quoted = false, was_quoted = false;
  for (const char c : text) {
    if (c == '"') {
      quoted = !quoted;
      was_quoted = true;
    } else if (c == ',' && !quoted) {
      if (out.back().empty() && !was_quoted) throw UsageError(where + ": " + key + " has an empty value in '" + token + "'");
      out.emplace_back();
      was_quoted = false;
    } else {
      out.back() += c;
    }
  }
  if (quoted) throw UsageError(where + ": '" + token + "' opens a quote it does not close");
  if (out.back().empty() && !was_quoted) throw UsageError(where + ": " + key + " has an empty value in '" + token + "'");
  return out;
}

}  // namespace

std::vector<std::string> SweepTask::args() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : overrides) {
    out.push_back("--" + k);
    out.push_back(v);
  }
  return out;
}

std::vector<SweepTask> plan_sweep(const std::string& text, const std::string& file) {
  std::vector<SweepTask> tasks;
  std::map<std::string, int> names;  // run name -> line
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = fmt::format("{}:{}", file, n);
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::pair<std::string, std::vector<std::string>>> keys;
    std::set<std::string> seen;
    for (std::string token; words >> token;) {
      const auto eq = token.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == token.size())
        throw UsageError(where + ": '" + token + "' is not KEY=VALUE[,VALUE...] (e.g. lr=0.05,0.1)");
      std::string key = token.substr(0, eq);
      if (key.rfind("--", 0) == 0) key = key.substr(2);
      if (!seen.insert(key).second) throw UsageError(where + ": " + key + " is given twice on one line");
      keys.emplace_back(key, split_values(token.substr(eq + 1), where, key, token));
    }
    if (keys.empty()) continue;
    // Counted before any is made: a grid of 10^8 runs was a bare std::bad_alloc.
    constexpr size_t kHuge = size_t{1} << 60;  // counted exactly below it
    size_t line_runs = 1;
    for (const auto& [key, values] : keys)
      line_runs = values.size() > kHuge / line_runs ? kHuge : line_runs * values.size();
    const size_t total = tasks.size() + line_runs;
    if (line_runs >= kHuge || total > kMaxSweepRuns)
      throw UsageError(fmt::format("{}: the sweep would have {} runs, more than {} (a Slurm job array holds at most "
                                   "MaxArraySize, 1001 by default): split it",
                                   where, line_runs >= kHuge ? "over 10^18" : std::to_string(total), kMaxSweepRuns));
    // Every combination, the first key slowest: an odometer over the value lists.
    std::vector<size_t> at(keys.size(), 0);
    for (;;) {
      SweepTask t;
      for (size_t k = 0; k < keys.size(); ++k) {
        t.overrides.emplace_back(keys[k].first, keys[k].second[at[k]]);
        t.name += (k ? "," : "") + safe(keys[k].first + "=" + keys[k].second[at[k]]);
      }
      // A directory's name has at most NAME_MAX (255) bytes: every array element failed at its start.
      if (t.name.size() > 255)
        throw UsageError(fmt::format("{}: the run name {}... is {} bytes, more than a directory name may have (255): "
                                     "shorten the values",
                                     where, t.name.substr(0, 40), t.name.size()));
      if (const auto [it, fresh] = names.emplace(t.name, n); !fresh)
        throw UsageError(fmt::format("{}: the run {} is also on line {}: each run needs its own directory", where,
                                     t.name, it->second));
      tasks.push_back(std::move(t));
      size_t k = keys.size();
      while (k > 0 && ++at[k - 1] == keys[k - 1].second.size()) at[--k] = 0;
      if (k == 0) break;
    }
  }
  if (tasks.empty()) throw UsageError(file + ": no runs (lines of KEY=VALUE[,VALUE...], e.g. lr=0.05,0.1 batch-size=64)");
  return tasks;
}

}  // namespace lockstep
