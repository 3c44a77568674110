// libpq, the way Airlock uses it: a connection from a postgresql:// URL with extra keywords
// (a password read from a file, a timeout), statements whose errors carry their SQLSTATE, and
// messages that never show a secret (the URL, its password). Shared by the audit log's
// PostgreSQL store and the postgres credential provider.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.hpp"

namespace airlock::storage::pg {

using ConnPtr = std::unique_ptr<PGconn, decltype(&PQfinish)>;
using ResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

// What a statement returned: the result, or its SQLSTATE and (redacted) message.
struct Reply {
  ResultPtr result{nullptr, &PQclear};
  std::string sqlstate;  // "" when it succeeded
  std::string message;

  bool ok() const { return sqlstate.empty(); }
  int rows() const { return PQntuples(result.get()); }
  std::string value(int row, int column) const { return PQgetvalue(result.get(), row, column); }
  bool is_null(int row, int column) const { return PQgetisnull(result.get(), row, column) != 0; }
};

// SQLSTATE class 08 (connection exception), 57P (operator intervention: shutdown, crash) and
// the "08006" Reply uses when libpq returned no result at all: the server is not there.
bool is_connection_failure(const std::string& sqlstate);

// `text` with every secret replaced by "[redacted]" and trailing newlines removed.
std::string redact(std::string text, const std::vector<std::string>& secrets);

// The password of a libpq URL or connection string as libpq reads it (percent-decoded; ""
// when it has none). nullopt: not a connection string (libpq's reason is not used: it may
// quote the URL).
std::optional<std::string> url_password(const std::string& url);

// The TCP endpoints a libpq URL or connection string names (host or hostaddr, with their
// ports; 5432 by default), unresolved; Unix-socket directories are left out. nullopt: not a
// connection string.
struct TcpHost {
  std::string host;
  std::uint16_t port = 5432;
};
std::optional<std::vector<TcpHost>> tcp_hosts(const std::string& url);

struct ConnectOptions {
  // Keywords after the URL; a later one wins over the URL's ("password", "dbname", ...).
  std::vector<std::pair<std::string, std::string>> keywords;
  int connect_timeout_seconds = 5;  // libpq rounds anything below 2 up to 2
  std::vector<std::string> secrets;  // kept out of the error
};

// Connects (application_name "airlock"). Error code "storage_unavailable", the message
// libpq's, redacted.
Result<ConnPtr> connect(const std::string& url, const ConnectOptions& options);

// Runs `sql` (several statements separated by ';' run in order; the reply is the last one's).
Reply run(PGconn* conn, const std::string& sql, const std::vector<std::string>& secrets = {});

// A Reply from a result libpq handed back (nullptr: the connection failed).
Reply reply_from(PGconn* conn, PGresult* result, const std::vector<std::string>& secrets = {});

// Idle and healthy: no transaction open, nothing unread (a server that closes a connection
// first sends why, so a closed one is readable).
bool reusable(PGconn* conn);

}  // namespace airlock::storage::pg
