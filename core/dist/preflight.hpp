// preflight: before step 1, all ranks check that they are running the same job.
//
// 1. Each rank hashes every field (resolved config, model parameter names and shapes,
//    dataset manifest, lockstep and LibTorch versions) with FNV-1a 64.
// 2. One MPI_Allgather carries all hashes to every rank.
// 3. Every rank compares each field with rank 0's; on any difference every rank throws
//    the same UsageError, naming the first differing field and the ranks that differ.
// Collective; the first check runs before any other collective of the job, so a rank
// started with other options or data stops here instead of deadlocking later (a later one,
// e.g. the parameters' layouts once chosen, runs where every rank arrives alike).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/base/hash.hpp"  // fnv1a64, what the fields are compared by

namespace lockstep {

class MpiRuntime;

using Fingerprint = std::vector<std::pair<std::string, std::string>>;  // (field, content)

void preflight_check(const MpiRuntime& mpi, const Fingerprint& fields);


}  // namespace lockstep
