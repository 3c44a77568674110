#include "server/invocations/invocations_api.hpp"

#include <ctime>

#include "common/split.hpp"

namespace airlock::server {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 15 && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// The status a client names (as the API shows it) as the store keeps it.
Result<std::string> stored_status(const std::string& status) {
  if (status.empty() || status == "ok" || status == "error" || status == "denied" || status == "running")
    return status;
  if (status == "pending_approval" || status == "suspended") return std::string("suspended");
  return Error::make("invalid_input", "status: one of ok, error, denied, running, pending_approval");
}

}  // namespace

Result<std::int64_t> parse_time_ms(std::string_view text) {
  if (all_digits(text)) return static_cast<std::int64_t>(std::stoll(std::string(text)));
  std::tm tm{};
  int frac_ms = 0;
  const std::string s(text);
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end) return Error::make("invalid_input", "a time: RFC 3339 in UTC (2026-12-02T01:00:00Z) or ms since the epoch");
  if (*end == '.') {
    int digits = 0;
    for (++end; *end >= '0' && *end <= '9'; ++end, ++digits)
      if (digits < 3) frac_ms = frac_ms * 10 + (*end - '0');
    for (; digits < 3; ++digits) frac_ms *= 10;
  }
  if (std::string_view(end) != "Z")
    return Error::make("invalid_input", "a time: RFC 3339 in UTC (2026-12-02T01:00:00Z) or ms since the epoch");
  return static_cast<std::int64_t>(timegm(&tm)) * 1000 + frac_ms;
}

Result<InvocationStore::Query> invocation_query(const std::string& target, const pipeline::Caller& caller,
                                                bool reads_all) {
  InvocationStore::Query q;
  std::string* fields[] = {&q.tool, &q.user, &q.agent, &q.status};
  const char* names[] = {"tool", "user", "agent", "status"};
  for (int i = 0; i < 4; ++i) {
    auto v = query_param(target, names[i]);
    if (!v) return v.error();
    *fields[i] = std::move(*v);
  }
  auto status = stored_status(q.status);
  if (!status) return status.error();
  q.status = *status;
  for (auto [name, slot] : {std::pair{"since", &q.since_ms}, std::pair{"until", &q.until_ms}}) {
    auto v = query_param(target, name);
    if (!v) return v.error();
    if (v->empty()) continue;
    auto t = parse_time_ms(*v);
    if (!t) return Error::make("invalid_input", std::string(name) + ": " + t.error().message);
    *slot = *t;
  }
  auto limit = query_param(target, "limit");
  if (!limit) return limit.error();
  if (!limit->empty()) {
    if (!all_digits(*limit) || std::stoll(*limit) < 1 || std::stoll(*limit) > 500)
      return Error::make("invalid_input", "limit: a whole number from 1 to 500");
    q.limit = static_cast<int>(std::stoll(*limit));
  }
  if (!reads_all) {
    InvocationStore::Owner owner;
    if (caller.actor) owner.principal = caller.actor->principal;
    if (caller.subject) {
      owner.issuer = caller.subject->issuer;
      owner.sub = caller.subject->sub;
    }
    q.owner = owner;
  }
  return q;
}

HttpResponse list_invocations(InvocationStore& store, const std::string& target, const pipeline::Caller& caller,
                              bool reads_all) {
  auto query = invocation_query(target, caller, reads_all);
  if (!query) return error_response(400, "invalid_input", query.error().message);
  auto rows = store.list(*query);
  if (!rows) return error_response(500, "storage", rows.error().message);
  return json_response(200, {{"invocations", std::move(*rows)}, {"limit", query->limit},
                             {"scope", reads_all ? "all" : "own"}});
}

}  // namespace airlock::server
