// communicator: how gradients are summed across ranks. Two backends behind one interface:
// MpiCommunicator (host memory, MPI_Allreduce) and NcclCommunicator (device memory, its
// own CUDA stream, ordered after the compute stream with events).
//
// Contract: every rank calls the same operations, on buffers of the same length, in the
// same order. Pointers are host pointers for MPI, device pointers for NCCL.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace lockstep {

class MpiRuntime;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In-place sum over ranks of N floats at DATA. Returns when DATA holds the sum (NCCL:
  // when the compute stream is ordered after the reduction).
  virtual void allreduce_sum(float* data, size_t n) = 0;
  virtual void broadcast(float* data, size_t n, int root) = 0;
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(const MpiRuntime& mpi) : mpi_(mpi) {}
  std::string name() const override { return "mpi"; }
  int rank() const override;
  int size() const override;
  void allreduce_sum(float* data, size_t n) override;
  void broadcast(float* data, size_t n, int root) override;

 private:
  const MpiRuntime& mpi_;
};

}  // namespace lockstep
