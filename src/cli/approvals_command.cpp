// airlock approvals list|show ID|approve ID [--sha256 HEX]|deny ID [--reason TEXT]: the pending
// approvals of critical calls on the daemon (docs/approvals.md). A decision is a person's: --key
// is their own token from a configured issuer (or an agent's key with --subject-token, the
// person's token, which the agent relays). An approval names what it approves: the arguments'
// SHA-256, the one given with --sha256 (from an earlier `show`) or else the one of the
// arguments shown just before it is sent. Exit 0 done, 1 the daemon refused, 2 the request failed.
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/daemon_client.hpp"
#include "common/percent_encoding.hpp"

namespace airlock::cli {
namespace {

namespace http = boost::beast::http;

struct ApprovalsOptions {
  ClientOptions client;
  std::string id, reason, sha256;
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

// One approval with the tool's description, the agent's reason and its arguments (as JSON
// text, escapes for every non-ASCII character, so nothing invisible passes unseen) and its
// decisions.
void print_details(const nlohmann::json& j) {
  print_line(j);
  const auto escaped = [](const nlohmann::json& v) { return v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace); };
  if (const auto c = j.find("context"); c != j.end() && c->is_object() && c->value("description", nlohmann::json()).is_string())
    std::cout << "  tool " << escaped((*c)["description"]) << "\n";
  if (j.value("reason", nlohmann::json()).is_string()) std::cout << "  the agent's reason " << escaped(j["reason"]) << "\n";
  if (j.contains("arguments"))
    std::cout << "  arguments " << escaped(j["arguments"]) << "  sha256 " << text(j, "arguments_sha256") << "\n";
  for (const auto& d : j.value("decisions", nlohmann::json::array()))
    std::cout << "  " << text(d, "decision") << " by " << text(d.value("approver", nlohmann::json::object()), "sub")
              << " at " << text(d, "at") << ": " << text(d, "reason") << "\n";
}

// Sends one request: the answer's JSON, or nothing with `status` set after saying what failed.
std::optional<nlohmann::json> ask(const char* what, ApprovalsOptions& o, http::verb verb, const std::string& path,
                                  const std::string& body, int& status) {
  key_from_environment(o.client);
  auto reply = request(o.client, verb, path, body);
  if (!reply) {
    std::cerr << "airlock approvals " << what << ": " << reply.error().message << "\n";
    status = 2;
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(reply->body, nullptr, false);
  if (reply->status != 200 || j.is_discarded()) {
    std::cerr << "airlock approvals " << what << ": HTTP " << reply->status << ": " << reply->body << "\n";
    status = 1;
    return std::nullopt;
  }
  status = 0;
  return j;
}

// Sends one request; prints the answer; the exit status.
int exchange(const char* what, ApprovalsOptions& o, http::verb verb, const std::string& path,
             const std::string& body, bool list) {
  int status = 0;
  auto j = ask(what, o, verb, path, body, status);
  if (!j) return status;
  if (o.json) {
    std::cout << j->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (list) {
    const auto approvals = j->value("approvals", nlohmann::json::array());
    if (approvals.empty()) std::cout << "no pending approvals that you may decide\n";
    for (const auto& a : approvals) print_line(a);
  } else {
    print_details(*j);
  }
  return 0;
}

bool valid_sha256(const std::string& hex) {
  return hex.size() == 64 && hex.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// approve: with the hash of --sha256, or of the arguments fetched and shown just now. The daemon
// refuses (409 arguments_changed) unless the pending arguments have exactly that hash.
int approve(ApprovalsOptions& o, const std::string& path) {
  std::string sha256 = o.sha256;
  if (!sha256.empty() && !valid_sha256(sha256)) {
    std::cerr << "airlock approvals approve: --sha256 must be 64 lower-case hex digits\n";
    return 2;
  }
  if (sha256.empty()) {
    int status = 0;
    auto shown = ask("approve", o, http::verb::get, path, "", status);
    if (!shown) return status;
    std::cout << "approving:\n";
    print_details(*shown);
    sha256 = shown->value("arguments_sha256", "");
  }
  return exchange("approve", o, http::verb::post, path + "/approve",
                  nlohmann::json{{"reason", o.reason}, {"arguments_sha256", sha256}}.dump(), false);
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
  auto* approve_cmd = with_options(approvals->add_subcommand("approve", "Approve a pending approval: its arguments are shown and their SHA-256 sent"), *o, true);
  approve_cmd->add_option("--reason", o->reason, "Why (recorded in the audit log)");
  approve_cmd->add_option("--sha256", o->sha256,
                          "The SHA-256 of the arguments you reviewed (`show` prints it): refused if they differ");
  approve_cmd->callback([o, &status] {
    if (!valid_id(o->id)) {
      std::cerr << "airlock approvals approve: '" << o->id << "' is not an approval id (apr-...)\n";
      status.code = 2;
      return;
    }
    status.code = approve(*o, "/v1/approvals/" + percent_encode(o->id));
  });
  auto* deny_cmd = with_options(approvals->add_subcommand("deny", "Deny a pending approval"), *o, true);
  deny_cmd->add_option("--reason", o->reason, "Why (recorded in the audit log)");
  deny_cmd->callback([o, &status] {
    status.code = by_id("deny", *o, http::verb::post, "/deny", nlohmann::json{{"reason", o->reason}}.dump());
  });
}

}  // namespace airlock::cli
