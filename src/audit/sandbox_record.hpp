// Fills an InvocationRecord from one sandbox or backend run. Lives in its own library
// (airlock_audit_sandbox) so airlock_audit itself never depends on the sandbox or a backend.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "audit/invocation_record.hpp"
#include "backend/backend.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/spec.hpp"

namespace airlock::audit {

struct RunIdentity {
  std::string invocation_id;  // new_invocation_id() when empty
  std::string principal;
  std::string tool;
};

// A run's usage as the record's `usage` member.
std::map<std::string, std::uint64_t> usage_of(const sandbox::Usage& usage);

// Limits, verdict, exit, usage and egress from the Spec and the run's result; input digest when the
// Spec carried stdin as bytes; output digests when the run collected its output (a run that
// forwarded output live leaves them null: the bytes never passed through here).
InvocationRecord record_from_run(const sandbox::Spec& spec, const backend::RunResult& outcome,
                                 RunIdentity identity);
// The same for a backend's run: its stdin is always bytes and its output always collected.
// Neither the environment nor the credentials are recorded.
InvocationRecord record_from_run(const backend::RunRequest& request,
                                 const backend::RunResult& outcome, RunIdentity identity);

}  // namespace airlock::audit
