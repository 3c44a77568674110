// The console's pending OpenID sign-ins in the database every replica shares (storage.postgres):
// a row per login, keyed by the SHA-256 of its state; the nonce and the PKCE verifier sealed
// with the secret store's key (associated data naming the row and the column), the browser
// binding (a cookie's value) kept as its SHA-256. The rest (the provider's token endpoint, the
// client, the redirect URI) is the configuration's, not secret.

#include "common/digest.hpp"
#include "creds/sealing_key.hpp"
#include "server/console/console_oidc_logins.hpp"
#include "storage/pg_schema.hpp"
#include "storage/purge_throttle.hpp"

namespace airlock::server::console {
namespace {

namespace pg = storage::pg;

constexpr const char* kLoginsPgSchema = R"sql(
CREATE TABLE IF NOT EXISTS console_oidc_logins(
  state_sha256 text PRIMARY KEY, binding_sha256 text NOT NULL, nonce_sealed text NOT NULL,
  verifier_sealed text NOT NULL, token_endpoint text NOT NULL, client_id text NOT NULL,
  redirect_uri text NOT NULL, created_ms bigint NOT NULL);
CREATE INDEX IF NOT EXISTS console_oidc_logins_created ON console_oidc_logins (created_ms);
)sql";

const std::int64_t kLifetimeMs = std::chrono::duration_cast<std::chrono::milliseconds>(kOidcLoginLifetime).count();

std::string login_column(const std::string& key, const char* column) {
  return "console oidc login " + key + " " + column;
}

Error logins_failed(const std::string& what, const Error& e) {
  return Error::make(e.code, "the console's pending sign-ins (" + what + "): " + e.message);
}

class PgPendingLogins final : public PendingLogins {
 public:
  PgPendingLogins(std::unique_ptr<pg::Database> db, std::shared_ptr<const creds::SealingKey> key, WallMs now)
      : db_(std::move(db)), key_(std::move(key)), now_(std::move(now)) {}

  Status put(const std::string& state, const PendingLogin& login) override {
    const std::string key = sha256_hex(state);
    auto nonce = key_->seal_text(login_column(key, "nonce"), login.nonce);
    auto verifier = key_->seal_text(login_column(key, "verifier"), login.verifier);
    if (!nonce) return logins_failed("sealing a nonce", nonce.error());
    if (!verifier) return logins_failed("sealing a PKCE verifier", verifier.error());
    const auto now = now_();
    purge_now_and_then(now);
    auto room = db_->exec("making room for a sign-in",
                          "DELETE FROM console_oidc_logins WHERE state_sha256 IN (SELECT state_sha256 FROM "
                          "console_oidc_logins ORDER BY created_ms ASC LIMIT (SELECT greatest(count(*) - $1 + 1, 0) "
                          "FROM console_oidc_logins))",
                          {std::to_string(kMaxPendingLogins)});
    if (!room) return logins_failed("ending the oldest sign-in", room.error());
    auto done = db_->exec("recording a sign-in",
                          "INSERT INTO console_oidc_logins (state_sha256, binding_sha256, nonce_sealed, verifier_sealed,"
                          " token_endpoint, client_id, redirect_uri, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                          {key, sha256_hex(login.binding), *nonce, *verifier, login.token_endpoint, login.client_id,
                           login.redirect_uri, std::to_string(now)});
    if (!done) return logins_failed("starting a sign-in", done.error());
    return {};
  }

  Result<PendingLogin> take(const std::string& state, const std::string& binding) override {
    const std::string key = sha256_hex(state);
    auto rows = db_->exec("looking a sign-in up",
                          "SELECT binding_sha256, nonce_sealed, verifier_sealed, token_endpoint, client_id, redirect_uri,"
                          " created_ms FROM console_oidc_logins WHERE state_sha256 = $1",
                          {key});
    if (!rows) return logins_failed("looking a sign-in up", rows.error());
    if (rows->rows() != 1) return unknown_login();
    // Another browser's callback does not end the login: its own browser may still complete it.
    if (binding.empty() || !constant_time_equal(sha256_hex(binding), rows->value(0, 0))) return login_of_another_browser();
    // Deleted by one replica only: a state replayed to two at once is taken by one of them.
    auto taken = db_->exec("taking a sign-in", "DELETE FROM console_oidc_logins WHERE state_sha256 = $1 RETURNING 1",
                           {key});
    if (!taken) return logins_failed("taking a sign-in", taken.error());
    if (taken->rows() != 1) return unknown_login();
    if (now_() - std::stoll(rows->value(0, 6)) >= kLifetimeMs) return login_too_late();
    auto nonce = key_->open_text(login_column(key, "nonce"), rows->value(0, 1));
    if (!nonce) return logins_failed("opening a sign-in's sealed nonce", nonce.error());
    auto verifier = key_->open_text(login_column(key, "verifier"), rows->value(0, 2));
    if (!verifier) return logins_failed("opening a sign-in's sealed PKCE verifier", verifier.error());
    return PendingLogin{std::move(*nonce), std::move(*verifier), rows->value(0, 3), binding, rows->value(0, 4),
                        rows->value(0, 5)};
  }

  Result<std::size_t> size() override {
    auto rows = db_->exec("counting sign-ins", "SELECT count(*) FROM console_oidc_logins");
    if (!rows) return logins_failed("counting sign-ins", rows.error());
    return static_cast<std::size_t>(std::stoull(rows->value(0, 0)));
  }

 private:
  // Logins never completed (the browser went away) are deleted by the next put after a while.
  void purge_now_and_then(std::int64_t now) {
    if (!purge_.due(now)) return;
    (void)db_->exec("purging expired sign-ins", "DELETE FROM console_oidc_logins WHERE created_ms <= $1",
                    {std::to_string(now - kLifetimeMs)});
  }

  std::unique_ptr<pg::Database> db_;
  std::shared_ptr<const creds::SealingKey> key_;
  WallMs now_;
  storage::PurgeThrottle purge_;
};

}  // namespace

Result<std::shared_ptr<PendingLogins>> open_postgres_pending_logins(const pg::Database::Location& location,
                                                                   std::shared_ptr<const creds::SealingKey> key,
                                                                   WallMs now) {
  auto db = pg::Database::open(location, "the state database (console sign-ins)");
  if (!db) return db.error();
  if (auto made = pg::create_schema(**db, "creating the console sign-ins table", kLoginsPgSchema); !made) return made.error();
  return std::shared_ptr<PendingLogins>(std::make_shared<PgPendingLogins>(std::move(*db), std::move(key), std::move(now)));
}

}  // namespace airlock::server::console
