// mpi_tuning: the ring all-reduce rules lockstep hands Open MPI, and that a user's own
// coll_tuned settings win.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "core/dist/mpi_tuning.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

TEST(MpiTuning, RulesRingFromSixtyFourKiBPerStep) {
  std::istringstream in(ring_allreduce_rules());
  long collectives, id, sizes;
  in >> collectives >> id >> sizes;
  EXPECT_EQ(collectives, 1);
  EXPECT_EQ(id, 2);  // allreduce in Open MPI's collective numbering
  ASSERT_GE(sizes, 2);
  long prev = 0;
  for (long i = 0; i < sizes; ++i) {
    long comm, rules, b0, a0, f0, s0, b1, a1, f1, s1;
    in >> comm >> rules >> b0 >> a0 >> f0 >> s0 >> b1 >> a1 >> f1 >> s1;
    ASSERT_TRUE(in.good()) << "communicator size entry " << i;
    EXPECT_GT(comm, prev);  // ascending: Open MPI takes the last entry <= the communicator
    prev = comm;
    EXPECT_EQ(rules, 2);
    EXPECT_EQ(b0, 0);
    EXPECT_EQ(a0, 0);  // below the threshold: Open MPI's own (fixed) decision
    EXPECT_EQ(a1, 4);  // ring
    EXPECT_GE(b1, 256 << 10);
    EXPECT_GE(b1, comm * (64 << 10));  // each of the ring's 2(n-1) steps moves >= 64 KiB
  }
}

TEST(MpiTuning, TheUsersCollTunedSettingsWin) {
  const char* old = std::getenv("OMPI_MCA_coll_tuned_allreduce_algorithm");
  const std::string saved = old ? old : "";
  setenv("OMPI_MCA_coll_tuned_allreduce_algorithm", "3", 1);
  EXPECT_EQ(prefer_ring_allreduce(), "");
  if (old)
    setenv("OMPI_MCA_coll_tuned_allreduce_algorithm", saved.c_str(), 1);
  else
    unsetenv("OMPI_MCA_coll_tuned_allreduce_algorithm");
}

TEST(MpiTuning, WritesTheRulesAndPointsOpenMpiAtThem) {
#ifndef OPEN_MPI
  GTEST_SKIP() << "not Open MPI: nothing to tune";
#endif
  const char* names[] = {"OMPI_MCA_coll_tuned_use_dynamic_rules", "OMPI_MCA_coll_tuned_dynamic_rules_filename", "TMPDIR"};
  std::vector<std::pair<bool, std::string>> saved;
  for (const char* n : names) {
    const char* v = std::getenv(n);
    saved.emplace_back(v != nullptr, v ? v : "");
  }
  unsetenv(names[0]);
  unsetenv(names[1]);
  const std::string dir = lockstep::testing::fresh_dir("mpi_tuning");
  setenv("TMPDIR", dir.c_str(), 1);
  const std::string path = prefer_ring_allreduce();
  ASSERT_EQ(path.rfind(dir + "/lockstep-allreduce-rules-", 0), 0u) << path;
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, ring_allreduce_rules());
  EXPECT_STREQ(std::getenv(names[0]), "1");
  EXPECT_EQ(std::string(std::getenv(names[1])), path);
  // A second call (another rank of the node) finds the file as it should be.
  unsetenv(names[0]);
  unsetenv(names[1]);
  EXPECT_EQ(prefer_ring_allreduce(), path);
  for (size_t i = 0; i < 3; ++i) {
    if (saved[i].first)
      setenv(names[i], saved[i].second.c_str(), 1);
    else
      unsetenv(names[i]);
  }
}
