// mpi_runtime: see mpi_runtime.hpp.
#include "core/dist/mpi_runtime.hpp"

#include "core/base/clock.hpp"
#include "core/dist/flight_dump.hpp"
#include "core/dist/mpi_tuning.hpp"
#include "core/dist/stop_signal.hpp"
#include "io/util/file_util.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>

#include "core/base/error.hpp"
#include "core/base/log.hpp"

namespace lockstep {

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int already = 0;
  MPI_Initialized(&already);
  if (already) {
    MPI_Query_thread(&thread_level_);
  } else {
    prefer_ring_allreduce();  // before MPI_Init: Open MPI reads its parameters there
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &thread_level_) != MPI_SUCCESS)
      throw Error("MPI_Init_thread failed (is the launcher's MPI the one lockstep was built with?)");
    initialised_here_ = true;
  }
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
  MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(local_comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(local_comm_, &local_rank_));
  MPI_CHECK(MPI_Comm_size(local_comm_, &local_size_));

  char name[HOST_NAME_MAX + 1] = {0};
  gethostname(name, sizeof name - 1);
  host_ = name;
  log::set_identity(rank_, size_, host_);
  log::use_console_thread();  // the launcher's pipes never block a rank (log.hpp)

  std::vector<char> all(static_cast<size_t>(size_) * (HOST_NAME_MAX + 1), 0);
  MPI_CHECK(MPI_Allgather(name, HOST_NAME_MAX + 1, MPI_CHAR, all.data(), HOST_NAME_MAX + 1, MPI_CHAR, comm_));
  for (int r = 0; r < size_; ++r) hosts_.emplace_back(all.data() + static_cast<size_t>(r) * (HOST_NAME_MAX + 1));
  int node = rank_;  // the node's first rank, from its local rank 0
  MPI_CHECK(MPI_Bcast(&node, 1, MPI_INT, 0, local_comm_));
  nodes_.resize(static_cast<size_t>(size_));
  MPI_CHECK(MPI_Allgather(&node, 1, MPI_INT, nodes_.data(), 1, MPI_INT, comm_));
  // Every rank is here (the gathers above): rank 0's wall clock becomes the job's (clock.hpp),
  // late by one broadcast's latency on the others.
  double job_now = unix_seconds();
  MPI_CHECK(MPI_Bcast(&job_now, 1, MPI_DOUBLE, 0, comm_));
  set_job_clock(job_now);
}

int MpiRuntime::node_count() const {
  return static_cast<int>(std::set<int>(nodes_.begin(), nodes_.end()).size());
}

MpiRuntime::~MpiRuntime() {
  watchdog_.reset();
  if (local_comm_ != MPI_COMM_NULL) MPI_Comm_free(&local_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (initialised_here_ && !finalized) MPI_Finalize();
}

void MpiRuntime::start_watchdog(double timeout_s) {
  watchdog_ = std::make_unique<Watchdog>(timeout_s, [this, timeout_s](const std::string& cause) {
    log::error(cause);
    dump_flight(/*diagnose=*/true, std::clamp(timeout_s / 4, 2.0, 10.0), /*error=*/true);
    abort(kExitFailure);
  });
  watchdog_->set_tick([this] {
    if (stop_signal::take_dump_request()) dump_flight(/*diagnose=*/true, 3.0, /*error=*/false);
  });
  stop_signal::install_dump_request();  // from here on a SIGUSR2 is answered, not fatal
}

void MpiRuntime::set_flight_dir(const std::string& dir) const {
  // A stale record, removed outside the lock: a stuck file system here must not hold up the
  // watchdog's abort, which takes the lock.
  if (!dir.empty()) io::remove_file(dir + "/rank-" + std::to_string(rank_) + ".json");
  std::lock_guard<std::mutex> lock(hooks_mu_);
  flight_dir_ = dir;
}

void MpiRuntime::dump_flight(bool diagnose, double grace, bool error) const {
  if (!watchdog_) return;
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(hooks_mu_);
    dir = flight_dir_;
  }
  const auto say = [error](const std::string& line) { error ? log::error(line) : log::warn(line); };
  try {
    const double since = job_seconds() - 1.0;
    const std::string json = watchdog_->flight().to_json(rank_, host_);
    if (dir.empty()) {
      for (const auto& line : diagnose_flight({parse_flight_dump(json, "flight record")}, 1, job_seconds()))
        say("flight recorder: " + line);
      return;
    }
    write_flight_dump(dir, rank_, json);
    say("flight record written to " + dir + "/rank-" + std::to_string(rank_) + ".json");
    if (!diagnose) return;
    const FlightCause cause = error ? FlightCause::kHang : FlightCause::kRequest;
    if (const auto lines = diagnose_flight_dir(dir, rank_, size_, since, grace, cause))
      for (const auto& line : *lines) say("flight recorder: " + line);
  } catch (const std::exception& e) {
    say(std::string("flight recorder: could not dump: ") + e.what());
  }
}

uint64_t MpiRuntime::add_abort_hook(std::function<void()> hook) const {
  std::lock_guard<std::mutex> lock(hooks_mu_);
  abort_hooks_.emplace(next_hook_, std::move(hook));
  return next_hook_++;
}

