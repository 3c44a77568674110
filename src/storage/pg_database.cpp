#include "storage/pg_database.hpp"

#include <fstream>
#include <sstream>

namespace airlock::storage::pg {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kReconnectEvery = std::chrono::seconds(1);
constexpr int kTransactionAttempts = 3;

bool is_retryable(const std::string& sqlstate) {
  return sqlstate == "40001" || sqlstate == "40P01";  // serialization failure, deadlock
}

}  // namespace

Result<std::string> read_password_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::make("storage", "cannot read the password file " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string password = buffer.str();
  while (!password.empty() && (password.back() == '\n' || password.back() == '\r'))
    password.pop_back();
  if (password.empty()) return Error::make("storage", "the password file " + path + " is empty");
  return password;
}

Database::Database(Location location, std::string password, std::string name)
    : location_(std::move(location)), password_(std::move(password)), name_(std::move(name)) {
  secrets_ = {location_.url, password_};
  if (auto in_url = url_password(location_.url)) secrets_.push_back(*in_url);
}

Result<std::unique_ptr<Database>> Database::open(const Location& location, std::string name) {
  std::string password;
  if (!location.password_file.empty()) {
    auto read = read_password_file(location.password_file);
    if (!read) return Error::make(read.error().code, name + ": " + read.error().message);
    password = std::move(*read);
  }
  std::unique_ptr<Database> db(new Database(location, std::move(password), std::move(name)));
  std::lock_guard lock(db->mu_);
  if (auto s = db->connect_if_needed(); !s) return s.error();
  return db;
}

Status Database::connect_if_needed() {
  if (conn_) return {};
  const auto now = Clock::now();
  if (last_attempt_ != Clock::time_point{} && now - last_attempt_ < kReconnectEvery)
    return Error::make("storage_unavailable",
                       name_ + ": not connected (the server went away; retrying once a second)");
  last_attempt_ = now;
  ConnectOptions options;
  options.secrets = secrets_;
  if (!password_.empty()) options.keywords.emplace_back("password", password_);
  auto conn = connect(location_.url, options);
  if (!conn) return Error::make("storage_unavailable", name_ + ": " + conn.error().message);
  // What a store acknowledged must survive a server crash.
  if (Reply set = pg::run(conn->get(), "SET synchronous_commit = on", secrets_); !set.ok())
    return failure("set synchronous_commit", set);
  conn_ = std::move(*conn);
  return {};
}

Error Database::failure(const std::string& step, const Reply& reply) {
  last_sqlstate_ = reply.sqlstate;
  const bool lost = is_connection_failure(reply.sqlstate) ||
                    (conn_ && PQstatus(conn_.get()) != CONNECTION_OK);
  if (lost) conn_.reset();  // the next use reconnects
  return Error::make(lost ? "storage_unavailable" : "storage",
                     name_ + ": " + step + ": " + reply.message);
}

Result<Reply> Database::run(const std::string& step, const std::string& sql, const Params& params) {
  last_sqlstate_.clear();
  if (auto s = connect_if_needed(); !s) return s.error();
  PGresult* result;
  if (params.empty()) {
    result = PQexec(conn_.get(), sql.c_str());  // may hold several statements (a schema)
  } else {
    // Parameters go as C strings, and PostgreSQL text cannot hold a NUL: a value with one
    // would be cut short without a word. Refused instead (fail closed).
    for (std::size_t i = 0; i < params.size(); ++i)
      if (params[i] && params[i]->find('\0') != std::string::npos)
        return Error::make("storage", name_ + ": " + step + ": parameter $" + std::to_string(i + 1) +
                                          " holds a NUL byte, which PostgreSQL text cannot store");
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    result = PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(params.size()), nullptr,
                          values.data(), nullptr, nullptr, 0);
  }
  Reply reply = reply_from(conn_.get(), result, secrets_);
  if (!reply.ok()) return failure(step, reply);
  return reply;
}

Result<Reply> Database::exec(const std::string& step, const std::string& sql, const Params& params) {
  std::lock_guard lock(mu_);
  return run(step, sql, params);
}

Result<Reply> Database::Tx::exec(const std::string& step, const std::string& sql,
                                 const Params& params) {
  return db_.run(step, sql, params);
}

Status Database::transaction(const std::string& step, const std::function<Status(Tx&)>& body) {
  std::lock_guard lock(mu_);
  for (int attempt = 1;; ++attempt) {
    if (auto begun = run(step + " (begin)", "BEGIN", {}); !begun) return begun.error();
    Tx tx(*this);
    Status done = body(tx);
    if (done) {
      auto committed = run(step + " (commit)", "COMMIT", {});
      if (committed) return {};
      done = committed.error();
    }
    if (conn_) (void)pg::run(conn_.get(), "ROLLBACK", secrets_);
    if (attempt >= kTransactionAttempts || !is_retryable(last_sqlstate_)) return done;
  }
}

}  // namespace airlock::storage::pg
