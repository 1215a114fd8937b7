// ucihar_import: the UCI-HAR directory layout, `lockstep shard --input ucihar:DIR`
// ("UCI HAR Dataset": smartphone accelerometer + gyroscope, 30 subjects, 6 activities).
//
//   DIR/activity_labels.txt               "1 WALKING" ...: class ids 1..K and names
//   DIR/{train,test}/y_{split}.txt        one activity id per window
//   DIR/{train,test}/subject_{split}.txt  one subject id per window: the group (a
//                                         validation split takes whole subjects)
//   --har-signals inertial (default): the nine DIR/{split}/Inertial Signals/
//       {body_acc,body_gyro,total_acc}_{x,y,z}_{split}.txt files, each one window of L
//       values per line: samples [9, L] float32 in that channel order
//   --har-signals features: DIR/{split}/X_{split}.txt, F engineered features per line:
//       samples [F] float32
// Numbers are whitespace-separated (any amount, leading spaces as the files have them).
// 'test' is imported when DIR/test exists. Refused with file:line: a value that is not a
// finite number, a line of another width, files of one split with different line counts,
// an activity id not in activity_labels.txt.
#pragma once

#include <string>
#include <vector>

#include "io/import/importer.hpp"

namespace lockstep::io {

// FILES receives every file read (for the fingerprint and overwrite checks).
std::vector<InputSplit> open_ucihar(const std::string& dir, const std::string& signals,
                                    std::vector<std::string>* class_names, std::vector<std::string>* files);

}  // namespace lockstep::io
