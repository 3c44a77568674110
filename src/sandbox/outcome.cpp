#include "sandbox/outcome.hpp"

#include <csignal>
#include <cstring>
#include <nlohmann/json.hpp>

namespace airlock::sandbox {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::ok: return "ok";
    case Verdict::exit_nonzero: return "exit_nonzero";
    case Verdict::signaled: return "signaled";
    case Verdict::timeout: return "timeout";
    case Verdict::cpu_time_limit: return "cpu_time_limit";
    case Verdict::memory_limit: return "memory_limit";
    case Verdict::output_limit: return "output_limit";
    case Verdict::seccomp_violation: return "seccomp_violation";
    case Verdict::setup_error: return "setup_error";
  }
  return "setup_error";
}

std::string signal_name(int sig) {
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "SIG" + std::to_string(sig);
}

int Outcome::exit_status() const {
  switch (verdict) {
    case Verdict::setup_error: return 125;
    case Verdict::timeout: return 124;
    default: break;
  }
  if (exit_code) return *exit_code;
  if (signal) return 128 + *signal;
  return 125;
}

nlohmann::json to_json(const Usage& usage) {
  nlohmann::json j;
  j["wall_ms"] = usage.wall_ms;
  j["cpu_user_ms"] = usage.cpu_user_ms;
  j["cpu_sys_ms"] = usage.cpu_sys_ms;
  j["memory_peak_bytes"] =
      usage.memory_peak_bytes ? nlohmann::json(*usage.memory_peak_bytes) : nlohmann::json();
  j["pids_peak"] = usage.pids_peak ? nlohmann::json(*usage.pids_peak) : nlohmann::json();
  j["pids_limit_hit"] =
      usage.pids_limit_hit ? nlohmann::json(*usage.pids_limit_hit) : nlohmann::json();
  return j;
}

nlohmann::json to_json(const Outcome& o) {
  nlohmann::json j;
  j["verdict"] = verdict_name(o.verdict);
  j["exit_code"] = o.exit_code ? nlohmann::json(*o.exit_code) : nlohmann::json();
  j["signal"] = o.signal ? nlohmann::json(signal_name(*o.signal)) : nlohmann::json();
  j["syscall"] = o.syscall ? nlohmann::json(*o.syscall) : nlohmann::json();
  j["message"] = o.message;
  j["stdout"] = o.stdout_data;
  j["stderr"] = o.stderr_data;
  j["stdout_truncated"] = o.stdout_truncated;
  j["stderr_truncated"] = o.stderr_truncated;
  j["stdout_discarded_bytes"] = o.stdout_discarded_bytes;
  j["stderr_discarded_bytes"] = o.stderr_discarded_bytes;
  j["usage"] = to_json(o.usage);
  return j;
}

}  // namespace airlock::sandbox
