// core/base: the progress-bar text and the host allocator policy.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstring>
#include <vector>

#include "core/base/host_allocator.hpp"
#include "core/base/progress.hpp"

using namespace lockstep;

TEST(Progress, LineAndDurations) {
  Progress p;
  p.epoch = 2;
  p.epochs = 15;
  p.step = 234;
  p.steps = 468;
  p.loss = 0.31214;
  p.accuracy = 0.8871;
  p.samples_per_s = 1043.4;
  p.eta_s = 724;
  EXPECT_EQ(progress_line(p, 10), "epoch 2/15 [#####-----] 234/468 loss 0.3121 acc 0.887 1043 samples/s ETA 12:04");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "--:--");
}

// Under AddressSanitizer or ThreadSanitizer malloc is the sanitizer's, not glibc's: the policy
// (mallopt) has nothing to configure there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerMalloc = true;
#else
constexpr bool kSanitizerMalloc = false;
#endif

TEST(HostAllocator, AStepsWorthOfActivationsIsReusedNotFaultedInAgain) {
  if (kSanitizerMalloc) GTEST_SKIP() << "malloc is the sanitizer's";
  ASSERT_TRUE(configure_host_allocator() || std::getenv("MALLOC_MMAP_THRESHOLD_"));
  const auto faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
  };
  // One "step": ten 6 MiB activations allocated, touched, freed. With glibc's defaults the
  // freed 60 MiB at the heap top exceeds the (adaptive) trim threshold and goes back to
  // the kernel: every step faults ~15000 pages in again.
  const auto step = [] {
    std::vector<char*> blocks;
    for (int i = 0; i < 10; ++i) {
      blocks.push_back(static_cast<char*>(std::malloc(6 << 20)));
      std::memset(blocks.back(), 1, 6 << 20);
    }
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) std::free(*it);
  };
  step();
  step();
  const long before = faults();
  for (int i = 0; i < 5; ++i) step();
  EXPECT_LT(faults() - before, 1000) << "freed activation memory went back to the kernel between steps";
}
