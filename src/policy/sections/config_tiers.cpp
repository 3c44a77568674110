// The tiers section, the default limits of each risk tier, and how overrides apply.
#include "policy/config_reader.hpp"

namespace airlock::policy {

std::map<Risk, sandbox::Limits> default_tiers() {
  using namespace std::chrono_literals;
  sandbox::Limits low;
  low.wall_time = 10s;
  low.cpu_time = 5s;
  low.memory_bytes = 256ULL << 20;
  low.pids = 32;
  low.disk_bytes = 32ULL << 20;
  low.output_bytes = 1ULL << 20;
  sandbox::Limits medium = low;
  medium.wall_time = 30s;
  medium.cpu_time = 20s;
  medium.memory_bytes = 512ULL << 20;
  medium.pids = 64;
  medium.disk_bytes = 128ULL << 20;
  sandbox::Limits high = medium;
  high.wall_time = 120s;
  high.cpu_time = 60s;
  high.memory_bytes = 1ULL << 30;
  high.pids = 128;
  return {{Risk::low, low}, {Risk::medium, medium}, {Risk::high, high}, {Risk::critical, high}};
}

namespace detail {

sandbox::Limits with_overrides(sandbox::Limits l, const LimitOverrides& o) {
  if (o.timeout) l.wall_time = *o.timeout;
  if (o.cpu_time) l.cpu_time = *o.cpu_time;
  if (o.memory) l.memory_bytes = *o.memory;
  if (o.disk) l.disk_bytes = *o.disk;
  if (o.output) l.output_bytes = *o.output;
  if (o.pids) l.pids = *o.pids;
  if (o.open_files) l.open_files = *o.open_files;
  return l;
}

void read_tiers(Reader& r, const YAML::Node& n, std::map<Risk, sandbox::Limits>& tiers,
                std::map<Risk, TierBackend>& backends) {
  r.expect_map(n, "tiers");
  for (const auto& kv : n)
    r.guard([&] {
      Risk risk = r.risk(kv.first, "tiers");
      auto what = "tiers." + std::string(risk_name(risk));
      tiers[risk] = with_overrides(tiers[risk], r.overrides(kv.second, what, kTierBackendKeys));
      TierBackend backend;
      read_tier_backend(r, kv.second, what, backend);
      if (backend != TierBackend{}) backends[risk] = backend;
    });
}

}  // namespace detail
}  // namespace airlock::policy
