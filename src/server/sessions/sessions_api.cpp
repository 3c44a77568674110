#include "server/sessions/sessions_api.hpp"

#include <mutex>

#include "access/decide.hpp"
#include "common/json_limits.hpp"
#include "common/units.hpp"
#include "server/core/responses.hpp"
#include "server/http/deferred_body.hpp"
#include "server/sessions/session_code.hpp"
#include "server/sessions/session_exec.hpp"
#include "server/sessions/session_files.hpp"
#include "server/sessions/session_forwarder.hpp"
#include "server/sessions/session_snapshots.hpp"
#include "server/sessions/session_terminal.hpp"

namespace airlock::server {
namespace {

constexpr std::size_t kMaxLabels = 32;
constexpr std::size_t kMaxLabelBytes = 256;

int status_of(const std::string& code) {
  if (code == "invalid_input" || code == "invalid_argument" || code == "invalid_path") return 400;
  if (code == "forbidden" || code == "outside_workspace" || code == "permission_denied" || code == "credential_denied")
    return 403;
  if (code == "unknown_template" || code == "file_not_found") return 404;
  if (code == "session_ended" || code == "session_paused" || code == "session_not_paused" || code == "interpreter_busy")
    return 409;
  if (code == "is_a_directory" || code == "not_a_directory" || code == "directory_not_empty" ||
      code == "file_exists" || code == "not_a_regular_file")
    return 409;
  if (code == "disk_limit" || code == "snapshot_too_large") return 413;
  if (code == "not_found") return 404;
  if (code == "freezer_unavailable" || code == "memory_snapshot_unsupported") return 501;
  if (code == "dlp_blocked" || code == "exec_failed" || code == "code_rejected") return 422;
  if (code == "quota_exceeded") return 429;
  if (code == "draining" || code == "storage_unavailable" || code == "credential_unavailable") return 503;
  return 500;
}

}  // namespace

// A refusal by a quota is coded "quota_exceeded:<quota>": the answer names the quota, as a
// tool call's does.
HttpResponse session_error_response(const Error& e) {
  const auto colon = e.code.find(':');
  const std::string kind = e.code.substr(0, colon);
  if (colon == std::string::npos) return error_response(status_of(kind), kind, e.message);
  nlohmann::json body = {{"error", {{"kind", kind}, {"message", e.message}, {"quota", e.code.substr(colon + 1)}}}};
  auto resp = json_response(status_of(kind), body);
  resp.headers.emplace_back("Retry-After", "1");
  return resp;
}

HttpResponse session_not_found(const std::string& id) {
  return error_response(404, "not_found", "no session " + id + " of yours");
}

Result<SessionService::CreateRequest> parse_create_request(const std::string& body) {
  auto parsed = parse_json_bounded(body, 8);
  if (!parsed || !parsed->is_object())
    return Error::make("invalid_input", "the body must be a JSON object: {\"template\": \"...\"}");
  SessionService::CreateRequest r;
  for (const auto& [key, value] : parsed->items()) {
    if (key == "template" && value.is_string()) {
      r.template_name = value.get<std::string>();
    } else if (key == "idleTimeout" && value.is_string()) {
      auto d = parse_duration(value.get<std::string>());
      if (!d) return Error::make("invalid_input", "idleTimeout: a duration (\"10m\")");
      r.idle_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    } else if (key == "fromSnapshot" && value.is_string()) {
      r.snapshot_id = value.get<std::string>();
    } else if (key == "labels" && value.is_object() && value.size() <= kMaxLabels) {
      for (const auto& [k, v] : value.items())
        if (!v.is_string() || k.size() > kMaxLabelBytes || v.get<std::string>().size() > kMaxLabelBytes)
          return Error::make("invalid_input", "labels: at most 32 string values of 256 bytes");
      r.labels = value;
    } else {
      return Error::make("invalid_input", "'" + key + "': expected template (a name), idleTimeout (\"10m\"), labels or fromSnapshot");
    }
  }
  if (r.template_name.empty() && r.snapshot_id.empty()) return Error::make("invalid_input", "template: missing");
  return r;
}

namespace {

// A creation from a snapshot: the caller's own snapshot (a manager's reach does not extend to
// forking another's), of the template asked for, unpacked into the new session before it is
// recorded.
Status from_snapshot(SessionService& sessions, const pipeline::Caller& caller, const std::string& id,
                     SessionService::CreateRequest& request) {
  SnapshotStore* store = sessions.snapshots();
  if (!store) return Error::make("not_found", "this daemon keeps no snapshots");
  auto row = find_snapshot(*store, id, caller, false);
  if (!row) return Error::make("not_found", "no snapshot " + id + " of yours");
  if (request.template_name.empty()) request.template_name = row->template_name;
  if (request.template_name != row->template_name)
    return Error::make("invalid_input", "snapshot " + id + " is of template '" + row->template_name +
                                            "'; a session from it is of the same template");
  if (row->memory) {  // restored by the backend from the checked image; its files unpacked there
    auto image = verified_memory_image(*store, *row);
    if (!image) return image.error();
    request.memory = std::move(*image);
  } else {
    request.prepare = [store, row = *row](backend::Session& sandbox) { return restore_snapshot(*store, row, sandbox); };
  }
  request.from_snapshot = audit::SessionSnapshotRecord{row->id, row->bytes, row->sha256};
  return {};
}

// Events of an exec as Server-Sent Events, queued until the connection takes the writer.
class SseSink final : public ExecSink {
 public:
  static std::string event(std::string_view name, const nlohmann::json& data) {
    return "event: " + std::string(name) + "\ndata: " +
           data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
  }
  // A client that left: the exec runs on, its record is kept.
  void output(std::string_view stream, const std::string& text) override {
    body_->write(event(stream, {{"data", text}}));
  }
  void finished(const nlohmann::json& exit) override {
    body_->write(event("exit", exit));
    body_->finish();
  }
  HttpResponse response() const {
    auto resp = DeferredBody::response(body_, "text/event-stream");
    resp.headers.emplace_back("Cache-Control", "no-cache");
    return resp;
  }

