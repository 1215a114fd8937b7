// core/data/staging_ring: a host buffer is handed out again only after the copy out of it
// has completed — proven with a fake fence standing in for the CUDA event (issue 32: "a
// buffer is never reused before its copy event").
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "core/data/staging_ring.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

namespace {

// A copy in flight until the test completes it (or acquire() waits for it).
struct FakeCopies {
  std::map<int, bool> done;  // fence id -> its copy completed
  int next = 0, waited = 0;
};

class FakeFence final : public Fence {
 public:
  explicit FakeFence(FakeCopies* c) : c_(c) {}
  void record() override { c_->done[id_ = c_->next++] = false; }
  bool done() const override { return c_->done.at(id_); }
  void wait() override {
    ++c_->waited;
    c_->done[id_] = true;  // the device finished it
  }
  int id() const { return id_; }

 private:
  FakeCopies* c_;
  int id_ = -1;
};

}  // namespace

TEST(StagingRing, ASlotIsReusedOnlyAfterItsCopyCompleted) {
  FakeCopies copies;
  std::vector<void*> allocated;
  StagingRing ring(
      2,
      [&](size_t bytes) {
        auto p = std::shared_ptr<void>(::operator new(bytes), [](void* q) { ::operator delete(q); });
        allocated.push_back(p.get());
        return p;
      },
      [&] { return std::make_unique<FakeFence>(&copies); });
  void* a = ring.acquire(64);
  ring.release();  // copy 0 in flight from A
  void* b = ring.acquire(64);
  ring.release();  // copy 1 in flight from B
  EXPECT_NE(a, b);
  // Copy 0 still in flight: A comes back only after waiting for it.
  EXPECT_EQ(ring.acquire(32), a);
  EXPECT_EQ(copies.waited, 1);
  EXPECT_TRUE(copies.done.at(0));
  EXPECT_EQ(ring.waits(), 1);
  ring.release();  // copy 2 from A
  // Copy 1 completed on its own (the steady state): B without a wait.
  copies.done[1] = true;
  EXPECT_EQ(ring.acquire(64), b);
  EXPECT_EQ(ring.waits(), 1);
  ring.release();
  // A larger batch: A's copy (2) is waited for before its memory is replaced.
  void* bigger = ring.acquire(4096);
  EXPECT_TRUE(copies.done.at(2));
  EXPECT_EQ(allocated.size(), 3u);
  EXPECT_EQ(bigger, allocated.back());
  std::memset(bigger, 1, 4096);
  ring.release();
}

TEST(StagingRing, AcquireAndReleaseAlternate) {
  FakeCopies copies;
  StagingRing ring(
      1, [](size_t bytes) { return std::shared_ptr<void>(::operator new(bytes), [](void* q) { ::operator delete(q); }); },
      [&] { return std::make_unique<FakeFence>(&copies); });
  EXPECT_ERROR_CONTAINS(ring.release(), "release() without acquire()");
  ring.acquire(8);
  EXPECT_ERROR_CONTAINS(ring.acquire(8), "acquire() twice");
}
