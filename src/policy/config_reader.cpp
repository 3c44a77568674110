#include "policy/config_reader.hpp"

#include <filesystem>

#include "common/units.hpp"

namespace airlock::policy::detail {

namespace fs = std::filesystem;

void Reader::expect_map(const YAML::Node& n, const std::string& what) {
  if (!n.IsMap()) fail(n, what + ": expected a mapping");
}

void Reader::only_keys(const YAML::Node& n, const std::string& what, std::set<std::string> known) {
  expect_map(n, what);
  for (const auto& kv : n) {
    auto key = kv.first.as<std::string>();
    if (known.count(key)) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    error(kv.first, what + ": unknown field '" + key + "' (expected one of: " + list + ")");
  }
}

std::string Reader::string(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) fail(n, what + ": expected a string");
  return n.as<std::string>();
}

std::vector<std::string> Reader::strings(const YAML::Node& n, const std::string& what) {
  if (!n.IsSequence()) fail(n, what + ": expected a list of strings");
  std::vector<std::string> out;
  for (const auto& item : n) out.push_back(string(item, what));
  return out;
}

std::uint64_t Reader::unsigned_int(const YAML::Node& n, const std::string& what,
                                   std::uint64_t max) {
  if (!n.IsScalar()) fail(n, what + ": expected a whole number");
  std::string s = n.as<std::string>();
  std::uint64_t v = 0;
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19 ||
      (v = std::stoull(s)) > max)
    fail(n,
         what + ": expected a whole number from 0 to " + std::to_string(max) + ", got '" + s + "'");
  return v;
}

bool Reader::boolean(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) fail(n, what + ": expected true or false");
  std::string s = n.as<std::string>();
  if (s == "true") return true;
  if (s == "false") return false;
  fail(n, what + ": expected true or false, got '" + s + "'");
}

std::chrono::milliseconds Reader::duration(const YAML::Node& n, const std::string& what) {
  auto d = parse_duration(string(n, what));
  if (!d) fail(n, what + ": " + d.error().message);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  if (ms.count() <= 0) fail(n, what + ": must be positive");
  return ms;
}

std::uint64_t Reader::size(const YAML::Node& n, const std::string& what) {
  auto s = parse_size(string(n, what));
  if (!s) fail(n, what + ": " + s.error().message);
  return *s;
}

std::string Reader::path(const YAML::Node& n, const std::string& what) {
  std::string p = string(n, what);
  if (p.empty()) fail(n, what + ": empty path");
  return resolve(p);
}

std::string Reader::resolve(const std::string& p) const {
  return fs::path(p).is_absolute() ? p : (fs::path(base_dir_) / p).lexically_normal().string();
}

nlohmann::json Reader::json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& kv : n) j[kv.first.as<std::string>()] = json(kv.second);
      return j;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& item : n) j.push_back(json(item));
      return j;
    }
    case YAML::NodeType::Scalar:
      return json_scalar(n);
    default:
      return nullptr;
  }
}

LimitOverrides Reader::overrides(const YAML::Node& n, const std::string& what,
                                 const std::set<std::string>& also) {
  std::set<std::string> keys = {"timeout", "cpuTime", "memory", "pids", "disk", "output", "openFiles"};
  keys.insert(also.begin(), also.end());
  only_keys(n, what, std::move(keys));
  LimitOverrides o;
  field(n, "timeout", [&](const YAML::Node& v) { o.timeout = duration(v, what + ".timeout"); });
  field(n, "cpuTime", [&](const YAML::Node& v) { o.cpu_time = duration(v, what + ".cpuTime"); });
  field(n, "memory", [&](const YAML::Node& v) { o.memory = size(v, what + ".memory"); });
  field(n, "pids", [&](const YAML::Node& v) {
    o.pids = static_cast<std::uint32_t>(unsigned_int(v, what + ".pids", 65536));
  });
  field(n, "disk", [&](const YAML::Node& v) { o.disk = size(v, what + ".disk"); });
  field(n, "output", [&](const YAML::Node& v) { o.output = size(v, what + ".output"); });
  field(n, "openFiles", [&](const YAML::Node& v) {
    o.open_files = static_cast<std::uint32_t>(unsigned_int(v, what + ".openFiles", 1 << 20));
  });
  return o;
}

Risk Reader::risk(const YAML::Node& n, const std::string& what) {
  std::string s = string(n, what);
  if (s == "low") return Risk::low;
  if (s == "medium") return Risk::medium;
  if (s == "high") return Risk::high;
  if (s == "critical") return Risk::critical;
  fail(n, what + ": expected low, medium, high or critical, got '" + s + "'");
}

nlohmann::json Reader::json_scalar(const YAML::Node& n) {
  std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: a string
  if (s == "true") return true;
  if (s == "false") return false;
  if (s == "null" || s == "~") return nullptr;
  try {
    std::size_t used = 0;
    if (s.find_first_of(".eE") == std::string::npos) {
      long long v = std::stoll(s, &used);
      if (used == s.size()) return v;
    } else {
      double v = std::stod(s, &used);
      if (used == s.size()) return v;
    }
  } catch (const std::exception&) {
  }
  return s;
}

}  // namespace airlock::policy::detail
