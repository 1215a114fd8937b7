// doctor: see doctor.hpp.
#include "core/tools/doctor.hpp"
#include "core/tools/output_guard.hpp"

#include <fmt/format.h>
#include "core/base/env.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "core/dist/communicator.hpp"
#include "core/dist/mpi_communicator.hpp"
#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/nccl_bootstrap.hpp"
#include "core/dist/version_info.hpp"
#include "core/dist/nccl_communicator.hpp"
#include "core/dist/placement.hpp"
#include "core/dist/preflight.hpp"
#include "core/dist/rank_placement.hpp"
#include "core/tools/network_report.hpp"
#include "core/base/clock.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"
#include "io/loader/sample_order.hpp"
#include "core/model/registry.hpp"
#include "core/model/torch_errors.hpp"
#include "core/train/checkpoint_state.hpp"
#include "core/train/checkpointer.hpp"
#include "core/train/model_init.hpp"
#include "core/train/recorder.hpp"
#include "io/records/checkpoint_store.hpp"
#include "io/records/run_dir.hpp"
#include "core/train/plan_checks.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/loader/sample_store.hpp"
#include "io/loader/shard_plan.hpp"
#include "io/dataset/shard_reader.hpp"

namespace lockstep {
namespace {

// Fixed-width per-rank text, gathered at rank 0 (collective).
std::vector<std::string> gather_lines(const MpiRuntime& mpi, const std::string& line) {
  constexpr size_t kWidth = 200;
  std::vector<uint8_t> mine(kWidth, 0);
  std::memcpy(mine.data(), line.data(), std::min(line.size(), kWidth - 1));
  const std::vector<uint8_t> all = mpi.gather_bytes(mine, 0);
  std::vector<std::string> out;
  for (size_t i = 0; i + kWidth <= all.size(); i += kWidth) out.emplace_back(reinterpret_cast<const char*>(&all[i]));
  return out;
}

struct Doctor {
  const Config& cfg;
  const MpiRuntime& mpi;
  int problems = 0;

  void problem(const std::string& what) {
    ++problems;
    log::error("doctor: " + what);
  }

  void placement() {
    const int gpus = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
    // Each rank's GPU (bus id, NUMA node) and CPUs (NUMA nodes): rank_placement.hpp.
    const RankPlacement mine = probe_placement(mpi.rank(), mpi.host(), gpus > 0 ? mpi.local_rank() % gpus : -1);
    const int cores = static_cast<int>(mine.cpus.size());  // the CPUs sched_getaffinity gives this rank
    const char* visible = env::get(env::kCudaVisibleDevices);  // "-" unset, as set (even empty) otherwise
    char line[200];
    std::snprintf(line, sizeof line, "%5d  %-20s %5d  %4d  %-10s %5d %7d", mpi.rank(), mpi.host().c_str(),
                  mpi.local_rank(), gpus, visible ? visible : "-", cores, cfg.threads);
    const auto lines = gather_lines(mpi, line);
    std::string table = " rank  host                 local  gpus  visible    cores threads";
    for (const auto& l : lines) table += "\n" + l;
    log::info0("doctor: " + std::to_string(mpi.size()) + " rank(s)\n" + table);
    const std::vector<RankPlacement> all = gather_placements(mpi, mine);
    std::string where;
    for (const auto& l : placement_lines(all)) where += "\n  " + l;
    log::info0("doctor: placement" + where);
    if (const std::string m = numa_mismatch(mine); !m.empty()) problem(m);
    if (const std::string s = shared_gpu(all); !s.empty())
      log::warn0("doctor: " + s + ": NCCL allows one rank per GPU (request one GPU per rank: --gpus-per-task=1, or as "
                 "many ranks per node as GPUs)");
    if (cores > 0 && cores < cfg.threads)
      problem("rank " + std::to_string(mpi.rank()) + " has " + std::to_string(cores) + " core(s) for " +
              std::to_string(cfg.threads) + " threads (--cpus-per-task smaller than --train.threads?)");
  }

  void mpi_check() {
    double v[2] = {static_cast<double>(mpi.rank() + 1), 1.0};
    mpi.allreduce_sum(v, 2);
    const double n = mpi.size();
    if (v[0] != n * (n + 1) / 2 || v[1] != n)
      problem("MPI all-reduce returned " + fmt::format("{:g}", v[0]) + ", expected " + fmt::format("{:g}", n * (n + 1) / 2));
    mpi.barrier();
    log::info0("doctor: MPI ok (" + std::string(mpi.thread_multiple() ? "MPI_THREAD_MULTIPLE" : "no MPI_THREAD_MULTIPLE") +
               ", all-reduce and barrier across " + std::to_string(mpi.size()) + " rank(s))");
  }

