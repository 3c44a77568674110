// quotas: {default, principals, users} (policy/sections/quotas_config.hpp). After principals: a
// principal's entry must name one of them.
#include <cmath>
#include <optional>

#include "common/units.hpp"
#include "policy/config_reader.hpp"

namespace airlock::policy::detail {
namespace {

// The whole of `text` as a finite number, or nullopt.
std::optional<double> whole_number(const std::string& text) {
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// "20/s", "100/m", "0.5/10s": a positive amount, then a positive window.
QuotaRate read_rate(Reader& r, const YAML::Node& n, const std::string& what) {
  const std::string text = r.string(n, what);
  const auto slash = text.find('/');
  if (slash == std::string::npos)
    fail(n, what + ": expected AMOUNT/WINDOW, e.g. 20/s or 120/m (got \"" + text + "\")");
  const std::string amount_text = text.substr(0, slash);
  std::string window_text = text.substr(slash + 1);
  const auto amount = whole_number(amount_text);
  if (!amount || *amount <= 0) fail(n, what + ": \"" + amount_text + "\" is not a positive number");
  if (!window_text.empty() && std::isalpha(static_cast<unsigned char>(window_text[0])))
    window_text = "1" + window_text;  // "/s": one second
  auto window = parse_duration(window_text);
  if (!window) fail(n, what + ": the window \"" + text.substr(slash + 1) + "\": " + window.error().message);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*window);
  if (ms.count() <= 0 || ms > std::chrono::hours(24))
    fail(n, what + ": the window must be between 1ms and 24h");
  return QuotaRate{*amount, ms};
}

double read_positive_number(Reader& r, const YAML::Node& n, const std::string& what) {
  const auto v = whole_number(r.string(n, what));
  if (!v || *v < 1 || *v > 1e9) fail(n, what + ": expected a number from 1 to 1e9");
  return *v;
}

void read_limits(Reader& r, const YAML::Node& n, const std::string& what, bool may_weigh, QuotaLimits& out) {
  r.expect_map(n, what);
  if (may_weigh)
    r.only_keys(n, what, {"concurrent", "rate", "burst", "cpuSeconds", "weight", "sessions"});
  else
    r.only_keys(n, what, {"concurrent", "rate", "burst", "cpuSeconds", "sessions"});
  r.field(n, "sessions", [&](const YAML::Node& v) {
    out.sessions = static_cast<std::uint32_t>(r.unsigned_int(v, what + ".sessions", kMaxQuotaConcurrent));
  });
  r.field(n, "concurrent", [&](const YAML::Node& v) {
    auto c = r.unsigned_int(v, what + ".concurrent", kMaxQuotaConcurrent);
    if (c == 0) fail(v, what + ".concurrent: at least 1 (0 would refuse every call)");
    out.concurrent = static_cast<std::uint32_t>(c);
  });
  r.field(n, "rate", [&](const YAML::Node& v) { out.rate = read_rate(r, v, what + ".rate"); });
  r.field(n, "burst", [&](const YAML::Node& v) { out.burst = read_positive_number(r, v, what + ".burst"); });
  r.field(n, "cpuSeconds", [&](const YAML::Node& v) { out.cpu_seconds = read_rate(r, v, what + ".cpuSeconds"); });
  r.field(n, "weight", [&](const YAML::Node& v) {
    auto w = r.unsigned_int(v, what + ".weight", kMaxQuotaWeight);
    if (w == 0) fail(v, what + ".weight: from 1 to " + std::to_string(kMaxQuotaWeight));
    out.weight = static_cast<std::uint32_t>(w);
  });
}

// A bucket size needs a rate: its own, or (a principal's) the default's.
void check_burst(Reader& r, const YAML::Node& n, const std::string& what, const QuotaLimits& q,
                 const QuotaLimits* defaults) {
  if (q.burst && !q.rate && !(defaults && defaults->rate))
    r.error(n, what + ".burst: needs a rate" + (defaults ? " (its own or quotas.default's)" : ""));
}

}  // namespace

void read_quotas(Reader& r, const YAML::Node& n, const std::vector<Principal>& principals, QuotasConfig& out) {
  r.expect_map(n, "quotas");
  r.only_keys(n, "quotas", {"default", "principals", "users"});
  r.field(n, "default", [&](const YAML::Node& v) {
    read_limits(r, v, "quotas.default", true, out.defaults);
    check_burst(r, v, "quotas.default", out.defaults, nullptr);
  });
  r.field(n, "users", [&](const YAML::Node& v) {
    read_limits(r, v, "quotas.users", false, out.users);
    check_burst(r, v, "quotas.users", out.users, nullptr);
  });
  r.field(n, "principals", [&](const YAML::Node& v) {
    r.expect_map(v, "quotas.principals");
    for (const auto& entry : v) {
      r.guard([&] {
        const std::string name = r.string(entry.first, "quotas.principals: a name");
        const std::string what = "quotas.principals." + name;
        bool known = false;
        for (const auto& p : principals) known = known || p.name == name;
        if (!known) fail(entry.first, what + ": no principal of that name");
        read_limits(r, entry.second, what, true, out.principals[name]);
        check_burst(r, entry.second, what, out.principals[name], &out.defaults);
      });
    }
  });
}

}  // namespace airlock::policy::detail
