// airlock session create [TEMPLATE] [--from-snapshot SNAP] | list | show ID | exec ID (-- CMD
// ARGS | --sh LINE) | code ID and interrupt ID (session_code_command.cpp) | shell ID [--sh LINE] | pause ID | resume ID | delete ID | put ID LOCAL_FILE REMOTE_PATH | get ID
// REMOTE_PATH [LOCAL_FILE] | ls ID [REMOTE_PATH] | rm ID REMOTE_PATH | snapshot ID [--retention
// 7d] | fork ID | snapshots | snapshot-show SNAP | snapshot-delete SNAP:
// sessions on the daemon (docs/sessions.md), owned by the key (and --subject-token's user) that
// created them, and the snapshots of their workspaces, owned as their sessions were. `exec`
// prints the command's stdout and stderr as the daemon scanned them and exits with its exit
// code (124 past its timeout, 125 when it did not run to an exit; 128+N for signal N). Other
// commands: exit 0 done, 1 the daemon refused, 2 the request failed.
// REMOTE_PATH is relative to the session's workspace (/work; a leading '/' is its root).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/daemon_client.hpp"
#include "cli/session_shell.hpp"
#include "common/percent_encoding.hpp"
#include "common/unique_fd.hpp"
#include "common/utc_time.hpp"

