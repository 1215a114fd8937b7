// checkpoint_writer: rank 0's background thread that puts checkpoints on disk, so a
// step never waits for the file system.
//
// Protocol:
// 1. the trainer snapshots the state to host memory (serialised bytes) on its own thread —
//    the only part a step pays for;
// 2. submit() hands the bytes (as a job) to the writer thread, first waiting for the
//    previous job, so at most one write is in flight and writes land in step order;
// 3. the job writes atomically (temp, fsync, rename, fsync dir) and prunes;
// 4. an error in a job is rethrown by the next submit() or by wait(); the trainer calls
//    wait() before it exits (also on a stop signal), so an exit code of 0 or 3 means the
//    checkpoint is on disk.
// The destructor waits for a job in flight and swallows its error (only reached when the
// run is already failing).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace lockstep {

class CheckpointWriter {
 public:
  CheckpointWriter();
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  void submit(std::function<void()> job);
  void wait();  // the job in flight is done; rethrows its error

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace lockstep
