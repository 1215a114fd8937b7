// half_sum: sums of 16-bit floating-point vectors (bfloat16, float16) for reductions on a
// 16-bit wire (--dist.compress). Each element pair is widened to float32, added, and
// rounded back once (round to nearest even), so a ring of n ranks rounds n-1 times, never
// in 16-bit arithmetic. Elements are raw 16-bit patterns (uint16_t).
//
// MpiHalfSum wraps the MPI_Op that applies these sums to MPI_UINT16_T buffers (MPI has
// no 16-bit float type); NCCL has native ncclBfloat16/ncclFloat16 and needs none of this.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "core/dist/communicator.hpp"

namespace lockstep {

void sum_bf16(const uint16_t* in, uint16_t* inout, size_t n);
void sum_f16(const uint16_t* in, uint16_t* inout, size_t n);
// Conversions with the same rounding, for tests and tools.
uint16_t to_bf16(float x);
uint16_t to_f16(float x);
float from_bf16(uint16_t x);
float from_f16(uint16_t x);

// An MPI_Op summing TYPE (kBF16 or kF16) elements carried as MPI_UINT16_T. Created and
// freed locally (not collective); freed only while MPI is still initialised.
class MpiHalfSum {
 public:
  explicit MpiHalfSum(WireType type);
  ~MpiHalfSum();
  MpiHalfSum(const MpiHalfSum&) = delete;
  MpiHalfSum& operator=(const MpiHalfSum&) = delete;
  MPI_Op op() const { return op_; }

 private:
  MPI_Op op_ = MPI_OP_NULL;
};

}  // namespace lockstep
