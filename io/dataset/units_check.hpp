// units_check: whether two sets of per-channel statistics describe samples in other units
// (pixels 0-1 against 0-255, millivolts against volts): one rule for inference (a model's
// training statistics against the data's, core/train/weight_source) and for an import (a
// test input against the training input, io/import/importer).
//
// The rule: in every channel that varies, a spread (std) 16x wider, or 16x narrower, with the
// mean where the same scaling puts it (within 2 of the spread: mean/std agree). Other units
// move every channel alike, mean and spread together; one dead sensor does not, nor a quiet
// recording of a sensor whose mean stays (gravity on an accelerometer axis). A constant
// channel carries the std of 1.0 the importer stores for it (no division by zero), which says
// nothing of units: it is left out, and data with no varying channel is never refused.
// Zero-mean channels that all go quiet look like other units: --any-units lets them through.
#pragma once

#include <string>
#include <vector>

namespace lockstep::io {

inline constexpr double kUnitsFactor = 16.0;

// "" when REF and DATA (per channel, the same count) may be in the same units; else
// "spread X (std of channel C) where ... spread Y, Rx narrower in every channel", naming
// DATA as DATA_WHAT and REF as REF_WHAT.
std::string units_mismatch(const std::vector<double>& ref_mean, const std::vector<double>& ref_std,
                           const std::vector<double>& data_mean, const std::vector<double>& data_std,
                           const std::string& data_what, const std::string& ref_what);

}  // namespace lockstep::io
