// The MCP server's state between messages: the sessions that initialize opened (2025-06-18,
// 2025-11-25), each bound to the principal that opened it and bounded in number, with the
// Airlock sessions it created (its workspaces, which end with it), and the tools/call requests
// in flight, which notifications/cancelled finds by their request id.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/invocation_control.hpp"
#include "server/mcp_server/mcp_session_book.hpp"
#include "server/sessions/session_service.hpp"

namespace airlock::server {

// Sessions held at once: by one principal (the verified agent and user), and in all.
inline constexpr std::size_t kMaxMcpSessionsPerPrincipal = 256;
inline constexpr std::size_t kMaxMcpSessions = 4096;

// Who an MCP session belongs to: the verified agent and the user it acts for.
std::string mcp_principal(const pipeline::Caller& caller);

class McpSessions {
 public:
  // Told of each MCP session that ends (closed or evicted), with the Airlock sessions it
  // created, to end them and its notification stream; called outside the table's lock.
  using Ended = std::function<void(const std::string& id, std::vector<std::shared_ptr<LiveSession>>)>;
  explicit McpSessions(std::size_t capacity = kMaxMcpSessions,
                       std::size_t per_principal = kMaxMcpSessionsPerPrincipal)
      : capacity_(capacity), per_principal_(per_principal) {}
  void on_end(Ended end) { end_ = std::move(end); }  // before any session is opened
  // storage.postgres: sessions are also the shared book's (before any session is opened). Then
  // open fails when the book cannot record one; revision asks the book at each message (a
  // session another replica opened is adopted here, one closed elsewhere ends here too, one the
  // book cannot answer for is not found); close and eviction end it in the book.
  void share(std::shared_ptr<McpSessionBook> book) { book_ = std::move(book); }
  // A new session of `principal` under `revision`: its id (128 random bits, hex). A principal
  // holding `per_principal` sessions loses its own idle longest; when the table is full, the
  // session idle longest of the principals holding most goes. One principal never evicts another's sessions but from a
  // table it cannot fill alone.
  // `elicits_urls`: its client declared URL-mode elicitation (kept for elicits_urls()).
  Result<std::string> open(const std::string& principal, const std::string& revision, bool elicits_urls = false);
  // The revision of session `id` when `principal` owns it; nullopt for a session that does
  // not exist, has gone, or is another principal's (the caller cannot tell which).
  std::optional<std::string> revision(const std::string& id, const std::string& principal);
  // Whether session `id`'s client declared URL-mode elicitation (false for one not held here:
  // ask revision() first, which adopts a session another replica opened).
  bool elicits_urls(const std::string& id) const;
  // Ends session `id` of `principal`; false when there is none of theirs.
  bool close(const std::string& id, const std::string& principal);
  std::size_t size() const;

  // The default workspace of session `id` of `principal`: the first Airlock session it
  // created that has not ended. Null: none (or no such session of theirs).
  std::shared_ptr<LiveSession> workspace(const std::string& id, const std::string& principal);
  // Keeps `created` as made by session `id` (it ends with it), its default workspace when it
  // has none that runs. Returns the default workspace after; null when the MCP session is
  // gone (then nothing keeps `created`: the caller ends it).
  std::shared_ptr<LiveSession> add_workspace(const std::string& id, const std::string& principal,
                                             std::shared_ptr<LiveSession> created);

 private:
  struct Session {
    std::string principal, revision;
    bool elicits_urls = false;
    std::uint64_t last_used = 0;
    std::shared_ptr<LiveSession> workspace;                // its default
    std::vector<std::shared_ptr<LiveSession>> workspaces;  // every one it created, the default too
  };
  // Under mu_: drops the session idle longest of those whose principal `whose` names: its id
  // ("" when none), its workspaces in `ending`.
  std::string evict_oldest(const std::function<bool(const std::string&)>& whose,
                           std::vector<std::shared_ptr<LiveSession>>& ending);
  void ended(const std::string& id, std::vector<std::shared_ptr<LiveSession>> ending) const;
  // Under mu_: a new entry `id`, room made first (the evicted session's id, or "").
  std::string insert(const std::string& id, const std::string& principal, const McpSessionBook::Held& held,
                     std::vector<std::shared_ptr<LiveSession>>& ending);
  // The book's answer for `id` applied here: adopted when it holds it, ended here when not.
  std::optional<std::string> reconcile(const std::string& id, const std::string& principal);

  mutable std::mutex mu_;
  std::size_t capacity_, per_principal_;
  std::map<std::string, std::size_t> held_;  // sessions by principal
  std::uint64_t clock_ = 0;  // a counter, not time: only the order of use matters
  std::map<std::string, Session> sessions_;
  Ended end_;
  std::shared_ptr<McpSessionBook> book_;
};

// tools/call requests running now, by (channel, request id): a channel is a session, or the
// stdio connection.
class McpCallsInFlight {
 public:
  void add(const std::string& key, std::shared_ptr<pipeline::InvocationControl> control);
  void remove(const std::string& key);
  // Cancels the call; false when none runs under `key`.
  bool cancel(const std::string& key);
  static std::string key(const std::string& channel, const std::string& request_id);

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<pipeline::InvocationControl>> calls_;
};

}  // namespace airlock::server
