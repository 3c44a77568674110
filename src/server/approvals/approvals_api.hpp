// /v1/approvals (docs/approvals.md): GET the pending approvals the caller may decide, GET one,
// POST /v1/approvals/{id}/approve and /deny with {"reason"}. The caller is authenticated
// like every /v1 request; a decision is a person's (approvals.hpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "server/core/api_services.hpp"
#include "server/core/responses.hpp"

namespace airlock::server {

bool is_approvals_path(const std::vector<std::string>& parts);
void handle_approvals(const ApiServices& services, const HttpRequest& request,
                      const std::vector<std::string>& parts, const std::function<void(HttpResponse)>& reply);

}  // namespace airlock::server
