// airlock session create TEMPLATE | list | show ID | exec ID (-- CMD ARGS | --sh LINE) |
// pause ID | resume ID | delete ID:
// sessions on the daemon (docs/sessions.md), owned by the key (and --subject-token's user) that
// created them. `exec` prints the command's stdout and stderr as the daemon scanned them and
// exits with its exit code (124 past its timeout, 125 when it did not run to an exit; 128+N
// for signal N). Other commands: exit 0 done, 1 the daemon refused, 2 the request failed.
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/daemon_client.hpp"
#include "common/percent_encoding.hpp"

namespace airlock::cli {
namespace {

namespace http = boost::beast::http;

struct SessionOptions {
  ClientOptions client;
  std::string id, template_name, idle_timeout, shell_line, cwd, timeout;
  std::vector<std::string> labels, env;
  bool json = false;
};

// Sends one request: the answer's JSON when its status is `expected`, or nothing with
// `status` set after saying what failed.
std::optional<nlohmann::json> ask(const char* what, SessionOptions& o, http::verb verb, const std::string& path,
                                  const std::string& body, int expected, int& status) {
  key_from_environment(o.client);
  auto reply = request(o.client, verb, path, body);
  if (!reply) {
    std::cerr << "airlock session " << what << ": " << reply.error().message << "\n";
    status = 2;
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(reply->body, nullptr, false);
  if (reply->status != expected || j.is_discarded()) {
    std::cerr << "airlock session " << what << ": HTTP " << reply->status << ": " << reply->body << "\n";
    status = 1;
    return std::nullopt;
  }
  status = 0;
  return j;
}

void print_session(const nlohmann::json& s) {
  const auto owner = s.value("owner", nlohmann::json::object());
  const auto user = owner.value("user", nlohmann::json::object());
  std::cout << s.value("id", "-") << "  " << s.value("template", "-") << "  " << s.value("state", "-") << "  "
            << (owner.value("principal", nlohmann::json()).is_string() ? owner["principal"].get<std::string>() : "-")
            << " for " << user.value("sub", "-") << "  execs " << s.value("execs", 0) << "\n";
}

int show(const char* what, SessionOptions& o, http::verb verb, const std::string& path, const std::string& body,
         int expected) {
  int status = 0;
  auto j = ask(what, o, verb, path, body, expected, status);
  if (!j) return status;
  if (o.json) std::cout << j->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  else if (j->contains("sessions")) {
    if ((*j)["sessions"].empty()) std::cout << "no sessions of yours\n";
    for (const auto& s : (*j)["sessions"]) print_session(s);
  } else print_session(*j);
  return 0;
}

// "k=v" pairs into an object; false (after saying which) for one without '='.
bool pairs(const char* option, const std::vector<std::string>& items, nlohmann::json& out) {
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "airlock session: " << option << " takes NAME=VALUE, got '" << item << "'\n";
      return false;
    }
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return true;
}

int create(SessionOptions& o) {
  nlohmann::json body = {{"template", o.template_name}};
  if (!o.idle_timeout.empty()) body["idleTimeout"] = o.idle_timeout;
  nlohmann::json labels = nlohmann::json::object();
  if (!pairs("--label", o.labels, labels)) return 2;
  if (!labels.empty()) body["labels"] = labels;
  int status = 0;
  auto j = ask("create", o, http::verb::post, "/v1/sessions", body.dump(), 201, status);
  if (!j) return status;
  if (o.json) std::cout << j->dump(2) << "\n";
  else std::cout << j->value("id", "") << "\n";
  return 0;
}

int exec(SessionOptions& o, const TrailingArgs& trailing) {
  nlohmann::json body = nlohmann::json::object();
  if (!o.shell_line.empty() == trailing.present) {
    std::cerr << "airlock session exec: give the command after -- or as --sh LINE (one of the two)\n";
    return 2;
  }
  if (trailing.present) body["command"] = trailing.args;
  else body["command"] = o.shell_line;
  if (!o.cwd.empty()) body["cwd"] = o.cwd;
  if (!o.timeout.empty()) body["timeout"] = o.timeout;
  nlohmann::json env = nlohmann::json::object();
  if (!pairs("--env", o.env, env)) return 2;
  if (!env.empty()) body["env"] = env;
  int status = 0;
  auto j = ask("exec", o, http::verb::post, "/v1/sessions/" + percent_encode(o.id) + "/exec", body.dump(), 200, status);
  if (!j) return status == 1 ? 125 : status;
  if (o.json) {
    std::cout << j->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << j->value("stdout", "");
    std::cerr << j->value("stderr", "");
  }
  const std::string verdict = j->value("verdict", "");
  if (verdict == "timeout") return 124;
  if ((*j)["exit_code"].is_number_integer()) return (*j)["exit_code"].get<int>();
  return 125;
}

CLI::App* with_options(CLI::App* cmd, SessionOptions& o, bool takes_id) {
  add_client_options(cmd, o.client);
  cmd->add_option("--subject-token", o.client.subject_token, "The user the agent acts for (Airlock-Subject-Token)");
  cmd->add_flag("--json", o.json, "Print the daemon's JSON");
  if (takes_id) cmd->add_option("id", o.id, "The session's id")->required();
  return cmd;
}

}  // namespace

void add_session_command(CLI::App& app, ExitStatus& status, const TrailingArgs& trailing) {
  auto* session = app.add_subcommand(kSessionCommand.name, kSessionCommand.summary);
  session->require_subcommand(1);
  auto o = std::make_shared<SessionOptions>();
  auto* create_cmd = with_options(session->add_subcommand("create", "Start a session from a template; prints its id"), *o, false);
  create_cmd->add_option("template", o->template_name, "The session template")->required();
  create_cmd->add_option("--idle-timeout", o->idle_timeout, "End it after this long unused (at most the template's)");
  create_cmd->add_option("--label", o->labels, "NAME=VALUE, kept with it (repeatable)");
  create_cmd->callback([o, &status] { status.code = create(*o); });
  with_options(session->add_subcommand("list", "Your sessions"), *o, false)
      ->callback([o, &status] { status.code = show("list", *o, http::verb::get, "/v1/sessions", "", 200); });
  with_options(session->add_subcommand("show", "One session of yours"), *o, true)->callback([o, &status] {
    status.code = show("show", *o, http::verb::get, "/v1/sessions/" + percent_encode(o->id), "", 200);
  });
  auto* exec_cmd = with_options(session->add_subcommand("exec", "Run a command in a session: -- CMD ARGS, or --sh LINE"), *o, true);
  exec_cmd->add_option("--sh", o->shell_line, "A shell line (/bin/sh -c) instead of a command after --");
  exec_cmd->add_option("--cwd", o->cwd, "The directory inside the session");
  exec_cmd->add_option("--timeout", o->timeout, "How long it may run (30s); default the template's");
  exec_cmd->add_option("--env", o->env, "NAME=VALUE for this command (repeatable)");
  exec_cmd->callback([o, &status, &trailing] { status.code = exec(*o, trailing); });
  for (const char* act : {"pause", "resume"})
    with_options(session->add_subcommand(act, std::string(act == std::string("pause") ? "Freeze" : "Thaw") +
                                                  " every process of a session"),
                 *o, true)
        ->callback([o, &status, act] {
          status.code = show(act, *o, http::verb::post, "/v1/sessions/" + percent_encode(o->id) + "/" + act, "", 200);
        });
  with_options(session->add_subcommand("delete", "End a session: everything in it goes"), *o, true)->callback([o, &status] {
    status.code = show("delete", *o, http::verb::delete_, "/v1/sessions/" + percent_encode(o->id), "", 200);
  });
}

}  // namespace airlock::cli
