// checkpoint_store: durable, verifiable checkpoint files. Knows bytes, not tensors: the
// trainer serialises its state to a payload and a JSON metadata string.
//
// File DIR/step-NNNNNNNNN.ckpt = "LSCKPT01" | u64 meta_len | u64 payload_len |
// u32 crc32(meta + payload) | meta (JSON) | payload, little-endian.
// Writing follows file_util's atomic protocol (temp, fsync, rename, fsync dir), so a file
// under a final name is always complete; a file that fails its checksum (disk trouble,
// a copy cut short) is detected on read and skipped by find_latest_valid_checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::io {

struct CheckpointData {
  std::string meta_json;
  std::string payload;
  uint32_t crc = 0;  // the header's, verified: what ranks compare to know they read one file
};

std::string checkpoint_path(const std::string& dir, int64_t step);
std::string write_checkpoint(const std::string& dir, int64_t step, const std::string& meta_json,
                             const std::string& payload);
// The same format under any name (DIR/best.ckpt). list_checkpoints ignores such files.
void write_checkpoint_file(const std::string& path, const std::string& meta_json, const std::string& payload);
CheckpointData read_checkpoint(const std::string& path);       // throws naming PATH
std::string read_checkpoint_meta(const std::string& path);      // header + meta only, verified
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& dir);  // by step
// Newest checkpoint in DIR that verifies and that CHECK (if given: the step its name says,
// its path, its contents; "" or a reason) accepts; "" if none. Each newer one that failed is
// described in SKIPPED ("PATH: why"). Every candidate is read once.
using CheckpointCheck = std::function<std::string(int64_t named_step, const std::string& path, const CheckpointData& data)>;
std::string find_latest_valid_checkpoint(const std::string& dir, std::vector<std::string>* skipped,
                                         const CheckpointCheck& check = {});
// Keeps the KEEP_LAST newest checkpoints that verify (keep_last <= 0 keeps all) and
// deletes the older ones; a file that does not verify never counts towards KEEP_LAST, so a
// valid checkpoint is never deleted while an unreadable one is kept in its place.
// Unreadable files newer than the oldest kept one stay (resume skips them, naming them);
// older ones are deleted. Paths in KNOWN_GOOD (written and checksummed by this process)
// are not read again. Returns the deleted paths.
std::vector<std::string> prune_checkpoints(const std::string& dir, int keep_last,
                                           const std::vector<std::string>& known_good = {});
// Moves PATHS (files of DIR) into DIR/superseded-at-step-STEP (or -2, -3, ... when that
// exists), under their own names, and returns that folder: the checkpoints a resume from
// STEP abandons, kept but out of list_checkpoints' sight (pruning by step number deleted the
// resumed run's own newer checkpoints, and --resume auto jumped back to the abandoned ones).
// Throws naming a file that cannot be moved.
std::string set_aside_checkpoints(const std::string& dir, int64_t step, const std::vector<std::string>& paths);

}  // namespace lockstep::io
