// text_fields: the field splitting and number parsing every text importer (csv, ts,
// ucihar) shares, so a value means the same in each.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::io {

// S without leading and trailing spaces, tabs and carriage returns.
std::string trim(const std::string& s);

// The fields of LINE separated by DELIM, each trimmed (an empty field stays, as ""). DELIM
// ' ' means runs of spaces/tabs: no empty fields, none before the first or after the last.
std::vector<std::string> split_fields(const std::string& line, char delim);

// The fields of one CSV record LINE as RFC 4180 writes them (pandas' to_csv, Excel, predict's
// own output): a field in double quotes may hold DELIM, and "" in it is one quote; the quotes
// are not part of the value ("rest" and rest are one class). Unquoted fields are trimmed, as
// split_fields; DELIM ' ' is split_fields'. Throws naming FILE:LINE_NO for a quote that is
// never closed (a line break inside quotes is not read) or text after a closing quote.
std::vector<std::string> split_quoted_fields(const std::string& line, char delim, const std::string& file,
                                             int64_t line_no);

// The whole of S as a float (strtof syntax, "nan"/"inf" included); false when S is empty,
// has trailing characters, or overflows a float (an underflow is the nearest float: 0 or a
// denormal).
bool parse_float(const std::string& s, float* out);

}  // namespace lockstep::io