 private:
  std::shared_ptr<DeferredBody> body_ = std::make_shared<DeferredBody>();
};

bool wants_json(const HttpRequest& r) {
  auto accept = r.headers.find("accept");
  return accept != r.headers.end() && accept->second.find("application/json") != std::string::npos &&
         accept->second.find("text/event-stream") == std::string::npos;
}

void exec(const ApiServices& s, SessionService& sessions, std::shared_ptr<LiveSession> session,
          const pipeline::Caller& caller, const HttpRequest& r, std::function<void(HttpResponse)> reply) {
  auto request = parse_exec_request(r.body);
  if (!request) return reply(session_error_response(request.error()));
  ExecRun::Context ctx{std::move(session), caller, s.generation->load(), s.quotas, sessions.audit(),
                       sessions.new_id()()};
  const bool json = wants_json(r);
  sessions.spawn([ctx = std::move(ctx), request = std::move(*request), json, reply = std::move(reply)]() mutable {
    if (json) {
      auto answer = run_exec_whole(std::move(ctx), std::move(request));
      return reply(answer ? json_response(200, *answer) : session_error_response(answer.error()));
    }
    auto run = ExecRun::start(std::move(ctx), std::move(request));
    if (!run) return reply(session_error_response(run.error()));
    SseSink sink;
    reply(sink.response());
    (*run)->pump(sink);
  });
}

// A code cell (session_code.hpp), or an interrupt of the running one.
void code(const ApiServices& s, SessionService& sessions, std::shared_ptr<LiveSession> session,
          const pipeline::Caller& caller, const HttpRequest& r, bool interrupt, std::function<void(HttpResponse)> reply) {
  if (r.method != "POST") return reply(error_response(405, "method_not_allowed", "use POST"));
  if (interrupt) return reply(json_response(200, {{"interrupted", interrupt_code_cell(*session)}}));
  auto request = parse_code_request(r.body);
  if (!request) return reply(session_error_response(request.error()));
  ExecRun::Context ctx{std::move(session), caller, s.generation->load(), s.quotas, sessions.audit(),
                       sessions.new_id()()};
  sessions.spawn([ctx = std::move(ctx), request = std::move(*request), reply = std::move(reply)] {
    auto answer = run_code_cell(ctx, request);
    if (!answer) return reply(session_error_response(answer.error()));
    reply(json_response(200, *answer));
  });
}

}  // namespace

Status may_use_sessions(const pipeline::Caller& caller) {
  if (!caller.scope.empty())  // a token narrowed to some tools is not a session's key
    return Error::make("forbidden", "a token scoped to tools cannot use sessions");
  return {};
}

Result<std::shared_ptr<LiveSession>> create_session(const ApiServices& s, SessionService& sessions,
                                                    const Generation& generation, const pipeline::Caller& caller,
                                                    SessionService::CreateRequest request) {
  if (s.draining && s.draining->load()) return Error::make("draining", "the daemon is draining");
  if (!request.snapshot_id.empty())
    if (auto found = from_snapshot(sessions, caller, request.snapshot_id, request); !found) return found.error();
  if (generation.pipeline) request.broker = generation.pipeline->credential_broker();
  return sessions.create(*generation.config, caller, request);
}

bool is_sessions_path(const std::vector<std::string>& parts) {
  return (parts.size() >= 2 && parts[0] == "v1" && parts[1] == "sessions") || is_snapshots_path(parts);
}

void handle_sessions(const ApiServices& s, SessionService& sessions, const HttpRequest& r,
                     const std::vector<std::string>& parts, std::function<void(HttpResponse)> reply) {
  const auto generation = s.generation->load();
  auto who = authenticate_request(*generation->authenticator, r);
  if (auto* refused = std::get_if<HttpResponse>(&who)) return reply(std::move(*refused));
  const auto& caller = std::get<pipeline::Caller>(who);
  if (auto may = may_use_sessions(caller); !may) return reply(session_error_response(may.error()));
  const policy::Config& config = *generation->config;
  const bool manages = access::decide(config, caller.actor ? &*caller.actor : nullptr,
                                      caller.subject ? &*caller.subject : nullptr, policy::Action::manage_sessions, "")
                           .allowed;
  const bool get = r.method == "GET" || r.method == "HEAD";
  if (is_snapshots_path(parts)) {
    if (!sessions.snapshots()) return reply(error_response(501, "not_implemented", "this daemon keeps no snapshots"));
    return handle_snapshots(*sessions.snapshots(), caller, manages, r, parts, reply);
  }

  if (parts.size() == 2) {
    if (r.method == "POST") {
      auto request = parse_create_request(r.body);
      if (!request) return reply(session_error_response(request.error()));
      return sessions.spawn([s, &sessions, generation, caller, request = std::move(*request), reply = std::move(reply)]() mutable {
        auto created = create_session(s, sessions, *generation, caller, std::move(request));
        if (!created) return reply(session_error_response(created.error()));
        reply(json_response(201, (*created)->to_json()));
      });
    }
    if (!get) return reply(error_response(405, "method_not_allowed", "use GET or POST"));
    auto list = nlohmann::json::array();
    for (const auto& session : sessions.list(caller, manages)) list.push_back(session->to_json());
    if (s.session_forwarder && !is_forwarded(r))  // and the caller's on the other replicas
      return sessions.spawn([fwd = s.session_forwarder, caller, manages, r, list, reply = std::move(reply)]() mutable {
        auto elsewhere = fwd->list_elsewhere(caller, manages, r);
        if (!elsewhere) return reply(session_error_response(elsewhere.error()));
        for (auto& session : *elsewhere) list.push_back(std::move(session));
        reply(json_response(200, {{"sessions", list}}));
      });
    return reply(json_response(200, {{"sessions", list}}));
  }
  // Only the owner reaches a session; one who manages sessions may read and end it.
  const std::string& id = parts[2];
  const bool exec_path = parts.size() == 4 && parts[3] == "exec";
  const bool files_path = parts.size() >= 4 && parts[3] == "files";
  const bool terminal_path = parts.size() == 4 && parts[3] == "terminal";
  const bool code_path = parts.size() >= 4 && parts[3] == "code";
  // A manager reads and ends sessions; what runs in them and their files are the owner's.
  const bool manager_may = manages && !exec_path && !files_path && !terminal_path && !code_path;
  auto session = sessions.find(id, caller, manager_may);
  if (!session && s.session_forwarder)  // held by another replica, perhaps (session_forwarder.hpp)
    return sessions.spawn([fwd = s.session_forwarder, caller, manager_may, id, terminal_path, r, reply = std::move(reply)] {
      fwd->forward(caller, manager_may, id, terminal_path, r, reply);
    });
  if (!session) return reply(session_not_found(id));
  if (parts.size() == 3) {
    if (get) return reply(json_response(200, session->to_json()));
    if (r.method != "DELETE") return reply(error_response(405, "method_not_allowed", "use GET or DELETE"));
    const std::string who_ended = session->owner.is(caller) ? "its owner" : "a session manager";
    return sessions.spawn([&sessions, session, who_ended, reply = std::move(reply)] {
      sessions.end(session, "deleted", "ended by " + who_ended);
      reply(json_response(200, session->to_json()));
    });
  }
  if (exec_path) {
    if (r.method != "POST") return reply(error_response(405, "method_not_allowed", "use POST"));
    return exec(s, sessions, std::move(session), caller, r, std::move(reply));
  }
  if (code_path && (parts.size() == 4 || (parts.size() == 5 && parts[4] == "interrupt")))
    return code(s, sessions, std::move(session), caller, r, parts.size() == 5, std::move(reply));
  if (parts.size() == 4 && (parts[3] == "pause" || parts[3] == "resume")) {
    if (r.method != "POST") return reply(error_response(405, "method_not_allowed", "use POST"));
    if (!session->owner.is(caller)) return reply(session_not_found(id));  // the owner's act, not a manager's
    const bool pause = parts[3] == "pause";
    return sessions.spawn([&sessions, session, pause, reply = std::move(reply)] {
      auto done = pause ? sessions.pause(session) : sessions.resume(session);
      if (!done) return reply(session_error_response(done.error()));
      reply(json_response(200, session->to_json()));
    });
  }
  if (files_path) {
    if (session->state() == "paused") return reply(error_response(409, "session_paused", "the session is paused"));
    return sessions.spawn([&sessions, session, generation, request = r, reply = std::move(reply)] {
      serve_files(sessions, session, generation, request, reply);
    });
  }
  if (parts.size() == 4 && parts[3] == "snapshot") {
    if (r.method != "POST") return reply(error_response(405, "method_not_allowed", "use POST"));
    if (!session->owner.is(caller)) return reply(session_not_found(id));  // the owner's act, not a manager's
    return sessions.spawn([&sessions, session, body = r.body, reply = std::move(reply)] {
      reply(snapshot_response(sessions, *session, body));
    });
  }
  if (terminal_path) {
    if (r.method != "GET") return reply(error_response(405, "method_not_allowed", "use GET (a WebSocket upgrade)"));
    return open_terminal(sessions, std::move(session), generation, s.quotas, r, std::move(reply));
  }
  reply(error_response(404, "not_found", "no such endpoint"));
}

}  // namespace airlock::server
