// For the audit tests that run against PostgreSQL: one throwaway cluster per test program
// (tests/support/pg_cluster), a role that owns the logs' databases, a fresh database per log.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "audit/log_location.hpp"
#include "pg_cluster.hpp"

namespace airlock::audit::testing {

inline const std::string kLogRole = "airlock_audit";
inline const std::string kLogPassword = "Aud1t-pw-" + std::to_string(::getpid());

// Started on first use (from the main thread, which outlives it), stopped at exit. A forked
// child must leave with _exit: exit() would run this destructor and stop the server.
inline test::PgCluster& cluster() {
  static std::unique_ptr<test::PgCluster> instance = [] {
    auto started = test::PgCluster::start();
    if (!started) throw std::runtime_error("cannot start PostgreSQL: " + started.error().message);
    auto role = (*started)->exec("CREATE ROLE " + kLogRole + " LOGIN PASSWORD '" + kLogPassword + "'");
    if (!role) throw std::runtime_error(role.error().message);
    return std::move(*started);
  }();
  return *instance;
}

// A new, empty database owned by the log's role, and the log's location in it; the key file
// (shared by every writer of that log) is `key_file`.
inline LogLocation fresh_postgres_log(const std::string& key_file) {
  static std::atomic<int> counter{0};
  const std::string database = "audit_" + std::to_string(counter++);
  auto made = cluster().exec("CREATE DATABASE " + database + " OWNER " + kLogRole);
  if (!made) throw std::runtime_error(made.error().message);
  LogLocation location;
  location.postgres_url = cluster().url(kLogRole, kLogPassword, database);
  location.key_file = key_file;
  return location;
}

// The database a location names (the URL's path).
inline std::string database_of(const LogLocation& location) {
  return location.postgres_url.substr(location.postgres_url.rfind('/') + 1);
}

}  // namespace airlock::audit::testing