void MpiRuntime::remove_abort_hook(uint64_t id) const {
  std::lock_guard<std::mutex> lock(hooks_mu_);
  abort_hooks_.erase(id);
}

void MpiRuntime::abort(int code) const {
  {
    // Held while the hooks run (and, since MPI_Abort does not return, for good): a
    // communicator being destroyed on another thread waits in remove_abort_hook.
    std::unique_lock<std::mutex> lock(hooks_mu_);
    for (const auto& [id, hook] : abort_hooks_) hook();
    lock.release();  // never unlocked: MPI_Abort below ends the process
  }
  log::flush_console(2.0);  // the root cause reaches a launcher that still reads
  MPI_Abort(comm_ != MPI_COMM_NULL ? comm_ : MPI_COMM_WORLD, code);
  _exit(code);  // MPI_Abort does not return; this only satisfies [[noreturn]]
}

void MpiRuntime::barrier() const {
  Watchdog::Scope watch(watchdog_.get(), "MPI_Barrier");
  MPI_CHECK(MPI_Barrier(comm_));
}

void MpiRuntime::broadcast_bytes(void* data, size_t n, int root) const {
  Watchdog::Scope watch(watchdog_.get(), "MPI_Bcast of " + std::to_string(n) + " bytes from rank " + std::to_string(root));
  auto* p = static_cast<char*>(data);
  while (n > 0) {  // MPI counts are int: send huge buffers in pieces
    const int chunk = static_cast<int>(std::min<size_t>(n, INT_MAX));
    MPI_CHECK(MPI_Bcast(p, chunk, MPI_BYTE, root, comm_));
    p += chunk;
    n -= static_cast<size_t>(chunk);
  }
}

std::string MpiRuntime::broadcast_string(const std::string& s, int root) const {
  uint64_t n = s.size();
  {
    Watchdog::Scope watch(watchdog_.get(), "MPI_Bcast of a string length");
    MPI_CHECK(MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm_));
  }
  std::string out = rank_ == root ? s : std::string(n, '\0');
  broadcast_bytes(out.data(), n, root);
  return out;
}

void MpiRuntime::allreduce_sum(double* data, int n) const {
  Watchdog::Scope watch(watchdog_.get(), "MPI_Allreduce (sum) of " + std::to_string(n) + " doubles");
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_DOUBLE, MPI_SUM, comm_));
}

void MpiRuntime::allreduce_max(double* data, int n) const {
  Watchdog::Scope watch(watchdog_.get(), "MPI_Allreduce (max) of " + std::to_string(n) + " doubles");
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_DOUBLE, MPI_MAX, comm_));
}

void MpiRuntime::allreduce_min(double* data, int n) const {
  Watchdog::Scope watch(watchdog_.get(), "MPI_Allreduce (min) of " + std::to_string(n) + " doubles");
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_DOUBLE, MPI_MIN, comm_));
}

}  // namespace lockstep

namespace lockstep {

void MpiRuntime::send_bytes(const void* data, size_t n, int dest, const std::string& what) const {
  Watchdog::Scope watch(watchdog_.get(), "MPI_Send of " + what + " to rank " + std::to_string(dest),
                        /*collective=*/false);
  uint64_t len = n;
  MPI_CHECK(MPI_Send(&len, 1, MPI_UINT64_T, dest, 0, comm_));
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const int chunk = static_cast<int>(std::min<size_t>(n, 1 << 30));
    MPI_CHECK(MPI_Send(p, chunk, MPI_BYTE, dest, 0, comm_));
    p += chunk;
    n -= static_cast<size_t>(chunk);
  }
}

std::vector<uint8_t> MpiRuntime::recv_bytes(int source, const std::string& what) const {
  Watchdog::Scope watch(watchdog_.get(), "MPI_Recv of " + what + " from rank " + std::to_string(source),
                        /*collective=*/false);
  uint64_t len = 0;
  MPI_CHECK(MPI_Recv(&len, 1, MPI_UINT64_T, source, 0, comm_, MPI_STATUS_IGNORE));
  std::vector<uint8_t> out(len);
  auto* p = reinterpret_cast<char*>(out.data());
  for (size_t n = len; n > 0;) {
    const int chunk = static_cast<int>(std::min<size_t>(n, 1 << 30));
    MPI_CHECK(MPI_Recv(p, chunk, MPI_BYTE, source, 0, comm_, MPI_STATUS_IGNORE));
    p += chunk;
    n -= static_cast<size_t>(chunk);
  }
  return out;
}

std::vector<uint8_t> MpiRuntime::gather_bytes(const std::vector<uint8_t>& mine, int root) const {
  Watchdog::Scope watch(watchdog_.get(), "MPI_Gather of " + std::to_string(mine.size()) + " bytes per rank");
  std::vector<uint8_t> all(rank_ == root ? mine.size() * static_cast<size_t>(size_) : 0);
  MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                       static_cast<int>(mine.size()), MPI_BYTE, root, comm_));
  return all;
}

}  // namespace lockstep
