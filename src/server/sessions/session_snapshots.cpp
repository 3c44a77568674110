#include "server/sessions/session_snapshots.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/digest.hpp"
#include "common/utc_time.hpp"
#include "common/json_limits.hpp"
#include "common/no_sigpipe.hpp"
#include "common/units.hpp"
#include "server/sessions/sessions_api.hpp"

namespace airlock::server {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kKeptStderrBytes = 4096;
constexpr milliseconds kTarTimeout{10 * 60 * 1000};

bool owned_by(const SnapshotRow& row, const pipeline::Caller& caller) {
  SessionOwner owner;
  owner.principal = row.principal;
  owner.issuer = row.issuer;
  owner.sub = row.sub;
  return owner.is(caller);
}

// A command in the session whose stdin is fed from a file and whose stdout goes to one: tar
// packing or unpacking the work dir.
struct Piped {
  int in = -1;   // a file to feed to its stdin (-1: none)
  int out = -1;  // where its stdout goes (-1: dropped)
  std::uint64_t max_out = 0;  // more than this on stdout stops it (over_limit)
  Sha256* digest = nullptr;   // of its stdout
};

struct PipedEnd {
  std::optional<sandbox::ExecEnd> end;  // none: it did not end in time, or the session ended
  std::uint64_t out_bytes = 0;
  std::string err;  // the first 4 KiB of its stderr
  bool over_limit = false;
};

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Reads what `fd` has now; false at its end.
bool drain(int fd, const std::function<void(std::string_view)>& take) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) return false;
    take(std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

// Feeds the file to the exec's stdin as far as the pipe takes it now; closes stdin at the file's
// end or when the exec stops reading.
void feed(int in, UniqueFd& stdin_w, std::string& pending) {
  while (stdin_w) {
    if (pending.empty()) {
      char buf[65536];
      const ssize_t n = ::read(in, buf, sizeof buf);
      if (n <= 0) return stdin_w.reset();
      pending.assign(buf, static_cast<std::size_t>(n));
    }
    const ssize_t n = write_without_sigpipe(stdin_w.get(), pending.data(), pending.size());
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) return stdin_w.reset();
    pending.erase(0, static_cast<std::size_t>(n));
  }
}

