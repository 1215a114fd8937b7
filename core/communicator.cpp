// communicator: the MPI backend (see communicator.hpp).
#include "core/communicator.hpp"

#include <algorithm>
#include <climits>

#include "core/mpi_runtime.hpp"

namespace lockstep {

int MpiCommunicator::rank() const { return mpi_.rank(); }
int MpiCommunicator::size() const { return mpi_.size(); }

void MpiCommunicator::allreduce_sum(float* data, size_t n) {
  while (n > 0) {  // MPI counts are int
    const int chunk = static_cast<int>(std::min<size_t>(n, INT_MAX));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, chunk, MPI_FLOAT, MPI_SUM, mpi_.comm()));
    data += chunk;
    n -= static_cast<size_t>(chunk);
  }
}

void MpiCommunicator::broadcast(float* data, size_t n, int root) {
  mpi_.broadcast_bytes(data, n * sizeof(float), root);
}

}  // namespace lockstep
