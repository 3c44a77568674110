#include "server/mcp_server/mcp_tasks.hpp"

#include <ctime>

#include "server/mcp_server/mcp_protocol.hpp"

namespace airlock::server {
namespace {

// RFC 3339 in UTC, to the second.
std::string iso8601(McpTasks::Clock::time_point t) {
  const std::time_t seconds = McpTasks::Clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string error_kind(const nlohmann::json& stored) {
  const auto error = stored.find("error");
  return error != stored.end() && error->is_object() ? error->value("kind", "") : "";
}

}  // namespace

bool supports_tasks(const policy::ToolConfig& tool) { return tool.risk == policy::Risk::critical; }

bool declares_tasks_extension(const nlohmann::json& params) {
  const auto* caps = mcp_protocol::client_capabilities(params);
  if (!caps) return false;
  const auto extensions = caps->find("extensions");
  if (extensions == caps->end() || !extensions->is_object()) return false;
  const auto tasks = extensions->find(kTasksExtension);
  return tasks != extensions->end() && tasks->is_object();
}

nlohmann::json extension_task(nlohmann::json task) {
  task["ttlMs"] = task["ttl"];
  task.erase("ttl");
  if (task.contains("pollInterval")) {
    task["pollIntervalMs"] = task["pollInterval"];
    task.erase("pollInterval");
  }
  if (task["status"] == "failed") task["status"] = "completed";
  return task;
}

std::string task_status(const nlohmann::json& stored) {
  const std::string status = stored.value("status", "");
  if (status == "ok") return "completed";
  if (status == "error" || status == "denied") return error_kind(stored) == "cancelled" ? "cancelled" : "failed";
  return "working";  // running, pending_approval, suspended
}

std::string task_status_message(const nlohmann::json& stored) {
  const std::string status = stored.value("status", "");
  if (status == "pending_approval") {
    const auto approval = stored.value("approval", nlohmann::json::object());
    return "waiting for a person to approve it: approval " + approval.value("id", "") + " at " +
           approval.value("url", "");
  }
  if (status == "running" || status == "suspended") return "running";
  if (status == "ok") return "completed";
  const auto error = stored.value("error", nlohmann::json::object());
  return error.value("kind", "error") + ": " + error.value("message", "");
}

McpTasks::Entry& McpTasks::admit(const std::string& id, Entry entry) {
  if (by_id_.size() >= kMaxTasks && !order_.empty()) {
    by_id_.erase(order_.front());
    order_.pop_front();
  }
  auto [at, added] = by_id_.emplace(id, entry);
  if (added) order_.push_back(id);
  return at->second;
}

void McpTasks::evict_expired(Clock::time_point now) {
  while (!order_.empty()) {
    auto found = by_id_.find(order_.front());
    if (found != by_id_.end() && now - found->second.created < kTtl) return;
    if (found != by_id_.end()) by_id_.erase(found);
    order_.pop_front();
  }
}

nlohmann::json McpTasks::task(const std::string& id, const nlohmann::json& stored, Clock::time_point started,
                              bool elicits) {
  const bool awaits_person = elicits && stored.value("status", "") == "pending_approval";
  std::lock_guard lock(mu_);
  evict_expired(Clock::now());
  const auto found = by_id_.find(id);
  const bool shown = found != by_id_.end() && found->second.page_shown;
  const std::string status = awaits_person && !shown ? "input_required" : task_status(stored);
  // First seen: its first status is the one seen now, dated as the task began.
  Entry& entry = found != by_id_.end() ? found->second : admit(id, Entry{started, started, status});
  // A terminal status stays (the spec's rule); a change is dated when it is first seen.
  const bool terminal = entry.status == "completed" || entry.status == "failed" || entry.status == "cancelled";
  if (!terminal && status != entry.status) {
    entry.status = status;
    entry.updated = Clock::now();
  }
  nlohmann::json task = {{"taskId", id},
                         {"status", entry.status},
                         {"statusMessage", task_status_message(stored)},
                         {"createdAt", iso8601(entry.created)},
                         {"lastUpdatedAt", iso8601(entry.updated)},
                         {"ttl", std::chrono::duration_cast<std::chrono::milliseconds>(kTtl).count()}};
  if (entry.status == "working" || entry.status == "input_required") task["pollInterval"] = kPollIntervalMs;
  return task;
}

void McpTasks::page_shown(const std::string& id, Clock::time_point started) {
  std::lock_guard lock(mu_);
  const auto found = by_id_.find(id);
  Entry& entry = found != by_id_.end() ? found->second : admit(id, Entry{started, started, "input_required"});
  entry.page_shown = true;
}

pipeline::Invocation invocation_from_stored(const nlohmann::json& stored) {
  pipeline::Invocation inv;
  inv.id = stored.value("id", "");
  inv.tool_name = stored.value("tool", "");
  if (stored.contains("output") && !stored["output"].is_null()) inv.output = stored["output"];
  const auto error = stored.find("error");
  if (error != stored.end() && error->is_object()) {
    pipeline::InvocationError e;
    e.kind = pipeline::kind_from_name(error->value("kind", "")).value_or(pipeline::ErrorKind::internal);
    e.message = error->value("message", "");
    if (stored.value("status", "") == "denied") e.error_class = pipeline::ErrorClass::denied;
    inv.error = std::move(e);
    if (error->contains("details")) inv.error_details = (*error)["details"];
  }
  return inv;
}

}  // namespace airlock::server
