// For the replica tests: one throwaway PostgreSQL 15 cluster per test program
// (tests/support/pg_cluster), a role that owns the test databases, a fresh database per test.
#pragma once

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>

#include "pg_cluster.hpp"

namespace airlock::replicas_test {

inline const std::string kRole = "airlock_state";
inline const std::string kPassword = "St4te-pw-" + std::to_string(::getpid());

// Started on first use (from the main thread, which outlives it), stopped at exit. A forked
// child must leave with _exit: exit() would run this destructor and stop the server.
inline test::PgCluster& cluster() {
  static std::unique_ptr<test::PgCluster> instance = [] {
    test::PgCluster::Options options;
    // What a store acknowledged must survive the server's stop (test (c) stops it).
    options.settings = {{"fsync", "off"}, {"synchronous_commit", "on"}, {"max_connections", "200"}};
    auto started = test::PgCluster::start(options);
    if (!started) throw std::runtime_error("cannot start PostgreSQL: " + started.error().message);
    auto role = (*started)->exec("CREATE ROLE " + kRole + " LOGIN PASSWORD '" + kPassword + "'");
    if (!role) throw std::runtime_error(role.error().message);
    return std::move(*started);
  }();
  return *instance;
}

// A new, empty database owned by the role; its name.
inline std::string fresh_database(const std::string& prefix = "state") {
  static std::atomic<int> counter{0};
  const std::string database = prefix + "_" + std::to_string(counter++);
  auto made = cluster().exec("CREATE DATABASE " + database + " OWNER " + kRole);
  if (!made) throw std::runtime_error(made.error().message);
  return database;
}

inline std::string url_of(const std::string& database) { return cluster().url(kRole, kPassword, database); }

}  // namespace airlock::replicas_test
