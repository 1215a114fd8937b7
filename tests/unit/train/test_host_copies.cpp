// core/train/host_copies on the CPU: each copy holds its tensor's values at add() — not its
// storage — with the same strides and requires_grad flag; undefined tensors pass through;
// kept tensors are held as they are; seal() comes between add() and wait(), on the CPU too.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/train/host_copies.hpp"

using namespace lockstep;

TEST(HostCopies, EachCopyHoldsItsTensorsValuesAtAdd) {
  torch::Tensor w = torch::randn({8, 3, 5, 5}).contiguous(at::MemoryFormat::ChannelsLast).set_requires_grad(true);
  torch::Tensor b = torch::randn({8});
  const torch::Tensor w0 = w.detach().clone(), b0 = b.clone();
  HostCopies copies;
  const torch::Tensor cw = copies.add(w), cb = copies.add(b);
  EXPECT_FALSE(copies.add(torch::Tensor()).defined());
  copies.seal();
  {
    torch::NoGradGuard no_grad;
    w.mul_(2.0);
  }
  b.add_(1.0);
  copies.wait();
  ASSERT_EQ(copies.tensors().size(), 2u);
  EXPECT_TRUE(torch::equal(copies.tensors()[0], w0));
  EXPECT_TRUE(torch::equal(copies.tensors()[1], b0));
  EXPECT_TRUE(cw.is_same(copies.tensors()[0]));
  EXPECT_NE(cw.data_ptr(), w.data_ptr());
  EXPECT_EQ(cw.strides(), w.strides());
  EXPECT_TRUE(cw.requires_grad());
  EXPECT_FALSE(cb.requires_grad());
}

TEST(HostCopies, SealComesBetweenTheCopiesAndTheWait) {
  HostCopies copies;
  (void)copies.add(torch::ones({3}));
  EXPECT_THROW(copies.wait(), Error) << "a wait before seal() would not wait on a GPU";
  copies.seal();
  copies.wait();
  EXPECT_THROW((void)copies.add(torch::ones({3})), Error) << "a copy after seal() is not waited for";
}

TEST(HostCopies, KeptTensorsAreHeldAsTheyAre) {
  const torch::Tensor rng = torch::arange(16, torch::kUInt8);
  HostCopies copies;
  copies.keep(rng);
  copies.wait();  // nothing queued: no seal needed
  ASSERT_EQ(copies.tensors().size(), 1u);
  EXPECT_TRUE(copies.tensors()[0].is_same(rng));
}
