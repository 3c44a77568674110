// The daemon's storage: its data directory (made private and locked), the audit log, the
// state stores (SQLite in the data directory or the storage.postgres database), the secrets.
#include "server/daemon/daemon_state.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <iostream>

#include "creds/sealing_key.hpp"
#include "pipeline/stages/execute.hpp"
#include "pipeline/storage_locations.hpp"

namespace airlock::server {
namespace {

// Files the daemon creates in its data directory are its own: 0600 (the process umask is
// restored when this goes away). SQLite gives -wal and -shm files the database's mode.
class PrivateFiles {
 public:
  PrivateFiles() : old_(::umask(0077)) {}
  ~PrivateFiles() { ::umask(old_); }
  PrivateFiles(const PrivateFiles&) = delete;
  PrivateFiles& operator=(const PrivateFiles&) = delete;

 private:
  mode_t old_;
};

Status make_data_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::make("storage", "cannot create " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);
  return {};
}

}  // namespace

// The data directory (made, 0700, locked), then <dataDir>/audit.db (+ .key) or storage.postgres,
// state.db, runtime/airlock_runner.py.
Status Daemon::State::open_storage(const policy::Config& cfg) {
  const std::string& dir = cfg.storage.data_dir;
  data_dir = dir;
  if (auto made = make_data_dir(dir); !made) return made.error();
  auto locked = storage::DataDirLock::acquire(dir);  // before anything else in the directory is touched
  if (!locked) return locked.error();
  lock.emplace(std::move(*locked));
  PrivateFiles private_files;
  // The runner is public code the sandbox user must read: install_runner makes it 0644.
  pipeline_deps.runner_dir = dir + "/runtime";
  if (auto s = pipeline::install_runner(pipeline_deps.runner_dir); !s) return s.error();
  audit::AuditLogOptions audit_options;
  audit_options.checkpoint_every_records = cfg.storage.checkpoint_every;
  audit_options.checkpoint_interval = cfg.storage.checkpoint_interval;
  // storage.postgres: the audit log is the database's, shared with every daemon configured
  // with it (so is the state, below); the webhook outbox and the secrets stay in the data
  // directory.
  auto log = audit::AuditLog::open(pipeline::audit_log_location(cfg.storage), audit_options);
  if (!log) return log.error();
  audit = std::move(*log);
  // storage.tokenKeyFile: the key every replica signs its tokens with (each accepts the
  // others'); by default the daemon's own, in its data directory.
  const std::string token_key =
      cfg.storage.token_key_file.empty() ? dir + "/token.key" : cfg.storage.token_key_file;
  auto signer = identity::TokenSigner::load_or_create(token_key);
  if (!signer) return Error::make("storage", token_key + ": " + signer.error().message);
  token_signer.emplace(std::move(*signer));
  if (auto s = open_invocations(cfg); !s) return s.error();
  // Leases, revoked tokens, pins and approvals: state.db, or the storage.postgres database
  // every replica shares. The webhook outbox stays in state.db (docs/config.md, "storage", says why).
  const storage::StateLocation shared_state = pipeline::state_location(cfg.storage);
  auto lease_store = creds::LeaseStore::open(shared_state);
  if (!lease_store) return lease_store.error();
  leases = std::move(*lease_store);
  auto revoked = creds::RevokedTokens::open(shared_state);
  if (!revoked) return revoked.error();
  revoked_tokens = std::move(*revoked);
  auto pin_store = mcp::PinStore::open(shared_state);
  if (!pin_store) return pin_store.error();
  pins = std::move(*pin_store);
  // Pending calls' arguments, kept user tokens and webhook bodies are sealed with the secret
  // store's key.
  auto sealing_key = creds::SealingKey::load_or_create(creds::SealingKey::key_file_for(data_dir));
  if (!sealing_key) return Error::make(sealing_key.error().code, "the approvals' sealing key: " + sealing_key.error().message);
  auto approval_store_opened = ApprovalStore::open(shared_state, *sealing_key);
  if (!approval_store_opened) return approval_store_opened.error();
  approval_store = std::move(*approval_store_opened);
  approvals = std::make_unique<ApprovalService>(*approval_store);
  auto outbox = WebhookOutbox::open(dir + "/state.db", *sealing_key);
  if (!outbox) return outbox.error();
  webhook_outbox = std::move(*outbox);
  // What a predecessor on this host left is in state.db (recover() records it); with
  // storage.postgres the sessions this replica holds from now on are the database's.
  auto sessions_opened = SessionStore::open(dir + "/state.db");
  if (!sessions_opened) return sessions_opened.error();
  session_store = std::move(*sessions_opened);
  if (pg_store) {
    auto shared_sessions = PostgresSessionStore::open(shared_state.postgres, pg_store->replica());
    if (!shared_sessions) return shared_sessions.error();
    pg_sessions = std::move(*shared_sessions);
    auto book = open_postgres_mcp_session_book(shared_state.postgres);
    if (!book) return book.error();
    mcp_session_book = std::move(*book);
    // The console's sessions, their credentials and CSRF tokens sealed with the same key.
    auto console_book = console::open_postgres_session_store(shared_state.postgres, *sealing_key);
    if (!console_book) return console_book.error();
    console_sessions = std::move(*console_book);
    auto logins = console::open_postgres_pending_logins(shared_state.postgres, *sealing_key);
    if (!logins) return logins.error();
    console_logins = std::move(*logins);
  }
  auto snapshots_opened = SnapshotStore::open(dir + "/state.db", dir + "/snapshots");  // local, as sessions
  if (!snapshots_opened) return snapshots_opened.error();
  snapshot_store = std::move(*snapshots_opened);
  return {};
}

// state.db, or storage.postgres: then this daemon is a replica (joined in join_replicas).
Status Daemon::State::open_invocations(const policy::Config& cfg) {
  const auto location = pipeline::state_location(cfg.storage);
  if (!location.is_postgres()) {
    auto opened = InvocationStore::open(location);
    if (!opened) return opened.error();
    store = std::move(*opened);
    return {};
  }
  auto opened = PostgresInvocationStore::open(location.postgres);
  if (!opened) return opened.error();
  pg_store = opened->get();
  store = std::move(*opened);
  return {};
}

Result<std::string> Daemon::State::secret(const std::string& name) {
  std::lock_guard held(secrets_mu);
  if (!secrets) {
    PrivateFiles private_files;
    auto opened = creds::SecretStore::open(data_dir);
    if (!opened) return Error::make("credential_unavailable", "the secret store: " + opened.error().message);
    secrets = std::move(*opened);
  }
  return secrets->get(name);
}

}  // namespace airlock::server
