// GET /v1/invocations?tool=&user=&agent=&status=&since=&until=&limit=: the invocation
// history, newest first. RBAC as GET /v1/invocations/{id}: `read_all_invocations` sees every
// row, anyone else only their own (an agent: those it made; a user: those made for them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "pipeline/authenticator.hpp"
#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"
#include "server/invocations/invocation_store.hpp"

namespace airlock::server {

// "2026-12-02T01:00:00Z", with optional fractional seconds, or milliseconds since the epoch.
Result<std::int64_t> parse_time_ms(std::string_view text);

// The store's query for `target`, or why it is malformed (400). `reads_all`: no owner filter.
Result<InvocationStore::Query> invocation_query(const std::string& target, const pipeline::Caller& caller,
                                                bool reads_all);

HttpResponse list_invocations(InvocationStore& store, const std::string& target, const pipeline::Caller& caller,
                              bool reads_all);

}  // namespace airlock::server
