// Fuzz target: INI job files and command-line values (app/options: every value validated,
// every error one line), and ini_text's promise: any value written reads back byte for byte.
#include <sstream>

#include "app/options.hpp"
#include "core/config/ini_text.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string ini = fuzz::write_input("job.ini", data, size);
  Config cfg;
  app::parse_train({"--config", ini, "--data", "/d"}, &cfg);
  // The same bytes as command-line tokens.
  std::vector<std::string> args;
  std::istringstream words(text);
  for (std::string w; words >> w && args.size() < 64;) args.push_back(w);
  Config cfg2;
  app::parse_train(args, &cfg2);
  Config cfg3;
  app::parse_predict(args, &cfg3);
  const auto back = parse_ini("[s]\nk = " + ini_value(text) + "\n", "fuzz.ini");
  if (back.size() != 1 || back[0].key != "s.k" || back[0].value != text) __builtin_trap();
  return 0;
}
