// weights: see weights.hpp.
#include "core/model/weights.hpp"

#include <torch/torch.h>

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <set>
#include <regex>

#include "core/base/error.hpp"

namespace lockstep {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::string dtype_code(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat: return "F32";
    case torch::kDouble: return "F64";
    case torch::kHalf: return "F16";
    case torch::kBFloat16: return "BF16";
    case torch::kLong: return "I64";
    case torch::kInt: return "I32";
    case torch::kShort: return "I16";
    case torch::kChar: return "I8";
    case torch::kByte: return "U8";
    case torch::kBool: return "BOOL";
    default: throw Error(std::string("cannot export a tensor of type ") + c10::toString(t));
  }
}

bool scalar_type_of(const std::string& code, torch::ScalarType* t) {
  static const std::map<std::string, torch::ScalarType> m{
      {"F32", torch::kFloat}, {"F64", torch::kDouble}, {"F16", torch::kHalf}, {"BF16", torch::kBFloat16},
      {"I64", torch::kLong},  {"I32", torch::kInt},    {"I16", torch::kShort}, {"I8", torch::kChar},
      {"U8", torch::kByte},   {"BOOL", torch::kBool}};
  const auto it = m.find(code);
  if (it == m.end()) return false;
  *t = it->second;
  return true;
}

std::string first_names(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < 4; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > 4) out += fmt::format(", ... ({} more)", v.size() - 4);
  return out;
}

}  // namespace

std::string model_family(const std::string& name) {
  const auto colon = name.find(':');
  return colon == std::string::npos ? name : name.substr(0, colon);
}

std::string export_name(const std::string& family, const std::string& name) {
  if (family != "resnet") return name;
  static const std::regex block(R"(^layer(\d+)_(\d+)\.(.*)$)");
  std::smatch m;
  if (std::regex_match(name, m, block)) {
    std::string rest = m[3];
    if (starts_with(rest, "down_conv.")) rest = "downsample.0." + rest.substr(10);
    if (starts_with(rest, "down_bn.")) rest = "downsample.1." + rest.substr(8);
    return "layer" + std::string(m[1]) + "." + std::string(m[2]) + "." + rest;
  }
  if (starts_with(name, "stem_bn.")) return "bn1." + name.substr(8);
  if (starts_with(name, "stem.")) return "conv1." + name.substr(5);
  return name;
}

std::string import_name(const std::string& family, const std::string& name) {
  if (family != "resnet") return name;
  static const std::regex block(R"(^layer(\d+)\.(\d+)\.(.*)$)");
  std::smatch m;
  if (std::regex_match(name, m, block)) {
    std::string rest = m[3];
    if (starts_with(rest, "downsample.0.")) rest = "down_conv." + rest.substr(13);
    if (starts_with(rest, "downsample.1.")) rest = "down_bn." + rest.substr(13);
    return "layer" + std::string(m[1]) + "_" + std::string(m[2]) + "." + rest;
  }
  if (starts_with(name, "bn1.")) return "stem_bn." + name.substr(4);
  if (starts_with(name, "conv1.")) return "stem." + name.substr(6);
  return name;
}

NamedTensors named_state(Net& model) {
  NamedTensors out;
  for (const auto& p : model.named_parameters()) out.emplace_back(model.public_name(p.key()), p.value());
  for (const auto& b : model.named_buffers()) out.emplace_back(model.public_name(b.key()), b.value());
  return out;
}

io::SafeTensors to_safetensors(const NamedTensors& tensors, const std::string& family,
                               const std::map<std::string, std::string>& metadata) {
  io::SafeTensors st;
  st.metadata = metadata;
  for (const auto& [name, tensor] : tensors) {
    const torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    io::SafeTensor out;
    out.name = export_name(family, name);
    out.dtype = dtype_code(t.scalar_type());
    out.shape.assign(t.sizes().begin(), t.sizes().end());
    out.data.assign(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.nbytes()));
    st.tensors.push_back(std::move(out));
  }
  return st;
}

