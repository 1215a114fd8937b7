// po_error: see po_error.hpp.
#include "app/po_error.hpp"

#include <boost/program_options/cmdline.hpp>

namespace lockstep::app {
namespace {

namespace po = boost::program_options;

// A copy of the error with every substituted text defused: a '%' in a value that would
// spell a placeholder becomes the fullwidth '％' (U+FF05), so the text still reads the same.
class Defused final : public po::error_with_option_name {
 public:
  explicit Defused(const po::error_with_option_name& e) : po::error_with_option_name(e) {
    for (auto& entry : m_substitutions) defuse(&entry.second);
    for (auto& entry : m_substitution_defaults) defuse(&entry.second.second);
  }

 private:
  bool spells_placeholder(const std::string& s) const {
    const auto has = [&](const std::string& name) {
      return s.find('%' + name + '%') != std::string::npos;
    };
    for (const auto& entry : m_substitutions)
      if (has(entry.first)) return true;
    for (const auto& entry : m_substitution_defaults)
      if (has(entry.first)) return true;
    return false;
  }
  void defuse(std::string* s) const {
    if (!spells_placeholder(*s)) return;
    std::string out;
    for (const char c : *s) out += c == '%' ? std::string("\xEF\xBC\x85") : std::string(1, c);
    *s = out;
  }
};

}  // namespace

std::string po_message(const po::error& e) {
  if (const auto* named = dynamic_cast<const po::error_with_option_name*>(&e))
    return Defused(*named).what();
  return e.what();
}

int no_guessing_style() {
  namespace style = boost::program_options::command_line_style;
  return style::default_style & ~style::allow_guessing;
}

}  // namespace lockstep::app
