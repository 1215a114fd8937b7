// text_fields: the field splitting and number parsing every text importer (csv, ts,
// ucihar) shares, so a value means the same in each.
#pragma once

#include <string>
#include <vector>

namespace lockstep::io {

// S without leading and trailing spaces, tabs and carriage returns.
std::string trim(const std::string& s);

// The fields of LINE separated by DELIM, each trimmed (an empty field stays, as ""). DELIM
// ' ' means runs of spaces/tabs: no empty fields, none before the first or after the last.
std::vector<std::string> split_fields(const std::string& line, char delim);

// The whole of S as a float (strtof syntax, "nan"/"inf" included); false when S is empty,
// has trailing characters, or is out of float range.
bool parse_float(const std::string& s, float* out);

}  // namespace lockstep::io
