// core/data/staging_ring: a host buffer is handed out again only after the copy out of it
// has completed — proven with fake fences standing in for the CUDA events (issue 32: "a
// buffer is never reused before its copy event").
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/data/staging_ring.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::FakeCopies;
using lockstep::testing::fake_host_buffers;

TEST(StagingRing, ASlotIsReusedOnlyAfterItsCopyCompleted) {
  FakeCopies copies;
  std::vector<void*> allocated;
  StagingRing ring(2, fake_host_buffers(&copies, &allocated));
  void* a = ring.acquire(64);
  ring.release();  // copy 0 in flight from A
  void* b = ring.acquire(64);
  ring.release();  // copy 1 in flight from B
  EXPECT_NE(a, b);
  // Copy 0 still in flight: A comes back only after waiting for it.
  EXPECT_EQ(ring.acquire(32), a);
  EXPECT_EQ(copies.waited(), 1);
  EXPECT_TRUE(copies.done(0));
  EXPECT_EQ(ring.waits(), 1);
  ring.release();  // copy 2 from A
  // Copy 1 completed on its own (the steady state): B without a wait.
  copies.complete(1);
  EXPECT_EQ(ring.acquire(64), b);
  EXPECT_EQ(ring.waits(), 1);
  ring.release();
  // A larger batch: A's copy (2) is waited for before its memory is replaced.
  void* bigger = ring.acquire(4096);
  EXPECT_TRUE(copies.done(2));
  EXPECT_EQ(allocated.size(), 3u);
  EXPECT_EQ(bigger, allocated.back());
  std::memset(bigger, 1, 4096);
  ring.release();
}

TEST(StagingRing, AcquireAndReleaseAlternate) {
  FakeCopies copies;
  StagingRing ring(1, fake_host_buffers(&copies));
  EXPECT_ERROR_CONTAINS(ring.release(), "release() without acquire()");
  ring.acquire(8);
  EXPECT_ERROR_CONTAINS(ring.acquire(8), "acquire() twice");
}
