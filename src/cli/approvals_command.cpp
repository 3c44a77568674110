// airlock approvals list|show ID|approve ID|deny ID [--reason TEXT]: the pending approvals of
// critical calls on the daemon (docs/approvals.md). A decision is a person's: --key is their
// own token from a configured issuer (or an agent's key with --subject-token, the person's
// token, which the agent relays). Exit 0 done, 1 the daemon refused, 2 the request failed.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/daemon_client.hpp"
#include "common/percent_encoding.hpp"

namespace airlock::cli {
namespace {

namespace http = boost::beast::http;

struct ApprovalsOptions {
  ClientOptions client;
  std::string id, reason;
  bool json = false;
};

// An approval id as the daemon makes them: "apr-" and a UUID. Anything else is refused
// before it goes into a request line.
bool valid_id(const std::string& id) {
  return id.size() > 4 && id.size() < 64 && id.rfind("apr-", 0) == 0 &&
         id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

std::string text(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

void print_line(const nlohmann::json& a) {
  const auto& by = a.value("requested_by", nlohmann::json::object());
  const auto subject = by.value("subject", nlohmann::json());
  std::cout << text(a, "id") << "  " << text(a, "tool") << "  " << text(a, "status") << "  "
            << a.value("approvals", 0) << "/" << a.value("approvers_required", 0) << "  by "
            << text(by, "principal") << " for " << (subject.is_object() ? text(subject, "sub") : "-")
            << "  expires " << text(a, "expires_at") << "\n";
}

// Sends one request; prints the answer; the exit status.
int exchange(const char* what, ApprovalsOptions& o, http::verb verb, const std::string& path,
             const std::string& body, bool list) {
  key_from_environment(o.client);
  auto reply = request(o.client, verb, path, body);
  if (!reply) {
    std::cerr << "airlock approvals " << what << ": " << reply.error().message << "\n";
    return 2;
  }
  auto j = nlohmann::json::parse(reply->body, nullptr, false);
  if (reply->status != 200 || j.is_discarded()) {
    std::cerr << "airlock approvals " << what << ": HTTP " << reply->status << ": " << reply->body << "\n";
    return 1;
  }
  if (o.json) {
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (list) {
    for (const auto& a : j.value("approvals", nlohmann::json::array())) print_line(a);
  } else {
    print_line(j);
    if (j.contains("arguments")) std::cout << "  arguments " << j["arguments"].dump() << "  sha256 " << text(j, "arguments_sha256") << "\n";
    for (const auto& d : j.value("decisions", nlohmann::json::array()))
      std::cout << "  " << text(d, "decision") << " by " << text(d.value("approver", nlohmann::json::object()), "sub")
                << " at " << text(d, "at") << ": " << text(d, "reason") << "\n";
  }
  return 0;
}

CLI::App* with_options(CLI::App* cmd, ApprovalsOptions& o, bool takes_id) {
  add_client_options(cmd, o.client);
  cmd->add_option("--subject-token", o.client.subject_token,
                  "An agent relaying a person's decision: that person's token (Airlock-Subject-Token)");
  cmd->add_flag("--json", o.json, "Print the daemon's JSON");
  if (takes_id) cmd->add_option("id", o.id, "The approval's id (apr-...)")->required();
  return cmd;
}

int by_id(const char* what, ApprovalsOptions& o, http::verb verb, const std::string& suffix, const std::string& body) {
  if (!valid_id(o.id)) {
    std::cerr << "airlock approvals " << what << ": '" << o.id << "' is not an approval id (apr-...)\n";
    return 2;
  }
  return exchange(what, o, verb, "/v1/approvals/" + percent_encode(o.id) + suffix, body, false);
}

}  // namespace

void add_approvals_command(CLI::App& app, ExitStatus& status) {
  auto* approvals = app.add_subcommand(kApprovalsCommand.name, kApprovalsCommand.summary);
  approvals->require_subcommand(1);
  auto o = std::make_shared<ApprovalsOptions>();
  with_options(approvals->add_subcommand("list", "The pending approvals you may decide"), *o, false)
      ->callback([o, &status] { status.code = exchange("list", *o, http::verb::get, "/v1/approvals", "", true); });
  with_options(approvals->add_subcommand("show", "One approval: its arguments and decisions"), *o, true)
      ->callback([o, &status] { status.code = by_id("show", *o, http::verb::get, "", ""); });
  for (const char* verdict : {"approve", "deny"}) {
    auto* cmd = with_options(approvals->add_subcommand(verdict, std::string(verdict) + " a pending approval"), *o, true);
    cmd->add_option("--reason", o->reason, "Why (recorded in the audit log)");
    cmd->callback([o, verdict, &status] {
      status.code = by_id(verdict, *o, http::verb::post, std::string("/") + verdict,
                          nlohmann::json{{"reason", o->reason}}.dump());
    });
  }
}

}  // namespace airlock::cli
