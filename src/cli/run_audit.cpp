#include "cli/run_audit.hpp"

#include <pwd.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "audit/sandbox_record.hpp"

namespace airlock::cli {
namespace {

// The local user who ran the command: "unix:alice" (or "unix:uid:1000" without a name).
std::string local_principal() {
  uid_t uid = ::getuid();
  struct passwd entry {};
  struct passwd* found = nullptr;
  char buffer[4096];
  if (::getpwuid_r(uid, &entry, buffer, sizeof buffer, &found) == 0 && found != nullptr)
    return std::string("unix:") + found->pw_name;
  return "unix:uid:" + std::to_string(uid);
}

}  // namespace

Result<RunAuditor> RunAuditor::open(const std::string& path) {
  RunAuditor auditor;
  if (path.empty()) return auditor;
  auto log = audit::AuditLog::open(path);
  if (!log) return log.error();
  auditor.log_ = std::move(*log);
  return auditor;
}

Status RunAuditor::record(const sandbox::Spec& spec, const backend::RunResult& outcome) {
  if (!log_) return {};
  auto record = audit::record_from_run(spec, outcome, {"", local_principal(), "airlock run"});
  auto receipt = log_->append(audit::to_fields(record));
  if (!receipt) return receipt.error();
  return log_->close();
}

}  // namespace airlock::cli