  void nccl_check() {
    if (!nccl_compiled()) {
      log::info0("doctor: NCCL not compiled in (CPU build): gradients go through MPI");
      return;
    }
    NcclIdBytes id;
    try {
      id = exchange_nccl_id(mpi);  // after network_check: the diagnosis is printed before NCCL is tried
    } catch (const Error& e) {
      if (mpi.rank() == 0) problem(std::string(e.what()) + "; see the network check above");  // one error, every rank
      return;
    }
    double fp[2];
    fp[0] = fp[1] = static_cast<double>(io::mix_seed(0, std::hash<std::string>{}(std::string(id.data(), id.size()))) >> 12);
    mpi.allreduce_min(&fp[0], 1);
    mpi.allreduce_max(&fp[1], 1);
    if (fp[0] != fp[1]) problem("ranks hold different NCCL unique IDs after the broadcast");
    // What train's placement would do (placement.hpp): ranks split between GPU and CPU, nccl
    // without a GPU and GPUs given but unusable were "all checks passed" (a hostile finding).
    const bool mine = torch::cuda::is_available();
    double gpu[2] = {mine ? 1.0 : 0.0, mine ? 1.0 : 0.0};
    mpi.allreduce_min(&gpu[0], 1);
    mpi.allreduce_max(&gpu[1], 1);
    if (gpu[0] == 0) {
      if (!mine && cfg.backend == Backend::kNccl) {
        if (gpu[1] == 1.0 || mpi.rank() == 0)  // each GPU-less rank names its host; none: rank 0 says it once
          problem("--dist.backend nccl needs a CUDA GPU on every rank, and none is usable on " + mpi.host());
      } else if (gpu[1] == 1.0 && cfg.backend == Backend::kAuto) {
        if (!mine) problem("no usable CUDA GPU on " + mpi.host() + ", but other ranks have one: train refuses to "
                           "mix backends (fix or exclude this node, or pass --dist.backend mpi)");
      } else if (const std::string w = unusable_gpu_warning(cfg.backend, mine, env::get(env::kCudaVisibleDevices),
                                                            mpi.host());
                 !w.empty()) {
        log::warn0("doctor: " + w);
      }
      log::info0("doctor: NCCL unique ID exchange ok; not every rank has a GPU, so no NCCL communicator was built");
      return;
    }
    const int device = mpi.local_rank() % static_cast<int>(torch::cuda::device_count());
    try {
      check_one_rank_per_gpu(mpi, device);
    } catch (const Error& e) {
      problem(e.what());
      return;
    }
    auto comm = make_nccl_communicator(mpi, device);
    torch::Tensor t = torch::full({1024}, static_cast<float>(mpi.rank() + 1),
                                  torch::TensorOptions().device(torch::kCUDA, mpi.local_rank() % static_cast<int>(torch::cuda::device_count())));
    comm->allreduce_sum(t.data_ptr<float>(), 1024);
    const double n = mpi.size();
    if (t[0].item<double>() != n * (n + 1) / 2) problem("NCCL all-reduce returned a wrong sum");
    comm->destroy();
    log::info0("doctor: NCCL ok (unique ID exchange, communicator, all-reduce on every rank's GPU)");
  }

  // What NCCL and MPI will use on the network, and settings known to hurt (network_report.hpp).
  void network_check() {
    NetworkFacts facts = gather_network_facts(mpi.node_count());
    facts.ranks = mpi.size();
    facts.mpi_gradients = !torch::cuda::is_available();
    const NetworkReport r = report_network(facts);
    for (const auto& line : r.lines) log::info0("doctor: " + line);
    for (const auto& w : r.warnings) log::info0("doctor: warning: " + w);
    for (const auto& p : r.problems) problem(p);
    std::string env;
    for (const auto& [k, v] : facts.env) env += k + "=" + v + "\n";
    double fp[2];
    fp[0] = fp[1] = static_cast<double>(io::mix_seed(0, std::hash<std::string>{}(env)) >> 12);
    mpi.allreduce_min(&fp[0], 1);
    mpi.allreduce_max(&fp[1], 1);
    if (fp[0] != fp[1])
      log::info0("doctor: warning: the NCCL_*/OMPI_*/UCX_* settings differ between ranks (rank 0's are above): "
                 "export them in the job script, not in a shell rc file of some nodes");
  }

