// allreduce_bench: lockstep's MPI communicator (the path gradients take: queued to the
// communication thread, reduced, waited for) against a raw MPI_Allreduce on the same
// buffer, 4 KiB ... 64 MiB, in one run. nccl-tests' method: barrier, warm-up, timed loop,
// the slowest rank's time; pairs interleaved (raw, lockstep, raw, ...), median of the
// pairs. Bus bandwidth = algorithm bandwidth * 2(n-1)/n. BYTES is the float32 gradient
// size; --wire bf16|fp16 sends lockstep's side in 16 bits (--dist.compress: half the
// bytes, a user-defined sum), so the ratio column is what compression buys on this link.
//
//   mpirun -np 2 build/bench/allreduce_bench [--pairs 3] [--min-kb 4] [--max-mb 64] [--iters N] [--wire f32]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/dist/communicator.hpp"
#include "core/dist/mpi_communicator.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/half_sum.hpp"

using namespace lockstep;

namespace {

template <typename F>
double timed(const MpiRuntime& mpi, int iters, F&& op) {
  for (int i = 0; i < 3; ++i) op();  // warm-up
  mpi.barrier();
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) op();
  double t = (MPI_Wtime() - t0) / iters;
  mpi.allreduce_max(&t, 1);
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MpiRuntime mpi(&argc, &argv);
  int pairs = 3;
  double max_mb = 64, min_kb = 4;
  int fixed_iters = 0;  // 0: enough for ~256 MiB per timing
  WireType wire = WireType::kF32;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--pairs") pairs = std::stoi(v);
    else if (k == "--max-mb") max_mb = std::stod(v);
    else if (k == "--min-kb") min_kb = std::stod(v);
    else if (k == "--iters") fixed_iters = std::stoi(v);
    else if (k == "--wire" && (v == "f32" || v == "bf16" || v == "fp16"))
      wire = v == "f32" ? WireType::kF32 : v == "bf16" ? WireType::kBF16 : WireType::kF16;
    else {
      std::fprintf(stderr, "allreduce_bench: unknown option or value: %s %s\n", k.c_str(), v.c_str());
      return 2;
    }
  }
  MpiCommunicator comm(mpi);
  const int n = mpi.size();
  const double bus = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  if (mpi.rank() == 0) {
    std::printf("all-reduce (sum; raw: float32, lockstep: %s), %d ranks, median of %d interleaved pairs; bus bandwidth GB/s of the float32 size\n",
                wire_name(wire), n, pairs);
    std::printf("%10s %12s %12s %12s %12s %8s\n", "bytes", "raw us", "lockstep us", "raw busbw", "ls busbw", "ratio");
  }
  std::string json = "[";
  for (size_t bytes = static_cast<size_t>(min_kb * 1024) / 4 * 4; bytes <= static_cast<size_t>(max_mb * 1048576); bytes *= 4) {
    std::vector<float> buf(bytes / 4, 1.0f);
    std::vector<uint16_t> half(buf.size(), to_bf16(1.0f));
    const int iters = fixed_iters > 0 ? fixed_iters : static_cast<int>(std::clamp<size_t>((256u << 20) / bytes, 5, 2000));
    std::vector<double> raw, ls;
    for (int p = 0; p < pairs; ++p) {
      raw.push_back(timed(mpi, iters, [&] {
        MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(buf.size()), MPI_FLOAT, MPI_SUM, mpi.comm());
      }));
      ls.push_back(timed(mpi, iters, [&] {
        if (wire == WireType::kF32)
          comm.start_allreduce(buf.data(), buf.size(), "bench");
        else
          comm.start_allreduce(half.data(), half.size(), wire, "bench");
        comm.wait_all();
      }));
    }
    const double tr = median(raw), tl = median(ls);
    const double br = bytes / tr / 1e9 * bus, bl = bytes / tl / 1e9 * bus;
    if (mpi.rank() == 0) {
      std::printf("%10zu %12.1f %12.1f %12.2f %12.2f %7.0f%%\n", bytes, tr * 1e6, tl * 1e6, br, bl, 100.0 * tr / tl);
      json += std::string(json.size() > 1 ? ", " : "") + "{\"bytes\": " + std::to_string(bytes) +
              ", \"raw_us\": " + std::to_string(tr * 1e6) + ", \"raw_min_us\": " +
              std::to_string(*std::min_element(raw.begin(), raw.end()) * 1e6) + ", \"raw_max_us\": " +
              std::to_string(*std::max_element(raw.begin(), raw.end()) * 1e6) + ", \"lockstep_us\": " +
              std::to_string(tl * 1e6) + ", \"lockstep_min_us\": " +
              std::to_string(*std::min_element(ls.begin(), ls.end()) * 1e6) + ", \"lockstep_max_us\": " +
              std::to_string(*std::max_element(ls.begin(), ls.end()) * 1e6) + "}";
    }
  }
  if (mpi.rank() == 0) std::printf("%s]\n", json.c_str());
  return 0;
}
