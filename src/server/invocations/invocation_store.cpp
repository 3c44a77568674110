#include "server/invocations/invocation_store.hpp"

#include <chrono>

#include "common/utc_time.hpp"
#include "server/invocations/invocation_store_pg.hpp"

namespace airlock::server {

Result<std::unique_ptr<InvocationStore>> InvocationStore::open(const storage::StateLocation& location) {
  if (!location.is_postgres()) return open(location.sqlite_path);
  auto pg = PostgresInvocationStore::open(location.postgres);
  if (!pg) return pg.error();
  return std::unique_ptr<InvocationStore>(std::move(*pg));
}

bool owns_invocation(const pipeline::Caller& caller, const InvocationStore::Owner& owner) {
  if (caller.actor && owner.principal != caller.actor->principal) return false;
  if (caller.subject && (owner.issuer != caller.subject->issuer || owner.sub != caller.subject->sub)) return false;
  return caller.actor || caller.subject;
}

namespace detail {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

std::string string_at(const nlohmann::json& j, const nlohmann::json::json_pointer& p) {
  if (!j.contains(p)) return "";
  const auto& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : "";
}

nlohmann::json nullable(const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); }

}  // namespace

// As the SQLite store's SQL does it: a principal only when the response names one (a row
// recorded as aborted names none), the user when the response has a subject.
ResponseColumns response_columns(const nlohmann::json& response) {
  using P = nlohmann::json::json_pointer;
  ResponseColumns c;
  if (!response.is_object()) return c;
  if (auto p = string_at(response, P("/principal")); !p.empty()) c.principal = p;
  if (response.contains(P("/subject/issuer"))) c.subject_issuer = string_at(response, P("/subject/issuer"));
  if (response.contains(P("/subject/sub"))) c.subject_sub = string_at(response, P("/subject/sub"));
  c.verdict = string_at(response, P("/verdict"));
  c.error_kind = string_at(response, P("/error/kind"));
  return c;
}

nlohmann::json summary(const ListedRow& r) {
  return {{"id", r.id},
          {"tool", r.tool},
          {"status", r.status == "suspended" ? "pending_approval" : r.status},
          {"actor", r.principal.empty() ? nlohmann::json() : nlohmann::json{{"principal", r.principal}}},
          {"subject", r.sub.empty() ? nlohmann::json() : nlohmann::json{{"issuer", r.issuer}, {"sub", r.sub}}},
          {"started_at", rfc3339_ms(r.started_ms)},
          {"finished_at", r.finished_ms ? nlohmann::json(rfc3339_ms(*r.finished_ms)) : nlohmann::json()},
          {"verdict", nullable(r.verdict)},
          {"error_kind", nullable(r.error_kind)}};
}

std::string where_clause(const InvocationStore::Query& q, std::vector<std::string>& params,
                         std::string (*placeholder)(std::size_t)) {
  std::string sql = " WHERE 1 = 1";
  auto add = [&](const char* column, const char* op, const std::string& value) {
    params.push_back(value);
    sql += std::string(" AND ") + column + " " + op + " " + placeholder(params.size());
  };
  if (!q.tool.empty()) add("tool", "=", q.tool);
  if (!q.status.empty()) add("status", "=", q.status);
  if (!q.agent.empty()) add("principal", "=", q.agent);
  if (!q.user.empty()) add("subject_sub", "=", q.user);
  if (q.since_ms) add("started_ms", ">=", std::to_string(*q.since_ms));
  if (q.until_ms) add("started_ms", "<", std::to_string(*q.until_ms));
  if (q.owner && !q.owner->principal.empty()) add("principal", "=", q.owner->principal);
  if (q.owner && !q.owner->sub.empty()) {
    add("subject_issuer", "=", q.owner->issuer);
    add("subject_sub", "=", q.owner->sub);
  }
  if (q.owner && q.owner->principal.empty() && q.owner->sub.empty()) sql += " AND 1 = 0";  // nobody's
  return sql;
}

}  // namespace detail
}  // namespace airlock::server
