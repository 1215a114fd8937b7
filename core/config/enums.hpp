// enums: the closed choices of the configuration, and their names — in one place. The
// option parser turns names into these values once (app/options: an unknown name is a
// usage error listing the choices); core compares values, never strings.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace lockstep {

enum class DataMode { kAuto, kMemory, kStream };  // data.mode
enum class Remainder { kDrop, kWrap };           // data.remainder
enum class Backend { kAuto, kMpi, kNccl };       // dist.backend
enum class Overlap { kAuto, kOn, kOff };         // dist.overlap: auto | true | false
enum class CudaGraph { kAuto, kOn, kOff };       // train.cuda-graph: auto | on | off
enum class Compress { kNone, kBf16, kFp16 };     // dist.compress: gradients on the wire
enum class OptimizerKind { kSgd, kAdam, kAdamW };  // train.optimizer
enum class LrScaling { kNone, kLinear, kSqrt };  // train.lr-scaling
enum class Schedule { kConstant, kCosine, kStep };  // train.schedule
enum class Amp { kNone, kBf16, kFp16 };          // train.amp
enum class MemoryFormat { kAuto, kContiguous, kChannelsLast };  // model.memory-format
enum class FusedBn { kAuto, kOn, kOff };         // model.fused-bn: auto | on | off
enum class PoolKernel { kAuto, kLockstep, kAten };  // model.max-pool: auto | lockstep | aten
enum class BestMetric { kValF1, kValAcc, kValLoss, kValCer, kValWer, kNone };  // ckpt.best-metric
// Smaller is better: the loss and the sequence error rates.
inline bool lower_is_better(BestMetric m) {
  return m == BestMetric::kValLoss || m == BestMetric::kValCer || m == BestMetric::kValWer;
}
// Needs sequence targets (val_cer, val_wer) or class labels (val_acc, val_f1); the loss
// works for both.
inline bool sequence_metric(BestMetric m) { return m == BestMetric::kValCer || m == BestMetric::kValWer; }
inline bool class_metric(BestMetric m) { return m == BestMetric::kValAcc || m == BestMetric::kValF1; }
enum class ProgressMode { kAuto, kBar, kLines };  // train.progress
// run.resume, parsed by check_config (not an option choice: a path is allowed too).
enum class ResumeMode { kAuto, kNone, kPath };
enum class Fault { kNone, kThrow, kStall, kKill, kSlow, kOom, kStallStart, kSlowStart };  // debug.fault

// Each enum's (value, name) table, in the order --help lists them.
template <typename E>
using EnumNames = std::vector<std::pair<E, const char*>>;
const EnumNames<DataMode>& enum_names(DataMode);
const EnumNames<Remainder>& enum_names(Remainder);
const EnumNames<Backend>& enum_names(Backend);
const EnumNames<Overlap>& enum_names(Overlap);
const EnumNames<CudaGraph>& enum_names(CudaGraph);
const EnumNames<Compress>& enum_names(Compress);
const EnumNames<OptimizerKind>& enum_names(OptimizerKind);
const EnumNames<LrScaling>& enum_names(LrScaling);
const EnumNames<Schedule>& enum_names(Schedule);
const EnumNames<Amp>& enum_names(Amp);
const EnumNames<MemoryFormat>& enum_names(MemoryFormat);
const EnumNames<FusedBn>& enum_names(FusedBn);
const EnumNames<PoolKernel>& enum_names(PoolKernel);
const EnumNames<BestMetric>& enum_names(BestMetric);
const EnumNames<ProgressMode>& enum_names(ProgressMode);
const EnumNames<Fault>& enum_names(Fault);

template <typename E>
const char* to_string(E e) {
  for (const auto& [v, name] : enum_names(E{}))
    if (v == e) return name;
  return "?";
}

template <typename E>
bool parse_enum(const std::string& text, E* out) {
  for (const auto& [v, name] : enum_names(E{}))
    if (text == name) {
      *out = v;
      return true;
    }
  return false;
}

// "auto, memory or stream"
template <typename E>
std::string enum_choices() {
  const auto& names = enum_names(E{});
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i].second;
  return out;
}

// Every configuration enum, for code that handles them all alike (the option parser).
template <typename... E>
struct EnumList {};
using ConfigEnums = EnumList<DataMode, Remainder, Backend, Overlap, CudaGraph, Compress, OptimizerKind, LrScaling, Schedule, Amp,
                             MemoryFormat, FusedBn, PoolKernel, BestMetric, ProgressMode, Fault>;

}  // namespace lockstep
