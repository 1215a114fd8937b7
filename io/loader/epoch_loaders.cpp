// epoch_loaders: see epoch_loaders.hpp.
#include "io/loader/epoch_loaders.hpp"

namespace lockstep::io {

EpochLoaders::EpochLoaders(const RankReader& reader, uint64_t seed, int64_t batch, int64_t steps, int prefetch,
                           const HostBuffers* buffers)
    : reader_(reader), seed_(seed), batch_(batch), steps_(steps), prefetch_(prefetch),
      pool_(reader.spec(), batch, EpochLoader::pool_size(prefetch), buffers) {}

EpochLoader& EpochLoaders::open(int64_t epoch, int64_t first) {
  if (!loader_ || !fresh_ || epoch_ != epoch || first_ != first) make(epoch, first);
  fresh_ = false;
  return *loader_;
}

const EpochLoader& EpochLoaders::start(int64_t epoch) {
  make(epoch, 0);
  fresh_ = true;
  return *loader_;
}

void EpochLoaders::release() {
  loader_.reset();
  fresh_ = false;
}

void EpochLoaders::make(int64_t epoch, int64_t first) {
  loader_.reset();  // its thread joined before the next one reads
  loader_ = std::make_unique<EpochLoader>(reader_, reader_.order(/*shuffle=*/true, seed_, epoch, batch_), batch_, steps_,
                                          first, prefetch_, /*partial_last=*/false, &pool_);
  epoch_ = epoch;
  first_ = first;
}

}  // namespace lockstep::io