NamedTensors from_safetensors(const io::SafeTensors& st, const std::string& family, const std::string& path) {
  NamedTensors out;
  for (const auto& t : st.tensors) {
    torch::ScalarType type;
    LOCKSTEP_REQUIRE(scalar_type_of(t.dtype, &type), path + ": tensor " + t.name + " has dtype " + t.dtype +
                                                         ", which LibTorch cannot hold");
    torch::Tensor tensor = torch::empty(t.shape, torch::TensorOptions().dtype(type));
    std::memcpy(tensor.data_ptr(), t.data.data(), t.data.size());
    out.emplace_back(import_name(family, t.name), tensor);
  }
  return out;
}

std::string LoadReport::table() const {
  return fmt::format(
      "  loaded            {:>5}\n"
      "  missing           {:>5}  {}\n"
      "  unexpected        {:>5}  {}\n"
      "  shape mismatched  {:>5}  {}\n"
      "  excluded          {:>5}  {}",
      loaded.size(), missing.size(), first_names(missing), unexpected.size(), first_names(unexpected),
      mismatched.size(), first_names(mismatched), excluded.size(), first_names(excluded));
}

LoadReport load_named(Net& model, const NamedTensors& source, const std::vector<std::string>& exclude) {
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> target;
  for (const auto& [name, t] : named_state(model)) target.emplace(name, t);
  std::map<std::string, std::string> by_key;  // key -> public name, where they differ
  for (const auto& p : model.named_parameters()) by_key.emplace(p.key(), model.public_name(p.key()));
  for (const auto& b : model.named_buffers()) by_key.emplace(b.key(), model.public_name(b.key()));
  LoadReport r;
  std::set<std::string> used;  // the EXCLUDE prefixes that matched
  std::map<std::string, bool> seen;
  for (const auto& [given, t] : source) {
    const auto key = by_key.find(given);
    const std::string& name = target.count(given) || key == by_key.end() ? given : key->second;
    bool skip = false;  // by either name (--init-exclude fc__ was the only spelling before 2026-11-29)
    for (const auto& prefix : exclude)
      if (starts_with(name, prefix) || starts_with(given, prefix)) {
        skip = true;
        used.insert(prefix);
      }
    if (skip) {
      r.excluded.push_back(name);
      seen[name] = true;
      continue;
    }
    const auto it = target.find(name);
    if (it == target.end()) {
      r.unexpected.push_back(name);
      continue;
    }
    seen[name] = true;
    if (it->second.sizes() != t.sizes() || (t.is_floating_point() != it->second.is_floating_point())) {
      r.mismatched.push_back(fmt::format("{} {} vs {}", name, c10::str(t.sizes()), c10::str(it->second.sizes())));
      continue;
    }
    it->second.copy_(t.to(it->second.device(), it->second.scalar_type()));
    r.loaded.push_back(name);
  }
  for (const auto& [name, t] : target)
    if (!seen.count(name)) r.missing.push_back(name);
  for (const auto& prefix : exclude)
    if (!used.count(prefix)) r.unused_exclude.push_back(prefix);
  return r;
}

int freeze(Net& model, const std::vector<std::string>& prefixes) {
  int n = 0;
  std::vector<bool> used(prefixes.size(), false);
  std::vector<std::string> names;
  for (auto& p : model.named_parameters()) {
    const std::string name = model.public_name(p.key());
    names.push_back(name);
    bool match = false;
    for (size_t i = 0; i < prefixes.size(); ++i)
      if (starts_with(name, prefixes[i]) || starts_with(p.key(), prefixes[i])) match = used[i] = true;
    if (!match) continue;
    p.value().set_requires_grad(false);
    ++n;
  }
  for (size_t i = 0; i < prefixes.size(); ++i)
    if (!used[i])
      throw UsageError("--model.freeze " + prefixes[i] + ": no parameter's name starts with it (the model's: " +
                       first_names(names) + ")");
  return n;
}

}  // namespace lockstep
