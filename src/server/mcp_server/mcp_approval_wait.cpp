// Approvals under 2026-07-28 (mcp_approval_wait.hpp): the input_required answer of a call that
// waits for a person, and the retry that waits for its end.
#include "server/mcp_server/mcp_approval_wait.hpp"

#include "server/invocations/invocation_store.hpp"
#include "server/invocations/invocation_waiters.hpp"
#include "server/mcp_server/mcp_call.hpp"
#include "server/mcp_server/mcp_tasks.hpp"
#include "server/mcp_server/mcp_tools.hpp"
#include "server/mcp_server/mcp_protocol.hpp"

namespace airlock::server {

namespace rpc = mcp::rpc_error;

namespace {

constexpr std::string_view kStatePrefix = "airlock.approval.v1.";

// scheme://authority of a URL ("" when it has none).
std::string origin_of(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  return url.substr(0, url.find('/', scheme + 3));
}

}  // namespace

std::string approval_request_state(const std::string& invocation_id) {
  return std::string(kStatePrefix) + invocation_id;
}

std::optional<std::string> invocation_of_request_state(const nlohmann::json& state) {
  if (!state.is_string()) return std::nullopt;
  const auto& text = state.get_ref<const std::string&>();
  if (text.rfind(kStatePrefix, 0) != 0) return std::nullopt;
  std::string id = text.substr(kStatePrefix.size());
  // An invocation id: a UUID's characters, bounded.
  if (id.empty() || id.size() > 64 || id.find_first_not_of("0123456789abcdefABCDEF-") != std::string::npos)
    return std::nullopt;
  return id;
}

bool declares_url_elicitation(const nlohmann::json& capabilities) {
  if (!capabilities.is_object()) return false;
  const auto elicitation = capabilities.find("elicitation");
  return elicitation != capabilities.end() && elicitation->is_object() && elicitation->contains("url");
}

bool elicits_urls(const nlohmann::json& params) {
  const auto* caps = mcp_protocol::client_capabilities(params);
  return caps && declares_url_elicitation(*caps);
}

bool declined_elicitation(const nlohmann::json& params) {
  const auto responses = params.find("inputResponses");
  if (responses == params.end() || !responses->is_object()) return false;
  const auto answer = responses->find(kApprovalInputKey);
  if (answer == responses->end() || !answer->is_object()) return false;
  const std::string action = answer->value("action", "");
  return action == "decline" || action == "cancel";
}

std::string approval_page_url(const policy::Config& config, const std::map<std::string, std::string>& headers,
                              const std::string& approval_id) {
  std::string origin = origin_of(config.server.mcp.resource);
  if (origin.empty()) {
    const auto host = headers.find("host");
    origin = std::string(config.server.tls ? "https://" : "http://") +
             (host != headers.end() && !host->second.empty()
                  ? host->second
                  : config.server.listen_host + ":" + std::to_string(config.server.listen_port));
  }
  return origin + "/console/#approval/" + approval_id;
}

nlohmann::json approval_page_elicitation(const nlohmann::json& stored, const std::string& page_url) {
  const std::string message = "The call of " + stored.value("tool", std::string("a tool")) +
                              " waits for a person's approval. An approver decides at " + page_url +
                              "; the result follows once they do.";
  return {{"mode", "url"}, {"message", message}, {"url", page_url}};
}

nlohmann::json approval_input_required(const nlohmann::json& stored, const std::string& page_url) {
  const std::string id = stored.value("id", "");
  nlohmann::json result = {{"resultType", "input_required"}, {"requestState", approval_request_state(id)}};
  const auto approval = stored.value("approval", nlohmann::json::object());
  if (!page_url.empty() && approval.contains("id"))  // 2026-07-28 has no elicitationId
    result["inputRequests"][kApprovalInputKey] = {{"method", "elicitation/create"},
                                                  {"params", approval_page_elicitation(stored, page_url)}};
  result["_meta"][kInvocationIdMeta] = id;
  return result;
}

// A retry of a call that waited (params.requestState): its result once it has ended (waiting
// up to kApprovalRetryWait for that), else input_required again, without the elicitation the
// user has seen. Declined: the pending_approval result tools/call answers before 2026-07-28,
// which names the invocation to poll.
void McpServer::resume_waiting_call(Call& call) const {
  const auto& params = call.message.params;
  const auto id = invocation_of_request_state(params["requestState"]);
  const auto owner = id && s_.store ? s_.store->owner(*id) : std::nullopt;
  const auto stored = owner && owns_invocation(call.caller, *owner) ? s_.store->get(*id) : std::nullopt;
  if (!stored || stored->value("tool", "") != params.value("name", ""))
    return call.fail(200, rpc::invalid_params,
                     "tools/call: requestState names no call of " + params.value("name", std::string("this tool")) +
                         " of yours that waits (it is the requestState an input_required result gave)");
  auto finish = [store = s_.store, slot = s_.generation, id = *id, declined = declined_elicitation(params),
                 copy = Call(call)] {
    const auto now = store->get(id);
    const auto config = slot->load()->config;
    const auto* tool = config->find_tool(now ? now->value("tool", "") : "");
    if (!now) return copy.fail(200, rpc::internal_error, "invocation " + id + " is no longer stored");
    if (!is_unfinished(*now)) return copy.answer(mcp_call_result(tool, invocation_from_stored(*now)));
    if (!declined || now->value("status", "") != "pending_approval")
      return copy.answer(approval_input_required(*now, ""));
    pipeline::Invocation waiting = invocation_from_stored(*now);
    waiting.suspended = pipeline::Suspension{"approval", task_status_message(*now),
                                             {{"approval", now->value("approval", nlohmann::json::object())}}};
    copy.answer(mcp_call_result(tool, waiting));
  };
  if (!is_unfinished(*stored) || declined_elicitation(params) || !s_.waiters ||
      !s_.waiters->add(*id, InvocationWaiters::Clock::now() + kApprovalRetryWait, finish))
    return finish();
  // It may have ended between the read and the wait.
  if (auto again = s_.store->get(*id); again && !is_unfinished(*again)) s_.waiters->notify(*id);
}

}  // namespace airlock::server