Result<PipedEnd> run_piped(backend::Session& sandbox, std::vector<std::string> argv, const Piped& p) {
  auto started = sandbox.exec({std::move(argv), {}, ""});
  if (!started) return started.error();
  PipedEnd result;
  UniqueFd out = std::move(started->stdout_r), err = std::move(started->stderr_r);
  set_nonblocking(out.get());
  set_nonblocking(err.get());
  if (p.in < 0) started->stdin_w.reset();
  else set_nonblocking(started->stdin_w.get());
  std::string pending;
  const auto deadline = Clock::now() + kTarTimeout;
  bool stopped = false;
  auto take_out = [&](std::string_view bytes) {
    result.out_bytes += bytes.size();
    if (result.out_bytes > p.max_out) result.over_limit = true;
    if (result.over_limit || p.out < 0) return;
    for (std::string_view rest = bytes; !rest.empty();) {
      const ssize_t n = ::write(p.out, rest.data(), rest.size());
      if (n <= 0 && errno == EINTR) continue;
      if (n <= 0) {
        result.over_limit = true;  // the host's disk: stop as for too large
        return;
      }
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    if (p.digest) p.digest->update(bytes);
  };
  auto take_err = [&](std::string_view bytes) {
    result.err.append(bytes.substr(0, kKeptStderrBytes - std::min(kKeptStderrBytes, result.err.size())));
  };
  while ((out || err) && !sandbox.ended()) {
    pollfd fds[3];
    nfds_t n = 0;
    if (out) fds[n++] = {out.get(), POLLIN, 0};
    if (err) fds[n++] = {err.get(), POLLIN, 0};
    if (started->stdin_w) fds[n++] = {started->stdin_w.get(), POLLOUT, 0};
    ::poll(fds, n, 100);
    if (out && !drain(out.get(), take_out)) out.reset();
    if (err && !drain(err.get(), take_err)) err.reset();
    if (started->stdin_w) feed(p.in, started->stdin_w, pending);
    if ((result.over_limit || Clock::now() > deadline) && !stopped) {
      (void)sandbox.signal(started->id, SIGKILL);
      stopped = true;
    }
  }
  result.end = sandbox.wait(started->id, milliseconds(10'000));
  return result;
}

// The session's checkpoint into `dir`, then the image's digest.
Result<std::string> checkpoint_into(backend::Session& sandbox, const std::string& dir) {
  if (auto written = sandbox.checkpoint(dir); !written) return written.error();
  auto digest = image_digest(dir);
  if (!digest) return Error::make("snapshot_failed", "the checkpoint's image: " + digest.error().message);
  return digest;
}

std::string tar_failure(const PipedEnd& r) {
  if (!r.end) return "tar did not finish";
  std::string why = r.end->exited ? "tar exited " + std::to_string(r.end->code) : "tar was killed by signal " + std::to_string(r.end->code);
  return r.err.empty() ? why : why + ": " + r.err;
}

struct SnapshotAsk {
  milliseconds retention = std::chrono::duration_cast<milliseconds>(kDefaultSnapshotRetention);
  bool memory = false;  // the session's memory and processes too
};

Result<SnapshotAsk> snapshot_ask_of(const std::string& body) {
  SnapshotAsk ask;
  if (body.empty()) return ask;
  auto parsed = parse_json_bounded(body, 4);
  if (!parsed || !parsed->is_object()) return Error::make("invalid_input", "the body must be a JSON object: {\"retention\": \"7d\"}");
  for (const auto& [key, value] : parsed->items()) {
    if (key == "memory" && value.is_boolean()) {
      ask.memory = value.get<bool>();
      continue;
    }
    if (key != "retention" || !value.is_string())
      return Error::make("invalid_input", "'" + key + "': expected retention, a duration (\"7d\"), or memory, a boolean");
    auto d = parse_duration(value.get<std::string>());
    if (!d) return Error::make("invalid_input", "retention: a duration (\"7d\")");
    ask.retention = std::chrono::duration_cast<milliseconds>(*d);
  }
  if (ask.retention < std::chrono::minutes(1) || ask.retention > kMaxSnapshotRetention)
    return Error::make("invalid_input", "retention: from 1m to 30d");
  return ask;
}

}  // namespace

std::optional<SnapshotRow> find_snapshot(SnapshotStore& store, const std::string& id, const pipeline::Caller& caller,
                                         bool manages) {
  auto row = store.find(id);
  if (!row || row->expires_ms <= unix_ms_now() || (!manages && !owned_by(*row, caller))) return std::nullopt;
  return row;
}

Result<SnapshotRow> take_snapshot(SessionService& sessions, SnapshotStore& store, LiveSession& session,
                                  std::chrono::milliseconds retention, bool memory) {
  const std::size_t owned = store.count_owned(session.owner.principal, session.owner.issuer, session.owner.sub);
  if (owned >= kMaxSnapshotsPerOwner)
    return Error::make("quota_exceeded:snapshots", "the session's owner keeps " + std::to_string(owned) +
                                                       " snapshots, the most there may be; delete one first");
  if (auto refused = session.begin_exec(LiveSession::Use::transfer)) return *refused;
  struct Done {
    LiveSession& s;
    ~Done() { s.end_exec(LiveSession::Use::transfer); }
  } done{session};
  SnapshotRow row;
  row.id = sessions.new_id()();
  auto pending = store.begin(row.id, memory);
  if (!pending) return pending.error();
  if (memory) {  // first: the archive below is then of the files the restored processes will find
    auto image = checkpoint_into(*session.sandbox, pending->image_dir);
    if (!image) {
      store.discard(*pending);
      return image.error();
    }
    row.memory = true;
    row.image_sha256 = *image;
  }
  Sha256 digest;
  // The workspace is at most its disk; an archive far past that (sparse files) is refused.
  const Piped piped{-1, pending->fd.get(), 2 * session.disk_bytes + (16u << 20), &digest};
  auto packed = run_piped(*session.sandbox, {"tar", "--create", "--file=-", "--directory=/work", "."}, piped);
  // tar's 1: a file changed while it was read (the session runs on); the archive is whole.
  const bool whole = packed && packed->end && packed->end->exited && packed->end->code <= 1 && !packed->over_limit;
  if (!whole) {
    store.discard(*pending);
    if (!packed) return packed.error();
    if (packed->over_limit)
      return Error::make("snapshot_too_large", "the workspace's archive passed " + std::to_string(piped.max_out) + " bytes");
    return Error::make("snapshot_failed", "archiving /work: " + tar_failure(*packed));
  }
  row.session_id = session.id;
  row.template_name = session.template_name;
  row.principal = session.owner.principal;
  row.issuer = session.owner.issuer;
  row.sub = session.owner.sub;
  row.created_ms = unix_ms_now();
  row.expires_ms = row.created_ms + retention.count();
  row.bytes = packed->out_bytes;
  row.sha256 = digest.hex();
  if (auto kept = store.keep(*pending, row); !kept) {
    store.discard(*pending);
    return kept.error();
  }
  auto recorded = sessions.record_event(session, "snapshotted", [&](audit::SessionRecord& r) {
    r.snapshot = audit::SessionSnapshotRecord{row.id, row.bytes, row.sha256};
  });
  if (!recorded) {  // no record, no snapshot
    (void)store.remove(row.id);
    return recorded.error();
  }
  return row;
}

Result<UniqueFd> verified_archive(SnapshotStore& store, const SnapshotRow& row) {
  UniqueFd archive(::open(store.file_of(row.id).c_str(), O_RDONLY | O_CLOEXEC));
  if (!archive) return Error::make("snapshot_corrupt", "snapshot " + row.id + ": its archive is gone: " + std::strerror(errno));
  Sha256 check;
  char buf[65536];
  for (ssize_t n; (n = ::read(archive.get(), buf, sizeof buf)) > 0;) check.update(std::string_view(buf, static_cast<std::size_t>(n)));
  if (check.hex() != row.sha256)
    return Error::make("snapshot_corrupt", "snapshot " + row.id + ": its archive does not match its SHA-256");
  ::lseek(archive.get(), 0, SEEK_SET);
  return archive;
}

Result<backend::MemoryImage> verified_memory_image(SnapshotStore& store, const SnapshotRow& row) {
  if (!row.memory) return Error::make("invalid_input", "snapshot " + row.id + " has no memory");
  if (auto archive = verified_archive(store, row); !archive) return archive.error();
  const std::string image = store.image_of(row.id);
  auto digest = image_digest(image);
  if (!digest) return Error::make("snapshot_corrupt", "snapshot " + row.id + ": " + digest.error().message);
  if (*digest != row.image_sha256)
    return Error::make("snapshot_corrupt", "snapshot " + row.id + ": its memory image does not match its SHA-256");
  return backend::MemoryImage{image, store.file_of(row.id)};
}

Status restore_snapshot(SnapshotStore& store, const SnapshotRow& row, backend::Session& sandbox) {
  auto archive = verified_archive(store, row);
  if (!archive) return archive.error();
  const Piped piped{archive->get(), -1, 0, nullptr};
  auto unpacked = run_piped(sandbox, {"tar", "--extract", "--file=-", "--directory=/work", "--no-same-owner"}, piped);
  if (!unpacked) return unpacked.error();
  if (!unpacked->end || !unpacked->end->exited || unpacked->end->code != 0)
    return Error::make("snapshot_failed", "unpacking snapshot " + row.id + " into /work: " + tar_failure(*unpacked));
  return {};
}

bool is_snapshots_path(const std::vector<std::string>& parts) {
  return parts.size() >= 2 && parts.size() <= 3 && parts[0] == "v1" && parts[1] == "snapshots";
}

void handle_snapshots(SnapshotStore& store, const pipeline::Caller& caller, bool manages, const HttpRequest& r,
                      const std::vector<std::string>& parts, const std::function<void(HttpResponse)>& reply) {
  const bool get = r.method == "GET" || r.method == "HEAD";
  if (parts.size() == 2) {
    if (!get) return reply(error_response(405, "method_not_allowed", "use GET"));
    auto list = nlohmann::json::array();
    for (const auto& row : store.all())
      if (row.expires_ms > unix_ms_now() && (manages || owned_by(row, caller))) list.push_back(row.to_json());
    return reply(json_response(200, {{"snapshots", list}}));
  }
  auto row = find_snapshot(store, parts[2], caller, manages);
  if (!row) return reply(error_response(404, "not_found", "no snapshot " + parts[2] + " of yours"));
  if (get) return reply(json_response(200, row->to_json()));
  if (r.method != "DELETE") return reply(error_response(405, "method_not_allowed", "use GET or DELETE"));
  if (auto removed = store.remove(row->id); !removed) return reply(session_error_response(removed.error()));
  reply(json_response(200, {{"id", row->id}, {"deleted", true}}));
}

HttpResponse snapshot_response(SessionService& sessions, LiveSession& session, const std::string& body) {
  if (!sessions.snapshots()) return error_response(501, "not_implemented", "this daemon keeps no snapshots");
  auto ask = snapshot_ask_of(body);
  if (!ask) return session_error_response(ask.error());
  if (ask->memory) {  // refused with the backend's reason: never the files alone in its place
    if (auto can = session.sandbox->can_snapshot_memory(); !can) return session_error_response(can.error());
    if (session.credentials)
      return session_error_response(Error::make(
          "memory_snapshot_unsupported",
          "the session's template has credentials: its processes' memory holds them, and a snapshot with memory "
          "would keep them on disk past their lease and hand them to every session restored from it"));
  }
  auto taken = take_snapshot(sessions, *sessions.snapshots(), session, ask->retention, ask->memory);
  if (!taken) return session_error_response(taken.error());
  return json_response(201, taken->to_json());
}

}  // namespace airlock::server
