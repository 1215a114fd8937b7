// hash: FNV-1a 64, lockstep's one non-cryptographic hash — what the pre-flight check
// compares across ranks, a checkpoint's parameter-shape fingerprint, an import's source
// fingerprint and the importer's per-name seed all use it. Stable across builds and
// machines (results are stored in manifests and checkpoints): never change it.
#pragma once

#include <cstdint>
#include <string_view>

namespace lockstep {

inline uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace lockstep
