// The flight recorder: sequence numbers, the ring, the dump's JSON, and the cross-rank
// diagnosis (who is behind, who left no record).
#include <gtest/gtest.h>

#include "core/base/clock.hpp"
#include "core/dist/flight_dump.hpp"
#include "core/dist/flight_recorder.hpp"
#include "io/util/file_util.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::has_line;

TEST(FlightRecorder, KeepsTheLastEntriesWithStates) {
  FlightRecorder f(3);
  for (int i = 0; i < 5; ++i) f.end(f.begin("bucket " + std::to_string(i)));
  const uint64_t open = f.begin("MPI_Barrier");
  EXPECT_EQ(open, 6u);
  const FlightDump d = parse_flight_dump(f.to_json(2, "node7"), "dump");
  EXPECT_EQ(d.rank, 2);
  EXPECT_EQ(d.host, "node7");
  EXPECT_EQ(d.last_done, 5u);
  EXPECT_EQ(d.last_what, "bucket 4");
  EXPECT_EQ(d.running, 6u);
  EXPECT_EQ(d.running_what, "MPI_Barrier");
  const auto json = f.to_json(2, "node7");
  EXPECT_EQ(json.find("bucket 2"), std::string::npos);  // out of the ring of 3
  EXPECT_NE(json.find("\"state\":\"running\""), std::string::npos);
  f.end(open, /*failed=*/true);
  EXPECT_NE(f.to_json(2, "node7").find("\"state\":\"failed\""), std::string::npos);
}

TEST(FlightRecorder, DiagnosisNamesTheRankBehindAndTheMissingOnes) {
  const double now = unix_seconds();
  FlightDump a{0, "n0", now, 1042, 1043, "gradient bucket 0", "loss", now - 30};
  FlightDump b{1, "n1", now, 1041, 1042, "gradient bucket 1", "x", now - 30};
  FlightDump c{2, "n2", now, 1042, 1043, "gradient bucket 0", "loss", now - 30};
  auto lines = diagnose_flight({a, b, c}, 4, now);
  EXPECT_TRUE(has_line(lines, "rank 1 (n1) is in collective 1042 (gradient bucket 1) for 30.0 s: rank 1 is behind (others reached collective 1043)"));
  EXPECT_FALSE(has_line(lines, "rank 0 is behind"));
  EXPECT_TRUE(has_line(lines, "rank(s) 3 left no flight record"));
  lines = diagnose_flight({a, c}, 3, now);
  EXPECT_TRUE(has_line(lines, "rank(s) 1 left no flight record: stopped, killed, or stuck"));
  FlightDump c1 = c;
  c1.rank = 1;
  lines = diagnose_flight({a, c1}, 2, now);
  EXPECT_TRUE(has_line(lines, "every rank is at collective 1043: no rank is behind"));
}

// Issue 31 (15): SIGUSR2 to one rank diagnosed a stall: the healthy rank "in collective
// ... for 3.1 s" (its wait dated at the diagnosis, after the 3 s grace for the others'
// records) and the rank never asked "left no flight record".
TEST(FlightRecorder, ARequestToSomeRanksClaimsNoStall) {
  const double now = unix_seconds();
  FlightDump a{0, "n0", now - 3.0, 1042, 1043, "gradient bucket 0", "loss", now - 3.2};  // dumped 3 s ago
  auto lines = diagnose_flight({a}, 2, now, FlightCause::kRequest);
  EXPECT_TRUE(has_line(lines, "rank 0 (n0) is in collective 1043 (gradient bucket 0) for 0.2 s")) << lines[0];
  EXPECT_TRUE(has_line(lines, "only rank(s) 0 answered the SIGUSR2 request"));
  EXPECT_TRUE(has_line(lines, "scancel --signal=USR2"));
  EXPECT_FALSE(has_line(lines, "left no flight record"));
  EXPECT_FALSE(has_line(lines, "behind"));
  // Every rank asked: the usual diagnosis. A hang: a missing record is still a stuck rank.
  FlightDump b = a;
  b.rank = 1;
  EXPECT_TRUE(has_line(diagnose_flight({a, b}, 2, now, FlightCause::kRequest), "every rank is at collective 1043"));
  EXPECT_TRUE(has_line(diagnose_flight({a}, 2, now, FlightCause::kHang), "rank(s) 1 left no flight record"));
}

TEST(FlightRecorder, RecordsMeetInADirectoryAndTheLowestRankDiagnoses) {
  const std::string dir = lockstep::testing::fresh_dir("flight");
  const double since = unix_seconds() - 1;
  FlightRecorder r0, r1;
  r0.begin("MPI_Barrier");
  r1.end(r1.begin("MPI_Barrier"));
  r1.begin("bucket 0");
  write_flight_dump(dir, 0, r0.to_json(0, "a"));
  write_flight_dump(dir, 1, r1.to_json(1, "b"));
  EXPECT_FALSE(diagnose_flight_dir(dir, 1, 2, since, 0.1));  // rank 0 has a record: it prints
  const auto lines = diagnose_flight_dir(dir, 0, 2, since, 0.1);
  ASSERT_TRUE(lines);
  EXPECT_TRUE(has_line(*lines, "rank 0 is behind (others reached collective 2)"));
  // Stale records (older than the event) do not count.
  const auto late = diagnose_flight_dir(dir, 0, 2, unix_seconds() + 60, 0.2);
  ASSERT_TRUE(late);
  EXPECT_TRUE(has_line(*late, "rank(s) 0, 1 left no flight record"));
}

// The recorder dates its entries and dumps on the job's clock (rank 0's wall clock at the
// start, carried by this rank's steady clock): a rank on a host whose wall clock is 90 s
// ahead, or stepped back an hour mid-wait, dates them as rank 0 would. Its dump was taken
// as stale by rank 0, and a wait came out as -3591 s (a hostile finding).
TEST(FlightRecorder, EntriesAreDatedOnTheJobClock) {
  set_job_clock(unix_seconds() - 90);  // this host's wall clock: 90 s ahead of rank 0's
  FlightRecorder f;
  const uint64_t open = f.begin("MPI_Allreduce (sum) of 6 doubles");
  const FlightDump d = parse_flight_dump(f.to_json(1, "n1"), "dump");
  EXPECT_NEAR(d.running_since, unix_seconds() - 90, 1.0);
  EXPECT_NEAR(d.dumped, job_seconds(), 1.0);
  EXPECT_GE(d.dumped, d.running_since);
  f.end(open);
  EXPECT_NEAR(f.entries().back().end, unix_seconds() - 90, 1.0);
  set_job_clock(unix_seconds());  // as a 1-rank job has it
  EXPECT_NEAR(job_seconds(), unix_seconds(), 0.1);
}
