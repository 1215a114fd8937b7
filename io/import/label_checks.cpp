// label_checks: see label_checks.hpp.
#include "io/import/label_checks.hpp"

#include <fmt/format.h>

#include <map>
#include <string>

#include "core/base/error.hpp"

namespace lockstep::io {

void check_labels(const std::vector<InputSplit>& inputs, const DatasetSpec& spec) {
  if (!spec.labeled) return;
  for (const auto& in : inputs) {
    const auto& labels = in.source->labels();
    for (size_t i = 0; i < labels.size(); ++i)
      LOCKSTEP_REQUIRE(labels[i] >= 0 && labels[i] < spec.num_classes,
                       in.source->name() + ": label " + std::to_string(labels[i]) + " of sample " + std::to_string(i) +
                           " is outside [0, " + std::to_string(spec.num_classes) + ")");
  }
  if (spec.sequence_targets() || inputs.size() < 2) return;
  std::vector<char> trained(static_cast<size_t>(spec.num_classes), 0);
  for (const int64_t l : inputs[0].source->labels()) trained[static_cast<size_t>(l)] = 1;
  for (size_t i = 1; i < inputs.size(); ++i) {
    std::map<int64_t, int64_t> untrained;  // class -> samples
    for (const int64_t l : inputs[i].source->labels())
      if (!trained[static_cast<size_t>(l)]) ++untrained[l];
    if (untrained.empty()) continue;
    const auto [c, n] = *untrained.begin();
    const std::string name =
        static_cast<size_t>(c) < spec.class_names.size() ? " ('" + spec.class_names[static_cast<size_t>(c)] + "')" : "";
    throw Error(inputs[i].source->name() + ": class " + std::to_string(c) + name + " (" + std::to_string(n) +
                " sample(s)" + (untrained.size() > 1 ? fmt::format(", and {} more class(es)", untrained.size() - 1) : "") +
                ") does not occur in " + inputs[0].source->name() +
                ": a class the model never trains on; drop those samples or add training data for it");
  }
}

}  // namespace lockstep::io
