// enums: see enums.hpp. The names are the option values users write.
#include "core/config/enums.hpp"

namespace lockstep {

#define LOCKSTEP_ENUM_NAMES(E, ...)                  \
  const EnumNames<E>& enum_names(E) {                \
    static const EnumNames<E> names{__VA_ARGS__};    \
    return names;                                    \
  }

LOCKSTEP_ENUM_NAMES(DataMode, {DataMode::kAuto, "auto"}, {DataMode::kMemory, "memory"}, {DataMode::kStream, "stream"})
LOCKSTEP_ENUM_NAMES(Remainder, {Remainder::kDrop, "drop"}, {Remainder::kWrap, "wrap"})
LOCKSTEP_ENUM_NAMES(Backend, {Backend::kAuto, "auto"}, {Backend::kMpi, "mpi"}, {Backend::kNccl, "nccl"})
LOCKSTEP_ENUM_NAMES(Overlap, {Overlap::kAuto, "auto"}, {Overlap::kOn, "true"}, {Overlap::kOff, "false"})
LOCKSTEP_ENUM_NAMES(CudaGraph, {CudaGraph::kAuto, "auto"}, {CudaGraph::kOn, "on"}, {CudaGraph::kOff, "off"})
LOCKSTEP_ENUM_NAMES(FusedBn, {FusedBn::kAuto, "auto"}, {FusedBn::kOn, "on"}, {FusedBn::kOff, "off"})
LOCKSTEP_ENUM_NAMES(PoolKernel, {PoolKernel::kAuto, "auto"}, {PoolKernel::kLockstep, "lockstep"},
                    {PoolKernel::kAten, "aten"})
LOCKSTEP_ENUM_NAMES(Compress, {Compress::kNone, "none"}, {Compress::kBf16, "bf16"}, {Compress::kFp16, "fp16"})
LOCKSTEP_ENUM_NAMES(OptimizerKind, {OptimizerKind::kSgd, "sgd"}, {OptimizerKind::kAdam, "adam"},
                    {OptimizerKind::kAdamW, "adamw"})
LOCKSTEP_ENUM_NAMES(LrScaling, {LrScaling::kNone, "none"}, {LrScaling::kLinear, "linear"}, {LrScaling::kSqrt, "sqrt"})
LOCKSTEP_ENUM_NAMES(Schedule, {Schedule::kConstant, "constant"}, {Schedule::kCosine, "cosine"},
                    {Schedule::kStep, "step"})
LOCKSTEP_ENUM_NAMES(Amp, {Amp::kNone, "none"}, {Amp::kBf16, "bf16"}, {Amp::kFp16, "fp16"})
LOCKSTEP_ENUM_NAMES(MemoryFormat, {MemoryFormat::kAuto, "auto"}, {MemoryFormat::kContiguous, "contiguous"},
                    {MemoryFormat::kChannelsLast, "channels-last"})
LOCKSTEP_ENUM_NAMES(BestMetric, {BestMetric::kValF1, "val_f1"}, {BestMetric::kValAcc, "val_acc"},
                    {BestMetric::kValLoss, "val_loss"}, {BestMetric::kValCer, "val_cer"},
                    {BestMetric::kValWer, "val_wer"}, {BestMetric::kNone, "none"})
LOCKSTEP_ENUM_NAMES(ProgressMode, {ProgressMode::kAuto, "auto"}, {ProgressMode::kBar, "bar"},
                    {ProgressMode::kLines, "lines"})
LOCKSTEP_ENUM_NAMES(Fault, {Fault::kNone, "none"}, {Fault::kThrow, "throw"}, {Fault::kStall, "stall"},
                    {Fault::kKill, "kill"}, {Fault::kSlow, "slow"}, {Fault::kOom, "oom"},
                    {Fault::kStallStart, "stall-start"}, {Fault::kSlowStart, "slow-start"})

#undef LOCKSTEP_ENUM_NAMES

}  // namespace lockstep