  void data_check() {
    if (cfg.data_dir.empty()) {
      log::info0("doctor: no --data.path: data not checked");
      return;
    }
    io::Manifest m;
    std::string unread;
    try {
      m = io::read_manifest(cfg.data_dir);
    } catch (const Error& e) {
      unread = e.what();
    }
    if (!agree(unread)) return;  // every rank stops here alike: what follows is collective
    plan_check(m);
    int shard_index = 0, mine = 0;
    for (const auto& [name, split] : m.splits)
      for (const auto& shard : split.shards) {
        if (shard_index++ % mpi.size() != mpi.rank()) continue;
        ++mine;
        try {
          const io::ShardFile f(cfg.data_dir + "/" + shard.file, m.spec, &shard, m.dataset_id);
          const int64_t n = std::min<int64_t>(f.count(), cfg.batch_size);
          std::vector<char> samples(static_cast<size_t>(n) * m.spec.sample_bytes());
          std::vector<int64_t> records(static_cast<size_t>(n * m.spec.record_width()));
          f.read(0, n, samples.data(), records.data());
        } catch (const Error& e) {
          problem(e.what());
        }
      }
    double total = mine;
    mpi.allreduce_sum(&total, 1);
    log::info0("doctor: data " + cfg.data_dir + ": read one batch from each of " + fmt::format("{:.0f}", total) + " shard(s)");
  }

  // Collective. VERDICT: this rank's problem ("" none). Rank 0 reports its own; another rank
  // only one that differs from rank 0's (a file its node cannot read), so ranks that refuse
  // alike print one line. True when no rank has a problem.
  bool agree(const std::string& verdict) {
    const std::string first = mpi.broadcast_string(verdict.substr(0, verdict.find('\n')), 0);
    if (!verdict.empty() && (mpi.rank() == 0 || verdict.substr(0, verdict.find('\n')) != first))
      problem(verdict);  // the line names rank and host
    double bad = verdict.empty() ? 0.0 : 1.0;
    mpi.allreduce_max(&bad, 1);
    return bad == 0.0;
  }

  // Collective. What `lockstep train` with these options would refuse at its start, on every
  // rank as train checks it: the data, splits and task options (check_training_plan), a
  // model that cannot be built for the samples, an --init-from file it cannot start from, a
  // freeze that leaves nothing to train, a --model.sync-bn it cannot honour, a batch larger
  // than a rank's share of the training split; then the checkpoint it would resume.
  void plan_check(const io::Manifest& m) {
    std::string verdict;
    std::shared_ptr<Net> model;
    try {  // LibTorch's errors (a model it cannot build) as one line, no per-process backtrace
      with_torch_errors([&] {
        check_training_plan(cfg, m);
        model = make_model(
            ModelOptions{cfg.model, cfg.dropout, cfg.model_width, cfg.model_depth, cfg.checkpoint_activations}, m.spec);
        init_weights(cfg, *model);  // --model.init-from's file, --model.freeze
        trainable_params(*model, cfg.freeze);
        use_sync_bn(cfg, *model, nullptr);  // counted, left local
        // As the training reader deals the split (a new share each epoch, io/loader/rank_reader.hpp).
        io::steps_per_epoch(io::shard_counts(m.split(cfg.train_split, cfg.data_dir)), mpi.size(),
                            cfg.batch_size * cfg.grad_accum, cfg.remainder == Remainder::kWrap, /*dealt=*/true);
        return 0;
      });
    } catch (const std::exception& e) {
      verdict = std::string("training plan: ") + e.what();
    }
    if (!agree(verdict)) return;
    log::info0(fmt::format("doctor: training plan: model {} on {} ({} split), batch {} x {} rank(s): ok", cfg.model,
                           m.spec.name, cfg.train_split, cfg.batch_size, mpi.size()));
    resume_check(m, *model);
  }

