#include "cli/mcp_bridge.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <istream>
#include <memory>
#include <mutex>
#include <ostream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/daemon_connection.hpp"
#include "cli/keep_alive_connection.hpp"
#include "cli/sse_reader.hpp"

namespace airlock::cli {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;

constexpr const char* kMcpPath = "/mcp";
constexpr std::size_t kMaxInFlight = 32;                   // requests answered at once
constexpr std::size_t kMaxAnswerBytes = 64 * 1024 * 1024;  // a plain JSON answer held whole
// JSON-RPC's "server error" range: the daemon could not be asked, or did not answer JSON-RPC.
constexpr int kBridgeError = -32000;

// Lines to the client, whole and in order, from whichever thread has one.
class ClientLines {
 public:
  explicit ClientLines(std::ostream& out) : out_(out) {}
  // A JSON-RPC message from the daemon: one line. JSON text with a raw line break (allowed
  // between tokens) is written again compact.
  void write(std::string_view message) {
    std::string compact;
    if (message.find_first_of("\r\n") != std::string_view::npos) {
      compact = json::parse(message, nullptr, false).dump();
      message = compact;
    }
    std::lock_guard lock(mu_);
    out_ << message << '\n' << std::flush;
  }
  void write_json(const json& message) { write(std::string_view(message.dump())); }

 private:
  std::mutex mu_;
  std::ostream& out_;
};

// What the daemon gave the conversation: its Mcp-Session-Id (from the answer to initialize)
// and the negotiated revision, which every later request names in MCP-Protocol-Version.
class SessionHeaders {
 public:
  void apply(http::request<http::string_body>& req) const {
    std::lock_guard lock(mu_);
    if (!id_.empty()) req.set("Mcp-Session-Id", id_);
    if (!version_.empty()) req.set("MCP-Protocol-Version", version_);
  }
  // True when this answer gave the first session id.
  bool learn_id(const http::fields& fields) {
    auto found = fields.find("Mcp-Session-Id");
    if (found == fields.end()) return false;
    std::lock_guard lock(mu_);
    const bool first = id_.empty();
    id_ = std::string(found->value());
    return first;
  }
  void learn_version(const json& answer) {
    if (!answer.is_object() || !answer.contains("result") || !answer["result"].is_object()) return;
    const auto& result = answer["result"];
    if (!result.contains("protocolVersion") || !result["protocolVersion"].is_string()) return;
    std::lock_guard lock(mu_);
    version_ = result["protocolVersion"].get<std::string>();
  }
  std::string id() const {
    std::lock_guard lock(mu_);
    return id_;
  }

 private:
  mutable std::mutex mu_;
  std::string id_, version_;
};

// What the bridge needs to know of a line from the client.
struct ClientMessage {
  std::string text;
  json id;                 // null when it has none (a notification, a response, unparseable)
  bool expects_answer = false;  // a request: something must go back for its id
  bool notification = false;    // JSON-RPC answers it nothing, not even a refusal
  bool initialize = false;
};

ClientMessage classify(std::string line) {
  ClientMessage m;
  const json parsed = json::parse(line, nullptr, false);
  if (parsed.is_object() && parsed.contains("method") && parsed.contains("id")) {
    m.id = parsed["id"];
    m.expects_answer = true;
    m.initialize = parsed["method"] == "initialize";
  }
  m.notification = parsed.is_object() && parsed.contains("method") && !parsed.contains("id");
  m.text = std::move(line);
  return m;
}

json bridge_error(const json& id, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", kBridgeError}, {"message", "airlock mcp: " + message}}}};
}

class Bridge {
 public:
  Bridge(const ClientOptions& o, ServerAddress server, std::unique_ptr<boost::asio::ssl::context> tls,
         std::ostream& out, std::ostream& log)
      : options_(o), server_(std::move(server)), tls_(std::move(tls)), lines_(out), log_(log),
        listen_connection_(std::make_unique<KeepAliveConnection>(server_, tls_.get())) {}

  void submit(std::string line);
  void finish();

 private:
  void work();
  void forward(const ClientMessage& m, KeepAliveConnection& connection);
  bool pass_event(const ClientMessage& m, const SseEvent& e);
  void pass_plain_answer(const ClientMessage& m, const AnswerHead& head, const std::string& body);
  void listen();
  bool listen_once(KeepAliveConnection& connection, SseReader& events);
  void end_session();
  http::request<http::string_body> request(http::verb verb) const;
  void warn(const std::string& what);

