// The MCP sessions every replica shares (storage.postgres, docs/replicas.md): a session opened on
// one replica is used, and closed, through any other, so clients behind a load balancer keep
// their session (McpSessions asks it at each message). Sessions are kept under the SHA-256 of
// their id, with the SHA-256 of their principal: the table holds no handle a reader could use.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/result.hpp"
#include "storage/pg_database.hpp"

namespace airlock::server {

class McpSessionBook {
 public:
  // What a session was opened with: its revision, and whether its client declared URL-mode
  // elicitation (capabilities.elicitation.url), which a task waiting for a person uses.
  struct Held {
    std::string revision;
    bool elicits_urls = false;
  };
  virtual ~McpSessionBook() = default;
  virtual Status open(const std::string& id, const std::string& principal, const Held& held) = 0;
  // Session `id` when `principal` holds it (its last use touched); nullopt when there is none
  // of theirs; an error when the database cannot answer.
  virtual Result<std::optional<Held>> revision(const std::string& id, const std::string& principal) = 0;
  virtual Status close(const std::string& id) = 0;
};

// The book in the shared database (the table mcp_sessions). Sessions unused for `idle` are
// purged as others open.
Result<std::shared_ptr<McpSessionBook>> open_postgres_mcp_session_book(const storage::pg::Database::Location& location,
                                                                      std::chrono::hours idle = std::chrono::hours(24));

}  // namespace airlock::server
