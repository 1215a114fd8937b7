// test_helpers: see test_helpers.hpp.
#include "test_helpers.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <exception>

#include "io/util/file_util.hpp"
#include "io/dataset/shard_writer.hpp"

namespace lockstep::testing {
namespace {
// fresh_dir's directories of the running test: removed when it passes, kept (and named) when
// it fails, so a run of the suite leaves nothing behind but what a failure needs looked at.
std::mutex g_test_dirs_mu;
std::vector<std::string> g_test_dirs;

class TestDirSweeper final : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    std::vector<std::string> dirs;
    {
      std::lock_guard<std::mutex> lock(g_test_dirs_mu);
      dirs.swap(g_test_dirs);
    }
    for (const auto& d : dirs) {
      if (info.result()->Failed()) {
        std::fprintf(stderr, "kept for a look: %s\n", d.c_str());
        continue;
      }
      try {
        io::remove_tree(d);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "could not remove %s: %s\n", d.c_str(), e.what());
      }
    }
  }
};

[[maybe_unused]] const bool g_sweeper_added = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new TestDirSweeper);
  return true;
}();
}  // namespace

std::string fresh_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string dir = ::testing::TempDir() + "/lockstep-" + std::to_string(::getpid()) + "-" +
                          (info ? std::string(info->name()) : "x") + "-" + tag + "-" +
                          std::to_string(counter++);
  io::remove_tree(dir);  // what an earlier run with the same pid left
  io::make_dirs(dir);
  if (info) {
    std::lock_guard<std::mutex> lock(g_test_dirs_mu);
    g_test_dirs.push_back(dir);
  }
  return dir;
}

io::DatasetSpec shape_spec(std::vector<int64_t> shape, int64_t classes) {
  io::DatasetSpec s;
  s.name = "t";
  s.sample_shape = std::move(shape);
  s.num_classes = classes;
  return s;
}

io::DatasetSpec pictures_spec(std::vector<int64_t> shape, io::DType dtype) {
  io::DatasetSpec s;
  s.name = "pictures";
  s.sample_shape = std::move(shape);
  s.dtype = dtype;
  s.num_classes = 10;
  s.mean = {90.0, 110.0, 130.0};
  s.std = {50.0, 60.0, 70.0};
  return s;
}

bool has_line(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

long exited_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return static_cast<long>(pid);
}

io::DatasetSpec speech_spec() {
  io::DatasetSpec s;
  s.name = "speech";
  s.sample_shape = {3, 20};
  s.dtype = io::DType::kFloat32;
  s.labeled = false;
  s.ragged = true;
  s.max_target_length = 4;
  s.tokens = {" ", "a", "b"};
  s.mean = {1.0, 1.0, 1.0};
  s.std = {2.0, 2.0, 2.0};
  return s;
}

io::DatasetSpec tiny_spec(int64_t classes) {
  io::DatasetSpec s;
  s.name = "tiny";
  s.sample_shape = {1, 4, 4};
  s.dtype = io::DType::kUInt8;
  s.num_classes = classes;
  s.mean = {10.0};
  s.std = {2.0};
  return s;
}

void tiny_data(const io::DatasetSpec& spec, int64_t n, std::vector<unsigned char>* samples,
               std::vector<int64_t>* labels) {
  samples->resize(static_cast<size_t>(n) * spec.sample_bytes());
  labels->resize(static_cast<size_t>(n));
  for (size_t i = 0; i < samples->size(); ++i) (*samples)[i] = static_cast<unsigned char>(i * 31 % 251);
  for (int64_t i = 0; i < n; ++i) (*labels)[static_cast<size_t>(i)] = i % spec.num_classes;
}

io::Manifest write_tiny_dataset(const std::string& dir, int64_t n, int shards) {
  io::Manifest m;
  m.spec = tiny_spec();
  std::vector<unsigned char> samples;
  std::vector<int64_t> labels;
  tiny_data(m.spec, n, &samples, &labels);
  m.splits.emplace_back("train", io::write_split(dir, "train", m.spec, samples.data(), labels.data(), n,
                                                 shards, io::WriteOptions{}));
  io::write_manifest(dir, m);
  return m;
}

int FakeCopies::record() {
  std::lock_guard<std::mutex> lock(mu_);
  done_[next_] = false;
  return next_++;
}

bool FakeCopies::done(int id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return id < 0 || done_.at(id);
}

void FakeCopies::complete(int id) {
  if (on_complete) on_complete(id);
  std::lock_guard<std::mutex> lock(mu_);
  done_.at(id) = true;
}

void FakeCopies::wait(int id) {
  complete(id);
  std::lock_guard<std::mutex> lock(mu_);
  ++waited_;
}

int FakeCopies::waited() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waited_;
}

int FakeCopies::recorded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_;
}

namespace {

class FakeFence final : public Fence {
 public:
  explicit FakeFence(FakeCopies* c) : c_(c) {}
  void record() override { id_ = c_->record(); }
  bool done() const override { return c_->done(id_); }
  void wait() override { c_->wait(id_); }

 private:
  FakeCopies* c_;
  int id_ = -1;
};

}  // namespace

HostBuffers fake_host_buffers(FakeCopies* copies, std::vector<void*>* allocated) {
  HostBuffers b;
  b.allocate = [allocated](size_t bytes) {
    std::shared_ptr<void> p = plain_host_memory(bytes);
    if (allocated) allocated->push_back(p.get());
    return p;
  };
  b.fence = [copies] { return std::make_unique<FakeFence>(copies); };
  return b;
}

}  // namespace lockstep::testing