  // Collective: the checkpoint --run.resume would continue from in --run.dir (rank 0 chooses,
  // as train does), read on every rank and checked as train's resume checks it: its data,
  // model and optimizer (resume_mismatch), its state loaded into this model and optimizer,
  // finite (load_resume_state). A job that would wait in the queue for hours, then refuse to
  // resume, is refused here.
  void resume_check(const io::Manifest& m, Net& model) {
    ResumeChoice choice;
    if (mpi.rank() == 0) {
      try {  // what train's run directory would refuse: in use, not lockstep's, its lock file deleted
        io::probe_run_dir(cfg.run_dir);
      } catch (const Error& e) {
        choice.problem = e.what();
      }
    }
    if (!agree(choice.problem.empty() ? "" : "run directory: " + choice.problem)) return;
    if (mpi.rank() == 0) {
      choice = choose_resume(cfg);
      for (const auto& why : choice.skipped) log::warn("doctor: resume: skipping unusable checkpoint: " + why);
    }
    if (!agree(choice.problem.empty() ? "" : "resume: " + choice.problem)) return;
    const std::string path = mpi.broadcast_string(choice.path, 0);
    if (path.empty()) {
      log::info0("doctor: resume: no checkpoint in " + checkpoint_dir(cfg) + ": the job starts afresh");
      return;
    }
    std::string verdict;
    CheckpointMeta meta;
    try {
      with_torch_errors([&] {
        const io::CheckpointData d = read_on_every_rank(mpi, path);  // the same bytes on every rank
        meta = meta_from_json(d.meta_json, path);
        verdict = resume_mismatch(meta, cfg, m, model, path);
        if (verdict.empty()) {
          const auto opt = make_optimizer(trainable_params(model, cfg.freeze), optimizer_options(cfg, mpi.size()));
          load_resume_state(d.payload, model, *opt, path, nullptr);
        }
        return 0;
      });
    } catch (const std::exception& e) {
      verdict = e.what();
    }
    if (!agree(verdict.empty() ? "" : "resume: " + verdict)) return;
    const bool ended = !meta.stopped_early.empty() || meta.pos.epoch >= cfg.epochs ||
                       (cfg.max_steps > 0 && meta.pos.step >= cfg.max_steps);
    log::info0(fmt::format("doctor: resume: {} at step {} (epoch {} of {}): ok{}", path, meta.pos.step,
                           std::min<int64_t>(meta.pos.epoch + 1, cfg.epochs), cfg.epochs,
                           !ended ? ""
                           : !meta.stopped_early.empty()
                               ? "; the run stopped early (" + meta.stopped_early + "): the job trains no further step"
                               : "; training is complete there: the job trains no further step (raise "
                                 "--train.epochs or --train.max-steps to go on)"));
  }

  // Seconds per all-reduce of N floats (max over ranks of the mean of ITERS).
  double time_allreduce(Communicator& comm, size_t n, int iters) {
    std::vector<float> buf(n, 1.0f);
    for (int i = 0; i < 3; ++i) comm.allreduce_sum(buf.data(), n);
    mpi.barrier();
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) comm.allreduce_sum(buf.data(), n);
    double t = seconds_since(t0) / iters;
    mpi.allreduce_max(&t, 1);
    return t;
  }

  void allreduce_timing() {
    MpiCommunicator comm(mpi);
    const size_t small = 1024, big = static_cast<size_t>(std::max(1.0, cfg.doctor_allreduce_mb) * (1 << 20) / 4);
    const double t_small = time_allreduce(comm, small, 50);
    const double t_big = time_allreduce(comm, big, 10);
    const double n = mpi.size();
    const double bytes = static_cast<double>(big) * 4;
    const double busbw = n > 1 ? bytes * 2 * (n - 1) / n / t_big / 1e9 : 0.0;
    log::info0("doctor: all-reduce (lockstep's MPI communicator): 4 KiB in " + fmt::format("{:.1f}", t_small * 1e6) + " us, " +
               fmt::format("{:.1f}", bytes / (1 << 20)) + " MiB in " + fmt::format("{:.2f}", t_big * 1e3) + " ms = " + fmt::format("{:.2f}", busbw) +
               " GB/s bus bandwidth");
    if (!cfg.doctor_out.empty() && mpi.rank() == 0) {
      const io::Json o = {{"ranks", mpi.size()},
                          {"hosts", mpi.node_count()},
                          {"small_bytes", static_cast<int64_t>(small * 4)}, {"small_seconds", t_small},
                          {"big_bytes", static_cast<int64_t>(big * 4)}, {"big_seconds", t_big}, {"busbw_gbs", busbw}};
      io::write_file_atomic(cfg.doctor_out, io::dump_json(o) + "\n");
    }
  }
};

}  // namespace

int run_doctor(const Config& cfg, const MpiRuntime& mpi) {
  // Ranks told other sizes or backends would run collectives that never meet: named first.
  preflight_check(mpi, {{"resolved config", cfg.resolved_ini}, {"lockstep version", lockstep_version()}});
  torch::set_num_threads(cfg.threads);
  if (!cfg.doctor_out.empty()) check_output("--doctor.out", cfg.doctor_out, {cfg.config_file}, cfg.force_output);
  Doctor d{cfg, mpi};
  log::info0("doctor: " + version_line());
  d.placement();
  d.mpi_check();
  d.network_check();  // diagnose first (NCCL_SOCKET_IFNAME, interfaces), then try NCCL
  d.nccl_check();
  d.data_check();
  d.allreduce_timing();
  double problems = d.problems;
  mpi.allreduce_sum(&problems, 1);
  if (problems > 0) {
    log::info0("doctor: " + fmt::format("{:.0f}", problems) + " problem(s), each printed above by the rank that found it");
    return kExitFailure;
  }
  log::info0("doctor: all checks passed");
  return kExitOk;
}

}  // namespace lockstep
