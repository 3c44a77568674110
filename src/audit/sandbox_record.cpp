#include "audit/sandbox_record.hpp"

namespace airlock::audit {
namespace {

std::map<std::string, std::uint64_t> limits_of(const sandbox::Limits& limits) {
  std::map<std::string, std::uint64_t> out{
      {"wall_time_ms", static_cast<std::uint64_t>(limits.wall_time.count())},
      {"memory_bytes", limits.memory_bytes},
      {"pids", limits.pids},
      {"output_bytes", limits.output_bytes},
      {"disk_bytes", limits.disk_bytes},
      {"open_files", limits.open_files}};
  if (limits.cpu_time) out["cpu_time_ms"] = static_cast<std::uint64_t>(limits.cpu_time->count());
  return out;
}

ContentDigest output_digest(const std::string& kept, std::uint64_t discarded) {
  ContentDigest digest = ContentDigest::of(kept);
  digest.discarded_bytes = discarded;
  return digest;
}

// What every run's record has: who, what, the limits and what happened.
InvocationRecord record_of_run(const std::vector<std::string>& argv, const sandbox::Limits& limits,
                               const backend::RunResult& outcome, RunIdentity identity) {
  InvocationRecord record;
  record.invocation_id =
      identity.invocation_id.empty() ? new_invocation_id() : std::move(identity.invocation_id);
  record.principal = std::move(identity.principal);
  record.tool = std::move(identity.tool);
  record.command = argv;
  record.limits = limits_of(limits);
  record.verdict = std::string(sandbox::verdict_name(outcome.verdict));
  if (outcome.exit_code) record.exit_code = *outcome.exit_code;
  if (outcome.signal) record.signal = sandbox::signal_name(*outcome.signal);
  record.message = outcome.message;
  record.usage = usage_of(outcome.usage);
  for (const auto& e : outcome.egress)
    record.egress.push_back(
        {e.host, e.port, e.address, e.allowed, e.rule, e.bytes_up, e.bytes_down, e.ms});
  return record;
}

void record_output(InvocationRecord& record, const sandbox::Outcome& outcome) {
  record.output = output_digest(outcome.stdout_data, outcome.stdout_discarded_bytes);
  record.error_output = output_digest(outcome.stderr_data, outcome.stderr_discarded_bytes);
}

}  // namespace

std::map<std::string, std::uint64_t> usage_of(const sandbox::Usage& usage) {
  std::map<std::string, std::uint64_t> out{{"wall_ms", usage.wall_ms},
                                           {"cpu_user_ms", usage.cpu_user_ms},
                                           {"cpu_sys_ms", usage.cpu_sys_ms}};
  if (usage.memory_peak_bytes) out["memory_peak_bytes"] = *usage.memory_peak_bytes;
  if (usage.pids_peak) out["pids_peak"] = *usage.pids_peak;
  if (usage.pids_limit_hit) out["pids_limit_hit"] = *usage.pids_limit_hit ? 1 : 0;
  return out;
}

InvocationRecord record_from_run(const sandbox::Spec& spec, const backend::RunResult& outcome,
                                 RunIdentity identity) {
  InvocationRecord record = record_of_run(spec.argv, spec.limits, outcome, std::move(identity));
  if (spec.stdin_source.kind == sandbox::StdinSource::Kind::bytes)
    record.input = ContentDigest::of(spec.stdin_source.bytes);
  if (spec.output_mode == sandbox::OutputMode::collect) record_output(record, outcome);
  return record;
}

InvocationRecord record_from_run(const backend::RunRequest& request,
                                 const backend::RunResult& outcome, RunIdentity identity) {
  InvocationRecord record =
      record_of_run(request.argv, request.limits, outcome, std::move(identity));
  record.input = ContentDigest::of(request.stdin_bytes);
  record_output(record, outcome);
  return record;
}

}  // namespace airlock::audit