  const ClientOptions& options_;
  const ServerAddress server_;
  const std::unique_ptr<boost::asio::ssl::context> tls_;
  ClientLines lines_;
  std::ostream& log_;
  SessionHeaders session_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ClientMessage> queue_;
  std::vector<std::thread> workers_;
  std::size_t idle_ = 0;
  bool closing_ = false;
  // An initialize is in flight: what comes after it waits for its session id and revision
  // (a client that did not wait for the answer would otherwise race it).
  bool initializing_ = false;

  std::thread listener_;
  const std::unique_ptr<KeepAliveConnection> listen_connection_;  // aborted by finish()
};

http::request<http::string_body> Bridge::request(http::verb verb) const {
  http::request<http::string_body> req{verb, kMcpPath, 11};
  req.set(http::field::user_agent, "airlock-mcp-bridge");
  if (!options_.key.empty()) req.set(http::field::authorization, "Bearer " + options_.key);
  if (!options_.subject_token.empty()) req.set("Airlock-Subject-Token", options_.subject_token);
  session_.apply(req);
  return req;
}

void Bridge::warn(const std::string& what) {
  std::lock_guard lock(mu_);
  log_ << "airlock mcp: " << what << "\n" << std::flush;
}

// A worker per request in flight, up to kMaxInFlight; each keeps its own connection.
void Bridge::submit(std::string line) {
  ClientMessage m = classify(std::move(line));
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(m));
  // A worker woken but not yet running still counts as idle: one more is started whenever
  // more messages wait than workers do.
  if (queue_.size() > idle_ && workers_.size() < kMaxInFlight)
    workers_.emplace_back([this] { work(); });
  else
    cv_.notify_one();
}

void Bridge::work() {
  KeepAliveConnection connection(server_, tls_.get());
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [this] { return (!queue_.empty() && !initializing_) || (closing_ && queue_.empty()); });
    --idle_;
    if (queue_.empty()) return;  // closing, and nothing is left to send
    ClientMessage m = std::move(queue_.front());
    queue_.pop_front();
    initializing_ = m.initialize;
    lock.unlock();
    forward(m, connection);
    lock.lock();
    if (m.initialize) {
      initializing_ = false;
      cv_.notify_all();
    }
  }
}

// POSTs one message; its answer (one JSON message, or a stream of events: the notifications
// the call sends, then its answer) goes back line by line.
void Bridge::forward(const ClientMessage& m, KeepAliveConnection& connection) {
  auto req = request(http::verb::post);
  req.set(http::field::accept, "application/json, text/event-stream");
  req.set(http::field::content_type, "application/json");
  req.body() = m.text;
  req.prepare_payload();
  AnswerHead head;
  SseReader events;
  std::string body, cut;  // cut: why the answer was not read to its end
  bool first_session = false, answered = false;
  const auto on_head = [&](const AnswerHead& h) {
    head = h;
    if (h.status / 100 == 2) first_session = session_.learn_id(h.fields);
  };
  const auto on_body = [&](std::string_view piece) {
    if (head.status == 200 && head.content_type == "text/event-stream") {
      auto done = events.feed(piece);
      if (!done) {
        cut = done.error().message;
        return false;
      }
      for (const auto& e : *done) answered |= pass_event(m, e);
      return true;
    }
    if (body.size() + piece.size() > kMaxAnswerBytes) {
      cut = "an answer larger than " + std::to_string(kMaxAnswerBytes) + " bytes";
      return false;
    }
    body.append(piece);
    return true;
  };
  const Status sent = connection.exchange(req, on_head, on_body);
  if (first_session) listener_ = std::thread([this] { listen(); });
  if (!sent) cut = sent.error().message;
  if (head.status == 200 && head.content_type == "text/event-stream" && cut.empty()) {
    if (m.expects_answer && !answered) cut = "the daemon's event stream ended without the answer";
  }
  if (!cut.empty()) {
    warn(cut);
    if (m.expects_answer && !answered) lines_.write_json(bridge_error(m.id, cut));
    return;
  }
  if (head.status != 200 || head.content_type != "text/event-stream") pass_plain_answer(m, head, body);
}

