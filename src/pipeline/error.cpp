#include "pipeline/error.hpp"

#include <array>
#include <utility>

namespace airlock::pipeline {
namespace {

constexpr std::array<std::pair<ErrorKind, std::string_view>, 32> kNames{{
    {ErrorKind::unauthenticated, "unauthenticated"},
    {ErrorKind::subject_required, "subject_required"},
    {ErrorKind::forbidden, "forbidden"},
    {ErrorKind::unknown_tool, "unknown_tool"},
    {ErrorKind::invalid_input, "invalid_input"},
    {ErrorKind::code_rejected, "code_rejected"},
    {ErrorKind::dlp_blocked, "dlp_blocked"},
    {ErrorKind::tier_unavailable, "tier_unavailable"},
    {ErrorKind::config_changed, "config_changed"},
    {ErrorKind::credential_denied, "credential_denied"},
    {ErrorKind::tool_disabled, "tool_disabled"},
    {ErrorKind::approval_denied, "approval_denied"},
    {ErrorKind::approval_expired, "approval_expired"},
    {ErrorKind::quota_exceeded, "quota_exceeded"},
    {ErrorKind::timeout, "timeout"},
    {ErrorKind::cpu_time_limit, "cpu_time_limit"},
    {ErrorKind::memory_limit, "memory_limit"},
    {ErrorKind::output_limit, "output_limit"},
    {ErrorKind::seccomp_violation, "seccomp_violation"},
    {ErrorKind::tool_crashed, "tool_crashed"},
    {ErrorKind::invalid_output, "invalid_output"},
    {ErrorKind::stopped, "stopped"},
    {ErrorKind::cancelled, "cancelled"},
    {ErrorKind::tool_server_failed, "tool_server_failed"},
    {ErrorKind::tool_error, "tool_error"},
    {ErrorKind::code_error, "code_error"},
    {ErrorKind::egress_denied, "egress_denied"},
    {ErrorKind::sandbox_setup, "sandbox_setup"},
    {ErrorKind::audit_failed, "audit_failed"},
    {ErrorKind::storage_unavailable, "storage_unavailable"},
    {ErrorKind::credential_unavailable, "credential_unavailable"},
    {ErrorKind::internal, "internal"},
}};

}  // namespace

std::string_view kind_name(ErrorKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  return "internal";
}

std::optional<ErrorKind> kind_from_name(std::string_view name) {
  for (const auto& [k, n] : kNames)
    if (n == name) return k;
  return std::nullopt;
}

}  // namespace airlock::pipeline
