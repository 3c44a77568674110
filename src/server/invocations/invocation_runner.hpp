// One path for running an invocation, shared by the HTTP API (POST /v1/tools/{name}/invoke)
// and the MCP server (tools/call): build it, run it on the executor under the current
// generation, store its row, count it in the metrics, and hand back the finished invocation.
// What a protocol makes of the outcome stays with the protocol.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "pipeline/invocation.hpp"
#include "server/core/executor.hpp"
#include "server/core/generation.hpp"
#include "server/http/peer_certificate.hpp"

namespace airlock::server {

struct ApiServices;

// What a transport received: the tool, the request's credentials, its body.
struct InvocationRequest {
  std::string tool;
  std::map<std::string, std::string> headers;  // lower-case names (Authorization, the user token)
  std::optional<PeerCertificate> client_certificate;
  std::string raw_body;  // {"arguments": {...}}
  std::string peer;
  std::shared_ptr<pipeline::InvocationControl> control;  // null: not cancellable, no progress
};

// Why an invocation was not started; counted as airlock_rejected_total{reason}.
enum class Rejection { none, draining, queue_full };

// Called on the worker once the invocation has finished, its row stored and its metrics
// counted. `generation` is the one it ran under.
using InvocationDone = std::function<void(const Generation& generation, const pipeline::Invocation& inv)>;

// After the pipeline: the invocation's stored row, its metrics, and whoever long-polls it.
void record_finished(const ApiServices& services, const Generation& generation, const pipeline::Invocation& inv);

// Runs `job` in the fair queue's lane of `principal` (or, without one, of the user whose
// pipeline::quota_user_key this is), weighted as `config` says (docs/daemon.md). With an
// `expiry`, a job still waiting at its deadline runs `expiry.expired` instead.
void submit_in_lane(const ApiServices& services, const policy::Config& config, const std::string& principal,
                    const std::string& user_key, std::function<void()> job,
                    std::optional<InvocationExecutor::Expiry> expiry = std::nullopt);

// Submits the invocation; `done` is called exactly once unless the answer is not none, or
// `displaced` is called instead: the request waited in intake and a caller with fewer
// waiting took its place (answer it like Rejection::queue_full).
Rejection run_invocation(const ApiServices& services, InvocationRequest request, InvocationDone done,
                         std::function<void()> displaced);

}  // namespace airlock::server
