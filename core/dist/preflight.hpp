// preflight: before step 1, all ranks check that they are running the same job.
//
// 1. Each rank hashes every field (resolved config, model parameter names and shapes,
//    dataset manifest, lockstep and LibTorch versions) with FNV-1a 64.
// 2. One MPI_Allgather carries all hashes to every rank.
// 3. Every rank compares each field with rank 0's. On a difference (every rank sees it in
//    the same gather) rank 0 broadcasts its text of the first differing field, the first
//    rank that differs broadcasts where its own text parts from it (line number, both
//    lines), and every rank throws the same UsageError naming the field, the ranks and that
//    line ("rank 1's line 12: 'lr = 0.2', rank 0's: 'lr = 0.1'").
// Collective; the first check runs before any other collective of the job, so a rank
// started with other options or data stops here instead of deadlocking later (a later one,
// e.g. the parameters' layouts once chosen, runs where every rank arrives alike).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/hash.hpp"  // fnv1a64, what the fields are compared by

namespace lockstep {

class MpiRuntime;

using Fingerprint = std::vector<std::pair<std::string, std::string>>;  // (field, content)

// HINT: what the message suggests ("same binary, options and data on every rank?").
void preflight_check(const MpiRuntime& mpi, const Fingerprint& fields,
                     const std::string& hint = "same binary, options and data on every rank?");

// Collective: READ runs on every rank and returns what it read as text (a checksum); a rank
// whose READ throws contributes "unreadable: why". The texts must be rank 0's (FIELD, HINT as
// above); then a rank's own exception is rethrown, every rank alike. So a file that differs
// per node, or that one node cannot see, stops every rank naming it instead of one rank
// leaving the job or each rank using other bytes.
void preflight_read(const MpiRuntime& mpi, const std::string& field, const std::string& hint,
                    const std::function<std::string()>& read);


}  // namespace lockstep
