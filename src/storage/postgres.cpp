#include "storage/postgres.hpp"

#include <poll.h>

namespace airlock::storage::pg {
namespace {

std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

}  // namespace

bool is_connection_failure(const std::string& sqlstate) {
  return sqlstate.rfind("08", 0) == 0 || sqlstate.rfind("57P", 0) == 0;
}

std::string redact(std::string text, const std::vector<std::string>& secrets) {
  for (const auto& secret : secrets)
    if (!secret.empty()) text = replace_all(std::move(text), secret, "[redacted]");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::optional<std::string> url_password(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  PQfreemem(error);
  if (options == nullptr) return std::nullopt;
  std::string password;
  for (auto* o = options; o->keyword != nullptr; ++o)
    if (std::string_view(o->keyword) == "password" && o->val != nullptr) password = o->val;
  PQconninfoFree(options);
  return password;
}

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1)
    parts.push_back(text.substr(start, comma - start));
  parts.push_back(text.substr(start));
  return parts;
}

}  // namespace

std::optional<std::vector<TcpHost>> tcp_hosts(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  PQfreemem(error);
  if (options == nullptr) return std::nullopt;
  std::string host, hostaddr, port;
  for (auto* o = options; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string_view key(o->keyword);
    if (key == "host") host = o->val;
    if (key == "hostaddr") hostaddr = o->val;
    if (key == "port") port = o->val;
  }
  PQconninfoFree(options);
  // libpq connects to hostaddr when given (host then only names it for TLS); as many ports as
  // hosts, or one for all.
  const auto hosts = split_commas(hostaddr.empty() ? host : hostaddr);
  const auto ports = port.empty() ? std::vector<std::string>{} : split_commas(port);
  std::vector<TcpHost> endpoints;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (hosts[i].empty() || hosts[i][0] == '/' || hosts[i][0] == '@') continue;  // a Unix socket
    TcpHost endpoint{hosts[i], 5432};
    const std::string& p = ports.size() == hosts.size() ? ports[i] : (ports.empty() ? "" : ports[0]);
    if (!p.empty()) {
      unsigned long number = 0;
      try {
        number = std::stoul(p);
      } catch (const std::exception&) {
        return std::nullopt;
      }
      if (number == 0 || number > 65535) return std::nullopt;
      endpoint.port = static_cast<std::uint16_t>(number);
    }
    endpoints.push_back(std::move(endpoint));
  }
  return endpoints;
}

Result<ConnPtr> connect(const std::string& url, const ConnectOptions& options) {
  const std::string timeout = std::to_string(options.connect_timeout_seconds);
  // expand_dbname: the first dbname is the URL; later keywords win over what it says.
  std::vector<const char*> keys = {"dbname", "connect_timeout", "application_name"};
  std::vector<const char*> values = {url.c_str(), timeout.c_str(), "airlock"};
  for (const auto& [key, value] : options.keywords) {
    keys.push_back(key.c_str());
    values.push_back(value.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  ConnPtr conn(PQconnectdbParams(keys.data(), values.data(), 1), &PQfinish);
  if (conn == nullptr) return Error::make("storage_unavailable", "out of memory");
  if (PQstatus(conn.get()) != CONNECTION_OK)
    return Error::make("storage_unavailable", redact(PQerrorMessage(conn.get()), options.secrets));
  // libpq prints the server's notices ("relation ... already exists, skipping") on stderr;
  // what matters comes back as errors.
  PQsetNoticeProcessor(conn.get(), [](void*, const char*) {}, nullptr);
  return conn;
}

Reply reply_from(PGconn* conn, PGresult* result, const std::vector<std::string>& secrets) {
  Reply reply;
  reply.result.reset(result);
  auto status = PQresultStatus(result);
  if (result != nullptr && (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK ||
                            status == PGRES_PIPELINE_SYNC))
    return reply;
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  reply.sqlstate = state != nullptr ? state : "08006";  // no result: the connection failed
  reply.message = redact(result != nullptr && *PQresultErrorMessage(result) != '\0'
                             ? PQresultErrorMessage(result)
                             : PQerrorMessage(conn),
                         secrets);
  if (reply.message.empty()) reply.message = "the connection to the server was lost";
  return reply;
}

Reply run(PGconn* conn, const std::string& sql, const std::vector<std::string>& secrets) {
  return reply_from(conn, PQexec(conn, sql.c_str()), secrets);
}

bool reusable(PGconn* conn) {
  if (PQstatus(conn) != CONNECTION_OK || PQtransactionStatus(conn) != PQTRANS_IDLE) return false;
  pollfd p{PQsocket(conn), POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 0;
}

}  // namespace airlock::storage::pg