namespace airlock::cli {
namespace {

namespace http = boost::beast::http;

struct SessionOptions {
  ClientOptions client;
  std::string id, template_name, idle_timeout, shell_line, cwd, timeout;
  std::string remote_path, local_file;  // put, get, ls, rm
  std::string from_snapshot, retention, snapshot_id;  // create, snapshot, fork, snapshot-*
  std::vector<std::string> labels, env;
  bool json = false;
};

// The answer's JSON when its status is `expected`, or nothing with `status` set after saying
// what failed.
std::optional<nlohmann::json> expect_json(const char* what, const Result<Reply>& reply, int expected, int& status) {
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

// Sends one request: as expect_json.
std::optional<nlohmann::json> ask(const char* what, SessionOptions& o, http::verb verb, const std::string& path,
                                  const std::string& body, int expected, int& status) {
  key_from_environment(o.client);
  return expect_json(what, request(o.client, verb, path, body), expected, status);
}

void print_session(const nlohmann::json& s) {
  const auto owner = s.value("owner", nlohmann::json::object());
  const auto user = owner.value("user", nlohmann::json::object());
  std::cout << s.value("id", "-") << "  " << s.value("template", "-") << "  " << s.value("state", "-") << "  "
            << (owner.value("principal", nlohmann::json()).is_string() ? owner["principal"].get<std::string>() : "-")
            << " for " << user.value("sub", "-") << "  execs " << s.value("execs", 0) << "\n";
}

void print_snapshot(const nlohmann::json& s) {
  std::cout << s.value("id", "-") << "  " << s.value("template", "-") << "  of " << s.value("session_id", "-") << "  "
            << s.value("bytes", std::uint64_t{0}) << " bytes  until "
            << rfc3339_seconds(s.value("expires", std::int64_t{0}) / 1000) << "  sha256 " << s.value("sha256", "-")
            << "\n";
}

// What an answer holds: a list under `key` (GET /v1/sessions, /v1/snapshots) or one object,
// each printed by `print`.
struct Listing {
  const char* key;
  void (*print)(const nlohmann::json&);
};
constexpr Listing kSessions{"sessions", print_session};
constexpr Listing kSnapshots{"snapshots", print_snapshot};

int show(const char* what, SessionOptions& o, http::verb verb, const std::string& path, const std::string& body,
         int expected, const Listing& listing = kSessions) {
  int status = 0;
  auto j = ask(what, o, verb, path, body, expected, status);
  if (!j) return status;
  if (o.json) std::cout << j->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  else if (j->contains(listing.key)) {
    if ((*j)[listing.key].empty()) std::cout << "no " << listing.key << " of yours\n";
    for (const auto& s : (*j)[listing.key]) listing.print(s);
  } else listing.print(*j);
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

// What a creation answered: its id, or all of it with --json.
void print_created(const nlohmann::json& j, const SessionOptions& o) {
  if (o.json) std::cout << j.dump(2) << "\n";
  else std::cout << j.value("id", "") << "\n";
}

// POST /v1/sessions (create, and fork's second half): prints the new session's id.
int create(const char* what, SessionOptions& o) {
  if (o.template_name.empty() && o.from_snapshot.empty()) {
    std::cerr << "airlock session " << what << ": give a TEMPLATE, or --from-snapshot SNAP\n";
    return 2;
  }
  nlohmann::json body = nlohmann::json::object();
  if (!o.template_name.empty()) body["template"] = o.template_name;
  if (!o.from_snapshot.empty()) body["fromSnapshot"] = o.from_snapshot;
  if (!o.idle_timeout.empty()) body["idleTimeout"] = o.idle_timeout;
  nlohmann::json labels = nlohmann::json::object();
  if (!pairs("--label", o.labels, labels)) return 2;
  if (!labels.empty()) body["labels"] = labels;
  int status = 0;
  auto j = ask(what, o, http::verb::post, "/v1/sessions", body.dump(), 201, status);
  if (j) print_created(*j, o);
  return status;
}

// POST /v1/sessions/ID/snapshot: the snapshot's JSON, or nothing with `status` set.
std::optional<nlohmann::json> take_snapshot(const char* what, SessionOptions& o, int& status) {
  const std::string body = o.retention.empty() ? "" : nlohmann::json{{"retention", o.retention}}.dump();
  return ask(what, o, http::verb::post, "/v1/sessions/" + percent_encode(o.id) + "/snapshot", body, 201, status);
}

int snapshot(SessionOptions& o) {
  int status = 0;
  auto j = take_snapshot("snapshot", o, status);
  if (j) print_created(*j, o);
  return status;
}

// Snapshot then create; a snapshot whose session could not be created is deleted again, so a
// failed fork leaves nothing behind.
int fork_session(SessionOptions& o) {
  int status = 0;
  auto j = take_snapshot("fork", o, status);
  if (!j) return status;
  o.from_snapshot = j->value("id", "");
  status = create("fork", o);
  if (status != 0)
    (void)request(o.client, http::verb::delete_, "/v1/snapshots/" + percent_encode(o.from_snapshot), "");
  return status;
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

// /v1/sessions/ID/files/PATH: a leading '/' dropped (the workspace's root), each segment
// percent-encoded, the '/'s kept.
std::string files_target(const std::string& id, std::string_view remote) {
  while (!remote.empty() && remote.front() == '/') remote.remove_prefix(1);
  std::string target = "/v1/sessions/" + percent_encode(id) + "/files/";
  for (std::size_t start = 0;;) {
    const auto slash = remote.find('/', start);
    target += percent_encode(remote.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return target;
    target += '/';
    start = slash + 1;
  }
}

int local_failure(const char* what, const std::string& file, int error) {
  std::cerr << "airlock session " << what << ": " << file << ": " << std::strerror(error) << "\n";
  return 2;
}

// A name as the sandbox chose it may hold control characters (a terminal's escape sequences):
// such a name is printed JSON-quoted.
std::string display_name(const std::string& name) {
  const bool plain = std::none_of(name.begin(), name.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
  return plain ? name : nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int put(SessionOptions& o) {
  if (o.remote_path.empty() || o.remote_path.back() == '/') {
    std::cerr << "airlock session put: REMOTE_PATH must name a file, not a directory\n";
    return 2;
  }
  UniqueFd file;  // none: "-", stdin
  if (o.local_file != "-") {
    file = UniqueFd(::open(o.local_file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!file) return local_failure("put", o.local_file, errno);
    struct stat st {};
    if (::fstat(file.get(), &st) == 0 && S_ISDIR(st.st_mode)) return local_failure("put", o.local_file, EISDIR);
  }
  key_from_environment(o.client);
  Streams streams;
  streams.body_fd = file ? file.get() : STDIN_FILENO;
  int status = 0;
  auto j = expect_json("put", request(o.client, http::verb::put, files_target(o.id, o.remote_path), streams), 200,
                       status);
  if (!j) return status;
  if (o.json) {
    std::cout << j->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  const auto redactions = j->value("redactions", nlohmann::json::array());
  std::cout << display_name(j->value("path", o.remote_path)) << "  " << j->value("size", std::uint64_t{0})
            << " bytes  sha256 " << j->value("sha256", "-");
  if (!redactions.empty()) std::cout << "  (DLP redacted " << redactions.size() << ")";
  std::cout << "\n";
  return 0;
}

// Writes the file to LOCAL_FILE, or to stdout without one. LOCAL_FILE is written under another
// name and renamed once whole: a failure leaves neither part of the file nor a clobbered one.
int get(SessionOptions& o) {
  const bool to_stdout = o.local_file.empty() || o.local_file == "-";
  const std::string partial = to_stdout ? "" : o.local_file + ".airlock-partial";
  UniqueFd out;
  if (!to_stdout) {
    out = UniqueFd(::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (!out) return local_failure("get", partial, errno);
  }
  key_from_environment(o.client);
  Streams streams;
  streams.answer_fd = to_stdout ? STDOUT_FILENO : out.get();
  auto reply = request(o.client, http::verb::get, files_target(o.id, o.remote_path), streams);
  const bool whole = reply && reply->status == 200 && reply->file_content;
  if (!to_stdout) {
    out.reset();
    if (whole && ::rename(partial.c_str(), o.local_file.c_str()) != 0) {
      const int error = errno;
      ::unlink(partial.c_str());
      return local_failure("get", o.local_file, error);
    }
    if (!whole) ::unlink(partial.c_str());
  }
  if (whole) return 0;
  if (reply && reply->status == 200) {  // a listing
    std::cerr << "airlock session get: " << o.remote_path << " is a directory (airlock session ls lists it)\n";
    return 1;
  }
  int status = 0;
  expect_json("get", reply, 200, status);  // says what failed
  return status;
}

void print_entry(const nlohmann::json& e) {
  const std::string type = e.value("type", "-");
  std::cout << std::left << std::setw(9) << type << std::right << std::setw(12) << e.value("size", std::uint64_t{0})
            << "  " << rfc3339_seconds(e.value("modified", std::int64_t{0})) << "  "
            << display_name(e.value("name", "")) << (type == "directory" ? "/" : "") << "\n";
}

int ls(SessionOptions& o) {
  key_from_environment(o.client);
  auto reply = request(o.client, http::verb::get, files_target(o.id, o.remote_path), "");
  if (reply && reply->status == 200 && reply->file_content) {
    std::cerr << "airlock session ls: " << o.remote_path << " is a file (airlock session get reads it)\n";
    return 1;
  }
  int status = 0;
  auto j = expect_json("ls", reply, 200, status);
  if (!j) return status;
  if (o.json) std::cout << j->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  else
    for (const auto& e : j->value("entries", nlohmann::json::array())) print_entry(e);
  return 0;
}

// DELETE `path` (rm, snapshot-delete): silent when done, but for --json.
int delete_at(const char* what, SessionOptions& o, const std::string& path) {
  int status = 0;
  auto j = ask(what, o, http::verb::delete_, path, "", 200, status);
  if (j && o.json) std::cout << j->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return status;
}

CLI::App* with_options(CLI::App* cmd, SessionOptions& o, bool takes_id) {
  add_client_options(cmd, o.client);
  cmd->add_option("--subject-token", o.client.subject_token, "The user the agent acts for (Airlock-Subject-Token)");
  cmd->add_flag("--json", o.json, "Print the daemon's JSON");
  if (takes_id) cmd->add_option("id", o.id, "The session's id")->required();
  return cmd;
}

// put, get, ls, rm: the files of a session's workspace, by paths relative to it.
void add_files_commands(CLI::App& session, const std::shared_ptr<SessionOptions>& o, ExitStatus& status) {
  auto* put_cmd = with_options(session.add_subcommand("put", "Write a local file into a session's workspace"), *o, true);
  put_cmd->add_option("local_file", o->local_file, "The file to send; - reads stdin")->required();
  put_cmd->add_option("remote_path", o->remote_path, "Its path in the workspace (parents are created)")->required();
  put_cmd->callback([o, &status] { status.code = put(*o); });
  auto* get_cmd = with_options(session.add_subcommand("get", "Read a file of a session's workspace"), *o, true);
  get_cmd->add_option("remote_path", o->remote_path, "Its path in the workspace")->required();
  get_cmd->add_option("local_file", o->local_file, "Where to write it (default or -: stdout)");
  get_cmd->callback([o, &status] { status.code = get(*o); });
  auto* ls_cmd = with_options(session.add_subcommand("ls", "List a directory of a session's workspace"), *o, true);
  ls_cmd->add_option("remote_path", o->remote_path, "The directory (default: the workspace)");
  ls_cmd->callback([o, &status] { status.code = ls(*o); });
  auto* rm_cmd =
      with_options(session.add_subcommand("rm", "Remove a file, or an empty directory, of a session's workspace"), *o, true);
  rm_cmd->add_option("remote_path", o->remote_path, "Its path in the workspace")->required();
  rm_cmd->callback([o, &status] { status.code = delete_at("rm", *o, files_target(o->id, o->remote_path)); });
}

// snapshot, fork, snapshots, snapshot-show, snapshot-delete: a session's workspace kept, and
// sessions started from it (create --from-snapshot).
void add_snapshot_commands(CLI::App& session, const std::shared_ptr<SessionOptions>& o, ExitStatus& status) {
  const char* retention = "How long the daemon keeps it (1m to 30d; default 7d)";
  auto* snap_cmd = with_options(session.add_subcommand("snapshot", "Keep a session's workspace; prints the snapshot's id"),
                                *o, true);
  snap_cmd->add_option("--retention", o->retention, retention);
  snap_cmd->callback([o, &status] { status.code = snapshot(*o); });
  auto* fork_cmd = with_options(
      session.add_subcommand("fork", "Snapshot a session and start another from the snapshot; prints its id"), *o, true);
  fork_cmd->add_option("--retention", o->retention, retention);
  fork_cmd->add_option("--idle-timeout", o->idle_timeout, "End it after this long unused (at most the template's)");
  fork_cmd->add_option("--label", o->labels, "NAME=VALUE, kept with it (repeatable)");
  fork_cmd->callback([o, &status] { status.code = fork_session(*o); });
  with_options(session.add_subcommand("snapshots", "Your snapshots"), *o, false)->callback([o, &status] {
    status.code = show("snapshots", *o, http::verb::get, "/v1/snapshots", "", 200, kSnapshots);
  });
  auto* show_cmd = with_options(session.add_subcommand("snapshot-show", "One snapshot of yours"), *o, false);
  show_cmd->add_option("snapshot", o->snapshot_id, "The snapshot's id")->required();
  show_cmd->callback([o, &status] {
    status.code = show("snapshot-show", *o, http::verb::get, "/v1/snapshots/" + percent_encode(o->snapshot_id), "",
                       200, kSnapshots);
  });
  auto* delete_cmd = with_options(session.add_subcommand("snapshot-delete", "Delete a snapshot of yours"), *o, false);
  delete_cmd->add_option("snapshot", o->snapshot_id, "The snapshot's id")->required();
  delete_cmd->callback([o, &status] {
    status.code = delete_at("snapshot-delete", *o, "/v1/snapshots/" + percent_encode(o->snapshot_id));
  });
}

}  // namespace

void add_session_command(CLI::App& app, ExitStatus& status, const TrailingArgs& trailing) {
  auto* session = app.add_subcommand(kSessionCommand.name, kSessionCommand.summary);
  session->require_subcommand(1);
  auto o = std::make_shared<SessionOptions>();
  auto* create_cmd = with_options(session->add_subcommand("create", "Start a session from a template; prints its id"), *o, false);
  create_cmd->add_option("template", o->template_name, "The session template (default: the snapshot's)");
  create_cmd->add_option("--from-snapshot", o->from_snapshot, "A snapshot of yours whose files it starts with");
  create_cmd->add_option("--idle-timeout", o->idle_timeout, "End it after this long unused (at most the template's)");
  create_cmd->add_option("--label", o->labels, "NAME=VALUE, kept with it (repeatable)");
  create_cmd->callback([o, &status] { status.code = create("create", *o); });
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
  auto* shell_cmd = with_options(session->add_subcommand("shell", "A terminal on a session (a login shell, or --sh LINE)"), *o, true);
  shell_cmd->add_option("--sh", o->shell_line, "A shell line (/bin/sh -c) to run on the terminal instead");
  shell_cmd->callback([o, &status] {
    key_from_environment(o->client);
    status.code = run_session_shell(o->client, o->id, o->shell_line);
  });
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
  add_files_commands(*session, o, status);
  add_snapshot_commands(*session, o, status);
  add_session_code_commands(*session, status);
}

}  // namespace airlock::cli
