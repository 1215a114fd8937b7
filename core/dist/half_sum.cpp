// half_sum: see half_sum.hpp.
#include "core/dist/half_sum.hpp"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "core/base/error.hpp"
#include "core/dist/checks.hpp"

namespace lockstep {

uint16_t to_bf16(float x) { return c10::BFloat16(x).x; }
uint16_t to_f16(float x) { return c10::Half(x).x; }
float from_bf16(uint16_t x) { return static_cast<float>(c10::BFloat16(x, c10::BFloat16::from_bits())); }
float from_f16(uint16_t x) { return static_cast<float>(c10::Half(x, c10::Half::from_bits())); }

void sum_bf16(const uint16_t* in, uint16_t* inout, size_t n) {
  for (size_t i = 0; i < n; ++i) inout[i] = to_bf16(from_bf16(in[i]) + from_bf16(inout[i]));
}

void sum_f16(const uint16_t* in, uint16_t* inout, size_t n) {
  for (size_t i = 0; i < n; ++i) inout[i] = to_f16(from_f16(in[i]) + from_f16(inout[i]));
}

namespace {

// MPI's user-function signature; LEN counts elements of the datatype (MPI_UINT16_T).
void mpi_sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  sum_bf16(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), static_cast<size_t>(*len));
}
void mpi_sum_f16(void* in, void* inout, int* len, MPI_Datatype*) {
  sum_f16(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), static_cast<size_t>(*len));
}

}  // namespace

MpiHalfSum::MpiHalfSum(WireType type) {
  LOCKSTEP_REQUIRE(type != WireType::kF32, "MpiHalfSum is for 16-bit wire types; float32 uses MPI_SUM");
  MPI_CHECK(MPI_Op_create(type == WireType::kBF16 ? &mpi_sum_bf16 : &mpi_sum_f16, /*commute=*/1, &op_));
}

MpiHalfSum::~MpiHalfSum() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && op_ != MPI_OP_NULL) MPI_Op_free(&op_);  // a destructor: nothing to report to
}

}  // namespace lockstep
