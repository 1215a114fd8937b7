// reader_options: how a run's configuration reads its splits (io/loader/rank_reader).
#pragma once

#include "core/config/config.hpp"
#include "io/loader/rank_reader.hpp"

namespace lockstep {

io::ReaderOptions reader_options(const Config& cfg);

}  // namespace lockstep
