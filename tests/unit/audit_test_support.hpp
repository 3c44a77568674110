// Shared by the audit tests: a scratch directory, sample records, a one-call verify.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/audit_log.hpp"
#include "audit/log_reader.hpp"
#include "audit/verify.hpp"

namespace airlock::audit::testing {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "airlock-audit-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A record of a plausible shape and size (~600 bytes canonical).
inline nlohmann::json sample_fields(std::uint64_t n) {
  return {{"invocation_id", "inv-" + std::to_string(n)},
          {"principal", "user:alice"},
          {"tool", "python.run"},
          {"command", {"python3", "-c", "print(" + std::to_string(n) + ")"}},
          {"limits", {{"wall_time_ms", 30000}, {"memory_bytes", 536870912}, {"pids", 64}}},
          {"verdict", n % 7 == 0 ? "exit_nonzero" : "ok"},
          {"exit", {{"code", n % 7 == 0 ? 1 : 0}, {"signal", nullptr}}},
          {"usage", {{"wall_ms", 40 + n % 13}, {"cpu_user_ms", 12}, {"cpu_sys_ms", 3}}},
          {"egress", nlohmann::json::array({{{"host", "pypi.org"}, {"port", 443}, {"allowed", true}}})},
          {"output", {{"sha256", std::string(64, 'a')}, {"bytes", 2 + n % 10}}},
          {"findings", nlohmann::json::array()},
          {"credentials", nlohmann::json::array({{{"name", "PYPI_TOKEN"},
                                                   {"hmac_sha256", std::string(64, 'b')}}})}};
}

inline VerifyReport verify_path(const std::string& path, const VerifyOptions& options = {}) {
  auto reader = LogReader::open(path);
  if (!reader) throw std::runtime_error("open failed: " + reader.error().message);
  auto report = verify_log(*reader, options);
  if (!report) throw std::runtime_error("verify failed: " + report.error().message);
  return std::move(*report);
}

inline std::string findings_text(const VerifyReport& report) {
  std::string text;
  for (const auto& f : report.findings) text += describe(f) + "\n";
  return text.empty() ? "(no findings)" : text;
}

// Appends `count` sample records through a fresh AuditLog and closes it (final checkpoint).
inline void write_sample_log(const std::string& path, std::uint64_t count,
                             AuditLogOptions options = {}) {
  auto log = AuditLog::open(path, options);
  if (!log) throw std::runtime_error("open failed: " + log.error().message);
  for (std::uint64_t i = 0; i < count; ++i) {
    auto receipt = (*log)->append(sample_fields(i));
    if (!receipt) throw std::runtime_error("append failed: " + receipt.error().message);
  }
  if (auto status = (*log)->close(); !status)
    throw std::runtime_error("close failed: " + status.error().message);
}

}  // namespace airlock::audit::testing
