// mpi_runtime: the process's MPI environment, the one piece of global state lockstep has.
//
// 1. MPI_Init_thread asks for MPI_THREAD_MULTIPLE (the gradient reducer's communication
//    thread and the watchdog call MPI beside the training thread) and records what the
//    library granted. Works under mpirun, srun --mpi=pmix, and as a singleton.
// 2. All lockstep traffic goes over a private MPI_Comm_dup(MPI_COMM_WORLD) with
//    MPI_ERRORS_RETURN, so every failing call returns to MPI_CHECK instead of aborting
//    inside the library with no context.
// 3. local rank/size come from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): the GPU a rank
//    uses is its local rank.
// 1a. Before MPI_Init, Open MPI is asked for the ring all-reduce on large messages
//    (mpi_tuning.hpp), unless the user tuned it themselves.
// 4. The destructor finalises MPI only if this object initialised it. abort() ends every
//    rank of the job (MPI_Abort) and is how an error on one rank never leaves the others
//    waiting in a collective.
// Collectives (barrier, broadcast_*, allreduce_*) must be called by every rank in the
// same order.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "core/dist/checks.hpp"
#include "core/dist/watchdog.hpp"

namespace lockstep {

class MpiRuntime {
 public:
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  const std::string& host() const { return host_; }
  MPI_Comm comm() const { return comm_; }
  bool thread_multiple() const { return thread_level_ >= MPI_THREAD_MULTIPLE; }
  // A communication thread may call MPI while the training thread does not.
  bool thread_serialized() const { return thread_level_ >= MPI_THREAD_SERIALIZED; }

  // Starts the collective watchdog (watchdog.hpp): a collective older than TIMEOUT_S is
  // reported with rank and host, abort hooks run (NCCL), and the job ends (MPI_Abort).
  void start_watchdog(double timeout_s);
  Watchdog* watchdog() const { return watchdog_.get(); }
  // Where this rank's flight record goes (flight_dump.hpp): on a watchdog failure (then
  // the ranks' records are diagnosed before the job ends) and on SIGUSR2 (the job goes
  // on). Empty: nowhere (the diagnosis is still logged from this rank's own record).
  void set_flight_dir(const std::string& dir) const;
  // Writes this rank's record; DIAGNOSE: then waits up to GRACE s for the others' and logs
  // the cross-rank diagnosis (one rank does). Never throws.
  void dump_flight(bool diagnose, double grace, bool error) const;
  // Abort hooks (NCCL: ncclCommAbort) run by abort() before MPI_Abort. The registry is
  // locked: a hook is added and removed by its communicator's thread while the watchdog
  // thread may be running abort(); remove_abort_hook returns only when that hook can no
  // longer run, so a communicator removes its hook before it is destroyed.
  uint64_t add_abort_hook(std::function<void()> hook) const;
  void remove_abort_hook(uint64_t id) const;
  // Hosts of all ranks, gathered once at start (index = rank).
  const std::vector<std::string>& hosts() const { return hosts_; }
  // The node of every rank (index = rank): the world rank of its node's first rank (MPI's
  // shared-memory split), so ranks on one node share it whatever their host names say
  // (containers of identical names counted as one host, and their GPUs as one's).
  const std::vector<int>& nodes() const { return nodes_; }
  int node_count() const;

  // Ends every rank of the job: abort hooks (NCCL), then MPI_Abort.
  [[noreturn]] void abort(int code) const;
  void barrier() const;
  void broadcast_bytes(void* data, size_t n, int root) const;
  std::string broadcast_string(const std::string& s, int root) const;
  void allreduce_sum(double* data, int n) const;
  void allreduce_max(double* data, int n) const;
  void allreduce_min(double* data, int n) const;
  // Every rank's MINE (the same length everywhere) concatenated by rank, at ROOT only.
  std::vector<uint8_t> gather_bytes(const std::vector<uint8_t>& mine, int root) const;
  // Point to point (any length; sent in pieces under 2 GiB): the two ranks must call them
  // in matching order. WHAT names the transfer for the watchdog.
  void send_bytes(const void* data, size_t n, int dest, const std::string& what) const;
  std::vector<uint8_t> recv_bytes(int source, const std::string& what) const;

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  int thread_level_ = MPI_THREAD_SINGLE;
  bool initialised_here_ = false;
  std::string host_;
  std::vector<std::string> hosts_;
  std::vector<int> nodes_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm local_comm_ = MPI_COMM_NULL;
  mutable std::mutex hooks_mu_;
  mutable std::map<uint64_t, std::function<void()>> abort_hooks_;  // registered by communicators
  mutable uint64_t next_hook_ = 1;
  mutable std::string flight_dir_;  // guarded by hooks_mu_
  std::unique_ptr<Watchdog> watchdog_;  // last member: stopped first
};

}  // namespace lockstep