// One event of a POST's stream to the client; true when it is the answer to `m`. What the
// answer to initialize negotiated is learnt before the client can read it and send more.
bool Bridge::pass_event(const ClientMessage& m, const SseEvent& e) {
  bool answer = false;
  if (m.expects_answer) {
    const json message = json::parse(e.data, nullptr, false);
    answer = message.is_object() && !message.contains("method") && message.contains("id") && message["id"] == m.id;
    if (answer && m.initialize) session_.learn_version(message);
  }
  lines_.write(e.data);
  return answer;
}

// A plain answer: JSON-RPC goes back as it is (never for a notification, which JSON-RPC does
// not answer); anything else (an HTTP refusal before JSON-RPC, a cut answer) becomes an error
// for the request that is owed one.
void Bridge::pass_plain_answer(const ClientMessage& m, const AnswerHead& head, const std::string& body) {
  if (head.status == 202 || head.status == 204) return;
  const json answer = json::parse(body, nullptr, false);
  const bool rpc = answer.is_object() && answer.contains("jsonrpc");
  if (rpc || (head.status == 200 && answer.is_array())) {
    if (m.initialize) session_.learn_version(answer);
    if (!m.notification) lines_.write(body);
    return;
  }
  const std::string why = "the daemon answered HTTP " + std::to_string(head.status) +
                          (body.empty() ? std::string() : ": " + body.substr(0, 500));
  warn(why);
  if (m.expects_answer) lines_.write_json(bridge_error(m.id, why));
}

// The GET stream: what the daemon sends unasked (list_changed, ...), until the session ends or
// the daemon says it offers none (405). A stream that breaks is opened again, with the id of
// the last event seen.
void Bridge::listen() {
  SseReader events;
  for (;;) {
    if (!listen_once(*listen_connection_, events)) return;
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, std::chrono::seconds(1), [this] { return closing_; })) return;
  }
}

// False when the stream is not to be opened again.
bool Bridge::listen_once(KeepAliveConnection& connection, SseReader& events) {
  auto req = request(http::verb::get);
  req.set(http::field::accept, "text/event-stream");
  if (!events.last_event_id().empty()) req.set("Last-Event-ID", events.last_event_id());
  bool streaming = false;
  int status = 0;
  const Status read = connection.exchange(
      req,
      [&](const AnswerHead& h) {
        status = h.status;
        streaming = h.status == 200 && h.content_type == "text/event-stream";
      },
      [&](std::string_view piece) {
        if (!streaming) return true;
        auto done = events.feed(piece);
        if (!done) return false;
        for (const auto& e : *done) lines_.write(e.data);
        return true;
      });
  {
    std::lock_guard lock(mu_);
    if (closing_) return false;
  }
  if (read && !streaming) {
    if (status != 405) warn("the daemon refused its notification stream: HTTP " + std::to_string(status));
    return false;
  }
  return true;
}

void Bridge::end_session() {
  if (session_.id().empty()) return;
  KeepAliveConnection connection(server_, tls_.get());
  auto req = request(http::verb::delete_);
  (void)connection.exchange(req, [](const AnswerHead&) {}, [](std::string_view) { return true; });
}

// The client closed stdin: the answers still due are written, then the stream and the
// session end.
void Bridge::finish() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
  listen_connection_->abort();
  if (listener_.joinable()) listener_.join();
  end_session();
}

}  // namespace

int run_mcp_bridge(const ClientOptions& o, std::istream& in, std::ostream& out, std::ostream& log) {
  auto server = checked_server(o);
  if (!server) {
    log << "airlock mcp: " << server.error().message << "\n";
    return 2;
  }
  std::unique_ptr<boost::asio::ssl::context> tls;
  try {
    if (server->tls) tls = std::make_unique<boost::asio::ssl::context>(client_context(o));
  } catch (const TlsSetupError& e) {
    log << "airlock mcp: " << e.what() << "\n";
    return 2;
  }
  Bridge bridge(o, *server, std::move(tls), out, log);
  log << "airlock mcp: bridging stdin and stdout to " << o.server << kMcpPath << "\n" << std::flush;
  std::string line;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) bridge.submit(std::move(line));
  bridge.finish();
  return 0;
}

}  // namespace airlock::cli
