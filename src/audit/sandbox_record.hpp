// Fills an InvocationRecord from one sandbox run. Lives in its own library
// (airlock_audit_sandbox) so airlock_audit itself never depends on the sandbox.
#pragma once

#include <string>

#include "audit/invocation_record.hpp"
#include "sandbox/outcome.hpp"
#include "sandbox/spec.hpp"

namespace airlock::audit {

struct RunIdentity {
  std::string invocation_id;  // new_invocation_id() when empty
  std::string principal;
  std::string tool;
};

// Limits, verdict, exit, usage and egress from the Spec and Outcome; input digest when the
// Spec carried stdin as bytes; output digests when the run collected its output (a run that
// forwarded output live leaves them null: the bytes never passed through here).
InvocationRecord record_from_run(const sandbox::Spec& spec, const sandbox::Outcome& outcome,
                                 RunIdentity identity);

}  // namespace airlock::audit
