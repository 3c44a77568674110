#include "server/sessions/session_files.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>
#include <utility>
#include <vector>

#include "common/digest.hpp"
#include "common/no_sigpipe.hpp"
#include "common/percent_encoding.hpp"
#include "dlp/credential_redaction.hpp"
#include "dlp/scanner.hpp"
#include "pipeline/pipeline.hpp"
#include "sandbox/session/session.hpp"
#include "server/http/deferred_body.hpp"
#include "server/sessions/sessions_api.hpp"

namespace airlock::server {
namespace {

using std::chrono::milliseconds;

constexpr std::size_t kWholeAnswerBytes = 1u << 20;    // a download up to this is answered whole
constexpr std::size_t kMaxListingBytes = 16u << 20;    // a directory listing's records, at most
constexpr std::size_t kQueuedDownloadBytes = 1u << 20;  // sent ahead of a slow client, at most
constexpr milliseconds kSlowClient{30'000};            // a client that reads nothing this long is dropped
constexpr milliseconds kCopierEnd{30'000};             // a copier's end after its pipe closed

// An upload goes to a new name beside its target, then is renamed over it once complete: a
// refused or interrupted upload leaves the old file as it was.
std::string upload_name(const std::string& path, const std::string& id) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  return dir + ".airlock-upload-" + id;
}

// Holds the session busy (not idle, not pausable away from under us) for one request.
class Busy {
 public:
  explicit Busy(LiveSession& s) : session_(s), refused_(s.begin_exec(LiveSession::Use::transfer)) {}
  ~Busy() {
    if (!refused_) session_.end_exec(LiveSession::Use::transfer);
  }
  const std::optional<Error>& refused() const { return refused_; }

 private:
  LiveSession& session_;
  std::optional<Error> refused_;
};

std::shared_ptr<const dlp::Scanner> scanner_of(const Generation& g) {
  return g.pipeline ? g.pipeline->scanner() : nullptr;
}

// DLP of a stream of bytes (an upload, a download): one stream scan, its findings kept. A
// download's first has the session's credential values taken out (credentials()).
class ScannedStream {
 public:
  explicit ScannedStream(const std::shared_ptr<const dlp::Scanner>& scanner) {
    if (scanner)
      if (auto opened = scanner->open_stream()) scan_.emplace(std::move(*opened));
  }
  // Redacts the values of `c` before DLP; false when that cannot be set up.
  bool credentials(const SessionCredentials::Redaction& c) {
    if (!c.literals) return true;
    auto opened = dlp::CredentialStream::open(*c.scanner, *c.literals);
    if (opened) credentials_.emplace(std::move(*opened));
    return opened.ok();
  }
  // What may be passed on of `bytes` now ("" at the end: what was held back).
  std::string pass(std::string_view bytes, bool end) {
    std::string text(bytes);
    if (credentials_) {
      dlp::StreamOutput out = end ? credentials_->finish() : credentials_->write(bytes);
      redactions_.insert(redactions_.end(), out.findings.size(), "credential");
      text = std::move(out.text);
    }
    if (!scan_) return text;
    dlp::StreamOutput out;
    if (!text.empty()) out = scan_->write(text);
    if (end) {
      dlp::StreamOutput last = scan_->finish();
      out.text += last.text;
      out.findings.insert(out.findings.end(), last.findings.begin(), last.findings.end());
      out.blocked = out.blocked || last.blocked;
    }
    for (const auto& f : out.findings) redactions_.emplace_back(f.detector);
    blocked_ = blocked_ || out.blocked;
    return blocked_ ? std::string() : std::move(out.text);
  }
  bool blocked() const { return blocked_; }
  const std::vector<std::string>& redactions() const { return redactions_; }

 private:
  std::optional<dlp::CredentialStream> credentials_;
  std::optional<dlp::StreamScanner> scan_;
  std::vector<std::string> redactions_;
  bool blocked_ = false;
};

nlohmann::json redactions_json(const std::vector<std::string>& detectors) {
  auto out = nlohmann::json::array();
  for (const auto& d : detectors) out.push_back({{"detector", d}});
  return out;
}

// The copier's end: nothing, or the error it stopped on.
std::optional<Error> copier_error(backend::Session& sandbox, std::uint32_t id, const std::string& path) {
  auto end = sandbox.wait(id, kCopierEnd);
  if (!end) return Error::make("session_ended", "the session ended during the transfer of '" + path + "'");
  if (!end->exited) return Error::make("file_error", "'" + path + "': the transfer was stopped by a signal");
  if (end->code != 0) return sandbox::file_error(end->code, path);
  return std::nullopt;
}

bool write_to_pipe(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write_without_sigpipe(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // the copier has stopped: its end says why
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

struct FilesRequest {
  SessionService& sessions;
  LiveSession& session;
  backend::Session& sandbox;
  std::shared_ptr<const dlp::Scanner> scanner;
  SessionCredentials::Redaction credentials;  // the session's values, out of what it sends
};

// A name the session chose (a listing's), with the session's credential values taken out.
std::string without_credentials(std::string text, const SessionCredentials::Redaction& c) {
  if (c.literals) dlp::redact_credential_text(text, *c.scanner, {c.literals.get(), dlp::JsonMode::off});
  return text;
}

// PUT: the body into a new file beside the target, through DLP, then renamed over it.
Result<nlohmann::json> upload(const FilesRequest& q, const std::string& path, BodyReader& body) {
  if (path.empty()) return Error::make("is_a_directory", "'.': the workspace is a directory");
  if (auto length = body.length(); length && *length > q.session.disk_bytes)
    return Error::make("disk_limit", "'" + path + "': " + std::to_string(*length) +
                                          " bytes are more than the session's disk (" +
                                          std::to_string(q.session.disk_bytes) + " bytes)");
  const std::string temporary = upload_name(path, q.sessions.new_id()());
  auto transfer = q.sandbox.write_file(temporary);
  if (!transfer) return transfer.error();
  ScannedStream scan(q.scanner);
  Sha256 digest;
  std::uint64_t written = 0;
  std::optional<Error> failed;
  for (bool end = false; !end && !failed && !scan.blocked();) {
    auto piece = body.read();
    if (!piece) {
      failed = Error::make("client_gone", "the upload did not complete: " + piece.error().message);
      break;
    }
    end = piece->empty();
    const std::string out = scan.pass(*piece, end);
    if (!write_to_pipe(transfer->pipe.get(), out)) break;
    digest.update(out);
    written += out.size();
  }
  transfer->pipe.reset();  // EOF: the copier ends
  if (auto copier = copier_error(q.sandbox, transfer->id, path); copier && !failed) failed = copier;
  if (scan.blocked())
    failed = Error::make("dlp_blocked", "'" + path + "': the upload holds data the DLP policy blocks");
  if (!failed)
    if (auto moved = q.sandbox.move_file(temporary, path); !moved) failed = moved.error();
  if (failed) (void)q.sandbox.remove_file(temporary);
  audit::SessionFileRecord record{path, failed ? failed->code : "ok", written, failed ? "" : digest.hex(),
                                  scan.redactions()};
  if (auto recorded = q.sessions.record_event(q.session, "file_written", [&](auto& r) { r.file = record; });
      !recorded && !failed)
    failed = recorded.error();
  if (failed) return *failed;
  return nlohmann::json{{"path", path}, {"type", "file"}, {"size", written}, {"sha256", record.sha256},
                        {"redactions", redactions_json(scan.redactions())}};
}

// One listing record: "<type> <size> <mtime> <name>".
std::optional<nlohmann::json> listing_entry(std::string_view record) {
  auto field = [&](std::string_view& out) {
    const auto space = record.find(' ');
    if (space == std::string_view::npos) return false;
    out = record.substr(0, space);
    record.remove_prefix(space + 1);
    return true;
  };
  std::string_view type, size, mtime;
  if (!field(type) || !field(size) || !field(mtime) || type.size() != 1) return std::nullopt;
  std::uint64_t bytes = 0, seconds = 0;
  std::from_chars(size.data(), size.data() + size.size(), bytes);
  std::from_chars(mtime.data(), mtime.data() + mtime.size(), seconds);
  static constexpr std::pair<char, const char*> kTypes[] = {{'f', "file"}, {'d', "directory"}, {'l', "symlink"}};
  std::string kind = "other";
  for (const auto& [letter, name] : kTypes)
    if (type[0] == letter) kind = name;
  return nlohmann::json{{"name", std::string(record)}, {"type", kind}, {"size", bytes}, {"modified", seconds}};
}

Result<nlohmann::json> listing(const FilesRequest& q, const std::string& path, sandbox::FileTransfer& transfer) {
  std::string records;
  char buf[65536];
  bool truncated = false;
  for (ssize_t n; (n = ::read(transfer.pipe.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    records.append(buf, static_cast<std::size_t>(n));
    if (records.size() > kMaxListingBytes) {
      truncated = true;
      (void)q.sandbox.signal(transfer.id, SIGKILL);
      break;
    }
  }
  transfer.pipe.reset();
  if (auto failed = copier_error(q.sandbox, transfer.id, path); failed && !truncated) return *failed;
  auto entries = nlohmann::json::array();
  for (std::size_t start = 0; start < records.size();) {
    const auto nul = records.find('\0', start);
    if (nul == std::string::npos) break;  // cut short
    if (auto entry = listing_entry(std::string_view(records).substr(start, nul - start))) {
      (*entry)["name"] = without_credentials((*entry)["name"].get<std::string>(), q.credentials);
      entries.push_back(*entry);
    }
    start = nul + 1;
  }
  nlohmann::json answer = {{"path", path}, {"type", "directory"}, {"entries", entries}};
  if (truncated) answer["truncated"] = true;
  return answer;
}

// Where a download's bytes go as DLP passes them: an HTTP answer, or a bounded string.
class DownloadSink {
 public:
  virtual ~DownloadSink() = default;
  // Takes the next bytes; an error stops the download (and is its outcome).
  virtual std::optional<Error> send(std::string text) = 0;
  // The end: nothing failed, or why it stopped.
  virtual void finish(const std::optional<Error>& failed, std::size_t redactions) = 0;
};

// A download: the copier's bytes through DLP to `sink`, then its file_read record.
class Download {
 public:
  Download(const FilesRequest& q, std::string path, ScannedStream scan)
      : q_(q), path_(std::move(path)), scan_(std::move(scan)) {}

  void run(sandbox::FileTransfer& transfer, DownloadSink& sink) {
    char buf[65536];
    std::optional<Error> stopped;
    for (bool end = false; !end && !scan_.blocked() && !stopped;) {
      ssize_t n = ::read(transfer.pipe.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      end = n <= 0;
      std::string text = scan_.pass(std::string_view(buf, end ? 0 : static_cast<std::size_t>(n)), end);
      if (text.empty()) continue;
      digest_.update(text);
      sent_ += text.size();
      stopped = sink.send(std::move(text));
    }
    if (scan_.blocked() || stopped) (void)q_.sandbox.signal(transfer.id, SIGKILL);
    transfer.pipe.reset();
    std::optional<Error> failed = copier_error(q_.sandbox, transfer.id, path_);
    if (scan_.blocked()) failed = Error::make("dlp_blocked", "'" + path_ + "' holds data the DLP policy blocks");
    else if (stopped) failed = stopped;
    audit::SessionFileRecord record{path_, failed ? failed->code : "ok", sent_, digest_.hex(), scan_.redactions()};
    auto recorded = q_.sessions.record_event(q_.session, "file_read", [&](auto& r) { r.file = record; });
    if (!failed && !recorded) failed = recorded.error();
    sink.finish(failed, scan_.redactions().size());
  }
  const std::vector<std::string>& redactions() const { return scan_.redactions(); }

 private:
  const FilesRequest& q_;
  std::string path_;
  ScannedStream scan_;
  Sha256 digest_;
  std::uint64_t sent_ = 0;
};

// The HTTP answer of a download: whole when it is small, streamed (chunked) once it is not. A
// block found after streaming began cuts the answer short.
class HttpDownload final : public DownloadSink {
 public:
  explicit HttpDownload(const std::function<void(HttpResponse)>& reply) : reply_(reply) {}
  std::optional<Error> send(std::string text) override {
    if (!body_) {
      whole_ += text;
      if (whole_.size() <= kWholeAnswerBytes) return std::nullopt;
      body_ = std::make_shared<DeferredBody>();
      reply_(DeferredBody::response(body_, "application/octet-stream"));
      text = std::exchange(whole_, std::string());
    }
    if (body_->write(std::move(text)) && body_->wait_below(kQueuedDownloadBytes, kSlowClient)) return std::nullopt;
    return Error::make("client_gone", "the client left during the download");
  }
  void finish(const std::optional<Error>& failed, std::size_t redactions) override {
    if (body_) return failed ? body_->abort() : body_->finish();
    if (failed) return reply_(session_error_response(*failed));
    HttpResponse resp;
    resp.content_type = "application/octet-stream";
    resp.body = std::move(whole_);
    resp.headers.emplace_back("Airlock-Redactions", std::to_string(redactions));
    reply_(std::move(resp));
  }

 private:
  const std::function<void(HttpResponse)>& reply_;
  std::string whole_;                  // until it outgrows kWholeAnswerBytes
  std::shared_ptr<DeferredBody> body_;  // then: streamed
};

// A download kept whole up to `max` bytes; past them it stops (file_too_large).
class BoundedDownload final : public DownloadSink {
 public:
  BoundedDownload(std::string path, std::size_t max) : path_(std::move(path)), max_(max) {}
  std::optional<Error> send(std::string text) override {
    if (bytes_.size() + text.size() > max_)
      return Error::make("file_too_large", "'" + path_ + "' is larger than " + std::to_string(max_) +
                                               " bytes, the most read whole here: read a part of it with an exec "
                                               "(head -c, tail -c, sed -n)");
    bytes_ += text;
    return std::nullopt;
  }
  void finish(const std::optional<Error>& failed, std::size_t) override { failed_ = failed; }
  std::string& bytes() { return bytes_; }
  const std::optional<Error>& failed() const { return failed_; }

 private:
  std::string path_;
  std::size_t max_;
  std::string bytes_;
  std::optional<Error> failed_;
};

// GET's start: a directory's listing, or nullopt once the file has gone through `sink`.
Result<std::optional<nlohmann::json>> download(const FilesRequest& q, const std::string& path, DownloadSink& sink,
                                               std::vector<std::string>* redactions = nullptr) {
  ScannedStream scan(q.scanner);
  if (!scan.credentials(q.credentials))  // no download without its redaction
    return Error::make("credential_unavailable",
                       "'" + path + "': the session's credentials could not be kept out of the download");
  auto transfer = q.sandbox.read_file(path);
  if (!transfer) return transfer.error();
  if (transfer->directory) {
    auto listed = listing(q, path, *transfer);
    if (!listed) return listed.error();
    return std::optional<nlohmann::json>(std::move(*listed));
  }
  Download run(q, path, std::move(scan));
  run.run(*transfer, sink);
  if (redactions) *redactions = run.redactions();
  return std::optional<nlohmann::json>();
}

FilesRequest files_request(SessionService& sessions, LiveSession& session, const Generation& generation) {
  return FilesRequest{sessions, session, *session.sandbox, scanner_of(generation),
                      session.credentials ? session.credentials->redaction() : SessionCredentials::Redaction{}};
}

HttpResponse answer_of(const Result<nlohmann::json>& done) {
  return done ? json_response(200, *done) : session_error_response(done.error());
}

Result<nlohmann::json> remove(const FilesRequest& q, const std::string& path) {
  auto removed = q.sandbox.remove_file(path);
  audit::SessionFileRecord record{path, removed ? "ok" : removed.error().code, 0, "", {}};
  auto recorded = q.sessions.record_event(q.session, "file_removed", [&](auto& r) { r.file = record; });
  if (!removed) return removed.error();
  if (!recorded) return recorded.error();
  return nlohmann::json{{"path", path}, {"deleted", true}};
}

Result<nlohmann::json> make_directory(const FilesRequest& q, const std::string& path) {
  auto made = q.sandbox.make_directory(path);
  if (!made) return made.error();
  return nlohmann::json{{"path", path}, {"type", "directory"}, {"size", 0}, {"redactions", nlohmann::json::array()}};
}

}  // namespace

bool is_file_upload(std::string_view method, std::string_view target) {
  if (method != "PUT") return false;
  std::size_t segment = 0, pos = 0;
  static constexpr std::string_view kExpected[] = {"v1", "sessions", "", "files"};
  while (segment < 4) {
    while (pos < target.size() && target[pos] == '/') ++pos;
    const auto next = std::min(target.find_first_of("/?", pos), target.size());
    if (next == pos) return false;
    const std::string_view part = target.substr(pos, next - pos);
    if (!kExpected[segment].empty() && part != kExpected[segment]) return false;
    ++segment;
    pos = next;
  }
  return pos < target.size() && target[pos] == '/';
}

Result<FileTarget> file_target(std::string_view target) {
  target = target.substr(0, target.find('?'));
  std::size_t pos = 0;
  for (int segment = 0; segment < 4; ++segment) {  // v1, sessions, the id, files
    while (pos < target.size() && target[pos] == '/') ++pos;
    pos = std::min(target.find('/', pos), target.size());
  }
  if (pos < target.size()) ++pos;  // the '/' after files
  auto decoded = percent_decode(target.substr(pos));
  if (!decoded) return Error::make("invalid_path", "the path has a '%' that is not followed by two hex digits");
  return workspace_target(*decoded);
}

Result<FileTarget> workspace_target(const std::string& path) {
  auto normalized = sandbox::workspace_path(path);
  if (!normalized) return normalized.error();
  return FileTarget{*normalized, !path.empty() && path.back() == '/'};
}

void serve_files(SessionService& sessions, std::shared_ptr<LiveSession> session,
                 std::shared_ptr<const Generation> generation, const HttpRequest& r,
                 const std::function<void(HttpResponse)>& reply) {
  auto target = file_target(r.target);
  if (!target) return reply(session_error_response(target.error()));
  Busy busy(*session);
  if (busy.refused()) return reply(session_error_response(*busy.refused()));
  const FilesRequest q = files_request(sessions, *session, *generation);
  if (r.method == "GET" || r.method == "HEAD") {
    HttpDownload sink(reply);
    auto started = download(q, target->path, sink);
    if (!started) return reply(session_error_response(started.error()));
    if (*started) reply(json_response(200, **started));  // a directory
    return;
  }
  if (r.method == "DELETE") return reply(answer_of(remove(q, target->path)));
  if (r.method != "PUT") return reply(error_response(405, "method_not_allowed", "use GET, PUT or DELETE"));
  auto body = r.body_reader ? r.body_reader : string_body_reader(r.body);
  if (!target->directory) return reply(answer_of(upload(q, target->path, *body)));
  reply(answer_of(make_directory(q, target->path)));
}

Result<nlohmann::json> write_session_file(SessionService& sessions, LiveSession& session, const Generation& generation,
                                          const FileTarget& target, std::string content) {
  Busy busy(session);
  if (busy.refused()) return *busy.refused();
  const FilesRequest q = files_request(sessions, session, generation);
  if (target.directory) return make_directory(q, target.path);
  return upload(q, target.path, *string_body_reader(std::move(content)));
}

Result<FileRead> read_session_file(SessionService& sessions, LiveSession& session, const Generation& generation,
                                   const std::string& path, std::size_t max_bytes) {
  Busy busy(session);
  if (busy.refused()) return *busy.refused();
  const FilesRequest q = files_request(sessions, session, generation);
  BoundedDownload sink(path, max_bytes);
  FileRead read;
  auto started = download(q, path, sink, &read.redactions);
  if (!started) return started.error();
  if (*started) {
    read.listing = std::move(**started);
    return read;
  }
  if (sink.failed()) return *sink.failed();
  read.bytes = std::move(sink.bytes());
  return read;
}

}  // namespace airlock::server
